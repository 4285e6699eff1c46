"""``LocalSandbox``: the whole local network in one ``async with``.

It starts a chain (in-process py-evm by default, a fresh anvil, or any JSON-RPC URL), deploys
(or resumes from the chain snapshot ``make contracts`` saved, :mod:`.snapshot`) the
``channel`` contracts (Custody, SimpleConsensus, the 6-decimal ``ytest.usd`` test token)
and the ``v4`` method (the real PoolManager, our hook and adapter), funds the dev wallets with
gas and test tokens, gives the broker custody liquidity (so users can withdraw), then starts
the relay node and the HTTP server (faucet, chain JSON-RPC, explorer), all on loopback. The
result is a :class:`~settlement_widgets.networks.Network` whose only difference from Sepolia
is its addresses and URLs.

``deterministic=True`` fixes every key (the dev mnemonic's accounts, a broker and a faucet key
derived from fixed seeds) and takes channel nonces and auth challenges from counters, so a
notebook shows the same values on every run.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..addresses import ZERO_ADDRESS
from ..channel.v0_5.core.keccak import keccak256
from ..errors import ConfigurationError, SettlementValueError, UnknownOptionError
from ..keys import PrivateKey
from ..networks import PROTOCOL_V1, Network, local
from .chain_base import chain_instance_id
from .profile import explorer_tx, remove_profile, write_profile
from .provision import mint_test_token

if TYPE_CHECKING:
    from ..aggregator.node.deploy import CrossChainDeployment
    from ..aggregator.node.relayer import BridgeRelayer
    from ..aggregator.node.routes import RouteServer
    from ..channel.v0_5.chain.custody import CustodyClient
    from ..channel.v0_5.node import AssetConfig, NetworkConfig
    from ..channel.v0_5.node.server import RelayNode
    from ..channel.v1 import ChannelProviderV1
    from ..channel.v1.node import NitronodeNode
    from ..channel.v1.node.deploy import ChannelHubDeployment
    from ..v4.deploy.stack import V4Deployment
    from ..wallet import WalletClient
    from .chain import Chain
    from .deploy import ChannelDeployment
    from .faucet import Faucet
    from .http import SandboxHttpServer
    from .provision import ProvisionPlan

__all__ = [
    "LocalSandbox",
    "close_quietly",
    "mint_test_token",
    "sandbox_key",
    "start_relay_and_faucet",
]

_MAX_WALLETS = 8  # dev accounts 1..8 (0 deploys, 9 is spare)
#: ``LocalSandbox(protocol=...)``: the channel method's protocol, by short or profile name
_PROTOCOLS = {
    "v0.5": "v0.5",
    "nitrolite-v0.5": "v0.5",
    "v1": "v1",
    "nitrolite-v1": "v1",
}
_OPTIONS = frozenset(
    {
        "chain",
        "protocol",
        "deterministic",
        "wallets",
        "v4",
        "faucet_cooldown",
        "data_dir",
        "relay_port",
        "http_port",
        "durability",
        "write_profile",
        "token_funding",
        "broker_liquidity",
        "aggregator",
        "bridge_block_time",
        "snapshot",
    }
)


def sandbox_key(role: str) -> PrivateKey:
    """The fixed key of a sandbox role (``"broker"``, ``"faucet"``): public, test use only."""
    return PrivateKey(keccak256(f"settlement_widgets sandbox {role} key".encode()))


class LocalSandbox:
    """A running local network. Use ``async with LocalSandbox() as sb`` (or ``await
    sb.start()`` / ``await sb.aclose()``).

    Parameters: ``chain`` (``"inprocess"``, ``"anvil"`` or a JSON-RPC URL), ``deterministic``,
    ``wallets`` (how many funded dev wallets, 1-8), ``v4`` (deploy the v4 method),
    ``faucet_cooldown`` (seconds between two payouts to one address; 0 = none, like the v0
    faucet), ``data_dir`` (where the relay's SQLite ledger lives; default a temporary
    directory removed on close), ``durability`` (``"normal"``: survives a killed process;
    ``"full"``: also a power cut, with an fsync per commit), ``write_profile`` (also write
    ``$SETTLEMENT_HOME/sandbox/profile.json``), ``token_funding`` (test-token units minted
    to each wallet), ``broker_liquidity`` (units the broker deposits into the custody),
    ``aggregator`` (also start a second chain with test USDC, three bridges and their
    relayer, a WETH/USDC v4 pool and a LI.FI-schema route server at :attr:`lifi_url`; see
    :mod:`~settlement_widgets.aggregator.node`), ``bridge_block_time`` (seconds per block
    the relayer mines while a transfer waits for confirmations), ``snapshot`` (default True:
    resume the chain ``make contracts`` saved after this configuration's deployment instead
    of sending the deployment transactions, which gives the same chain; False always deploys).

    Which configurations start from a snapshot (:mod:`~settlement_widgets.sandbox.snapshot`):
    the in-process chain and anvil, any ``wallets``/``v4``/``token_funding``/
    ``broker_liquidity`` (a configuration without a snapshot deploys once and saves one);
    ``deterministic=False`` resumes the fixed-broker snapshot and funds its random broker
    live on top; ``aggregator=True`` deploys its second chain and its contracts live on top;
    a chain given by URL, and anvil over a ``data_dir`` that holds a relay ledger, always
    deploy. :attr:`started_from` says what happened.
    """

    def __init__(self, **options: Any) -> None:
        unknown = sorted(set(options) - _OPTIONS)
        if unknown:
            import difflib

            hints = [
                f"{name!r}"
                + (
                    f" (did you mean {close[0]!r}?)"
                    if (close := difflib.get_close_matches(name, _OPTIONS, 1))
                    else ""
                )
                for name in unknown
            ]
            raise UnknownOptionError(
                f"LocalSandbox got unknown option(s) {', '.join(hints)}; "
                f"valid options: {', '.join(sorted(_OPTIONS))}"
            )
        self.chain_backend: str = options.get("chain", "inprocess")
        self.deterministic: bool = bool(options.get("deterministic", True))
        self.wallet_count: int = options.get("wallets", 4)
        if not isinstance(self.wallet_count, int) or not 1 <= self.wallet_count <= _MAX_WALLETS:
            raise SettlementValueError(
                f"wallets must be 1..{_MAX_WALLETS}, got {self.wallet_count!r}"
            )
        self.with_v4: bool = bool(options.get("v4", True))
        self.faucet_cooldown: float = float(options.get("faucet_cooldown", 0.0))
        data_dir = options.get("data_dir")
        self._own_dir = data_dir is None
        self.data_dir = Path(data_dir) if data_dir is not None else None
        self.relay_port: int = options.get("relay_port", 0)
        self.http_port: int = options.get("http_port", 0)
        self.durability: str = options.get("durability", "normal")
        self.write_profile: bool = bool(options.get("write_profile", False))
        self.token_funding: int = options.get("token_funding", 1_000_000 * 10**6)
        self.broker_liquidity: int = options.get("broker_liquidity", 10_000_000 * 10**6)
        self.with_aggregator: bool = bool(options.get("aggregator", False))
        self.bridge_block_time: float = float(options.get("bridge_block_time", 0.2))
        self.use_snapshot: bool = bool(options.get("snapshot", True))
        protocol = options.get("protocol", "v0.5")
        if protocol not in _PROTOCOLS:
            raise SettlementValueError(
                f"protocol must be one of {', '.join(sorted(_PROTOCOLS))}, got {protocol!r}"
            )
        #: the channel method's protocol: ``"v0.5"`` (ClearNode relay, Custody) or ``"v1"``
        #: (a Nitronode and a ChannelHub, beside the v0.5 relay that serves the faucet)
        self.protocol: str = _PROTOCOLS[protocol]
        self.hub: ChannelHubDeployment | None = None
        self._faucet_v1: ChannelProviderV1 | None = None
        self.nitronode: NitronodeNode | None = None
        #: ``"snapshot"`` (the chain was resumed from one) or ``"deployed"``, once started
        self.started_from: str | None = None
        self.chain: Chain | None = None
        #: the aggregator's second chain (``aggregator=True``)
        self.second_chain: Chain | None = None
        self.crosschain: CrossChainDeployment | None = None
        self.relayer: BridgeRelayer | None = None
        self.route_server: RouteServer | None = None
        self.deployment: ChannelDeployment | None = None
        self.v4: V4Deployment | None = None
        self.relay: RelayNode | None = None
        self.http: SandboxHttpServer | None = None
        self.faucet: Faucet | None = None
        self._network: Network | None = None
        self._wallets: tuple[WalletClient, ...] = ()
        self._broker_key = sandbox_key("broker") if self.deterministic else PrivateKey.generate()
        self._faucet_key = sandbox_key("faucet") if self.deterministic else PrivateKey.generate()
        self._profile_path: Path | None = None
        #: this chain's identity beside its chain id (see ``Network.instance``), set at start
        self.instance: str | None = None

    # --- what tests and notebooks use ---------------------------------------------------------

    @property
    def network(self) -> Network:
        if self._network is None:
            raise SettlementValueError(
                "the sandbox is not started: use `async with LocalSandbox()`"
            )
        return self._network

    @property
    def wallets(self) -> tuple[WalletClient, ...]:
        """Funded dev wallets (gas and test tokens), deterministic keys."""
        return self._wallets

    def provision_plan(self) -> ProvisionPlan:
        """What this sandbox's deployment phase puts on its chain (see :mod:`.provision`)."""
        from .provision import ProvisionPlan

        return ProvisionPlan(
            wallets=self.wallet_count,
            token_funding=self.token_funding,
            broker_liquidity=self.broker_liquidity,
            v4=self.with_v4,
            broker=self._broker_key.address,
        )

    @property
    def broker_address(self) -> str:
        return self._broker_key.address

    @property
    def faucet_account(self) -> str:
        return self._faucet_key.address

    @property
    def token(self) -> str:
        assert self.deployment is not None, "start the sandbox first"
        return self.deployment.token

    @property
    def relay_url(self) -> str:
        return self.network.node_url

    @property
    def faucet_url(self) -> str:
        return self.network.faucet_url

    @property
    def rpc_url(self) -> str | None:
        return self.network.rpc_url

    @property
    def http_url(self) -> str:
        assert self.http is not None, "start the sandbox first"
        return self.http.url

    @property
    def lifi_url(self) -> str:
        """Base URL of the sandbox's LI.FI-schema route server (``aggregator=True``):
        ``AggregatorProvider(base_url=sb.lifi_url)``."""
        url = self.network.extra.get("lifiUrl")
        if not url:
            raise ConfigurationError(
                "this sandbox has no route server: start it with LocalSandbox(aggregator=True)"
            )
        return str(url)

    @property
    def chain_ids(self) -> tuple[int, ...]:
        """The ids of the sandbox's chains (two with ``aggregator=True``)."""
        return tuple(c.chain_id for c in (self.chain, self.second_chain) if c is not None)

    def chain_on(self, chain_id: int) -> Chain:
        """The running chain with id ``chain_id``."""
        for chain in (self.chain, self.second_chain):
            if chain is not None and chain.chain_id == chain_id:
                return chain
        raise SettlementValueError(
            f"this sandbox runs no chain {chain_id!r} (its chains: {list(self.chain_ids)})"
        )

    def wallets_on(self, chain_id: int) -> tuple[WalletClient, ...]:
        """The dev wallets (same keys as :attr:`wallets`) bound to chain ``chain_id``."""
        chain = self.chain_on(chain_id)
        if chain is self.chain:
            return self._wallets
        return tuple(chain.wallet(i) for i in range(1, self.wallet_count + 1))

    def explorer_tx(self, chain_id: int, tx_hash: str) -> str:
        """The sandbox explorer's page of ``tx_hash`` on chain ``chain_id``."""
        self.chain_on(chain_id)
        return explorer_tx(self.network, chain_id, tx_hash)

    def custody(self, wallet: WalletClient) -> CustodyClient:
        """A custody client of this sandbox's custody contract for ``wallet``."""
        from ..channel.v0_5.chain.custody import CustodyClient

        return CustodyClient(wallet, self.network.contracts.custody)

    # --- lifecycle ----------------------------------------------------------------------------

    async def __aenter__(self) -> LocalSandbox:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def start(self) -> LocalSandbox:
        from .collector import paused_collector

        try:
            with paused_collector():  # ~0.1 s of a first start otherwise (see .collector)
                await self._start()
        except BaseException:
            await self.aclose()
            raise
        return self

    async def _start(self) -> None:
        from ..channel.v0_5.node import AssetConfig, NetworkConfig
        from .chain import InProcessChain
        from .explorer import Explorer, network_labels
        from .http import SandboxHttpServer
        from .jsonrpc import InProcessJsonRpc
        from .snapshot import start_provisioned_chain
        from .v1_node import V1Chain, add_v1_labels, deploy_v1, start_v1_node

        if self.data_dir is None:
            self.data_dir = Path(tempfile.mkdtemp(prefix="settlement-sandbox-"))
        self.data_dir.mkdir(parents=True, exist_ok=True)
        # A relay ledger left in data_dir names the chain it follows by its genesis hash. A
        # chain resumed from an anvil snapshot keeps the snapshot's genesis, so it could pass
        # for that chain: deploy then, and the relay refuses the old ledger as it always has.
        # (The in-process chain gets a genesis of its own when resumed: see pyevm_database.)
        ledger_left = (self.data_dir / "relay.sqlite").exists()
        started = await start_provisioned_chain(
            self.chain_backend,
            self.provision_plan(),
            self._broker_key,
            fixed_broker_key=sandbox_key("broker"),
            snapshots=self.use_snapshot and not (ledger_left and self.chain_backend == "anvil"),
        )
        chain = started.chain
        self.chain = chain
        self.started_from = started.source
        self.deployment = deployment = started.provisioned.channel
        self.v4 = started.provisioned.v4
        self.instance = await chain_instance_id(chain, self.chain_backend)
        deployer = chain.wallet(0)
        self._wallets = tuple(chain.wallet(i) for i in range(1, self.wallet_count + 1))
        broker = chain.wallet_for(self._broker_key)

        self.relay, self.faucet = await start_relay_and_faucet(
            broker,
            NetworkConfig(chain.chain_id, "local", deployment.custody, deployment.adjudicator),
            AssetConfig(
                deployment.token_symbol, deployment.token, chain.chain_id, deployment.token_decimals
            ),
            broker_key=self._broker_key,
            faucet_key=self._faucet_key,
            db_path=self.data_dir / "relay.sqlite",
            port=self.relay_port,
            durability=self.durability,
            deterministic=self.deterministic,
            faucet_cooldown=self.faucet_cooldown,
            # the deployment phase opens no channel: nothing before this block to apply
            start_block=await chain.block_number() + 1,
        )
        relay = self.relay
        rpc = InProcessJsonRpc(chain) if isinstance(chain, InProcessChain) else None
        http = SandboxHttpServer(faucet=self.faucet, rpc=rpc)
        self.http = http
        base = http.start(self.http_port)
        network = local(
            chain_id=chain.chain_id,
            custody=deployment.custody,
            adjudicator=deployment.adjudicator,
            policy_hook=ZERO_ADDRESS,
            settlement_adapter=ZERO_ADDRESS,
            pool_manager=ZERO_ADDRESS,
            node_url=relay.url,
            faucet_url=f"{base}/faucet/requestTokens",
            explorer_base=f"{base}/explorer",
            rpc_url=chain.rpc_url or f"{base}/rpc",
            deployer=deployer.address,
            token=deployment.token,
            instance=self.instance,
            extra={
                "brokerAddress": broker.address,
                "faucetAccount": self._faucet_key.address,
                "wallets": [w.address for w in self._wallets],
                "deterministic": self.deterministic,
                "httpUrl": base,
            },
        )
        v1_chains: list[V1Chain] = []
        if self.protocol == "v1":
            v1_chains.append(await deploy_v1(self, chain, deployer, broker))
            network = replace(
                network,
                contracts=replace(network.contracts, channel_hub=v1_chains[0].hub.hub),
                protocol=PROTOCOL_V1,
            )
        if self.v4 is not None:
            network = self.v4.apply_to(network)
        self._network = network
        labels = network_labels(network)
        if self.with_aggregator:
            from .aggregator_node import start_aggregator_node

            relayer = sandbox_key("bridge relayer") if self.deterministic else PrivateKey.generate()
            network = await start_aggregator_node(self, network, base, labels, relayer)
            if self.protocol == "v1":
                assert self.second_chain is not None
                second = self.second_chain
                v1_chains.append(
                    await deploy_v1(
                        self, second, second.wallet(0), second.wallet_for(self._broker_key)
                    )
                )
                add_v1_labels(self, v1_chains[1])
        if v1_chains:
            network = await start_v1_node(self, network, v1_chains, base)
            await self._start_v1_faucet(network, deployer)
        http.services.explorer = Explorer(
            chain.w3,
            labels=labels,
            custody=deployment.custody,
            token=(deployment.token, deployment.token_symbol, deployment.token_decimals),
        )
        self._network = network
        http.services.funder = self._fund_visitors
        http.set_profile(network.to_json())
        if self.write_profile:
            self._profile_path = write_profile(network)

    async def _start_v1_faucet(self, network: Network, deployer: WalletClient) -> None:
        """The faucet pays as Yellow's v1 faucet does, by off-chain v1 transfers: its account
        gets gas and test tokens and opens a home channel holding them (kept in
        ``data_dir``), and the HTTP faucet pays through it (:class:`~.faucet.V1FaucetPayer`)."""
        from ..channel.v1 import ChannelProviderV1, V1Store
        from .faucet import V1FaucetPayer

        assert self.chain is not None and self.data_dir is not None and self.faucet is not None
        assert self.deployment is not None
        wallet = self.chain.wallet_for(self._faucet_key)
        await deployer.transact(to=wallet.address, value=10**18)
        liquidity = 200 * self.faucet.config.tip_units
        await mint_test_token(deployer, self.deployment.token, wallet.address, liquidity)
        store = V1Store(self.data_dir / "faucet-v1.sqlite", wallet=wallet.address)
        provider = ChannelProviderV1(network, wallet, store=store)
        self._faucet_v1 = provider
        await provider.connect()
        if not any(c.status != "final" for c in provider.channels()):
            await provider.create_channel(provider.node_address, provider.asset, liquidity)
        self.faucet.payer = V1FaucetPayer(provider)

    async def _fund_visitors(self, addresses: list[str]) -> dict[str, Any]:
        """Fund a shared sandbox's visitor wallets (``POST /operator/fund``, :mod:`.visitors`)."""
        from .visitors import fund_visitors

        return await fund_visitors(self, addresses)

    async def restart_relay(self) -> None:
        """Stop the relay node and start a new one on the same port over the same ledger, as
        after a crash and a restart: clients reconnect, and what the relay acknowledged must
        still be there. The faucet is re-attached to the new node."""
        from dataclasses import replace

        from ..channel.v0_5.node import RelayNode

        old = self.relay
        if old is None or self.chain is None:
            raise ConfigurationError(
                "the sandbox is not running: start it before restarting its relay"
            )
        config = replace(old.config, port=old.port)
        custody, chain_id = old.custody, old.chain_id
        await old.aclose()
        relay = RelayNode(config, custody=custody, chain_id=chain_id)
        await relay.start()
        self.relay = relay
        if self.faucet is not None:
            self.faucet.relay = relay

    async def restart_nitronode(self) -> None:
        """Stop the Nitronode and start a new one on the same port over the same ledger and
        chains, as after a crash and a restart: what it acknowledged must still be there,
        and what it had left to do on chain (an escrow deposit to settle) it does now.
        Returns once that work is done too, so a read right after sees a quiet node (the
        work running on behind a caller's reads gave torn snapshots: the escrow chain's hub
        read before the deposit's release, the node's record after)."""
        from ..channel.v1.node import NitronodeNode

        old = self.nitronode
        if old is None:
            raise ConfigurationError("the sandbox runs no Nitronode (protocol='v1')")
        config = replace(old.config, port=old.port)
        await old.aclose()
        node = NitronodeNode(config, chain_view=old.chain_view)
        self.nitronode = await node.start()
        await self.nitronode.settled()

    async def aclose(self) -> None:
        """Stop everything that was started (safe to call twice or after a failed start)."""
        await close_quietly(self.relayer, "stop")
        self.relayer = None
        if self._profile_path is not None:
            remove_profile(self._profile_path, self._network)
            self._profile_path = None
        if self._faucet_v1 is not None:
            await close_quietly(self._faucet_v1, "close")
            self._faucet_v1 = None
        for attr in ("http", "nitronode", "relay", "second_chain", "chain"):
            await close_quietly(getattr(self, attr))
            setattr(self, attr, None)
        if self._own_dir and self.data_dir is not None:
            shutil.rmtree(self.data_dir, ignore_errors=True)
            self.data_dir = None

    def __repr__(self) -> str:
        state = "running" if self._network is not None and self.relay is not None else "stopped"
        return f"LocalSandbox(chain={self.chain_backend!r}, {state})"


async def start_relay_and_faucet(
    broker: WalletClient,
    network: NetworkConfig,
    asset: AssetConfig,
    *,
    broker_key: PrivateKey,
    faucet_key: PrivateKey,
    db_path: Path,
    port: int = 0,
    durability: str = "normal",
    deterministic: bool = False,
    faucet_cooldown: float = 0.0,
    start_block: int = 0,
) -> tuple[RelayNode, Faucet]:
    """Our relay node for one chain's custody (the broker's funds behind it) and the faucet
    paying from its ledger: what every sandbox (local or a twin) serves on loopback.
    ``start_block``: the first block whose custody events a new ledger applies (earlier
    blocks hold none, e.g. the deployment's)."""
    from ..channel.v0_5.chain.custody import CustodyClient
    from ..channel.v0_5.node import RelayConfig, RelayNode
    from .faucet import Faucet, FaucetConfig

    relay = RelayNode(
        RelayConfig(
            db_path=db_path,
            networks=(network,),
            assets=(asset,),
            broker_key=broker_key,
            port=port,
            durability=durability,  # type: ignore[arg-type]
            deterministic=deterministic,
            faucet_account=faucet_key.address,
            poll_interval=0.1,
            start_block=start_block,
        ),
        custody=CustodyClient(broker, network.custody),
        chain_id=network.chain_id,
    )
    await relay.start()
    config = FaucetConfig(
        asset=asset.symbol, decimals=asset.decimals, cooldown_seconds=faucet_cooldown
    )
    return relay, Faucet(relay, faucet_key.address, config)


async def close_quietly(resource: Any, method: str = "aclose") -> None:
    """``await resource.<method>()`` unless ``resource`` is None; shutting down goes on
    whatever one part raises."""
    if resource is not None:
        with contextlib.suppress(Exception):
            await getattr(resource, method)()
