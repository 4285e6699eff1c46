"""The Nitrolite v1 Sepolia twin: the ``sepolia-v1`` profile's addresses on a chain we start.

``sepolia-v1`` (Yellow's public v1 sandbox: a Nitronode, its ChannelHub on Sepolia, the
``yusd`` asset) cannot be reached from here, yet its code path (the public profile read from
the environment, a token learnt from the node, Etherscan links, a challenge period waited out
in real blocks, a faucet that pays by an off-chain v1 transfer) must run before a user runs
it. :class:`SepoliaV1Twin` starts, like the v0.5 :class:`~.twin.SepoliaTwin`:

- anvil with chain id 11155111 mining real blocks on a fast clock (default: an hour of chain
  time per block, so the node's shortest challenge period, a day, passes in 24 blocks);
- our contracts **at the public sandbox's addresses** (:data:`SEPOLIA_V1_DEPLOYMENT`, from
  Nitrolite's ``contracts/deployments/11155111/*sandbox-v1_3_0*`` and
  ``nitronode/chart/config/sandbox-v1``): the ``ECDSAValidator``, the ``SessionKeyValidator``
  (registered by the node as validator 1, its one-day activation delay already behind it, as
  on Sepolia), the ``yusd`` token, and the ``ChannelHub``
  constructed as deployed there, ``(defaultSigValidator, node)`` with the validator's
  Sepolia address and the twin node's address. Each is deployed, then its runtime code and
  the storage its constructor wrote move to the Sepolia address (:func:`~.twin.relocate`), in
  dependency order so no constructor argument names a stale address;
- a second anvil with chain id 84532, Base Sepolia, which the public node serves too
  (``blockchains.yaml``): the same contracts at the same addresses there
  (:data:`BASE_SEPOLIA_V1_DEPLOYMENT`: Nitrolite's ``contracts/deployments/84532``
  ``sandbox-v1_3_0``; ``yusd`` has 6 decimals there as on Sepolia), relocated the same way,
  with the same clock;
- our Nitronode on loopback serving both hubs and the asset's token on both chains, each
  chain with its confirmation delay (Sepolia's 36 s, Base Sepolia's 4 s), its vault funded
  on both, and the faucet paying as Yellow's v1 faucet does, by an off-chain v1 transfer
  from the faucet account's home channel on Sepolia (:class:`~.faucet.V1FaucetPayer`).

:meth:`SepoliaV1Twin.env` gives what a real user sets for ``sepolia-v1``:
``SETTLEMENT_NETWORK=sepolia-v1``, ``SEPOLIA_RPC_URL``, ``BASE_SEPOLIA_RPC_URL`` (so
``network.on_chain(84532)`` reaches the second chain), ``SETTLEMENT_RELAY_URL`` (the node's
WebSocket), ``SETTLEMENT_FAUCET_URL`` and ``SETTLEMENT_PRIVATE_KEY`` of a funded twin key
(ETH and ``yusd`` on both chains).
Nothing about the twin is deterministic beyond its keys and addresses: channel nonces are the
SDK's, as on the public network, so a second run on the same twin is a second day's run.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Final

from ..addresses import validate_address
from ..errors import ConfigurationError
from ..keys import PrivateKey
from ..networks import SEPOLIA_V1, SEPOLIA_V1_CHAINS, sepolia_from_env
from .local import close_quietly, mint_test_token, sandbox_key
from .twin import TwinBase, TwinContracts, relocate

if TYPE_CHECKING:
    from ..channel.v1 import ChannelProviderV1, V1Store
    from ..channel.v1.chain.hub import HubChainView
    from ..channel.v1.node import NitronodeNode
    from ..wallet import WalletClient
    from .chain import AnvilChain

__all__ = [
    "BASE_SEPOLIA_CHAIN_ID",
    "BASE_SEPOLIA_V1_DEPLOYMENT",
    "SEPOLIA_V1_DEPLOYMENT",
    "SepoliaV1Deployment",
    "SepoliaV1Twin",
]

_ETH: Final = 10**18
#: the variable a ``sepolia-v1`` user sets to reach Base Sepolia
_BASE_RPC_ENV: Final = str(SEPOLIA_V1_CHAINS[0]["rpcEnv"])


@dataclass(frozen=True)
class SepoliaV1Deployment:
    """Where Yellow's v1 sandbox has its contracts on Sepolia, and how its node is set up
    there: what the twin reproduces (addresses EIP-55)."""

    channel_hub: str
    ecdsa_validator: str
    session_key_validator: str
    token: str
    token_name: str
    token_symbol: str
    token_decimals: int
    #: the node's ``confirmation_delay_secs`` for Sepolia (3 blocks of 12 s)
    confirmation_delay_secs: int
    #: the chain's name in the node's ``get_config``
    chain_name: str
    #: the chain these addresses are on
    chain_id: int = SEPOLIA_V1.chain_id

    def __post_init__(self) -> None:
        for name in ("channel_hub", "ecdsa_validator", "session_key_validator", "token"):
            object.__setattr__(self, name, validate_address(getattr(self, name), field=name))


#: Yellow's v1 sandbox on Sepolia (Nitrolite ``contracts/deployments/11155111``: ChannelHub,
#: ECDSAValidator and SessionKeyValidator of the ``sandbox-v1_3_0`` deployment, PremintERC20
#: ``yusd``; ``nitronode/chart/config/sandbox-v1/assets.yaml`` and ``blockchains.yaml``)
SEPOLIA_V1_DEPLOYMENT: Final = SepoliaV1Deployment(
    channel_hub="0x5dba8515af063db0c243c15ece7b99f91459c7c3",
    ecdsa_validator="0xb1cDEA413a080b3c6Eb3D37e1C24D8CD10cE5844",
    session_key_validator="0xB08901fb3c9952f9e33469169A1E3290FaD79e22",
    token="0x67a5F0B0553E22689A539b80cBE4A1Cd126E2Bde",
    token_name="Yellow USD",
    token_symbol="yusd",
    token_decimals=6,
    confirmation_delay_secs=36,
    chain_name="ethereum_sepolia",
)

#: Base Sepolia, the public node's other chain the ``sepolia-v1`` profile reaches
#: (:data:`~settlement_widgets.networks.SEPOLIA_V1_CHAINS`)
BASE_SEPOLIA_CHAIN_ID: Final = int(SEPOLIA_V1_CHAINS[0]["chainId"])

#: Yellow's v1 sandbox on Base Sepolia: the same ChannelHub, validators and ``yusd`` token
#: addresses as on Sepolia (Nitrolite ``contracts/deployments/84532``, ``sandbox-v1_3_0``:
#: the hub constructed with the same ECDSA validator; PremintERC20 "Yellow USD", ``yusd``,
#: 6 decimals), the node's 4-second confirmation delay there (``blockchains.yaml``)
BASE_SEPOLIA_V1_DEPLOYMENT: Final = replace(
    SEPOLIA_V1_DEPLOYMENT,
    confirmation_delay_secs=4,
    chain_name=str(SEPOLIA_V1_CHAINS[0]["name"]),
    chain_id=BASE_SEPOLIA_CHAIN_ID,
)


class SepoliaV1Twin(TwinBase):
    """A running ``sepolia-v1`` twin: ``async with SepoliaV1Twin() as twin`` then
    ``twin.env()``.

    ``user_key`` is the key handed out as ``SETTLEMENT_PRIVATE_KEY`` (a fixed public test key
    by default), funded with ``user_eth`` ETH and ``user_tokens`` units of ``yusd`` on chain;
    ``node_liquidity`` goes into the node's vault on the hub (what it pays receivers from);
    ``faucet_tips`` is how many tips the faucet's home channel holds.
    ``confirmation_delay_secs``: the node's on Sepolia, Sepolia's by default (on Base
    Sepolia it is always the public node's, :data:`BASE_SEPOLIA_V1_DEPLOYMENT`). The user
    and the node's vault are funded alike on both chains.
    """

    PROFILE = "sepolia-v1"
    _CLOSE_ORDER = ("http", "_faucet_provider", "nitronode", "base_chain", "chain")

    def __init__(
        self,
        *,
        block_time: float = 0.5,
        seconds_per_block: int = 3600,
        user_key: PrivateKey | None = None,
        user_eth: int = 100,
        user_tokens: int = 1_000 * 10**6,
        node_liquidity: int = 10_000_000 * 10**6,
        faucet_tips: int = 200,
        confirmation_delay_secs: int = SEPOLIA_V1_DEPLOYMENT.confirmation_delay_secs,
        node_port: int = 0,
        http_port: int = 0,
    ) -> None:
        super().__init__(
            block_time=block_time,
            seconds_per_block=seconds_per_block,
            user_key=user_key or sandbox_key("sepolia v1 twin user"),
            user_eth=user_eth,
            user_tokens=user_tokens,
            http_port=http_port,
        )
        if confirmation_delay_secs < 0 or faucet_tips < 0 or node_liquidity < 0:
            raise ConfigurationError(
                "confirmation_delay_secs, faucet_tips and node_liquidity must be >= 0"
            )
        self._node_key = sandbox_key("sepolia v1 twin node")
        self._faucet_key = sandbox_key("sepolia v1 twin faucet")
        self.node_liquidity = node_liquidity
        self.faucet_tips = faucet_tips
        self.confirmation_delay_secs = confirmation_delay_secs
        self.node_port = node_port
        self.nitronode: NitronodeNode | None = None
        self._faucet_provider: _ClosingProvider | None = None
        #: the second chain, Base Sepolia (84532), and where its contracts were moved from
        self.base_chain: AnvilChain | None = None
        self.base_contracts: TwinContracts | None = None

    @property
    def node_address(self) -> str:
        """The twin node's address (the hub's ``NODE``, every channel's other side)."""
        return self._node_key.address

    async def _start(self) -> None:
        import asyncio

        from ..channel.v1.node import (
            NitronodeConfig,
            NitronodeNode,
            NodeAsset,
            NodeChain,
            NodeToken,
        )
        from .faucet import Faucet, FaucetConfig
        from .http import SandboxHttpServer

        d, b = SEPOLIA_V1_DEPLOYMENT, BASE_SEPOLIA_V1_DEPLOYMENT
        chain = await self._start_chain(d.chain_id)
        self.base_chain = await self._start_anvil(b.chain_id)
        assert self._dir is not None
        # the two chains are provisioned side by side: neither waits on the other
        sepolia_view, base_view = await asyncio.gather(
            self._provision(chain, d), self._provision(self.base_chain, b)
        )

        nitronode = NitronodeNode(
            NitronodeConfig(
                db_path=self._dir / "nitronode.sqlite",
                node_key=self._node_key,
                chains=(
                    NodeChain(
                        d.chain_id,
                        d.channel_hub,
                        name=d.chain_name,
                        confirmation_delay_secs=self.confirmation_delay_secs,
                    ),
                    NodeChain(
                        b.chain_id,
                        b.channel_hub,
                        name=b.chain_name,
                        confirmation_delay_secs=b.confirmation_delay_secs,
                    ),
                ),
                assets=(
                    NodeAsset(
                        symbol=d.token_symbol,
                        decimals=d.token_decimals,
                        tokens=tuple(
                            NodeToken(x.chain_id, x.token, x.token_decimals) for x in (d, b)
                        ),
                        name=d.token_name,
                        suggested_blockchain_id=d.chain_id,
                    ),
                ),
                port=self.node_port,
            ),
            chain_view={d.chain_id: sepolia_view, b.chain_id: base_view},
        )
        self.nitronode = await nitronode.start()

        config = FaucetConfig(asset=d.token_symbol, decimals=d.token_decimals)
        self.faucet = Faucet(None, self._faucet_key.address, config)
        http = SandboxHttpServer(faucet=self.faucet)
        self.http = http
        base = http.start(self.http_port)
        # the profile exactly as env() makes get_network() build it
        self._network = sepolia_from_env(
            SEPOLIA_V1,
            {
                "SEPOLIA_RPC_URL": str(chain.rpc_url),
                "SETTLEMENT_RELAY_URL": nitronode.url,
                "SETTLEMENT_FAUCET_URL": f"{base}/faucet/requestTokens",
                _BASE_RPC_ENV: str(self.base_chain.rpc_url),
            },
        )
        await self._start_faucet(chain, chain.wallet(0))

    def env(self) -> dict[str, str]:
        """:meth:`TwinBase.env` and ``BASE_SEPOLIA_RPC_URL``, the second chain's JSON-RPC,
        as a user reaching Base Sepolia through the public profile sets it."""
        rpc_url = self.network.on_chain(BASE_SEPOLIA_CHAIN_ID).rpc_url
        assert rpc_url is not None
        return super().env() | {_BASE_RPC_ENV: rpc_url}

    async def _provision(self, chain: AnvilChain, d: SepoliaV1Deployment) -> HubChainView:
        """One chain as the public sandbox has it: our contracts at its addresses, gas for
        the node and the user, the user's ``yusd``, the node's vault funded, the session-key
        validator registered and active, then the twin's clock. Returns the node's view of
        the hub there."""
        from ..channel.v1.chain.hub import ChannelHubClient, HubChainView

        contracts = await _deploy_at_sepolia_v1_addresses(chain, self.node_address)
        if d.chain_id == SEPOLIA_V1.chain_id:
            self.contracts = contracts
        else:
            self.base_contracts = contracts
        deployer = chain.wallet(0)
        node = chain.wallet_for(self._node_key)
        user = self._user_key.address
        for who, eth in ((node.address, 100), (user, self.user_eth)):
            await chain.request("anvil_setBalance", who, hex(eth * _ETH))
        await mint_test_token(deployer, d.token, user, self.user_tokens)
        node_hub = ChannelHubClient(node, d.channel_hub)
        if self.node_liquidity:
            await mint_test_token(deployer, d.token, node.address, self.node_liquidity)
            await node_hub.approve(d.token, self.node_liquidity)
            await node_hub.deposit_to_node(d.token, self.node_liquidity)
        await self._register_session_key_validator(chain, deployer, d)
        await self._run_clock(chain)
        return HubChainView(node_hub)

    async def _register_session_key_validator(
        self, chain: AnvilChain, deployer: WalletClient, d: SepoliaV1Deployment
    ) -> None:
        """The node registers the session-key validator at its public address as validator
        id 1 (relayed by the deployer), and the chain's clock moves past the hub's activation
        delay: on the public chains that registration is history older than a day, so
        session-key states hold on chain from the user's first block, here too."""
        from ..channel.v1.node.deploy import ChannelHubDeployment, register_session_key_validator

        deployment = ChannelHubDeployment(
            chain_id=d.chain_id,
            hub=d.channel_hub,
            validator=d.ecdsa_validator,
            token=d.token,
            node=self.node_address,
            deployer=deployer.address,
            token_decimals=d.token_decimals,
            token_symbol=d.token_symbol,
            session_key_validator=d.session_key_validator,
        )
        await register_session_key_validator(chain, deployment, self._node_key, deployer)

    async def _start_faucet(self, chain: AnvilChain, deployer: WalletClient) -> None:
        """The faucet account gets gas and ``faucet_tips`` tips of ``yusd``, opens a home
        channel holding them (a user of the twin like any other, through the public
        profile), and the HTTP faucet pays through it."""
        from ..channel.v1 import ChannelProviderV1, V1Store
        from .faucet import V1FaucetPayer

        assert self.faucet is not None and self._dir is not None
        d = SEPOLIA_V1_DEPLOYMENT
        wallet = chain.wallet_for(self._faucet_key)
        await chain.request("anvil_setBalance", wallet.address, hex(10 * _ETH))
        liquidity = self.faucet_tips * self.faucet.config.tip_units
        store = V1Store(self._dir / "faucet-v1.sqlite", wallet=wallet.address)
        provider = ChannelProviderV1(self.network, wallet, store=store)
        self._faucet_provider = _ClosingProvider(provider, store)
        await provider.connect()
        if liquidity:
            await mint_test_token(deployer, d.token, wallet.address, liquidity)
            await provider.create_channel(provider.node_address, provider.asset, liquidity)
        self.faucet.payer = V1FaucetPayer(provider)


class _ClosingProvider:
    """The faucet's provider and the store it was given (a provider leaves a store it did not
    open to its owner), closed together by ``aclose``."""

    def __init__(self, provider: ChannelProviderV1, store: V1Store) -> None:
        self.provider = provider
        self.store = store

    async def aclose(self) -> None:
        await close_quietly(self.provider, "close")
        with contextlib.suppress(Exception):
            self.store.close()


async def _deploy_at_sepolia_v1_addresses(chain: AnvilChain, node: str) -> TwinContracts:
    """Deploy the validators and the token, move them to their public addresses (the same
    on Sepolia and Base Sepolia), then the hub constructed with the ECDSA validator's public
    address and ``node``, moved to the hub's public address. The hub keeps its own address
    nowhere (its signatures and ids read ``address(this)``), so nothing in its code is
    patched. Its engines (externally
    linked libraries) are deployed and linked by ``deploy_contract`` and stay where they were
    deployed: the moved code calls them at the addresses linked into it."""
    from .deploy import deploy_contract

    d = SEPOLIA_V1_DEPLOYMENT
    deployer = chain.wallet(0)
    moved: dict[str, tuple[str, str]] = {}

    async def place(name: str, deployed: str, target: str) -> None:
        await relocate(chain, deployed, target, patch_self=False)
        moved[name] = (deployed, target)

    ecdsa = await deploy_contract(deployer, "ECDSAValidator")
    await place("ECDSAValidator", ecdsa.address, d.ecdsa_validator)
    session_keys = await deploy_contract(deployer, "SessionKeyValidator")
    await place("SessionKeyValidator", session_keys.address, d.session_key_validator)
    token = await deploy_contract(
        deployer, "TestToken", d.token_name, d.token_symbol, deployer.address
    )
    await place("TestToken", token.address, d.token)
    hub = await deploy_contract(deployer, "ChannelHub", d.ecdsa_validator, node)
    await place("ChannelHub", hub.address, d.channel_hub)
    return TwinContracts(moved)
