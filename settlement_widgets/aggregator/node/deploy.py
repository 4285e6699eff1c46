"""Deploy the aggregator method's world on two sandbox chains: a test USDC on each, three
bridges of our own with different fees and speeds, and a WETH/USDC Uniswap v4 pool with a
router on the first chain so a route can have a swap step.

What lands on each chain (deployer = dev account 0, so addresses repeat run to run):

- ``TestToken("USD Coin (sandbox)", "USDC")``, 6 decimals, minted to the dev wallets;
- one :data:`BRIDGES` entry per bridge: a ``SandboxBridge`` with the bridge's fee, messaging
  fee and confirmations, relayed by the sandbox's relayer key and holding
  ``bridge_liquidity`` USDC to release from;
- an 18-decimal ``WETH`` (``V4TestToken``), a hookless WETH/USDC pool in a v4 PoolManager
  (on the first chain the sandbox's own when the v4 method is deployed, else a new one)
  priced at :data:`WETH_PRICE_USDC` with full-range liquidity, and a ``SandboxRouter`` that
  swaps in that pool before a bridge (source swap) or after it (the relayer's destination
  swap).

The numbers here are the sandbox's parameters, not market data: the route server reads every
price it reports back from these contracts' state (the pool by simulation), never from here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...addresses import ZERO_ADDRESS, validate_address
from ...contracts import load_artifact
from ...errors import ConfigurationError, SettlementValueError
from ...v4.core.pool import PoolKey

if TYPE_CHECKING:
    from ...sandbox.chain import Chain
    from ...wallet import WalletClient

__all__ = [
    "BRIDGES",
    "SECOND_CHAIN_ID",
    "WETH_PRICE_USDC",
    "BridgeSpec",
    "ChainDeployment",
    "CrossChainDeployment",
    "chain_key",
    "chain_name",
    "deploy_crosschain",
]

#: the second sandbox chain's id (the first keeps anvil's 31337)
SECOND_CHAIN_ID = 31338
#: the WETH/USDC pool's starting price (USDC per WETH): a sandbox parameter
WETH_PRICE_USDC = 3000
POOL_FEE = 500
POOL_TICK_SPACING = 10
#: full range for tick spacing 10
_TICK_LOWER, _TICK_UPPER = -887270, 887270
_STEP_GAS = 6_000_000


@dataclass(frozen=True)
class BridgeSpec:
    """One sandbox bridge: its tool key, display name and economics.

    ``fee_bps`` is taken out of the amount (LI.FI reports it as ``included: true``),
    ``messaging_fee_wei`` is paid on top in the native coin (``included: false``);
    ``confirmations`` source-chain blocks pass before the relayer releases.
    """

    key: str
    name: str
    fee_bps: int
    messaging_fee_wei: int
    confirmations: int


#: Three bridges so ranking has real choices: fast and dear, slow and cheap, and one whose
#: headline amount is the highest because its fee is charged on top.
BRIDGES: tuple[BridgeSpec, ...] = (
    BridgeSpec("fastlane", "Fastlane (sandbox bridge)", 30, 0, 1),
    BridgeSpec("slowboat", "Slowboat (sandbox bridge)", 5, 0, 8),
    BridgeSpec("tollgate", "Tollgate (sandbox bridge)", 0, 5 * 10**14, 2),
)


def chain_key(chain_id: int, index: int) -> str:
    """LI.FI-style short key of a sandbox chain (``sba``, ``sbb``)."""
    del chain_id
    return "sb" + "abcdefgh"[index]


def chain_name(chain_id: int, index: int) -> str:
    return f"Sandbox {'ABCDEFGH'[index]} ({chain_id})"


@dataclass(frozen=True)
class ChainDeployment:
    """What one chain holds: its USDC, its bridges by tool key, its WETH, pool and router."""

    chain_id: int
    key: str
    name: str
    usdc: str
    bridges: Mapping[str, str]
    weth: str | None = None
    router: str | None = None
    pool_manager: str | None = None
    pool_key: PoolKey | None = None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "chainId": self.chain_id,
            "key": self.key,
            "name": self.name,
            "usdc": self.usdc,
            "bridges": dict(self.bridges),
        }
        if self.pool_key is not None:
            data |= {
                "weth": self.weth,
                "router": self.router,
                "poolManager": self.pool_manager,
                "poolKey": self.pool_key.to_json(),
            }
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ChainDeployment:
        pool = data.get("poolKey")
        return cls(
            chain_id=int(data["chainId"]),
            key=str(data["key"]),
            name=str(data["name"]),
            usdc=str(data["usdc"]),
            bridges={str(k): str(v) for k, v in dict(data["bridges"]).items()},
            weth=data.get("weth"),
            router=data.get("router"),
            pool_manager=data.get("poolManager"),
            pool_key=None if pool is None else PoolKey.from_json(dict(pool)),
        )


@dataclass(frozen=True)
class CrossChainDeployment:
    """Both chains' deployments and the relayer's address."""

    chains: Mapping[int, ChainDeployment]
    relayer: str
    bridges: tuple[BridgeSpec, ...] = BRIDGES
    deployer: str = ZERO_ADDRESS
    extra: Mapping[str, Any] = field(default_factory=dict)

    def bridge_spec(self, key: str) -> BridgeSpec:
        for spec in self.bridges:
            if spec.key == key:
                return spec
        raise SettlementValueError(
            f"no sandbox bridge {key!r} (bridges: {[b.key for b in self.bridges]})"
        )

    def bridge_at(self, chain_id: int, address: str) -> str | None:
        """The tool key of the bridge at ``address`` on ``chain_id``, or None."""
        chain = self.chains.get(chain_id)
        if chain is None:
            return None
        for key, where in chain.bridges.items():
            if where.lower() == address.lower():
                return key
        return None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CrossChainDeployment:
        """The deployment a sandbox profile describes (``extra["aggregator"]``)."""
        chains = [ChainDeployment.from_json(c) for c in data["chains"]]
        bridges = tuple(
            BridgeSpec(
                str(b["key"]),
                str(b["name"]),
                int(b["feeBps"]),
                int(b["messagingFeeWei"]),
                int(b["confirmations"]),
            )
            for b in data.get("bridges", ())
        )
        return cls(
            chains={c.chain_id: c for c in chains},
            relayer=str(data["relayer"]),
            bridges=bridges or BRIDGES,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "relayer": self.relayer,
            "chains": [c.to_json() for c in self.chains.values()],
            "bridges": [
                {
                    "key": b.key,
                    "name": b.name,
                    "feeBps": b.fee_bps,
                    "messagingFeeWei": str(b.messaging_fee_wei),
                    "confirmations": b.confirmations,
                }
                for b in self.bridges
            ],
        }


def _contract(w3: Any, name: str, address: str | None = None) -> Any:
    art = load_artifact(name)
    if address is None:
        return w3.eth.contract(abi=art.abi, bytecode=art.bytecode)
    return w3.eth.contract(address=address, abi=art.abi)


async def _deploy(wallet: WalletClient, name: str, *args: Any) -> str:
    receipt = await wallet.transact(
        _contract(wallet.w3, name).constructor(*args),
        gas=_STEP_GAS,
        abis=[load_artifact(name).abi],
    )
    address = receipt.get("contractAddress")
    if not address:  # pragma: no cover - a mined creation always has an address
        raise ConfigurationError(f"deploying {name} produced no contract address")
    return validate_address(address, field=name)


async def _call(wallet: WalletClient, name: str, address: str, fn: str, *args: Any) -> None:
    contract = _contract(wallet.w3, name, address)
    await wallet.transact(
        getattr(contract.functions, fn)(*args), gas=_STEP_GAS, abis=[load_artifact(name).abi]
    )


def pool_sqrt_price_x96(usdc: str, weth: str, price_usdc_per_weth: int) -> int:
    """sqrtPriceX96 of a USDC(6)/WETH(18) pool at ``price`` USDC per WETH, in key order."""
    # price = currency1 per currency0 in smallest units
    if int(usdc, 16) < int(weth, 16):
        num, den = 10**18, price_usdc_per_weth * 10**6  # WETH units per USDC unit
    else:
        num, den = price_usdc_per_weth * 10**6, 10**18
    return math.isqrt((num << 192) // den)


async def deploy_crosschain(
    chains: Sequence[Chain],
    *,
    relayer: str,
    fund: Sequence[str],
    fund_amount: int = 1_000_000 * 10**6,
    bridge_liquidity: int = 10_000_000 * 10**6,
    pool_manager: str | None = None,
    modify_liquidity_router: str | None = None,
    pool_usdc: int = 3_000_000 * 10**6,
) -> CrossChainDeployment:
    """Deploy the tokens, bridges, pool and router on each of ``chains``; ``pool_manager``
    (and its ``modify_liquidity_router``) is reused on the first chain when given."""
    if len(chains) < 2:
        raise ConfigurationError("the aggregator sandbox needs two chains")
    deployments: dict[int, ChainDeployment] = {}
    deployer_address = chains[0].wallet(0).address
    for index, chain in enumerate(chains):
        deployer = chain.wallet(0)
        usdc = await _deploy(deployer, "TestToken", "USD Coin (sandbox)", "USDC", deployer.address)
        for recipient in fund:
            await _call(deployer, "TestToken", usdc, "mint", recipient, fund_amount)
        await deployer.transact(to=relayer, value=100 * 10**18)
        bridges: dict[str, str] = {}
        for spec in BRIDGES:
            address = await _deploy(
                deployer,
                "SandboxBridge",
                spec.key,
                deployer.address,
                relayer,
                spec.fee_bps,
                spec.messaging_fee_wei,
                spec.confirmations,
            )
            await _call(deployer, "TestToken", usdc, "mint", address, bridge_liquidity)
            bridges[spec.key] = address
        entry = ChainDeployment(
            chain_id=chain.chain_id,
            key=chain_key(chain.chain_id, index),
            name=chain_name(chain.chain_id, index),
            usdc=usdc,
            bridges=bridges,
        )
        first = index == 0
        entry = await _deploy_pool(
            entry,
            deployer,
            fund,
            pool_manager if first else None,
            modify_liquidity_router if first else None,
            pool_usdc,
            relayer,
        )
        deployments[chain.chain_id] = entry
    return CrossChainDeployment(chains=deployments, relayer=relayer, deployer=deployer_address)


async def _deploy_pool(
    entry: ChainDeployment,
    deployer: WalletClient,
    fund: Sequence[str],
    pool_manager: str | None,
    modify_router: str | None,
    pool_usdc: int,
    relayer: str,
) -> ChainDeployment:
    from dataclasses import replace

    me = deployer.address
    if pool_manager is None:
        pool_manager = await _deploy(deployer, "PoolManager", me)
        modify_router = None
    if modify_router is None:
        modify_router = await _deploy(deployer, "PoolModifyLiquidityTest", pool_manager)
    weth = await _deploy(deployer, "V4TestToken", "Wrapped Ether (sandbox)", "WETH")
    router = await _deploy(deployer, "SandboxRouter", pool_manager, relayer)
    key = PoolKey.for_tokens(
        entry.usdc, weth, fee=POOL_FEE, tick_spacing=POOL_TICK_SPACING, hooks=ZERO_ADDRESS
    )
    await _call(
        deployer,
        "PoolManager",
        pool_manager,
        "initialize",
        key.as_abi(),
        pool_sqrt_price_x96(entry.usdc, weth, WETH_PRICE_USDC),
    )
    weth_amount = pool_usdc * 10**12 // WETH_PRICE_USDC
    await _call(deployer, "TestToken", entry.usdc, "mint", me, pool_usdc * 2)
    await _call(deployer, "V4TestToken", weth, "mint", me, weth_amount * 2)
    for recipient in fund:
        await _call(deployer, "V4TestToken", weth, "mint", recipient, 100 * 10**18)
    await _call(deployer, "TestToken", entry.usdc, "approve", modify_router, 2**256 - 1)
    await _call(deployer, "V4TestToken", weth, "approve", modify_router, 2**256 - 1)
    # full range: amount0 = L / sqrtP and amount1 = L * sqrtP (sqrtP in raw units)
    sqrt_price = pool_sqrt_price_x96(entry.usdc, weth, WETH_PRICE_USDC) / 2**96
    amount0 = pool_usdc if key.currency0 == entry.usdc else weth_amount
    liquidity = int(amount0 * sqrt_price * 0.999)
    params = (_TICK_LOWER, _TICK_UPPER, liquidity, b"\x00" * 32)
    router_contract = _contract(deployer.w3, "PoolModifyLiquidityTest", modify_router)
    await deployer.transact(
        router_contract.functions.modifyLiquidity(key.as_abi(), params, b""),
        gas=_STEP_GAS,
        abis=[load_artifact("PoolManager").abi, load_artifact("PoolModifyLiquidityTest").abi],
    )
    return replace(entry, weth=weth, router=router, pool_manager=pool_manager, pool_key=key)
