"""What every part of :class:`~.provider.ChannelProviderV1` stands on: construction,
identity, events, the connection to the node, units and the write-ahead of signed states.

:class:`ProviderV1Base` is the first layer; :mod:`.onchain` (the channel's on-chain steps)
and :mod:`.transfers` (off-chain transfers, sync, balances) extend it in that order.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Mapping
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Final, Self

from ....addresses import validate_address
from ....errors import (
    ChannelNotFoundError,
    ChannelStateError,
    ConfigurationError,
    InvalidAmountError,
    RelayError,
    SettlementValueError,
    UnknownOptionError,
)
from ....networks import PROTOCOL_V1, Network
from ...models import Channel
from ...v0_5.core.amounts import format_amount
from ..chain.hub import ChannelHubClient
from ..core.client_calls import ChannelDefaultSigner
from ..core.decimals import _PLAIN_AMOUNT, from_units, sdk_decimal_string, to_units
from ..core.transitions import transition_to_intent
from .rpc_client import V1RpcClient
from .store import V1Store

if TYPE_CHECKING:
    from ....signer import Signer

__all__ = ["EVENTS", "ProviderV1Base", "default_v1_store_path"]

_log = logging.getLogger(__name__)

EVENTS: Final = (
    "channel_created",
    "channel_updated",
    "channel_challenged",
    "channel_closed",
    "transfer",
    "balance",
)

#: transition types (Nitrolite v1.4.1 ``core/types.ts``)
_ACK, _DEPOSIT, _WITHDRAW, _SEND, _RECEIVE, _FINALIZE = 1, 10, 11, 30, 31, 200
_MUTUAL_LOCK, _ESCROW_DEPOSIT, _ESCROW_LOCK, _ESCROW_WITHDRAW = 120, 20, 110, 21
_MIGRATE, _MIGRATE_FINALIZE = 100, 101
_QUORUM_WALLET: Final = b"\xa1"


def default_v1_store_path(network: Network, wallet: str) -> Any:
    """``$SETTLEMENT_HOME/channel/<network>-v1[-<chain id>][-<chain instance>]-<wallet>.sqlite``:
    the chain id is named for a profile seen from another chain its node serves
    (:meth:`~settlement_widgets.networks.Network.on_chain`), since a store belongs to one
    chain and one ChannelHub and the same wallet may keep stores on both."""
    from ...store_path import default_store_path

    others = {int(c["chainId"]) for c in network.extra.get("v1Chains", ())}
    name = f"{network.name}-v1" + (f"-{network.chain_id}" if network.chain_id in others else "")
    return default_store_path(name, wallet, network.instance)


class ProviderV1Base:
    """Construction, identity, events, connection, write-ahead and reads of the v1 provider."""

    if TYPE_CHECKING:  # implemented by ChannelProviderV1 (recovery needs every layer)

        async def recover(self) -> list[str]: ...

    def __init__(
        self,
        network: Network,
        wallet: Signer,
        *,
        store: V1Store | None = None,
        client: V1RpcClient | None = None,
        wait_for_confirmation: bool = True,
        **options: Any,
    ) -> None:
        if options:
            raise UnknownOptionError(
                f"ChannelProviderV1 got unknown option(s) {', '.join(sorted(options))}"
            )
        if not isinstance(network, Network) or network.protocol != PROTOCOL_V1:
            raise ConfigurationError(
                "ChannelProviderV1 needs a Network whose protocol is 'nitrolite-v1' "
                "(get_network('sepolia-v1') or LocalSandbox(protocol='v1').network); "
                "a v0.5 network takes ChannelProvider"
            )
        from ....signer import Signer

        if not isinstance(wallet, Signer):
            raise SettlementValueError(
                f"wallet must be a Signer (a WalletClient or a BrowserWallet), "
                f"got {type(wallet).__name__}"
            )
        assert network.contracts.channel_hub is not None  # Network checks it for v1
        self.network = network
        self.wallet = wallet
        self.hub = ChannelHubClient(wallet, network.contracts.channel_hub)
        #: our hub on the node's other chains (escrow operations), by chain id
        self._hubs_elsewhere: dict[int, ChannelHubClient] = {}
        self._own_store = store is None
        self._store = store
        self._client = client or V1RpcClient(network.node_url)
        self._client.state_signer = ChannelDefaultSigner(wallet)
        self._client.on_signed = self._on_signed
        self._connected = False
        self._connect_lock = asyncio.Lock()
        self._op_lock = asyncio.Lock()
        self._listeners: dict[str, list[Callable[..., Any]]] = {e: [] for e in EVENTS}
        self._node_address: str | None = None
        #: the node's ``confirmation_delay_secs`` for this chain (``get_config``)
        self._confirmation_delay = 0
        self._wait_for_confirmation = bool(wait_for_confirmation)
        self._asset = network.asset_symbol
        self._decimals = network.asset_decimals
        self._token: str | None = network.token
        #: the state the wallet signed last (the client adds the node's signature to it)
        self._last_signed: Mapping[str, Any] | None = None
        #: transfers sent and not yet answered, in send order (see TransferOps.transfer);
        #: typed loosely here, the layer that pipelines owns the entries
        self._pipeline: list[Any] = []
        #: a state in flight was refused: those sent after it will be too, so nothing is
        #: built on them; cleared once the pipeline is empty
        self._pipeline_broken = False
        #: pipelined transfers answered and waiting to be stored together (``(state,
        #: recipient, future)``, see ``TransferOps._transfer_recorded``)
        self._done_batch: list[tuple[Mapping[str, Any], str, asyncio.Future[Any]]] = []

    # --- identity -----------------------------------------------------------------------

    @property
    def address(self) -> str:
        return self.wallet.address

    @property
    def store(self) -> V1Store:
        if self._store is None:
            self._store = V1Store(
                default_v1_store_path(self.network, self.wallet.address),
                wallet=self.wallet.address,
                chain_id=self.network.chain_id,
                channel_hub=self.network.contracts.channel_hub,
                chain_instance=self.network.instance,
            )
        return self._store

    @property
    def client(self) -> V1RpcClient:
        return self._client

    @property
    def node_address(self) -> str:
        """The node's address (every home channel's other participant), once connected."""
        if self._node_address is None:
            raise ChannelStateError("not connected yet: await provider.connect() first")
        return self._node_address

    #: the v0.5 name of the counterparty, so code written for either provider reads the same
    broker_address = node_address

    @property
    def asset(self) -> str:
        return self._asset

    @property
    def token(self) -> str:
        if self._token is None:
            raise ChannelStateError("not connected yet: await provider.connect() first")
        return self._token

    @property
    def decimals(self) -> int:
        return self._decimals

    def __repr__(self) -> str:
        return (
            f"ChannelProviderV1(network={self.network.name!r}, wallet={self.address!r}, "
            f"asset={self._asset!r})"
        )

    # --- events -------------------------------------------------------------------------

    def on(self, event: str, callback: Callable[..., Any]) -> Callable[[], None]:
        """Call ``callback(payload)`` on ``event`` (one of :data:`EVENTS`); returns the
        unsubscribe function."""
        if event not in self._listeners:
            raise UnknownOptionError(f"unknown event {event!r}; valid: {', '.join(EVENTS)}")
        self._listeners[event].append(callback)

        def unsubscribe() -> None:
            with contextlib.suppress(ValueError):
                self._listeners[event].remove(callback)

        return unsubscribe

    def off(self, event: str, callback: Callable[..., Any]) -> None:
        """Stop calling ``callback`` on ``event`` (no-op if it was not subscribed)."""
        with contextlib.suppress(KeyError, ValueError):
            self._listeners[event].remove(callback)

    def _emit(self, event: str, payload: Any) -> None:
        for callback in list(self._listeners[event]):
            try:
                callback(payload)
            except Exception:  # a listener's bug must not break an operation
                _log.exception("a %s listener failed", event)

    # --- connection ---------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        return await self.connect()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def connect(self) -> Self:
        """Connect, check the node serves this network, pick the asset, recover."""
        async with self._connect_lock:
            if self._connected:
                return self
            await self._client.connect()
            config = await self._client.get_config()
            self._check_config(config)
            await self._pick_asset()
            self._connected = True
        await self.recover()
        return self

    def _check_config(self, config: Mapping[str, Any]) -> None:
        hub = self.network.contracts.channel_hub
        chains = config.get("blockchains") or []
        for chain in chains:
            if int(chain.get("id", chain.get("blockchainId", 0))) == self.network.chain_id:
                served = validate_address(
                    chain.get("channelHubAddress") or chain.get("contractAddress"),
                    field="channel_hub_address",
                )
                if served != hub:
                    raise ConfigurationError(
                        f"the node at {self.network.node_url} uses ChannelHub {served} on chain "
                        f"{self.network.chain_id}, the network profile says {hub}"
                    )
                self._confirmation_delay = int(chain.get("confirmationDelaySecs") or 0)
                break
        else:
            raise ConfigurationError(
                f"the node at {self.network.node_url} does not serve chain "
                f"{self.network.chain_id} (it serves "
                f"{', '.join(str(c.get('id', c.get('blockchainId'))) for c in chains) or 'none'})"
            )
        self._node_address = validate_address(config["nodeAddress"], field="node_address")

    async def _pick_asset(self) -> None:
        assets = await self._client.get_assets()
        for entry in assets:
            if str(entry.get("symbol", "")).lower() == self._asset.lower():
                self._asset = str(entry["symbol"])
                self._decimals = int(entry["decimals"])
                break
        else:
            raise ConfigurationError(
                f"the node does not list asset {self._asset!r} (it lists "
                f"{', '.join(str(a.get('symbol')) for a in assets) or 'none'})"
            )
        self._token = await self._client.assets.token_address(self._asset, self.network.chain_id)
        self._client.home_blockchains[self._asset] = self.network.chain_id

    async def close(self) -> None:
        """Close the node connection, the wallets this provider opened on other chains and
        the store (if this provider opened it)."""
        await self._client.close()
        hubs, self._hubs_elsewhere = self._hubs_elsewhere, {}
        for hub in hubs.values():
            await hub.signer.aclose()
        if self._own_store and self._store is not None:
            self._store.close()
            self._store = None
        self._connected = False

    # --- units --------------------------------------------------------------------------

    def _display(self, units: int, field: str = "amount") -> str:
        if isinstance(units, bool) or not isinstance(units, int) or units < 0:
            raise InvalidAmountError(f"{field} must be a non-negative integer, got {units!r}")
        return sdk_decimal_string(from_units(units, self._decimals))

    def _amount(self, units: int) -> str:
        """``units`` of the asset as a person reads them (``10 yusd``), for messages: exact
        plain notation (never smallest units, a float or an exponent)."""
        return format_amount(units, self._decimals, self._asset)

    def _units(self, display: Any) -> int:
        text = str(display)
        if _PLAIN_AMOUNT.fullmatch(text):  # a plain decimal: to_units reads its digits as is
            return to_units(text, self._decimals)
        return to_units(Decimal(text), self._decimals)

    # --- write-ahead --------------------------------------------------------------------

    def _on_signed(self, state: Mapping[str, Any], definition: Mapping[str, Any] | None) -> None:
        """Runs between the wallet's signature and the request to the node (see
        :attr:`~settlement_widgets.channel.v1.core.client_calls.V1ClientCore.on_signed`).

        The write-ahead is fsynced for every state but a transfer out: that state only
        lowers this wallet's balance, the node fsyncs it before it co-signs (so what the
        user is told happened is durable there, as the v0.5 relay's ledger is for the v0.5
        client), and a killed process keeps it anyway (WAL, ``synchronous=NORMAL``). A
        power cut may take it: the store then holds the state before it, the next transfer
        finds the node ahead and builds on the node's latest, and :meth:`sync` records the
        transfer's history line from the node's. A channel's creation, deposits,
        withdrawals, closes and acknowledgements of what we received stay fsynced."""
        self._last_signed = state
        transfer_out = definition is None and int(state["transition"]["type"]) == _SEND
        with self.store.transaction(durable=not transfer_out):
            self.store.put_state(state)
            if definition is not None:
                self.store.put_channel(
                    state["home_channel_id"],
                    asset=state["asset"],
                    definition=definition,
                    token=state["home_ledger"]["token_address"],
                    chain_id=int(state["home_ledger"]["blockchain_id"]),
                    status="opening",
                )

    @contextlib.asynccontextmanager
    async def _node_may_refuse(self) -> AsyncIterator[None]:
        """Around a call that signs a state and sends it: if the node answers with a refusal
        (:class:`RelayError`, not a lost connection), the state written before sending is
        dropped from the store (:meth:`.store.V1Store.forget_refused`)."""
        self._last_signed = None
        try:
            yield
        except RelayError:
            refused = self._last_signed
            if refused is not None and not refused.get("node_sig"):
                self.store.forget_refused(refused)
            raise

    # --- reading ------------------------------------------------------------------------

    def _hub_address(self, chain_id: int) -> str:
        """Our hub's address on ``chain_id`` (a migrated channel's home is another chain)."""
        if chain_id == self.network.chain_id:
            return self.hub.address
        return str(self.network.on_chain(chain_id).contracts.channel_hub)

    def channels(self) -> list[Channel]:
        return [self.get_channel(c["channel_id"]) for c in self.store.channels()]

    def get_channel(self, channel_id: str) -> Channel:
        """The channel as the store has it (the latest co-signed state of its epoch)."""
        record = self.store.channel(channel_id)
        if record is None:
            raise ChannelNotFoundError(f"no channel {channel_id} in this provider's store")
        states = [
            s
            for s in self.store.states(record["asset"])
            if str(s.get("home_channel_id", "")).lower() == record["channel_id"]
        ]
        signed = [s for s in states if s.get("user_sig") and s.get("node_sig")]
        latest = signed[-1] if signed else (states[-1] if states else None)
        txs = {t["step"]: t["hash"] for t in self.store.txs(record["channel_id"])}
        d = record["definition"]
        ledger = latest["home_ledger"] if latest else {}
        kind = int(latest["transition"]["type"]) if latest else _ACK
        return Channel(
            id=record["channel_id"],
            status=record["status"],
            version=int(latest["version"]) if latest else 0,
            intent=transition_to_intent(kind).name,
            state_hash=str(latest["id"]) if latest else "",
            adjudicator=self._hub_address(int(record["chain_id"])),
            challenge_period=int(d["challenge"]),
            nonce=int(d["nonce"]),
            tx_hashes=txs,
            participants=(self.address, self._node_address or ""),
            token=record["token"],
            amount=self._units(ledger.get("user_balance", "0")),
            chain_id=record["chain_id"],
            asset=record["asset"],
        )
