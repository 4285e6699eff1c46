"""Deploy the v4 method on a chain we control: the real PoolManager, our hook and adapter.

What lands on the chain, in order (same deployer, same nonces, same addresses every time):

1. v4-core's ``PoolManager`` and its ``PoolModifyLiquidityTest``/``PoolSwapTest`` routers,
   from the npm package's own compiled artifacts (never recompiled);
2. two ``V4TestToken`` ERC-20s;
3. ``HookDeployer`` (a CREATE2 factory) and ``PolicyHook`` through it, at the first salt whose
   address's low 14 bits are exactly ``0x0080`` (beforeSwap);
4. ``SettlementAdapter`` bound to the hook;
5. the pool (fee 3000, tick spacing 60, 1:1 price) initialised with the hook, and liquidity.

``hook_owner_is_factory=True`` reproduces the Sepolia mistake (the hook owned by the CREATE2
factory that deployed it), so ``V4Provider.inspect()`` can be shown diagnosing it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from eth_abi import encode
from eth_hash.auto import keccak

from ...addresses import validate_address
from ...contracts import load_artifact
from ...errors import ConfigurationError
from ..core.create2 import SaltSearch, mine_hook_salt
from ..core.flags import BEFORE_SWAP_FLAG, flags_of
from ..core.pool import PoolKey

if TYPE_CHECKING:
    from web3 import AsyncWeb3

    from ...networks import Network
    from ...signer import Signer

__all__ = [
    "POOL_FEE",
    "POOL_SQRT_PRICE_X96",
    "POOL_TICK_SPACING",
    "V4Deployment",
    "deploy_artifact",
    "deploy_v4",
    "seed_pool",
]

POOL_FEE = 3000
POOL_TICK_SPACING = 60
#: sqrt(1) * 2**96: a 1:1 price
POOL_SQRT_PRICE_X96 = 2**96
LIQUIDITY_TICK_LOWER = -6000
LIQUIDITY_TICK_UPPER = 6000
#: about 2,600 tokens of each side in range: intents of a few tokens barely move the price
LIQUIDITY_DELTA = 10**22
DEPLOYER_MINT = 10**24
#: explicit gas for every deployment step: gas estimation on the in-process EVM is a binary
#: search that re-runs each transaction ~20 times (21 of 27 s of a deployment); unused gas is
#: refunded, and a reverted step still raises TransactionFailedError from its receipt
STEP_GAS = 9_000_000


@dataclass(frozen=True)
class V4Deployment:
    """Addresses and facts of one deployment (``to_extra()`` goes into a Network profile)."""

    pool_manager: str
    modify_liquidity_router: str
    swap_router: str
    token0: str
    token1: str
    hook_deployer: str
    hook: str
    hook_salt: int
    adapter: str
    owner: str
    hook_owner: str
    pool_key: PoolKey
    salt_attempts: int
    salt_search_seconds: float
    deploy_seconds: float

    def contracts(self) -> dict[str, str]:
        """The three addresses the ``v4`` method is configured with (endpoint names)."""
        return {
            "policyHook": self.hook,
            "settlementAdapter": self.adapter,
            "poolManager": self.pool_manager,
        }

    def to_extra(self) -> dict[str, Any]:
        """The ``v4`` entry of a Network profile's ``extra``: tokens, pool, routers, factory."""
        return {
            "v4": {
                "tokens": [self.token0, self.token1],
                "poolKey": self.pool_key.to_json(),
                "poolId": self.pool_key.pool_id,
                "hookDeployer": self.hook_deployer,
                "hookSalt": self.hook_salt,
                "modifyLiquidityRouter": self.modify_liquidity_router,
                "swapRouter": self.swap_router,
                "owner": self.owner,
                "hookOwner": self.hook_owner,
            }
        }

    def apply_to(self, network: Network) -> Network:
        """``network`` with this deployment's v4 addresses and extra data."""
        contracts = replace(
            network.contracts,
            policy_hook=self.hook,
            settlement_adapter=self.adapter,
            pool_manager=self.pool_manager,
        )
        return replace(network, contracts=contracts, extra={**network.extra, **self.to_extra()})


def _contract(w3: AsyncWeb3, name: str, address: str | None = None) -> Any:
    art = load_artifact(name)
    if address is None:
        return w3.eth.contract(abi=art.abi, bytecode=art.bytecode)
    return w3.eth.contract(address=address, abi=art.abi)  # type: ignore[call-overload]


async def deploy_artifact(
    w3: AsyncWeb3, wallet: Signer, name: str, *args: Any, gas: int | None = STEP_GAS
) -> str:
    """Deploy the compiled contract ``name`` with ``args``; its checked address. (The twin
    deploys its v4 contracts with it too.)"""
    factory = _contract(w3, name)
    receipt = await wallet.transact(
        factory.constructor(*args), gas=gas, abis=[load_artifact(name).abi]
    )
    address = receipt["contractAddress"]
    if not address:
        raise ConfigurationError(f"deploying {name} produced no contract address")
    return validate_address(address, field=name)


async def seed_pool(
    w3: AsyncWeb3,
    wallet: Signer,
    pool_manager: str,
    modify_router: str,
    key: PoolKey,
    *,
    gas: int | None = None,
    initialise: bool = True,
) -> None:
    """Initialise ``key``'s pool at a 1:1 price and give it full liquidity around it: the
    wallet mints both test tokens to itself and adds them through ``modify_router``.
    ``gas=None`` estimates each step (a public chain); the sandbox passes a fixed limit."""
    pm_abi = [load_artifact("PoolManager").abi]
    if initialise:
        manager = _contract(w3, "PoolManager", pool_manager)
        await wallet.transact(
            manager.functions.initialize(key.as_abi(), POOL_SQRT_PRICE_X96), gas=gas, abis=pm_abi
        )
    token_abi = [load_artifact("V4TestToken").abi]
    for token in (key.currency0, key.currency1):
        erc20 = _contract(w3, "V4TestToken", token)
        await wallet.transact(
            erc20.functions.mint(wallet.address, DEPLOYER_MINT), gas=gas, abis=token_abi
        )
        await wallet.transact(
            erc20.functions.approve(modify_router, 2**256 - 1), gas=gas, abis=token_abi
        )
    router = _contract(w3, "PoolModifyLiquidityTest", modify_router)
    params = (LIQUIDITY_TICK_LOWER, LIQUIDITY_TICK_UPPER, LIQUIDITY_DELTA, b"\x00" * 32)
    await wallet.transact(
        router.functions.modifyLiquidity(key.as_abi(), params, b""),
        gas=gas,
        abis=[*pm_abi, load_artifact("PoolModifyLiquidityTest").abi, *token_abi],
    )


def hook_init_code(pool_manager: str, hook_owner: str) -> bytes:
    """PolicyHook's creation code with its constructor arguments (what CREATE2 hashes)."""
    art = load_artifact("PolicyHook")
    code = bytes.fromhex(art.bytecode.removeprefix("0x"))
    return code + encode(["address", "address"], [pool_manager, hook_owner])


async def deploy_v4(
    w3: AsyncWeb3,
    deployer_wallet: Signer,
    *,
    owner: str,
    hook_owner_is_factory: bool = False,
) -> V4Deployment:
    """Deploy and initialise the whole v4 method; ``owner`` owns the hook and the adapter.

    The deployer pays for everything and provides the pool's liquidity (it mints test
    tokens to itself). ``hook_owner_is_factory`` makes the CREATE2 factory the hook's owner,
    as on Sepolia, leaving a hook that can never hold a policy.
    """
    owner = validate_address(owner, field="owner", allow_zero=False)
    wallet = deployer_wallet
    t0 = time.perf_counter()

    pool_manager = await deploy_artifact(w3, wallet, "PoolManager", owner)
    modify_router = await deploy_artifact(w3, wallet, "PoolModifyLiquidityTest", pool_manager)
    swap_router = await deploy_artifact(w3, wallet, "PoolSwapTest", pool_manager)
    token_a = await deploy_artifact(w3, wallet, "V4TestToken", "V4 Test Token A", "V4A")
    token_b = await deploy_artifact(w3, wallet, "V4TestToken", "V4 Test Token B", "V4B")
    hook_deployer = await deploy_artifact(w3, wallet, "HookDeployer")

    hook_owner = hook_deployer if hook_owner_is_factory else owner
    init_code = hook_init_code(pool_manager, hook_owner)
    search: SaltSearch = mine_hook_salt(hook_deployer, keccak(init_code), BEFORE_SWAP_FLAG)
    factory = _contract(w3, "HookDeployer", hook_deployer)
    abis = [load_artifact("HookDeployer").abi, load_artifact("PolicyHook").abi]
    await wallet.transact(
        factory.functions.deploy(search.salt_bytes, init_code), gas=STEP_GAS, abis=abis
    )
    code = await w3.eth.get_code(search.address)  # type: ignore[arg-type]
    if not code or flags_of(search.address) != BEFORE_SWAP_FLAG:
        raise ConfigurationError(f"the hook did not land at the mined address {search.address}")
    hook = search.address

    adapter = await deploy_artifact(w3, wallet, "SettlementAdapter", hook, owner)

    key = PoolKey.for_tokens(
        token_a, token_b, fee=POOL_FEE, tick_spacing=POOL_TICK_SPACING, hooks=hook
    )
    await seed_pool(w3, wallet, pool_manager, modify_router, key, gas=STEP_GAS)
    return V4Deployment(
        pool_manager=pool_manager,
        modify_liquidity_router=modify_router,
        swap_router=swap_router,
        token0=key.currency0,
        token1=key.currency1,
        hook_deployer=hook_deployer,
        hook=hook,
        hook_salt=search.salt,
        adapter=adapter,
        owner=owner,
        hook_owner=hook_owner,
        pool_key=key,
        salt_attempts=search.attempts,
        salt_search_seconds=search.seconds,
        deploy_seconds=time.perf_counter() - t0,
    )
