"""The Sepolia twin: Sepolia's addresses and chain id on a chain we start, for rehearsals.

Nothing here can reach Sepolia, yet the Sepolia code path (network ``sepolia``, Etherscan
links, :meth:`WalletClient.from_env`, waiting for block time instead of time travel) must
run before a user runs it for real. :class:`SepoliaTwin` starts:

- anvil with chain id 11155111 that mines a block every ``block_time`` wall-clock seconds
  (besides one per transaction), each ``seconds_per_block`` later than the last, so Sepolia's
  one-hour challenge period passes in seconds while the code waits for real blocks. anvil
  brings the deterministic CREATE2 deployer at ``0x4e59…956C``, as Sepolia has it;
- our contracts at the **real Sepolia addresses** (:data:`SEPOLIA`): the custody, the
  adjudicator and the ``ytest.usd`` token, the v4 ``PoolManager``, and the ``PolicyHook`` and
  ``SettlementAdapter`` *as deployed there*: the hook deployed through the CREATE2 deployer
  with that deployer as its owner (the mistake notebook 04 diagnoses), the adapter owned by
  the Sepolia deployer account. Each is deployed normally, then its runtime code and the
  storage its constructor wrote are moved to the Sepolia address (:func:`relocate`);
- our relay node and faucet on loopback, serving that chain.

:meth:`SepoliaTwin.env` gives the variables a real user sets for Sepolia (``SEPOLIA_RPC_URL``,
``SETTLEMENT_RELAY_URL``, ``SETTLEMENT_FAUCET_URL``, ``SETTLEMENT_PRIVATE_KEY`` of a funded
twin key), so code under test runs unchanged: ``python -m settlement_widgets.sandbox --twin
sepolia`` writes them to a file (mode 0600; the key is never printed).

What every twin shares (the fast-clock anvil, the user key, the environment, the lifecycle)
is :class:`TwinBase`; the Nitrolite v1 twin of the ``sepolia-v1`` profile, built on it, is
:class:`~.twin_v1.SepoliaV1Twin`.
"""

from __future__ import annotations

import gzip
import json
import shutil
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Self

from ..addresses import validate_address
from ..errors import ConfigurationError
from ..keys import PrivateKey
from ..networks import SEPOLIA, Network
from ..v4.core.create2 import CREATE2_DEPLOYER
from .local import close_quietly, mint_test_token, sandbox_key, start_relay_and_faucet

if TYPE_CHECKING:
    from ..channel.v0_5.node.server import RelayNode
    from .chain import AnvilChain
    from .faucet import Faucet
    from .http import SandboxHttpServer

__all__ = ["SepoliaTwin", "TwinBase", "TwinContracts", "relocate"]

_ETH = 10**18


@dataclass(frozen=True)
class TwinContracts:
    """Where each contract was deployed before it was moved to its Sepolia address."""

    moved: dict[str, tuple[str, str]]  # name -> (deployed at, now at)


async def _storage_of(chain: AnvilChain, address: str) -> dict[str, str]:
    """Every storage slot of ``address`` (anvil's state dump: the only RPC that lists slots)."""
    dump = await chain.request("anvil_dumpState")
    state = json.loads(gzip.decompress(bytes.fromhex(dump.removeprefix("0x"))))
    accounts = {k.lower(): v for k, v in state.get("accounts", {}).items()}
    return dict(accounts.get(address.lower(), {}).get("storage", {}))


async def relocate(chain: AnvilChain, source: str, target: str, *, patch_self: bool) -> None:
    """Move the contract at ``source`` to ``target``: runtime code and every storage slot,
    then empty ``source`` so nothing can use the stale copy.

    Immutables are part of the runtime code. Constructor arguments that name another
    contract are given the Sepolia addresses up front, so only a contract's *own* address
    can be stale. ``patch_self`` rewrites it to ``target``: v4's ``PoolManager`` must (its
    ``NoDelegateCall`` immutable ``original`` would make every call revert). EIP-712
    contracts must not: OpenZeppelin's ``EIP712`` compares ``address(this)`` with its cached
    address and rebuilds the domain separator on a mismatch, which is exactly right here,
    whereas a patched address would keep a separator computed for ``source``.
    """
    source = validate_address(source, field="source")
    target = validate_address(target, field="target")
    code = await chain.w3.eth.get_code(source)  # type: ignore[arg-type]
    if not code:
        raise ConfigurationError(f"no contract at {source} to move to {target}")
    runtime = bytes(code)
    old, new = bytes.fromhex(source[2:]), bytes.fromhex(target[2:])
    if patch_self:
        runtime = runtime.replace(old, new)
    storage = await _storage_of(chain, source)
    await chain.request("anvil_setCode", target, "0x" + runtime.hex())
    for slot, value in storage.items():
        word = int(value, 16).to_bytes(32, "big")
        if patch_self and word[12:] == old and word[:12] == bytes(12):
            word = bytes(12) + new
        await chain.request("anvil_setStorageAt", target, _word(slot), "0x" + word.hex())
    await chain.request("anvil_setCode", source, "0x")
    for slot in storage:
        await chain.request("anvil_setStorageAt", source, _word(slot), "0x" + "00" * 32)


def _word(slot: str) -> str:
    return "0x" + int(slot, 16).to_bytes(32, "big").hex()


class TwinBase:
    """What every twin of a public network shares: an anvil with the network's chain id that
    mines real blocks on a fast clock, a funded user key, the loopback services, the
    environment a real user sets, and its lifecycle (``async with``; :meth:`aclose` stops
    what started, in :attr:`_CLOSE_ORDER`, safe twice and after a failed start).

    ``block_time`` (wall-clock seconds between the blocks anvil mines on its own) and
    ``seconds_per_block`` (chain seconds each block adds) set how much faster than the wall
    clock the chain's clock runs: a twin waits for real blocks past a challenge period
    instead of travelling in time, as a user on the public network waits.
    """

    #: the profile the twin stands in for (``SETTLEMENT_NETWORK`` in :meth:`env`)
    PROFILE: ClassVar[str] = "sepolia"
    #: attributes holding a running part, stopped in this order by :meth:`aclose`
    _CLOSE_ORDER: ClassVar[tuple[str, ...]] = ("http", "chain")

    def __init__(
        self,
        *,
        block_time: float,
        seconds_per_block: int,
        user_key: PrivateKey,
        user_eth: int,
        user_tokens: int,
        http_port: int,
    ) -> None:
        if not block_time > 0 or seconds_per_block < 1:
            raise ConfigurationError("block_time must be > 0 and seconds_per_block >= 1")
        self.block_time = block_time
        self.seconds_per_block = seconds_per_block
        self._user_key = user_key
        self.user_eth = user_eth
        self.user_tokens = user_tokens
        self.http_port = http_port
        self.chain: AnvilChain | None = None
        self.faucet: Faucet | None = None
        self.http: SandboxHttpServer | None = None
        self.contracts: TwinContracts | None = None
        self._network: Network | None = None
        self._dir: Path | None = None

    @property
    def network(self) -> Network:
        """The public profile pointed at the twin's RPC, node and faucet (what :meth:`env`
        makes ``get_network()`` return)."""
        if self._network is None:
            raise ConfigurationError(
                f"the twin is not started: use `async with {type(self).__name__}()`"
            )
        return self._network

    @property
    def user_address(self) -> str:
        return self._user_key.address

    def env(self) -> dict[str, str]:
        """The environment a real user sets, pointing at the twin. It holds the twin user's
        key (a public test key): hand it to processes, never print it."""
        net = self.network
        assert net.rpc_url is not None
        return {
            "SETTLEMENT_NETWORK": self.PROFILE,
            "SEPOLIA_RPC_URL": net.rpc_url,
            "SETTLEMENT_RELAY_URL": net.node_url,
            "SETTLEMENT_FAUCET_URL": net.faucet_url,
            "SETTLEMENT_PRIVATE_KEY": self._user_key.secret_hex(),
        }

    async def __aenter__(self) -> Self:
        try:
            await self._start()
        except BaseException:
            await self.aclose()
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def start(self) -> Self:
        return await self.__aenter__()

    async def _start(self) -> None:  # pragma: no cover - every twin defines it
        raise NotImplementedError

    async def _start_chain(self, chain_id: int) -> AnvilChain:
        """anvil with ``chain_id``, interval mining besides one block per transaction, and
        the deterministic CREATE2 deployer the public network has; a temporary directory
        for the services' files."""
        self._dir = Path(tempfile.mkdtemp(prefix="settlement-twin-"))
        self.chain = await self._start_anvil(chain_id)
        return self.chain

    async def _start_anvil(self, chain_id: int) -> AnvilChain:
        """One anvil as the public chain ``chain_id`` has it: that chain id, interval mining
        on the twin's clock besides one block per transaction, the CREATE2 deployer (a twin
        of a network with a second chain starts one per chain; the caller keeps it)."""
        from .chain import AnvilChain

        chain = await AnvilChain.start(
            chain_id=chain_id,
            extra_args=["--block-time", f"{self.block_time:g}", "--mixed-mining"],
        )
        try:
            if await chain.w3.eth.get_code(CREATE2_DEPLOYER) == b"":  # type: ignore[arg-type]
                raise ConfigurationError(
                    "this anvil has no CREATE2 deployer at " + CREATE2_DEPLOYER
                )
        except BaseException:
            await close_quietly(chain)
            raise
        return chain

    async def _run_clock(self, chain: AnvilChain | None = None) -> None:
        """From now on every block of ``chain`` (the twin's chain by default) is
        ``seconds_per_block`` later than the last (deployment and provisioning ran on
        anvil's ordinary clock before)."""
        chain = chain or self.chain
        assert chain is not None
        await chain.request("anvil_setBlockTimestampInterval", self.seconds_per_block)

    async def aclose(self) -> None:
        """Stop everything started (safe twice, and after a failed start)."""
        for attr in self._CLOSE_ORDER:
            await close_quietly(getattr(self, attr))
            setattr(self, attr, None)
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None
        self._network = None

    def __repr__(self) -> str:
        state = "running" if self._network is not None else "stopped"
        return f"{type(self).__name__}({state})"


class SepoliaTwin(TwinBase):
    """A running Sepolia twin (Nitrolite v0.5 and v4): ``async with SepoliaTwin() as twin``
    then ``twin.env()``.

    The defaults make the chain's clock run 600 times faster than the wall clock, so a
    one-hour challenge period is over in about six seconds of real blocks. ``user_key`` is
    the key handed out as ``SETTLEMENT_PRIVATE_KEY`` (a fixed public test key by default),
    funded with ``user_eth`` ETH for gas and ``user_tokens`` units of ``ytest.usd`` on chain.
    """

    PROFILE = "sepolia"
    _CLOSE_ORDER = ("http", "relay", "chain")

    def __init__(
        self,
        *,
        block_time: float = 0.5,
        seconds_per_block: int = 300,
        user_key: PrivateKey | None = None,
        user_eth: int = 100,
        user_tokens: int = 1_000 * 10**6,
        broker_liquidity: int = 10_000_000 * 10**6,
        relay_port: int = 0,
        http_port: int = 0,
    ) -> None:
        super().__init__(
            block_time=block_time,
            seconds_per_block=seconds_per_block,
            user_key=user_key or sandbox_key("sepolia twin user"),
            user_eth=user_eth,
            user_tokens=user_tokens,
            http_port=http_port,
        )
        self._broker_key = sandbox_key("sepolia twin broker")
        self._faucet_key = sandbox_key("sepolia twin faucet")
        self.broker_liquidity = broker_liquidity
        self.relay_port = relay_port
        self.relay: RelayNode | None = None

    async def _start(self) -> None:
        from ..channel.v0_5.chain.custody import CustodyClient
        from ..channel.v0_5.node import AssetConfig, NetworkConfig
        from .http import SandboxHttpServer

        chain = await self._start_chain(SEPOLIA.chain_id)
        assert self._dir is not None
        self.contracts = await _deploy_at_sepolia_addresses(chain)
        await self._run_clock()

        deployer = chain.wallet(0)
        token = SEPOLIA.token
        assert token is not None
        broker = chain.wallet_for(self._broker_key)
        user = self._user_key.address
        for who, eth in ((broker.address, 100), (user, self.user_eth)):
            await chain.request("anvil_setBalance", who, hex(eth * _ETH))
        await mint_test_token(deployer, token, user, self.user_tokens)
        if self.broker_liquidity:
            await mint_test_token(deployer, token, broker.address, self.broker_liquidity)
            custody = CustodyClient(broker, SEPOLIA.contracts.custody)
            await custody.approve(token, self.broker_liquidity)
            await custody.deposit(token, self.broker_liquidity)

        c = SEPOLIA.contracts
        self.relay, self.faucet = await start_relay_and_faucet(
            broker,
            NetworkConfig(SEPOLIA.chain_id, "sepolia", c.custody, c.adjudicator),
            AssetConfig(SEPOLIA.asset_symbol, token, SEPOLIA.chain_id, SEPOLIA.asset_decimals),
            broker_key=self._broker_key,
            faucet_key=self._faucet_key,
            db_path=self._dir / "relay.sqlite",
            port=self.relay_port,
        )
        http = SandboxHttpServer(faucet=self.faucet)
        self.http = http
        base = http.start(self.http_port)
        self._network = replace(
            SEPOLIA,
            rpc_url=chain.rpc_url,
            node_url=self.relay.url,
            faucet_url=f"{base}/faucet/requestTokens",
        )


async def _deploy_at_sepolia_addresses(chain: AnvilChain) -> TwinContracts:
    """Deploy each contract, then move it to its Sepolia address, in dependency order so
    that every constructor argument naming another contract is already its Sepolia address."""
    from eth_hash.auto import keccak

    from ..contracts import load_artifact
    from ..v4.core.create2 import mine_hook_salt
    from ..v4.core.flags import BEFORE_SWAP_FLAG
    from ..v4.deploy.stack import STEP_GAS, deploy_artifact, hook_init_code
    from .deploy import DEFAULT_TOKEN_NAME, DEFAULT_TOKEN_SYMBOL, deploy_contract

    w3 = chain.w3
    deployer = chain.wallet(0)
    c = SEPOLIA.contracts
    assert SEPOLIA.token is not None and SEPOLIA.deployer is not None
    moved: dict[str, tuple[str, str]] = {}

    async def place(name: str, deployed: str, target: str, *, patch_self: bool = False) -> None:
        await relocate(chain, deployed, target, patch_self=patch_self)
        moved[name] = (deployed, target)

    custody = await deploy_contract(deployer, "Custody")
    await place("Custody", custody.address, c.custody)
    adjudicator = await deploy_contract(deployer, "SimpleConsensus", deployer.address, c.custody)
    await place("SimpleConsensus", adjudicator.address, c.adjudicator)
    token = await deploy_contract(
        deployer, "TestToken", DEFAULT_TOKEN_NAME, DEFAULT_TOKEN_SYMBOL, deployer.address
    )
    await place("TestToken", token.address, SEPOLIA.token)

    manager = await deploy_artifact(w3, deployer, "PoolManager", deployer.address)
    await place("PoolManager", manager, c.pool_manager, patch_self=True)
    # the hook as deployed on Sepolia: through the CREATE2 deployer, which became its owner
    init_code = hook_init_code(c.pool_manager, CREATE2_DEPLOYER)
    search = mine_hook_salt(CREATE2_DEPLOYER, keccak(init_code), BEFORE_SWAP_FLAG)
    await deployer.transact(
        to=CREATE2_DEPLOYER,
        data="0x" + (search.salt_bytes + init_code).hex(),
        gas=STEP_GAS,
        abis=[load_artifact("PolicyHook").abi],
    )
    await place("PolicyHook", search.address, c.policy_hook)
    adapter = await deploy_artifact(
        w3, deployer, "SettlementAdapter", c.policy_hook, SEPOLIA.deployer
    )
    await place("SettlementAdapter", adapter, c.settlement_adapter)
    return TwinContracts(moved)
