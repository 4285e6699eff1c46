"""``ChannelProviderV1``: the spec's channel operations on Nitrolite v1 (Nitronode, ChannelHub).

The same public operations as the v0.5 :class:`~settlement_widgets.channel.ChannelProvider`
(``create_channel``, ``transfer``, ``withdraw``, ``close_channel``, ``challenge``,
``checkpoint``, ``balances``, ``channels``, ``get_channel``), driven by the v1 methods, plus
v1's app sessions (:mod:`.app_sessions`). What changes underneath (reference/nitrolite-v1 §9):

- no login: every request that moves value carries a state the wallet signed (EIP-191 over
  the packed state, validator byte 0x00), and the node answers with its own signature;
- one state chain per (wallet, asset): a deposit, a transfer, a withdrawal and the close are
  consecutive versions of it, and a home channel on the ``ChannelHub`` holds the funds;
- the node pushes nothing: what a counterparty did is read (``get_latest_state``,
  ``get_balances``), so :meth:`balances` and :meth:`sync` ask.

Persistence follows the v0.5 provider's rule, persist before you rely on it
(:class:`~.store.V1Store`): a state is written when the wallet has signed it and before the
node sees it, the node's signature is added before the call returns, and the on-chain step a
co-signed state needs is written ``pending`` before it is sent. :meth:`recover` (run by
:meth:`connect`) finishes what a crash interrupted: it adopts the node's signature of a state
the node accepted, resubmits one it never saw, and sends on-chain steps the chain does not
show yet.

Amounts are integers in the asset's smallest units (``10**decimals`` of the node's asset
table); the wire's display-unit decimal strings are made and read at the edge.
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
    InsufficientBalanceError,
    InvalidAmountError,
    RelayError,
    SettlementValueError,
    TransactionFailedError,
    UnknownOptionError,
)
from ....networks import PROTOCOL_V1, Network
from ...models import Channel, Transfer, Tx
from ..chain.hub import ChannelHubClient, HubTx, contract_definition
from ..core.calldata import contract_state_from_wire
from ..core.client_calls import ChannelDefaultSigner
from ..core.decimals import from_units, sdk_decimal_string, to_units
from ..core.state import pack_challenge_state
from ..core.transitions import transition_to_intent
from .app_sessions import AppSessionsMixin
from .nonces import free_channel_nonce
from .rpc_client import V1RpcClient
from .store import StoredTransfer, V1Store

if TYPE_CHECKING:
    from ....signer import Signer

__all__ = ["EVENTS", "ChannelProviderV1", "default_v1_store_path"]

_log = logging.getLogger(__name__)

EVENTS: Final = (
    "channel_created",
    "channel_updated",
    "channel_challenged",
    "channel_closed",
    "transfer",
    "balance",
)

#: transition types (reference §6.2)
_ACK, _DEPOSIT, _WITHDRAW, _SEND, _RECEIVE, _FINALIZE = 1, 10, 11, 30, 31, 200
_QUORUM_WALLET: Final = b"\xa1"


def default_v1_store_path(network: Network, wallet: str) -> Any:
    """``$SETTLEMENT_HOME/channel/<network>-v1[-<chain instance>]-<wallet>.sqlite``."""
    from ...v0_5.client.store import default_store_path

    return default_store_path(f"{network.name}-v1", wallet, network.instance)


class ChannelProviderV1(AppSessionsMixin):
    """The ``channel`` method on a Nitrolite v1 network: one wallet, one asset, one store.

    ``ChannelProviderV1(network, wallet)`` does no I/O; :meth:`connect` (or the first
    operation) connects to ``network.node_url``, checks that the node serves
    ``network.chain_id`` with ``network.contracts.channel_hub``, picks the asset
    (``network.asset_symbol``) and recovers unfinished work. ``async with`` closes it.

    An on-chain step (open with a deposit, deposit, withdraw, close) returns once the node
    counts it: after the chain is the node's ``confirmation_delay_secs`` past the step's
    block (36 s on Sepolia), so the next transfer is not refused as "still ongoing".
    ``wait_for_confirmation=False`` returns as soon as the transaction is mined (the node
    then refuses states on top of it until the delay has passed).
    """

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
        """Close the node connection and the store (if this provider opened it)."""
        await self._client.close()
        if self._own_store and self._store is not None:
            self._store.close()
            self._store = None
        self._connected = False

    # --- units --------------------------------------------------------------------------

    def _display(self, units: int, field: str = "amount") -> str:
        if isinstance(units, bool) or not isinstance(units, int) or units < 0:
            raise InvalidAmountError(f"{field} must be a non-negative integer, got {units!r}")
        return sdk_decimal_string(from_units(units, self._decimals))

    def _units(self, display: Any) -> int:
        return to_units(Decimal(str(display)), self._decimals)

    # --- write-ahead --------------------------------------------------------------------

    def _on_signed(self, state: Mapping[str, Any], definition: Mapping[str, Any] | None) -> None:
        """Runs between the wallet's signature and the request to the node (see
        :attr:`~settlement_widgets.channel.v1.core.client_calls.V1ClientCore.on_signed`)."""
        self._last_signed = state
        with self.store.transaction():
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

    # --- channels -----------------------------------------------------------------------

    async def create_channel(self, counterparty: str, asset: str, initial_amount: int) -> Channel:
        """Open a home channel with the node (``counterparty``) for ``asset`` (the token
        address or the asset symbol), funded with ``initial_amount`` from the wallet (0: an
        empty channel, opened with an acknowledgement). Returns when ``createChannel`` is
        mined and the store shows the channel open."""
        await self.connect()
        counterparty = validate_address(counterparty, field="counterparty")
        if counterparty != self.node_address:
            raise ChannelStateError(
                f"a v1 home channel is always opened with the node {self.node_address}, "
                f"not {counterparty}"
            )
        self._check_asset(asset)
        amount = self._display(initial_amount, "initial_amount")
        async with self._op_lock:
            if initial_amount:
                await self._ensure_allowance(initial_amount)
            else:
                await self._check_empty_open()
            nonce = await self._channel_nonce()
            async with self._node_may_refuse():
                state = await self._client.open_home_channel(
                    self.network.chain_id, self._asset, amount, nonce=nonce
                )
            channel_id = str(state["home_channel_id"])
            with self.store.transaction():
                self.store.put_state(state)
                self.store.put_onchain(channel_id, "create", state)
            await self._run_onchain(channel_id, "create", state)
        channel = self.get_channel(channel_id)
        self._emit("channel_created", channel)
        return channel

    async def _check_empty_open(self) -> None:
        """An empty channel (initial amount 0) opens with an acknowledgement, which v1 allows
        only over a state the wallet has not signed: a transfer or release received off
        chain, which the new channel then carries. After a closed channel with nothing
        received since, the wallet's latest state is its signed finalize and no v1 state can
        open an empty channel on top of it (the node and the SDK both refuse an
        acknowledgement of a signed state), so say what works before signing anything."""
        latest = await self._client.get_latest_state(self.address, self._asset, False)
        if latest is None or not latest.get("user_sig"):
            return
        if latest.get("home_channel_id") and int(latest["transition"]["type"]) != _FINALIZE:
            return  # a channel is open: the client says so
        raise InvalidAmountError(
            f"cannot open an empty {self._asset} channel: on Nitrolite v1 a channel opened "
            "with 0 carries funds received off chain, and none were received since the last "
            "channel closed; open it with a deposit (initial_amount > 0) or receive a "
            "transfer first (the faucet pays by one)"
        )

    async def _channel_nonce(self) -> int:
        """The new channel's nonce (:func:`~.nonces.free_channel_nonce`): the SDK's rule,
        or on a deterministic sandbox one derived from the hub's history; never one whose
        channel id the chain, the node or this store knows."""
        return await free_channel_nonce(
            self.hub,
            self._client,
            node=self.node_address,
            user=self.address,
            asset=self._asset,
            deterministic=bool(self.network.extra.get("deterministic")),
            taken={str(c["channel_id"]).lower() for c in self.store.channels()},
        )

    def _check_asset(self, asset: str) -> None:
        if not isinstance(asset, str):
            raise SettlementValueError(f"asset must be a string, got {type(asset).__name__}")
        if asset.lower() == self._asset.lower():
            return
        if validate_address(asset, field="asset") != self.token:
            raise SettlementValueError(
                f"this provider settles {self._asset} (token {self.token}), not {asset}"
            )

    async def _ensure_allowance(self, units: int) -> None:
        token = self.token
        if int(token, 16) == 0:
            return  # the native token is sent as the value
        balance = await self.hub.token_balance(token)
        if balance < units:
            raise InsufficientBalanceError(
                f"the wallet holds {balance} units of {self._asset}, {units} are needed"
            )
        if await self.hub.allowance(token) < units:
            await self.hub.approve(token, units)

    def _definition(self, channel_id: str) -> dict[str, Any]:
        record = self.store.channel(channel_id)
        if record is None:
            raise ChannelNotFoundError(f"no channel {channel_id} in this provider's store")
        d = record["definition"]
        return contract_definition(
            user=self.address,
            node=self.node_address,
            asset=record["asset"],
            nonce=int(d["nonce"]),
            challenge_duration=int(d["challenge"]),
            approved_sig_validators=d["approved_sig_validators"],
        )

    def _contract_state(self, state: Mapping[str, Any]) -> dict[str, Any]:
        return contract_state_from_wire(state, self._client.assets.cached_token_decimals)

    async def _run_onchain(self, channel_id: str, step: str, state: Mapping[str, Any]) -> HubTx:
        """Send the on-chain ``step`` for the co-signed ``state`` and record it done (the
        ``pending`` row was written by the caller, in the transaction that stored
        ``state``)."""
        contract_state = self._contract_state(state)
        try:
            if step == "create":
                tx = await self.hub.create_channel(self._definition(channel_id), contract_state)
            elif step == "deposit":
                tx = await self.hub.deposit_to_channel(channel_id, contract_state)
            elif step == "withdraw":
                tx = await self.hub.withdraw_from_channel(channel_id, contract_state)
            elif step == "close":
                tx = await self.hub.close_channel(channel_id, contract_state)
            elif step == "checkpoint":
                tx = await self.hub.checkpoint_channel(channel_id, contract_state)
            elif step == "challenge":
                sig = await self.wallet.sign_message(
                    pack_challenge_state(state, self._client.assets.cached_token_decimals)
                )
                challenger_sig = "0x00" + sig.removeprefix("0x")
                tx = await self.hub.challenge_channel(channel_id, contract_state, challenger_sig, 0)
            else:  # pragma: no cover - the steps are ours
                raise SettlementValueError(f"unknown on-chain step {step!r}")
        except TransactionFailedError:
            # the chain refused the step (a revert, seen by the estimate or in the receipt,
            # e.g. closeChannel before a challenge expires): no longer pending, so recover()
            # does not send it again on every connect
            self.store.put_onchain(channel_id, step, state, status="failed")
            raise
        status = {
            "create": "active",
            "deposit": "active",
            "withdraw": "active",
            "checkpoint": "active",
            "close": "final",
            "challenge": "dispute",
        }[step]
        with self.store.transaction():
            self.store.put_onchain(channel_id, step, state, status="done", tx_hash=tx.tx_hash)
            self.store.put_tx(tx.tx_hash, step=step, channel_id=channel_id, status="mined")
            self.store.set_channel_status(channel_id, status)
        await self._until_node_confirms(tx)
        channel = self.get_channel(channel_id)
        event = {"final": "channel_closed", "dispute": "channel_challenged"}.get(
            status, "channel_updated"
        )
        self._emit(event, channel)
        return tx

    async def _until_node_confirms(self, tx: HubTx) -> None:
        """Wait until the chain's clock is ``confirmation_delay_secs`` past ``tx``'s block:
        the node counts an on-chain step only then (Nitronode v1.4.1's confirmation gate)
        and refuses the next state before ("home deposit is still ongoing"), so returning
        earlier would hand the caller a channel the node does not take states on yet."""
        if self._confirmation_delay <= 0 or not self._wait_for_confirmation:
            return
        from ....chain_clock import wait_for_chain_time

        block = await self.wallet.w3.eth.get_block(tx.block_number)
        target = int(block["timestamp"]) + self._confirmation_delay
        await wait_for_chain_time(self.wallet.w3, target, poll_interval=1.0)

    def _open_channel_id(self, channel_id: str | None) -> str:
        open_ids = [c["channel_id"] for c in self.store.channels() if c["status"] != "final"]
        if channel_id is None:
            if not open_ids:
                raise ChannelNotFoundError(f"no open {self._asset} channel: create one first")
            return open_ids[-1]
        key = channel_id.lower()
        if self.store.channel(key) is None:
            raise ChannelNotFoundError(f"no channel {channel_id} in this provider's store")
        if key not in open_ids:
            raise ChannelStateError(f"channel {channel_id} is closed")
        return key

    async def deposit(self, amount: int, *, channel_id: str | None = None) -> Tx:
        """Move ``amount`` from the wallet into the home channel (``depositToChannel``)."""
        await self.connect()
        if not amount:
            raise InvalidAmountError("a deposit must be positive")
        display = self._display(amount)
        async with self._op_lock:
            cid = self._open_channel_id(channel_id)
            await self._ensure_allowance(amount)
            async with self._node_may_refuse():
                state = await self._client.deposit(self.network.chain_id, self._asset, display)
            return self._tx(await self._store_and_run(cid, "deposit", state), "deposit", cid)

    async def resize(self, channel_id: str, amount: int) -> Tx:
        """v0.5's name for funding a channel: a deposit (positive) or withdrawal (negative)."""
        if isinstance(amount, int) and not isinstance(amount, bool) and amount < 0:
            return await self.withdraw(-amount, channel_id=channel_id)
        return await self.deposit(amount, channel_id=channel_id)

    async def withdraw(self, amount: int | None = None, *, channel_id: str | None = None) -> Tx:
        """Take ``amount`` (default: all the channel holds for the wallet) out of the home
        channel to the wallet (``withdrawFromChannel``); the channel stays open."""
        await self.connect()
        async with self._op_lock:
            cid = self._open_channel_id(channel_id)
            latest = await self._latest_state()
            held = self._units(latest["home_ledger"]["user_balance"]) if latest else 0
            amount = held if amount is None else amount
            display = self._display(amount)
            if not amount:
                raise InvalidAmountError("nothing to withdraw: the channel holds 0")
            if amount > held:
                raise InsufficientBalanceError(
                    f"the channel holds {held} units of {self._asset}, {amount} were asked"
                )
            async with self._node_may_refuse():
                state = await self._client.withdraw(self.network.chain_id, self._asset, display)
            return self._tx(await self._store_and_run(cid, "withdraw", state), "withdraw", cid)

    async def _store_and_run(self, channel_id: str, step: str, state: Mapping[str, Any]) -> HubTx:
        with self.store.transaction():
            self.store.put_state(state)
            self.store.put_onchain(channel_id, step, state)
        return await self._run_onchain(channel_id, step, state)

    async def _latest_state(self) -> dict[str, Any] | None:
        """The node's latest state of our chain (it may hold node-issued states we have not
        seen: a received transfer, a release); stored as it comes."""
        state = await self._client.get_latest_state(self.address, self._asset, False)
        if state is not None:
            self.store.put_state(state)
        return state

    async def close_channel(self, channel_id: str | None = None) -> Tx:
        """Close cooperatively: a finalize state the node co-signs, then ``closeChannel``
        pays the wallet everything the channel holds for it. After a challenge whose period
        has passed, ``closeChannel`` with the challenged state instead."""
        await self.connect()
        async with self._op_lock:
            cid = self._open_channel_id(channel_id)
            data = await self.hub.get_channel_data(cid)
            if data.status == "DISPUTED":
                latest = self.store.latest_state(self._asset, signed=True)
                if latest is None:  # pragma: no cover - a challenge needs a signed state
                    raise ChannelStateError(f"channel {cid} has no co-signed state to close with")
                return self._tx(await self._store_and_run(cid, "close", latest), "close", cid)
            async with self._node_may_refuse():
                state = await self._client.close_home_channel(self._asset)
            return self._tx(await self._store_and_run(cid, "close", state), "close", cid)

    async def challenge(self, channel_id: str | None = None) -> Tx:
        """Dispute on chain with the latest state both sides signed (``challengeChannel``,
        the wallet's challenge signature); the channel can be closed with it once the
        challenge period has passed, unless a newer state is checkpointed."""
        await self.connect()
        async with self._op_lock:
            cid = self._open_channel_id(channel_id)
            state = self.store.latest_state(self._asset, signed=True)
            if state is None:
                raise ChannelStateError(f"channel {cid} has no co-signed state to challenge with")
            return self._tx(await self._store_and_run(cid, "challenge", state), "challenge", cid)

    async def checkpoint(self, channel_id: str | None = None) -> Tx:
        """Put the latest co-signed state on chain (``checkpointChannel``): it answers a
        challenge with an older state."""
        await self.connect()
        async with self._op_lock:
            cid = self._open_channel_id(channel_id)
            state = self.store.latest_state(self._asset, signed=True)
            if state is None:
                raise ChannelStateError(f"channel {cid} has no co-signed state to checkpoint")
            return self._tx(await self._store_and_run(cid, "checkpoint", state), "checkpoint", cid)

    def _tx(self, tx: HubTx, step: str, channel_id: str) -> Tx:
        return Tx(
            hash=tx.tx_hash,
            explorer_url=self.network.explorer.tx_url(tx.tx_hash),
            step=step,
            channel_id=channel_id,
            block_number=tx.block_number,
            gas_used=tx.gas_used,
            status=1,
        )

    # --- transfers ----------------------------------------------------------------------

    async def transfer(self, channel_id: str | None, amount: int, recipient: str) -> Transfer:
        """Send ``amount`` off-chain to ``recipient``: one state the wallet signs and the
        node co-signs; instant, no gas. The recipient needs no channel to receive."""
        await self.connect()
        recipient = validate_address(recipient, field="recipient", allow_zero=False)
        if not amount:
            raise InvalidAmountError("a transfer must be positive")
        display = self._display(amount)
        async with self._op_lock:
            self._open_channel_id(channel_id)
            async with self._node_may_refuse():
                state = await self._client.transfer(recipient, self._asset, display)
            with self.store.transaction():  # the node's signature and the history: one COMMIT
                self.store.put_state(state)
                transfer = self._record_transfer(state, "out", recipient)
        self._emit("transfer", transfer)
        return transfer

    def _record_transfer(self, state: Mapping[str, Any], direction: str, other: str) -> Transfer:
        transition = state["transition"]
        self.store.put_transfer(
            str(transition["tx_id"]),
            direction=direction,
            asset=self._asset,
            amount=str(transition["amount"]),
            counterparty=other,
        )
        return self._transfer_row(str(transition["tx_id"]), direction, state.get("home_channel_id"))

    def _transfer_row(self, tx_id: str, direction: str, channel_id: Any = None) -> Transfer:
        row = self.store.transfer(tx_id, direction)
        assert row is not None  # just written
        return self._public_transfer(row, channel_id)

    def _public_transfer(self, row: StoredTransfer, channel_id: Any = None) -> Transfer:
        sender, recipient = (
            (self.address, row.counterparty)
            if row.direction == "out"
            else (row.counterparty, self.address)
        )
        from datetime import UTC, datetime

        return Transfer(
            id=row.row,
            channel_id=str(channel_id) if channel_id else None,
            amount=self._units(row.amount),
            asset=row.asset,
            sender=sender,
            recipient=recipient,
            created_at=datetime.fromtimestamp(row.created_at, UTC).isoformat(),
            direction=row.direction,
        )

    def transfers(self) -> list[Transfer]:
        """Every transfer sent and received (as far as :meth:`sync` has seen), oldest first."""
        return [self._public_transfer(r) for r in self.store.transfers()]

    async def sync(self) -> dict[str, Any] | None:
        """Read what the node holds for us (v1 nodes push nothing): transfers received since
        the last sync are recorded once each (the node's history, keyed by its transaction
        id), and a node-issued latest state (a receive, a release) is acknowledged
        (co-signed) when we hold a channel, so the channel's latest co-signed state includes
        it. Returns the latest state."""
        await self.connect()
        async with self._op_lock:
            for tx in await self._received_history():
                if validate_address(tx["to_account"], field="to_account") != self.address:
                    continue
                sender = str(tx["from_account"])
                if self.store.put_transfer(
                    str(tx["id"]),
                    direction="in",
                    asset=self._asset,
                    amount=str(tx["amount"]),
                    counterparty=sender,
                ):
                    self._emit("transfer", self._transfer_row(str(tx["id"]), "in"))
            state = await self._latest_state()
            if state is None or state.get("user_sig"):
                return state
            if state.get("home_channel_id") and self._has_open_channel():
                async with self._node_may_refuse():
                    state = await self._client.acknowledge(self._asset)
                self.store.put_state(state)
            return state

    async def _received_history(self) -> list[dict[str, Any]]:
        """Every transfer the node records for this wallet, oldest first, page by page."""
        out: list[dict[str, Any]] = []
        offset = 0
        while True:
            page = await self._client.get_transactions(
                self.address,
                asset=self._asset,
                tx_type=_SEND,
                pagination={"offset": offset, "limit": 100, "sort": "asc"},
            )
            items = list(page.get("transactions", ()))
            out.extend(items)
            offset += len(items)
            if not items or offset >= int(page.get("metadata", {}).get("total_count", 0)):
                return out

    def _has_open_channel(self) -> bool:
        return any(c["status"] != "final" for c in self.store.channels())

    async def balances(self) -> dict[str, int]:
        """``{asset: units}``: what the node's ledger says the wallet holds off-chain."""
        await self.connect()
        entries = await self._client.get_balances(self.address)
        out = {str(e["asset"]): self._units(e["amount"]) for e in entries}
        self._emit("balance", out)
        return out

    # --- reading ------------------------------------------------------------------------

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
            adjudicator=self.hub.address,
            challenge_period=int(d["challenge"]),
            nonce=int(d["nonce"]),
            tx_hashes=txs,
            participants=(self.address, self._node_address or ""),
            token=record["token"],
            amount=self._units(ledger.get("user_balance", "0")),
            chain_id=record["chain_id"],
            asset=record["asset"],
        )

    # --- recovery -----------------------------------------------------------------------

    async def recover(self) -> list[str]:
        """Finish what a crashed provider left: adopt or resubmit the last signed state,
        then send pending on-chain steps the chain does not show yet. Returns what it did."""
        done: list[str] = []
        async with self._op_lock:
            mine = self.store.latest_state(self._asset)
            if mine is not None and not mine.get("node_sig"):
                node = await self._client.get_latest_state(self.address, self._asset, False)
                same = node is not None and (int(node["epoch"]), int(node["version"])) == (
                    int(mine["epoch"]),
                    int(mine["version"]),
                )
                if same and node is not None and node.get("node_sig"):
                    self.store.put_state({**mine, "node_sig": node["node_sig"]})
                    done.append(f"adopted the node's signature of version {mine['version']}")
                elif not same:
                    await self._resubmit(mine)
                    done.append(f"resubmitted version {mine['version']}")
            for row in self.store.onchain(status="pending"):
                state = self.store.state_at(row["asset"], row["epoch"], row["version"])
                if state is None or not state.get("node_sig"):
                    continue
                if await self._onchain_done(row):
                    self.store.put_onchain(row["channel_id"], row["step"], state, status="done")
                    continue
                await self._run_onchain(row["channel_id"], row["step"], state)
                done.append(f"sent {row['step']} for version {row['version']}")
        return done

    async def _resubmit(self, state: Mapping[str, Any]) -> None:
        record = self.store.channel(str(state.get("home_channel_id") or ""))
        try:
            if record is not None and record["status"] == "opening":
                reply = await self._client.channels_v1_request_creation(state, record["definition"])
            else:
                reply = await self._client.channels_v1_submit_state(state)
        except RelayError as exc:
            raise ChannelStateError(
                f"the node refused our signed version {state['version']} on recovery: {exc}"
            ) from exc
        self.store.put_state({**state, "node_sig": reply["signature"]})

    async def _onchain_done(self, row: Mapping[str, Any]) -> bool:
        data = await self.hub.get_channel_data(row["channel_id"])
        if row["step"] == "create":
            return data.status != "VOID"
        if row["step"] == "close":
            return data.status == "CLOSED"
        if row["step"] == "challenge":
            return data.status in ("DISPUTED", "CLOSED")
        return int(data.last_state.get("version", 0)) >= int(row["version"])
