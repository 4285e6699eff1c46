"""``ChannelProvider``: the spec's channel operations (§4.4) on Nitrolite v0.5, persisted.

The provider is the effects runner around :mod:`.lifecycle` (what to check, which steps, how a
record changes) and :mod:`.store` (the write-ahead log): every user operation is stored with
its step plan before it starts, each step is journaled before it runs, a signed state or a
transaction hash is written before the relay or the chain is asked to act on it, and a
step's results land in the same SQLite transaction that marks it done. A provider created
over the same store later (another process, after a crash) finds unfinished operations and
finishes them: automatically on its first use (:meth:`ChannelProvider.connect`), or when
:meth:`ChannelProvider.recover` is awaited.

Amounts are integers in smallest units everywhere in this API; the wire's decimal strings
are produced and parsed at the edge (:mod:`settlement_widgets.erc7824.amounts`).

Events (:meth:`ChannelProvider.on`): ``channel_created``, ``channel_updated`` (every change,
with the :class:`Channel`), ``channel_challenged``, ``channel_closed``, ``transfer`` (a
:class:`Transfer`, sent or received), ``balance`` (``{symbol: units}``), ``step`` (a
:class:`StepEvent` before and after each step) and ``recovered`` (an operation finished by
recovery). They are fed by the relay's ``cu``/``bu``/``tr``/``channels`` notifications, by
the receipts of our own transactions and by a custody-event watcher (``watch_interval``).
"""

from __future__ import annotations

import asyncio
import contextlib
import difflib
import inspect
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Final

from ..addresses import validate_address
from ..erc7824.amounts import parse_decimal_amount, to_decimal_string
from ..erc7824.ids import as_channel_id_bytes
from ..erc7824.ids import state_hash as compute_state_hash
from ..erc7824.resize import decode_resize_data
from ..erc7824.signing import sign_challenge, sign_state
from ..erc7824.types import ChannelStatus, State, StateIntent
from ..errors import (
    ChainUnavailableError,
    ChannelNotFoundError,
    ChannelStateError,
    ConfigurationError,
    InsufficientBalanceError,
    InvalidAmountError,
    InvalidStateError,
    RelayError,
    RelayUnavailableError,
    SettlementError,
    SettlementTimeoutError,
    SettlementValueError,
    TransactionFailedError,
    UnknownOptionError,
)
from ..keys import PrivateKey
from ..networks import Explorer
from . import lifecycle as L
from .config import ChannelConfig
from .custody import CustodyClient, CustodyTx
from .custody_events import (
    Challenged,
    Checkpointed,
    Closed,
    Created,
    CustodyEvent,
    Resized,
)
from .models import Channel, StepEvent, Transfer, Tx, WatcherStatus
from .relay_client import RelayClient
from .store import HISTORY_COLUMNS, ChannelStore, SessionRecord

if TYPE_CHECKING:
    import pandas as pd

    from ..wallet import WalletClient

__all__ = ["EVENTS", "Channel", "ChannelProvider", "StepEvent", "Transfer", "Tx"]

_log = logging.getLogger(__name__)

EVENTS: Final = (
    "channel_created",
    "channel_updated",
    "channel_challenged",
    "channel_closed",
    "transfer",
    "balance",
    "step",
    "recovered",
    "watcher",
)
#: store step name -> the name ``Channel.tx_hashes`` and the proof log use
_TX_NAMES: Final = {
    "submit_create": "create",
    "approve": "approve",
    "deposit": "deposit",
    "submit_resize": "resize",
    "submit_close": "close",
    "withdraw": "withdraw",
    "challenge": "challenge",
    "checkpoint": "checkpoint",
}
_PROOF_STEPS: Final = {
    "submit_create": "create_channel",
    "approve": "approve",
    "deposit": "deposit",
    "submit_resize": "resize_channel",
    "submit_close": "close_channel",
    "withdraw": "withdraw",
    "challenge": "challenge",
    "checkpoint": "checkpoint",
}
_EVENT_STEPS: Final = {
    "Created": "submit_create",
    "Resized": "submit_resize",
    "Challenged": "challenge",
    "Checkpointed": "checkpoint",
    "Closed": "submit_close",
}
_WATCHED: Final = tuple(_EVENT_STEPS)
#: the longest pause between two custody polls after failures (seconds)
_WATCH_BACKOFF_MAX: Final = 30.0
#: how long off-chain proofs wait to be written together (seconds)
_PROOF_BATCH_DELAY: Final = 0.05
#: default session-key allowance, in whole asset units (the relay counts it per session key)
DEFAULT_ALLOWANCE_TOKENS: Final = 1_000_000


@dataclass(frozen=True)
class _Asset:
    symbol: str
    token: str
    decimals: int


@dataclass
class _StepResult:
    """What a step produced: results to merge, store writes to apply atomically with the
    step's completion, and (event, payload) pairs to emit after the commit."""

    results: dict[str, Any] = field(default_factory=dict)
    write: Callable[[], list[tuple[str, Any]]] | None = None
    proof: tuple[str, CustodyTx] | None = None


def _is_connection_error(exc: BaseException) -> bool:
    if isinstance(exc, OSError | ConnectionError):
        return True
    try:
        import aiohttp

        if isinstance(exc, aiohttp.ClientError):
            return True
    except ImportError:  # pragma: no cover
        pass
    try:
        from web3.exceptions import ProviderConnectionError

        if isinstance(exc, ProviderConnectionError):
            return True
    except ImportError:  # pragma: no cover
        pass
    return False


def _hex(value: Any) -> str:
    if isinstance(value, str):
        return value if value.startswith("0x") else "0x" + value
    return "0x" + bytes(value).hex()


def _channel_key(channel_id: Any) -> str:
    """A channel id as lowercase 0x-hex (a malformed id is bad input)."""
    if not isinstance(channel_id, str | bytes):
        raise SettlementValueError(
            f"channel_id must be 0x followed by 64 hex digits, got {type(channel_id).__name__}"
        )
    try:
        return "0x" + as_channel_id_bytes(channel_id).hex()
    except InvalidStateError as exc:
        raise SettlementValueError(str(exc)) from None


class ChannelProvider:
    """The ``channel`` method's provider: one wallet, one network, one store.

    ``ChannelProvider(config, wallet)`` does no I/O; the first operation connects to the
    relay, checks that it serves ``config``'s chain, custody and adjudicator, logs in with a
    session key (created, or reloaded with its JWT from the store) and resumes any operation
    a previous provider over the same store left unfinished. ``async with`` closes it.

    ``store`` defaults to ``$SETTLEMENT_HOME/channel/<network>-<wallet>.sqlite`` (or
    ``config.store_path``); ``relay`` to a :class:`RelayClient` of ``config.node_url``;
    ``allowance`` (smallest units) is what the session key may spend (default 1,000,000
    tokens); ``watch_interval`` (seconds, None to disable) is how often custody events are
    polled for counterparties' challenges and closes; ``auto_recover=False`` leaves
    unfinished operations to an explicit :meth:`recover`.
    """

    def __init__(
        self,
        config: ChannelConfig,
        wallet: WalletClient,
        *,
        store: ChannelStore | None = None,
        relay: RelayClient | None = None,
        allowance: int | None = None,
        watch_interval: float | None = 1.0,
        auto_recover: bool = True,
    ) -> None:
        if not isinstance(config, ChannelConfig):
            raise SettlementValueError(
                f"config must be a ChannelConfig (create_sepolia_channel_config() or "
                f"create_local_channel_config(sandbox)), got {type(config).__name__}"
            )
        if not hasattr(wallet, "address") or not hasattr(wallet, "key"):
            raise SettlementValueError("wallet must be a WalletClient")
        if config.token is None:
            raise ConfigurationError("the channel config names no token (the channel's asset)")
        if allowance is not None:
            L.units(allowance, "allowance")
        if watch_interval is not None and (
            isinstance(watch_interval, bool)
            or not isinstance(watch_interval, int | float)
            or watch_interval <= 0
        ):
            raise SettlementValueError(
                "watch_interval must be a positive number of seconds or None, "
                f"got {watch_interval!r}"
            )
        self.config = config
        self.wallet = wallet
        self._own_store = store is None
        self._store = store or ChannelStore(
            config.store_path,
            network=config.network_name,
            wallet=wallet.address,
            chain_id=config.chain_id,
            custody=config.custody,
            chain_instance=config.chain_instance,
        )
        self._relay = relay
        self._allowance = allowance
        self._watch_interval = watch_interval
        self._auto_recover = auto_recover
        self.custody = CustodyClient(wallet, config.custody)
        self._explorer = Explorer(config.explorer_base) if config.explorer_base else None
        self._asset: _Asset | None = None
        self._decimals: dict[str, int] = {}
        self._ready = False
        self._ready_lock: asyncio.Lock | None = None
        self._recovering = False
        self._recovered_once = False
        self._chain_checked = False
        self._closed = False
        self._listeners: dict[str, list[Callable[..., Any]]] = {}
        self._channel_locks: dict[str, asyncio.Lock] = {}
        self._relay_channels: dict[str, dict[str, Any]] = {}
        self._relay_changed: asyncio.Event | None = None
        self._balances: dict[str, int] | None = None
        self._watcher: asyncio.Task[None] | None = None
        self._sync_lock: asyncio.Lock | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._proof_queue: list[tuple[str, str, dict[str, Any]]] = []
        self._proof_writer: asyncio.Task[None] | None = None
        self._unsubscribe: list[Callable[[], None]] = []

    # --- identity ---------------------------------------------------------------------------

    @property
    def store(self) -> ChannelStore:
        return self._store

    @property
    def relay(self) -> RelayClient | None:
        return self._relay

    @property
    def address(self) -> str:
        return self.wallet.address

    @property
    def broker_address(self) -> str | None:
        return self._relay.broker_address if self._relay is not None else None

    @property
    def asset(self) -> str:
        """The channel asset's symbol (known after connecting; the config's until then)."""
        return self._asset.symbol if self._asset is not None else self.config.asset_symbol

    def __repr__(self) -> str:
        state = "closed" if self._closed else "connected" if self._ready else "not connected"
        return (
            f"ChannelProvider(wallet={self.wallet.address!r}, "
            f"network={self.config.network_name!r}, relay={self.config.node_url!r}, {state})"
        )

    # --- events -----------------------------------------------------------------------------

    def on(self, event: str, callback: Callable[..., Any]) -> Callable[[], None]:
        """Call ``callback(payload)`` on ``event`` (see the module docstring); coroutine
        functions are scheduled on the running loop. Returns a function that unsubscribes."""
        if event not in EVENTS:
            close = difflib.get_close_matches(str(event), EVENTS, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise UnknownOptionError(
                f"unknown provider event {event!r}{hint}: use one of {', '.join(EVENTS)}"
            )
        if not callable(callback):
            raise SettlementValueError("callback must be callable")
        self._listeners.setdefault(event, []).append(callback)

        def unsubscribe() -> None:
            self.off(event, callback)

        return unsubscribe

    def off(self, event: str, callback: Callable[..., Any]) -> None:
        with contextlib.suppress(ValueError):
            self._listeners.get(event, []).remove(callback)

    def _emit(self, event: str, payload: Any) -> None:
        for callback in list(self._listeners.get(event, ())):
            try:
                result = callback(payload)
                if inspect.isawaitable(result):
                    task = asyncio.ensure_future(result)
                    self._tasks.add(task)
                    task.add_done_callback(self._tasks.discard)
            except Exception:
                _log.exception("a %r listener failed", event)

    def _emit_all(self, emits: Iterable[tuple[str, Any]]) -> None:
        for event, payload in emits:
            self._emit(event, payload)

    # --- connection -------------------------------------------------------------------------

    async def __aenter__(self) -> ChannelProvider:
        await self.connect()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def connect(self) -> ChannelProvider:
        """Connect, check the relay, log in, then resume unfinished operations (once).

        Raises :class:`RelayUnavailableError` when the relay cannot be reached and
        :class:`ConfigurationError` when it serves another chain, custody or adjudicator.
        Recovery errors are recorded on the operation (see :meth:`pending_work`), not raised:
        await :meth:`recover` to see them.
        """
        if self._closed:
            raise ConfigurationError("this ChannelProvider is closed: create a new one")
        if self._ready_lock is None:
            self._ready_lock = asyncio.Lock()
        async with self._ready_lock:
            if not self._ready:
                await self._connect()
                self._ready = True
                self._start_watcher()
        if self._auto_recover and not self._recovered_once and not self._recovering:
            self._recovered_once = True
            await self._recover(raise_errors=False)
        return self

    async def _connect(self) -> None:
        relay = self._relay
        if relay is None:
            relay = self._relay = RelayClient(
                self.config.node_url, request_timeout=self.config.request_timeout
            )
        if not self._unsubscribe:
            self._unsubscribe.append(relay.on("*", self._on_notification))
            self._unsubscribe.append(relay.on_reconnect(self._on_reconnect))
        await relay.connect()
        self._check_relay_config(relay.config)
        assets = await relay.get_assets()
        self._decimals = {
            str(a["symbol"]): int(a["decimals"])
            for a in assets
            if "symbol" in a and "decimals" in a
        }
        self._asset = self._pick_asset(assets)
        await self._login(relay)

    def _check_relay_config(self, config: Mapping[str, Any]) -> None:
        networks = config.get("networks") or []
        chain = self.config.chain_id
        entry = next((n for n in networks if n.get("chain_id") == chain), None)
        if entry is None:
            served = [n.get("chain_id") for n in networks if isinstance(n, Mapping)]
            raise ConfigurationError(
                f"the relay at {self.config.node_url} serves chains {served}, not {chain}"
            )
        for key, expected in (
            ("custody_address", self.config.custody),
            ("adjudicator_address", self.config.adjudicator),
        ):
            try:
                got = validate_address(entry.get(key), field=key)
            except SettlementError:
                got = entry.get(key)
            if got != expected:
                raise ConfigurationError(
                    f"the relay's {key} on chain {chain} is {got}, but the config says "
                    f"{expected}: the relay and the config describe different deployments"
                )

    def _pick_asset(self, assets: list[dict[str, Any]]) -> _Asset:
        chain = self.config.chain_id
        for asset in assets:
            if asset.get("chain_id") != chain:
                continue
            try:
                token = validate_address(asset.get("token"), field="token")
            except SettlementError:
                continue
            if token == self.config.token:
                return _Asset(str(asset["symbol"]), token, int(asset["decimals"]))
        raise ConfigurationError(
            f"the relay lists no asset for token {self.config.token} on chain {chain}"
        )

    def _allowance_text(self) -> str:
        asset = self._require_asset()
        units = (
            self._allowance
            if self._allowance is not None
            else DEFAULT_ALLOWANCE_TOKENS * 10**asset.decimals
        )
        return to_decimal_string(units, asset.decimals)

    async def _login(self, relay: RelayClient) -> None:
        wallet, app = self.wallet.address, self.config.application
        allowances = ((self._require_asset().symbol, self._allowance_text()),)
        session = self._store.load_session(wallet, app)
        if session is None or not session.is_valid() or session.allowances != allowances:
            session = self._new_session(allowances)
        fresh = session.jwt is None

        def save_jwt(token: str) -> None:
            self._store.save_jwt(wallet, app, token)

        try:
            await relay.authenticate(
                self.wallet.key,
                session.key,
                application=app,
                allowances=session.allowances,
                expires_at=session.expires_at,
                scope=session.scope,
                jwt=session.jwt,
                on_jwt=save_jwt,
            )
        except RelayError as exc:
            if "session key" not in exc.message and "signer is already in use" not in exc.message:
                raise
            _log.info("the relay refused the stored session key (%s): creating a new one", exc)
            session = self._new_session(allowances)
            fresh = True
            await relay.authenticate(
                self.wallet.key,
                session.key,
                application=app,
                allowances=session.allowances,
                expires_at=session.expires_at,
                scope=session.scope,
                on_jwt=save_jwt,
            )
        if fresh:
            self._proof(
                "authenticate",
                "off-chain",
                data={"sessionKey": session.session_key, "application": app},
            )

    def _new_session(self, allowances: tuple[tuple[str, str], ...]) -> SessionRecord:
        session = SessionRecord(
            wallet=self.wallet.address,
            application=self.config.application,
            key=PrivateKey.generate(),
            scope="console",
            allowances=allowances,
            expires_at=int(time.time()) + self.config.session_expiry,
        )
        self._store.save_session(session)  # before auth_request: never an unknown key
        return session

    async def _on_reconnect(self) -> None:
        # the relay pushed `channels` and `bu` again; refresh what notifications may have missed
        with contextlib.suppress(SettlementError):
            await self.balances()

    async def close(self) -> None:
        """Stop the watcher, close the relay connection and the store (idempotent)."""
        if self._closed:
            return
        self._closed = True
        await self.flush_proofs()
        for task in (self._watcher, *self._tasks):
            if task is not None:
                task.cancel()
        if self._watcher is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._watcher
        for off in self._unsubscribe:
            off()
        if self._relay is not None:
            await self._relay.close()
        if self._own_store:
            self._store.close()

    def _require_asset(self) -> _Asset:
        if self._asset is None:
            raise ConfigurationError("connect first: await provider.connect()")
        return self._asset

    def _require_relay(self) -> RelayClient:
        if self._relay is None or not self._ready:
            raise ConfigurationError("connect first: await provider.connect()")
        return self._relay

    async def _ensure_chain(self) -> None:
        if self._chain_checked:
            return
        chain_id = await self.wallet.chain_id()
        if chain_id != self.config.chain_id:
            raise ConfigurationError(
                f"the wallet's chain is {chain_id}, the channel config's {self.config.chain_id}"
            )
        self._chain_checked = True

    async def _chain(self, awaitable: Any) -> Any:
        """Await a chain read; an unreachable node becomes :class:`ChainUnavailableError`."""
        try:
            return await awaitable
        except SettlementError:
            raise
        except Exception as exc:
            if _is_connection_error(exc):
                raise ChainUnavailableError(
                    f"cannot reach the chain at {self.wallet.rpc_url or 'the in-process EVM'}: "
                    f"{exc}"
                ) from exc
            raise

    # --- relay notifications ----------------------------------------------------------------

    def _on_notification(self, frame: Any) -> None:
        result = frame.result if isinstance(frame.result, Mapping) else {}
        method = frame.method
        if method == "bu":
            balances = self._parse_balances(result.get("balance_updates") or [])
            self._balances = balances
            self._emit("balance", dict(balances))
        elif method == "cu":
            self._on_relay_channel(result)
        elif method == "channels":
            for info in result.get("channels") or []:
                if isinstance(info, Mapping):
                    self._on_relay_channel(info)
        elif method == "tr":
            for tx in result.get("transactions") or []:
                if isinstance(tx, Mapping):
                    self._on_relay_tx(tx)

    def _changed(self) -> asyncio.Event:
        if self._relay_changed is None:
            self._relay_changed = asyncio.Event()
        return self._relay_changed

    def _note_relay_channel(self, info: Mapping[str, Any]) -> str | None:
        cid = info.get("channel_id")
        if not isinstance(cid, str):
            return None
        cid = cid.lower()
        self._relay_channels[cid] = dict(info)
        event = self._changed()
        event.set()
        self._relay_changed = asyncio.Event()
        return cid

    def _on_relay_channel(self, info: Mapping[str, Any]) -> None:
        cid = self._note_relay_channel(info)
        if cid is None:
            return
        record = self._store.get_channel(cid)
        status = info.get("status")
        if record is None or not isinstance(status, str):
            return
        updated = L.apply_relay_status(record, status)
        if updated is None:
            return
        self._store.put_channel(updated)
        self._store.add_history(
            cid, f"relay reports {status}", status=updated.status, version=updated.version
        )
        self._emit_all(self._channel_emits(updated, record))

    def _on_relay_tx(self, tx: Mapping[str, Any]) -> None:
        if tx.get("tx_type") != "transfer":
            return
        me = self.wallet.address
        if tx.get("to_account") != me or tx.get("from_account") == me:
            return  # our own transfers are recorded by transfer()
        try:
            relay_id = int(tx["id"])
            asset = str(tx["asset"])
            amount = self._parse_amount(str(tx["amount"]), asset)
        except (KeyError, TypeError, ValueError, SettlementError):
            return
        channel = self._open_channel_for_token()
        cid = channel.channel_id if channel is not None else None
        with self._store.transaction(durable=False):
            row = self._store.add_transfer(
                channel_id=cid,
                direction="in",
                from_account=str(tx.get("from_account")),
                to_account=me,
                asset=asset,
                amount=amount,
                status="done",
                relay_tx_id=relay_id,
            )
            if row is not None and cid is not None:
                self._store.add_history(
                    cid,
                    "transfer received",
                    amount=amount,
                    asset=asset,
                    counterparty=str(tx.get("from_account")),
                    detail=f"relay tx {relay_id}",
                )
        if row is None:
            return  # seen before
        self._emit(
            "transfer",
            Transfer(
                id=relay_id,
                channel_id=cid,
                amount=amount,
                asset=asset,
                sender=str(tx.get("from_account")),
                recipient=me,
                created_at=str(tx.get("created_at", "")),
                direction="in",
            ),
        )

    def _open_channel_for_token(self) -> L.ChannelRecord | None:
        open_ = [
            r
            for r in self._store.list_channels()
            if r.token == self.config.token and r.status != L.FINAL
        ]
        return open_[-1] if open_ else None

    def _parse_amount(self, text: str, asset: str) -> int:
        decimals = self._decimals.get(asset)
        if decimals is None:
            raise InvalidStateError(f"the relay uses asset {asset!r}, which it never described")
        if text.startswith("-"):
            return -parse_decimal_amount(text[1:], decimals)
        return parse_decimal_amount(text, decimals)

    def _parse_balances(self, rows: Iterable[Any]) -> dict[str, int]:
        out: dict[str, int] = {}
        for row in rows:
            if not isinstance(row, Mapping):
                continue
            asset, amount = row.get("asset"), row.get("amount")
            if not isinstance(asset, str) or not isinstance(amount, str):
                continue
            try:
                out[asset] = self._parse_amount(amount, asset)
            except SettlementError:
                _log.warning("ignoring an unreadable balance %r %r", asset, amount)
        return out

    async def _wait_relay(
        self, channel_id: str, predicate: Callable[[Mapping[str, Any]], bool], what: str
    ) -> Mapping[str, Any]:
        """Wait until the relay reports ``channel_id`` in a state matching ``predicate``
        (notifications first; a ``get_channels`` query every second as a fallback)."""
        relay = self._require_relay()
        loop = asyncio.get_running_loop()
        timeout = self.config.request_timeout
        deadline = loop.time() + timeout
        while True:
            info = self._relay_channels.get(channel_id)
            if info is not None and predicate(info):
                return info
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise SettlementTimeoutError(
                    f"the relay has not {what} within {timeout:g} s (the on-chain part is "
                    "done and stored): await provider.recover() to retry"
                )
            changed = self._changed()
            try:
                await asyncio.wait_for(changed.wait(), min(remaining, 1.0))
            except TimeoutError:
                for found in await relay.get_channels(participant=self.wallet.address):
                    self._note_relay_channel(found)

    # --- chain events -----------------------------------------------------------------------

    def _channel_emits(
        self, record: L.ChannelRecord, before: L.ChannelRecord | None
    ) -> list[tuple[str, Any]]:
        channel = self._public(record)
        emits: list[tuple[str, Any]] = []
        if (before is None or before.status == L.OPENING) and record.status != L.OPENING:
            emits.append(("channel_created", channel))
        if record.status == L.DISPUTE and (before is None or before.status != L.DISPUTE):
            emits.append(("channel_challenged", channel))
        if record.status == L.FINAL and (before is None or before.status != L.FINAL):
            emits.append(("channel_closed", channel))
        emits.append(("channel_updated", channel))
        return emits

    def _apply_chain_event(self, event: CustodyEvent) -> list[tuple[str, Any]]:
        """Apply one custody event to the store (idempotent); what to emit after commit."""
        cid = getattr(event, "channel_id", None)
        if not isinstance(cid, str):
            return []
        cid = cid.lower()
        step = _EVENT_STEPS.get(event.name)
        if step is None:
            return []  # Joined, Opened, Deposited...: no change of the channel's state
        record = self._store.get_channel(cid)
        if record is None or self._store.has_event(cid, event.tx_hash, event.log_index):
            return []  # not ours, or applied already (our receipt and the watcher both see it)
        self._store.add_tx(event.tx_hash, step=step, channel_id=cid)
        self._store.set_tx_status(event.tx_hash, "confirmed", event.block_number)
        updated: L.ChannelRecord | None = None
        settled: State | None = None  # the state this event puts on chain
        label = event.name
        if isinstance(event, Created):
            updated, settled = L.apply_state(record, event.initial), event.initial
        elif isinstance(event, Resized):
            label = f"Resized {list(event.delta_allocations)}"
            pending = self._resize_of(cid, record, event.delta_allocations)
            if pending is not None:
                updated, settled = L.apply_state(record, pending), pending
        elif isinstance(event, Checkpointed):
            updated, settled = L.apply_state(record, event.state), event.state
        elif isinstance(event, Challenged):
            updated = L.apply_challenged(record, event.state, event.expiration)
        elif isinstance(event, Closed):
            updated, settled = L.apply_closed(record, event.final_state), event.final_state
        if updated is None:
            updated = record  # the record shows it already: the row still belongs in history
        if settled is not None:
            self._mark_onchain(cid, settled, event.tx_hash)
        self._store.put_channel(updated)
        self._store.add_history(
            cid,
            label,
            status=updated.status,
            version=updated.version,
            intent=updated.intent.name,
            amount=updated.amount,
            tx_hash=event.tx_hash,
            cursor=event.cursor,
        )
        if updated is record:
            return []
        return self._channel_emits(updated, record)

    def _resize_of(
        self, cid: str, record: L.ChannelRecord, deltas: tuple[int, ...]
    ) -> State | None:
        """The countersigned RESIZE a ``Resized(deltas)`` event put on chain: the oldest one
        newer than ``record`` whose data carries exactly those deltas (a version guess alone
        would pair an old event seen late with the next pending RESIZE)."""
        for stored in self._store.states(cid):
            state = stored.state
            if state.intent != StateIntent.RESIZE or state.version <= record.version:
                continue
            try:
                if decode_resize_data(state.data) == tuple(deltas):
                    return state
            except SettlementError:
                continue
        return None

    def _mark_onchain(self, cid: str, state: State, tx_hash: str) -> None:
        for stored in self._store.states(cid):
            if stored.status == "onchain" and stored.state.version < state.version:
                self._store.set_state_status(
                    cid, stored.state.version, stored.state.intent, "superseded"
                )
        h = compute_state_hash(cid, state)
        existing = self._store.find_state(cid, state.version, state.intent)
        if existing is None:
            self._store.put_state(cid, state, h, status="onchain", tx_hash=tx_hash)
        else:
            self._store.set_state_status(
                cid, state.version, state.intent, "onchain", tx_hash=tx_hash
            )

    def _start_watcher(self) -> None:
        if self._watch_interval is None or self._watcher is not None:
            return
        self._watcher = asyncio.get_running_loop().create_task(self._watch())

    async def _watch(self) -> None:
        """Poll :meth:`sync` every ``watch_interval`` s. A failure is logged at WARNING and
        emitted as ``watcher`` (a missed challenge costs funds, so it must be seen), then
        retried with exponential backoff up to ``_WATCH_BACKOFF_MAX``; the first success
        after failures emits ``watcher`` with ``ok=True``."""
        assert self._watch_interval is not None
        failures = 0
        while True:
            delay = self._watch_interval
            try:
                await self.sync()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                failures += 1
                delay = min(self._watch_interval * 2**failures, _WATCH_BACKOFF_MAX)
                message = f"{type(exc).__name__}: {exc}"
                _log.warning(
                    "custody watcher failed (%d in a row), retrying in %.1f s: %s",
                    failures,
                    delay,
                    message,
                )
                self._emit("watcher", WatcherStatus(False, message, failures, delay))
            else:
                if failures:
                    _log.warning("custody watcher works again after %d failures", failures)
                    self._emit("watcher", WatcherStatus(True))
                failures = 0
            await asyncio.sleep(delay)

    async def sync(self) -> int:
        """Read new custody events of our channels now; returns how many changed a channel.

        The background watcher calls this every ``watch_interval`` seconds; the cursor (last
        block read) is kept in the store.
        """
        if self._sync_lock is None:
            self._sync_lock = asyncio.Lock()
        async with self._sync_lock:
            latest = int(await self._chain(self.wallet.w3.eth.block_number))
            stored = self._store.get_meta("event_block")
            if stored is None:
                self._store.set_meta("event_block", str(latest))
                return 0
            start = int(stored) + 1
            watched = {r.channel_id for r in self._store.list_channels() if r.status != L.FINAL}
            changed = 0
            while start <= latest:
                end = min(latest, start + 4999)
                if watched:
                    events = await self._chain(self.custody.get_events(start, end, names=_WATCHED))
                    for event in events:
                        if getattr(event, "channel_id", "").lower() not in watched:
                            continue
                        with self._store.transaction():
                            emits = self._apply_chain_event(event)
                        if emits:
                            changed += 1
                            self._emit_all(emits)
                self._store.set_meta("event_block", str(end))
                start = end + 1
            return changed

    # --- transactions -----------------------------------------------------------------------

    def _explorer_url(self, tx_hash: str) -> str | None:
        return self._explorer.tx_url(tx_hash) if self._explorer is not None else None

    async def _receipt(self, tx_hash: str) -> Any:
        """The receipt of a recorded transaction, waiting if it is still pending; None when
        the node never saw it (signed and recorded, then the process died before sending)."""
        from web3.exceptions import TransactionNotFound

        w3 = self.wallet.w3
        try:
            return await self._chain(w3.eth.get_transaction_receipt(tx_hash))  # type: ignore[arg-type]
        except TransactionNotFound:
            pass
        try:
            await self._chain(w3.eth.get_transaction(tx_hash))  # type: ignore[arg-type]
        except TransactionNotFound:
            return None
        return await self.wallet.wait(tx_hash, abis=self.custody.error_abis)

    async def _send_tx(
        self, op: L.Operation, step: str, call: Any, channel_id: str | None
    ) -> CustodyTx:
        """Send ``call`` once per (operation, step): a transaction recorded by an earlier run
        is followed to its receipt instead of being sent again."""
        await self._ensure_chain()
        recorded = self._store.tx_for(op.id, step)
        if recorded is not None and recorded[1] in ("pending", "confirmed"):
            receipt = await self._receipt(recorded[0])
            if receipt is not None:
                return await self._settled(recorded[0], receipt, channel_id)
            self._store.set_tx_status(recorded[0], "dropped")
        signed: list[str] = []

        def on_signed(tx_hash: str) -> None:
            signed.append(tx_hash)
            self._store.add_tx(tx_hash, step=step, channel_id=channel_id, op_id=op.id)

        try:
            tx_hash = await self.wallet.send(
                call, abis=self.custody.error_abis, on_signed=on_signed
            )
        except TransactionFailedError:
            for h in signed:
                self._store.set_tx_status(h, "dropped")
            raise
        try:
            receipt = await self.wallet.wait(tx_hash, abis=self.custody.error_abis)
        except TransactionFailedError as exc:
            self._store.set_tx_status(tx_hash, "reverted")
            if exc.error_name is None and exc.tx_hash:
                raise await self.custody.explain_failure(exc) from exc
            raise
        return await self._settled(tx_hash, receipt, channel_id)

    async def _settled(self, tx_hash: str, receipt: Any, channel_id: str | None) -> CustodyTx:
        if int(receipt["status"]) != 1:
            self._store.set_tx_status(tx_hash, "reverted")
            failure = TransactionFailedError(f"transaction {tx_hash} reverted", tx_hash=tx_hash)
            raise await self.custody.explain_failure(failure)
        self._store.set_tx_status(tx_hash, "confirmed", int(receipt["blockNumber"]))
        return self.custody.result(receipt, channel_id=channel_id)

    async def _tx(self, tx_hash: str, step: str, channel_id: str | None) -> Tx:
        """A :class:`Tx` for a mined transaction (its receipt read from the chain)."""
        receipt = await self._chain(self.wallet.w3.eth.get_transaction_receipt(tx_hash))  # type: ignore[arg-type]
        return Tx(
            hash=_hex(receipt["transactionHash"]),
            explorer_url=self._explorer_url(_hex(receipt["transactionHash"])),
            step=_TX_NAMES.get(step, step),
            channel_id=channel_id,
            block_number=int(receipt["blockNumber"]),
            gas_used=int(receipt["gasUsed"]),
            status=int(receipt["status"]),
            events=self.custody.decode_receipt(receipt),
            receipt=dict(receipt),
        )

    async def _find_event(self, channel_id: str, name: str) -> CustodyEvent | None:
        events = await self._chain(
            self.custody.get_events(0, "latest", names=[name], channel_id=channel_id)
        )
        return events[-1] if events else None

    async def _tx_of_event(self, channel_id: str, name: str) -> CustodyTx:
        event = await self._find_event(channel_id, name)
        if event is None:
            raise InvalidStateError(
                f"the chain shows channel {channel_id} past this step, but no {name} event"
            )
        receipt = await self._chain(self.wallet.w3.eth.get_transaction_receipt(event.tx_hash))  # type: ignore[arg-type]
        return self.custody.result(receipt, channel_id=channel_id)

    def _proof_later(self, step: str, type_: str, *, data: Mapping[str, Any]) -> None:
        """Queue an off-chain proof: the proof log's commit (an fsync, a connection) must not
        add to a transfer's latency. A burst is written in one worker-thread call after
        ``_PROOF_BATCH_DELAY``; :meth:`flush_proofs` (and :meth:`close`) wait for it."""
        self._proof_queue.append((step, type_, dict(data)))
        if self._proof_writer is None or self._proof_writer.done():
            self._proof_writer = asyncio.get_running_loop().create_task(self._write_proofs())

    async def _write_proofs(self) -> None:
        while self._proof_queue:
            await asyncio.sleep(_PROOF_BATCH_DELAY)  # let a burst of transfers accumulate
            batch, self._proof_queue = self._proof_queue, []

            def write(items: list[tuple[str, str, dict[str, Any]]] = batch) -> None:
                for step, type_, data in items:
                    try:
                        self._proof(step, type_, data=data)
                    except Exception:  # bookkeeping: log, never break the writer
                        _log.exception("could not record the %s proof", step)

            await asyncio.to_thread(write)

    async def flush_proofs(self) -> None:
        """Wait until every proof queued in the background is written."""
        while self._proof_writer is not None and not self._proof_writer.done():
            await asyncio.shield(self._proof_writer)

    def _proof(
        self,
        step: str,
        type_: str,
        *,
        tx_hash: str | None = None,
        data: Mapping[str, Any] | None = None,
    ) -> None:
        from ..proofs import record_proof

        try:
            record_proof(
                "channel",
                self.config.network_name,
                self.config.chain_id,
                step,
                type_,
                tx_hash=tx_hash,
                explorer_url=self._explorer_url(tx_hash) if tx_hash else None,
                data=data or {},
            )
        except SettlementError as exc:  # bookkeeping after the fact: never fail the step
            _log.warning("could not record the %s proof: %s", step, exc)

    # --- operations -------------------------------------------------------------------------

    def _lock_for(self, channel_id: str | None) -> asyncio.Lock:
        key = channel_id or "-"
        lock = self._channel_locks.get(key)
        if lock is None:
            lock = self._channel_locks[key] = asyncio.Lock()
        return lock

    def _check_no_unfinished(self, channel_id: str) -> None:
        for op in self._store.unfinished_operations():
            if op.channel_id == channel_id:
                raise ChannelStateError(
                    f"channel {channel_id} has an unfinished {op.kind} (operation {op.id}, "
                    f"next step {op.next_step}, {op.status}: {op.error or 'not resumed yet'}); "
                    "await provider.recover() to finish it first"
                )

    async def _run(
        self,
        kind: str,
        channel_id: str | None,
        plan: tuple[tuple[str, ...], dict[str, Any]],
    ) -> L.Operation:
        steps, params = plan
        op = self._store.begin_operation(kind, channel_id, steps, params)
        return await self._drive(op)

    async def _drive(self, op: L.Operation) -> L.Operation:
        """Run the remaining steps of ``op``, journaling each before and after."""
        runners: dict[str, Callable[[L.Operation], Any]] = {
            "rpc_create": self._step_rpc_create,
            "submit_create": self._step_submit_create,
            "approve": self._step_approve,
            "deposit": self._step_deposit,
            "rpc_resize": self._step_rpc_resize,
            "submit_resize": self._step_submit_resize,
            "await_relay": self._step_await_relay,
            "rpc_close": self._step_rpc_close,
            "submit_close": self._step_submit_close,
            "withdraw": self._step_withdraw,
            "challenge": self._step_challenge,
            "checkpoint": self._step_checkpoint,
        }
        self._store.save_operation(op)
        while (step := op.next_step) is not None:
            self._store.journal(op.id, step, "start")
            self._emit("step", StepEvent(op.id, op.kind, op.channel_id, step, "start"))
            try:
                outcome: _StepResult = await runners[step](op)
            except BaseException as exc:
                status = L.failure_status(exc)
                message = str(exc) or type(exc).__name__
                op = op.fail(status, message)
                with self._store.transaction():
                    self._store.save_operation(op)
                    self._store.journal(op.id, step, status, {"error": message})
                self._emit("step", StepEvent(op.id, op.kind, op.channel_id, step, status, message))
                raise
            emits: list[tuple[str, Any]] = []
            with self._store.transaction():
                if outcome.write is not None:
                    emits = outcome.write()
                op = op.advance(step, outcome.results)
                self._store.save_operation(op)
                self._store.journal(op.id, step, "done", outcome.results)
            if outcome.proof is not None:
                name, tx = outcome.proof
                self._proof(
                    name,
                    "on-chain",
                    tx_hash=tx.tx_hash,
                    data={"channelId": op.channel_id, "block": tx.block_number},
                )
            self._emit_all(emits)
            self._emit("step", StepEvent(op.id, op.kind, op.channel_id, step, "done"))
        return op

    def _record(self, channel_id: str) -> L.ChannelRecord:
        record = self._store.get_channel(channel_id)
        if record is None:
            raise ChannelNotFoundError(
                f"unknown channel {channel_id}: this provider's store has no such channel "
                f"(known: {', '.join(r.channel_id for r in self._store.list_channels()) or 'none'})"
            )
        return record

    def _receipt_write(
        self, tx: CustodyTx, step: str, extra: Callable[[], None] | None = None
    ) -> _StepResult:
        def write() -> list[tuple[str, Any]]:
            emits: list[tuple[str, Any]] = []
            for event in tx.events:
                emits += self._apply_chain_event(event)
            if extra is not None:
                extra()
            return emits

        return _StepResult(
            results={f"{_TX_NAMES.get(step, step)}_tx": tx.tx_hash},
            write=write,
            proof=(_PROOF_STEPS[step], tx),
        )

    # steps ------------------------------------------------------------------------------

    def _countersign(self, channel_id: str, checked: Any) -> State:
        """Our signature next to the broker's on a state the pure core has checked."""
        return L.two_party(
            checked.state,
            sign_state(channel_id, checked.state, self.wallet.key),
            checked.server_signature,
        )

    def _put_signed(
        self, channel_id: str, signed: State, server_signature: str, op: L.Operation
    ) -> None:
        """Persist a countersigned state before anything relies on it (write-ahead)."""
        self._store.put_state(
            channel_id,
            signed,
            compute_state_hash(channel_id, signed),
            status="signed",
            server_signature=server_signature,
            op_id=op.id,
        )

    def _history_write(
        self, channel_id: str | None, event: str, amount: int, tx: CustodyTx, log_name: str
    ) -> Callable[[], list[tuple[str, Any]]]:
        """A step's write: one history row for a wallet-level transaction, keyed by its
        ``log_name`` event (Deposited, Withdrawn) so it is written once."""
        logs = [e for e in tx.events if e.name == log_name]
        cursor = logs[0].cursor if logs else None

        def write() -> list[tuple[str, Any]]:
            if channel_id:
                self._store.add_history(
                    channel_id,
                    event,
                    amount=amount,
                    asset=self.asset,
                    tx_hash=tx.tx_hash,
                    cursor=cursor,
                )
            return []

        return write

    async def _step_rpc_create(self, op: L.Operation) -> _StepResult:
        relay = self._require_relay()
        asset = self._require_asset()
        try:
            reply = await relay.create_channel(self.config.chain_id, asset.token)
        except RelayError as exc:
            if "already exists" in exc.message:
                raise ChannelStateError(
                    f"the relay already has an open channel for this wallet and token "
                    f"({exc.message}); close it first"
                ) from exc
            raise
        assert relay.broker_address is not None
        checked = L.check_create_reply(
            reply,
            wallet=self.wallet.address,
            broker=relay.broker_address,
            token=asset.token,
            chain_id=self.config.chain_id,
            adjudicator=self.config.adjudicator,
            min_challenge=self.config.challenge_period,
        )
        assert checked.definition is not None
        signed = self._countersign(checked.channel_id, checked)
        record = L.new_record(checked.channel_id, self.config.chain_id, checked.definition, signed)

        def write() -> list[tuple[str, Any]]:
            self._store.put_channel(record)
            self._put_signed(record.channel_id, signed, checked.server_signature, op)
            self._store.add_history(
                record.channel_id,
                "INITIALIZE countersigned",
                status=record.status,
                version=0,
                intent="INITIALIZE",
                counterparty=record.broker,
            )
            return [("channel_updated", self._public(record))]

        return _StepResult(results={"channel_id": record.channel_id}, write=write)

    async def _step_submit_create(self, op: L.Operation) -> _StepResult:
        cid = self._op_channel(op)
        record = self._record(cid)
        stored = self._store.find_state(cid, 0, StateIntent.INITIALIZE)
        if stored is None:
            raise InvalidStateError(f"the countersigned INITIALIZE of {cid} is missing")
        await self._ensure_chain()
        if self._store.tx_for(op.id, "submit_create") is None:
            status = await self._chain(self.custody.channel_status(cid))
            if status != ChannelStatus.VOID:  # created by a run that died before recording
                return self._receipt_write(await self._tx_of_event(cid, "Created"), "submit_create")
        call = self.custody.contract.functions.create(
            record.definition.to_abi(), stored.state.to_abi()
        )
        tx = await self._send_tx(op, "submit_create", call, cid)
        return self._receipt_write(tx, "submit_create")

    async def _step_await_relay(self, op: L.Operation) -> _StepResult:
        cid = self._op_channel(op)
        record = self._record(cid)
        await self._wait_relay(
            cid, lambda info: L.relay_reflects(record, info), L.describe_relay_wait(record)
        )
        return _StepResult()

    async def _step_approve(self, op: L.Operation) -> _StepResult:
        amount = int(op.params["amount"])
        token = self._require_asset().token
        await self._ensure_chain()
        # an approval an earlier run sent is followed to its receipt (by _send_tx), even when
        # the allowance it set already shows: else it would stay "pending" in the store
        recorded = self._store.tx_for(op.id, "approve")
        following = recorded is not None and recorded[1] in ("pending", "confirmed")
        if not following and await self._chain(self.custody.allowance(token)) >= amount:
            return _StepResult()
        balance = await self._chain(self.custody.token_balance(token))
        if balance < amount:
            raise InsufficientBalanceError(
                f"the wallet holds {balance} units of {self.asset}, {amount} are needed"
            )
        contract = self.wallet.w3.eth.contract(address=token, abi=_APPROVE_ABI)  # type: ignore[call-overload]
        call = contract.functions.approve(self.config.custody, amount)
        tx = await self._send_tx(op, "approve", call, op.channel_id)
        return _StepResult(results={"approve_tx": tx.tx_hash}, proof=("approve", tx))

    async def _step_deposit(self, op: L.Operation) -> _StepResult:
        amount = int(op.params["amount"])
        token = self._require_asset().token
        await self._ensure_chain()
        if self._store.tx_for(op.id, "deposit") is None:
            balance = await self._chain(self.custody.token_balance(token))
            if balance < amount:
                raise InsufficientBalanceError(
                    f"the wallet holds {balance} units of {self.asset}, {amount} are needed"
                )
        call = self.custody.contract.functions.deposit(self.wallet.address, token, amount)
        tx = await self._send_tx(op, "deposit", call, op.channel_id)
        cid = op.channel_id

        write = self._history_write(cid, "deposited to custody", amount, tx, "Deposited")

        return _StepResult(results={"deposit_tx": tx.tx_hash}, write=write, proof=("deposit", tx))

    async def _step_rpc_resize(self, op: L.Operation) -> _StepResult:
        cid = self._op_channel(op)
        version = op.results.get("resize_version")
        if version is not None and self._store.find_state(cid, int(version), StateIntent.RESIZE):
            return _StepResult()
        record = self._record(cid)
        resize_amount = int(op.params.get("resize_amount", "0"))
        allocate_amount = int(op.params.get("allocate_amount", "0"))
        try:
            reply = await self._require_relay().resize_channel(
                cid,
                self.wallet.address,
                resize_amount=resize_amount or None,
                allocate_amount=allocate_amount or None,
            )
        except RelayError as exc:
            if "resize already ongoing" not in exc.message:
                raise
            # the relay signed a RESIZE for an earlier run of this step whose reply was lost
            # before it was stored (a crash): it will sign no other, and we cannot submit it
            remedy = f"await provider.close_channel({cid!r}, settle=False)" + (
                ", then await provider.withdraw()" if op.kind != "close" else ""
            )
            raise ChannelStateError(
                f"the relay has a RESIZE of channel {cid} in progress that this store never "
                f"received (relay: {exc.message}); it will not sign another, so this {op.kind} "
                f"cannot finish. Remedy: close without settling, {remedy}: nothing is lost "
                "(the off-chain balance stays on the relay, what was deposited is withdrawn)"
            ) from exc
        checked = L.check_resize_reply(
            reply,
            record=record,
            resize_amount=resize_amount,
            allocate_amount=allocate_amount,
            destination=self.wallet.address,
        )
        signed = self._countersign(cid, checked)

        def write() -> list[tuple[str, Any]]:
            self._put_signed(cid, signed, checked.server_signature, op)
            current = self._record(cid)
            updated = replace(current, status=L.RESIZING) if current.status == L.ACTIVE else current
            self._store.put_channel(updated)
            self._store.add_history(
                cid,
                "RESIZE countersigned",
                status=updated.status,
                version=signed.version,
                intent="RESIZE",
                amount=resize_amount,
                detail=f"deltas [{resize_amount}, {allocate_amount}]",
            )
            return [("channel_updated", self._public(updated))]

        return _StepResult(results={"resize_version": signed.version}, write=write)

    async def _step_submit_resize(self, op: L.Operation) -> _StepResult:
        cid = self._op_channel(op)
        version = int(op.results["resize_version"])
        stored = self._store.find_state(cid, version, StateIntent.RESIZE)
        if stored is None:
            raise InvalidStateError(f"the countersigned RESIZE v{version} of {cid} is missing")
        await self._ensure_chain()
        data = await self._chain(self.custody.get_channel_data(cid))
        recorded = self._store.tx_for(op.id, "submit_resize")
        if recorded is None and data.last_valid_state.version >= version:
            # submitted by a run that died before recording it
            return self._receipt_write(await self._tx_of_event(cid, "Resized"), "submit_resize")
        # proofs[0] is the state the custody holds now (a recorded transaction still in
        # flight is followed to its receipt instead of being sent again)
        call = self.custody.contract.functions.resize(
            cid, stored.state.to_abi(), [data.last_valid_state.to_abi()]
        )
        tx = await self._send_tx(op, "submit_resize", call, cid)
        return self._receipt_write(tx, "submit_resize")

    async def _step_rpc_close(self, op: L.Operation) -> _StepResult:
        cid = self._op_channel(op)
        version = op.results.get("final_version")
        if version is not None and self._store.find_state(cid, int(version), StateIntent.FINALIZE):
            return _StepResult()
        record = self._record(cid)
        reply = await self._require_relay().close_channel(cid, self.wallet.address)
        checked = L.check_close_reply(reply, record=record, destination=self.wallet.address)
        signed = self._countersign(cid, checked)

        def write() -> list[tuple[str, Any]]:
            self._put_signed(cid, signed, checked.server_signature, op)
            updated = replace(self._record(cid), status=L.CLOSING)
            self._store.put_channel(updated)
            self._store.add_history(
                cid,
                "FINALIZE countersigned",
                status=L.CLOSING,
                version=signed.version,
                intent="FINALIZE",
                amount=signed.allocations[0].amount,
            )
            return [("channel_updated", self._public(updated))]

        return _StepResult(results={"final_version": signed.version}, write=write)

    async def _step_submit_close(self, op: L.Operation) -> _StepResult:
        cid = self._op_channel(op)
        await self._ensure_chain()
        version = op.results.get("final_version")
        if version is not None:  # cooperative: the countersigned FINALIZE
            stored = self._store.find_state(cid, int(version), StateIntent.FINALIZE)
            if stored is None:
                raise InvalidStateError(
                    f"the countersigned FINALIZE v{version} of {cid} is missing"
                )
            candidate = stored.state
            funds = candidate
        else:  # after an expired challenge: any state; funds follow the challenged one
            candidate = self._store.latest_onchain_state(cid)  # type: ignore[assignment]
            if candidate is None:
                raise ChannelStateError(f"no fully signed state of {cid} is stored")
            funds = candidate
        if self._store.tx_for(op.id, "submit_close") is None:
            status = await self._chain(self.custody.channel_status(cid))
            if status == ChannelStatus.VOID:  # closed by a run that died, or by the broker
                tx = await self._tx_of_event(cid, "Closed")
                return self._close_result(tx, funds)
            if status == ChannelStatus.DISPUTE:
                data = await self._chain(self.custody.get_channel_data(cid))
                funds = data.last_valid_state
        call = self.custody.contract.functions.close(cid, candidate.to_abi(), [])
        tx = await self._send_tx(op, "submit_close", call, cid)
        return self._close_result(tx, funds)

    def _close_result(self, tx: CustodyTx, funds: State) -> _StepResult:
        result = self._receipt_write(tx, "submit_close")
        result.results["credited"] = str(L.credited_amount(funds, self.wallet.address))
        return result

    async def _step_withdraw(self, op: L.Operation) -> _StepResult:
        token = self._require_asset().token
        await self._ensure_chain()
        wanted = op.params.get("withdraw_amount", op.results.get("credited"))
        recorded = self._store.tx_for(op.id, "withdraw")
        receipt = None
        if recorded is not None and recorded[1] in ("pending", "confirmed"):
            receipt = await self._receipt(recorded[0])  # a withdrawal an earlier run sent
            if receipt is None:
                self._store.set_tx_status(recorded[0], "dropped")
        if receipt is not None:
            assert recorded is not None
            tx = await self._settled(recorded[0], receipt, op.channel_id)
            event = tx.event("Withdrawn")
            amount = int(getattr(event, "amount", 0))
        else:
            available = await self._chain(self.custody.balance(token))
            amount = available if wanted is None else int(wanted)
            if amount == 0:
                return _StepResult(results={"withdrawn": "0"})
            if available < amount:
                raise InsufficientBalanceError(
                    f"the custody holds {available} units of {self.asset} for the wallet; "
                    f"{amount} cannot be withdrawn"
                )
            call = self.custody.contract.functions.withdraw(token, amount)
            tx = await self._send_tx(op, "withdraw", call, op.channel_id)
        cid = op.channel_id

        write = self._history_write(cid, "withdrawn to wallet", amount, tx, "Withdrawn")

        return _StepResult(
            results={"withdraw_tx": tx.tx_hash, "withdrawn": str(amount)},
            write=write,
            proof=("withdraw", tx),
        )

    async def _step_challenge(self, op: L.Operation) -> _StepResult:
        cid = self._op_channel(op)
        candidate = self._store.latest_onchain_state(cid)
        if candidate is None:
            raise ChannelStateError(f"no fully signed on-chain state of {cid} is stored")
        await self._ensure_chain()
        if self._store.tx_for(op.id, "challenge") is None:
            status = await self._chain(self.custody.channel_status(cid))
            if status == ChannelStatus.DISPUTE:
                return self._receipt_write(await self._tx_of_event(cid, "Challenged"), "challenge")
        signature = sign_challenge(cid, candidate, self.wallet.key)
        call = self.custody.contract.functions.challenge(
            cid, candidate.to_abi(), [], bytes.fromhex(signature[2:])
        )
        tx = await self._send_tx(op, "challenge", call, cid)
        return self._receipt_write(tx, "challenge")

    async def _step_checkpoint(self, op: L.Operation) -> _StepResult:
        cid = self._op_channel(op)
        candidate = self._checkpoint_candidate(cid)
        call = self.custody.contract.functions.checkpoint(cid, candidate.to_abi(), [])
        tx = await self._send_tx(op, "checkpoint", call, cid)
        return self._receipt_write(tx, "checkpoint")

    def _checkpoint_candidate(self, cid: str) -> State:
        onchain = self._store.latest_onchain_state(cid)
        newer = [
            s.state
            for s in self._store.states(cid)
            if s.state.intent == StateIntent.OPERATE
            and len(s.state.sigs) == 2
            and (onchain is None or s.state.version > onchain.version)
        ]
        if not newer:
            latest = f"{onchain.intent.name} v{onchain.version}" if onchain else "none"
            raise ChannelStateError(
                f"nothing to checkpoint on {cid}: the custody only checkpoints a newer OPERATE "
                "state signed by both parties, and a v0.5 relay never co-signs OPERATE states "
                f"(the latest fully signed state, {latest}, is already on chain)"
            )
        return newer[-1]

    @staticmethod
    def _op_channel(op: L.Operation) -> str:
        if not op.channel_id:
            raise InvalidStateError(f"operation {op.id} ({op.kind}) has no channel yet")
        return op.channel_id

    # --- public operations ------------------------------------------------------------------

    async def create_channel(
        self, counterparty: str, asset: str, initial_amount: int = 0
    ) -> Channel:
        """Open a channel with the broker ``counterparty`` in ``asset`` (the token address)
        and, when ``initial_amount`` > 0, move that many smallest units from the wallet into
        the off-chain balance (approve, deposit, resize).

        Raises :class:`~settlement_widgets.errors.InvalidAddressError` when ``counterparty``
        is not the relay's broker or ``asset`` not the configured token,
        :class:`InvalidAmountError` for a negative or non-integer amount and
        :class:`InsufficientBalanceError` when the wallet holds less; nothing is sent then.
        """
        from ..errors import InvalidAddressError

        counterparty = validate_address(counterparty, field="counterparty", allow_zero=False)
        token = validate_address(asset, field="asset", allow_zero=False)
        amount = L.units(initial_amount, "initial_amount", allow_zero=True)
        await self.connect()
        broker = self.broker_address
        if counterparty != broker:
            raise InvalidAddressError(
                f"counterparty {counterparty} is not the relay's broker {broker}: a Nitrolite "
                "v0.5 channel is always opened with the broker (participant 1)"
            )
        if token != self._require_asset().token:
            raise InvalidAddressError(
                f"asset {token} is not the channel asset {self._require_asset().token} "
                f"({self.asset}) on chain {self.config.chain_id}"
            )
        for op in self._store.unfinished_operations():
            if op.kind == "create":
                raise ChannelStateError(
                    f"an earlier create_channel is unfinished (operation {op.id}, next step "
                    f"{op.next_step}): await provider.recover() to finish it first"
                )
        await self._ensure_chain()
        if amount:
            balance = await self._chain(self.custody.token_balance(token))
            if balance < amount:
                raise InsufficientBalanceError(
                    f"initial_amount {amount} exceeds the wallet's {balance} units of "
                    f"{self.asset}: nothing was sent"
                )
        async with self._lock_for(None):
            op = await self._run("create", None, L.plan_create(amount))
        return self._public(self._record(self._op_channel(op)))

    async def transfer(self, channel_id: str, amount: int, recipient: str) -> Transfer:
        """Send ``amount`` smallest units to ``recipient`` through the relay's ledger:
        off-chain, instant, ``gas_fee == 0``. The channel must be active (v0.5 transfers move
        the unified balance; the channel is what funds it)."""
        cid = _channel_key(channel_id)
        units = L.units(amount, "amount")
        to = validate_address(recipient, field="recipient", allow_zero=False)
        if to == self.wallet.address:
            raise SettlementValueError(
                "recipient is this wallet: a transfer to yourself is refused"
            )
        await self.connect()
        record = self._record(cid)
        if record.status != L.ACTIVE:
            raise ChannelStateError(
                f"channel {cid} is {record.status}: transfers need an active channel"
            )
        asset = self._require_asset()
        if self._balances is not None and units > self._balances.get(asset.symbol, 0):
            available = (await self.balances()).get(asset.symbol, 0)
            if units > available:
                raise InsufficientBalanceError(
                    f"amount {units} exceeds the off-chain balance of {available} units of "
                    f"{asset.symbol}: nothing was sent"
                )
        relay = self._require_relay()
        text = to_decimal_string(units, asset.decimals)
        req = relay.transfer_request(to, [(asset.symbol, text)])
        row = self._store.add_transfer(
            channel_id=cid,
            direction="out",
            from_account=self.wallet.address,
            to_account=to,
            asset=asset.symbol,
            amount=units,
            request_id=req.request_id,
        )
        assert row is not None
        try:
            response = await relay.request(req)
        except RelayError as exc:
            self._store.finish_transfer(row, status="failed", error=exc.message)
            if exc.message.startswith("insufficient funds"):
                raise InsufficientBalanceError(
                    f"the relay refused: {exc.message} ({units} units requested)"
                ) from exc
            raise
        except (RelayUnavailableError, SettlementTimeoutError) as exc:
            # sent, but unanswered: it may have been applied. Kept as "unknown" for review.
            self._store.finish_transfer(row, status="unknown", error=str(exc))
            raise
        result = response.result if isinstance(response.result, Mapping) else {}
        txs = result.get("transactions")
        try:
            tx = txs[0]  # type: ignore[index]
            relay_id = int(tx["id"])
        except (TypeError, IndexError, KeyError, ValueError):
            self._store.finish_transfer(row, status="unknown", error=f"odd answer {result!r}")
            raise InvalidStateError(
                f"the relay accepted the transfer but its answer names no transaction: {result!r}"
            ) from None
        created = str(tx.get("created_at", ""))
        with self._store.transaction(durable=False):
            self._store.finish_transfer(row, status="done", relay_tx_id=relay_id)
            self._store.add_history(
                cid,
                "transfer sent",
                amount=units,
                asset=asset.symbol,
                counterparty=to,
                detail=f"relay tx {relay_id}",
            )
        if self._balances is not None:
            self._balances[asset.symbol] = self._balances.get(asset.symbol, 0) - units
        self._proof_later(
            "transfer",
            "off-chain",
            data={
                "channelId": cid,
                "amount": text,
                "asset": asset.symbol,
                "recipient": to,
                "relayTxId": relay_id,
            },
        )
        transfer = Transfer(
            id=relay_id,
            channel_id=cid,
            amount=units,
            asset=asset.symbol,
            sender=self.wallet.address,
            recipient=to,
            created_at=created,
        )
        self._emit("transfer", transfer)
        return transfer

    async def _open_record(self, channel_id: str) -> L.ChannelRecord:
        cid = _channel_key(channel_id)
        await self.connect()
        record = self._record(cid)
        self._check_no_unfinished(cid)
        return record

    async def close_channel(
        self, channel_id: str, *, withdraw: bool = True, settle: bool = True
    ) -> Tx:
        """Close the channel on chain and (``withdraw=True``) withdraw what it paid out.

        Cooperative close: with ``settle=True`` the whole off-chain balance of the asset is
        first moved into the channel, so the FINALIZE state pays it to the wallet's custody
        ledger and the withdrawal brings it to the wallet (``settle=False`` closes with what
        the channel holds, usually nothing, and leaves the off-chain balance on the relay).
        In dispute: only after the challenge period (:class:`ChannelStateError` before).

        Returns the ``Custody.close`` transaction (``hash``, ``explorer_url``, ``receipt``,
        the decoded ``Closed`` event); ``withdrawal`` is the ``Custody.withdraw`` one.
        """
        record = await self._open_record(channel_id)
        cid = record.channel_id
        if record.status == L.FINAL:
            raise ChannelStateError(f"channel {cid} is already closed")
        if record.status == L.OPENING:
            raise ChannelStateError(f"channel {cid} is not open on chain yet")
        in_dispute = record.status == L.DISPUTE
        settle_amount = 0
        if in_dispute:
            await self._ensure_chain()
            data = await self._chain(self.custody.get_channel_data(cid))
            block = await self._chain(self.wallet.w3.eth.get_block("latest"))
            now = int(block["timestamp"])
            if now <= data.challenge_expiry:
                raise ChannelStateError(
                    f"channel {cid} is in dispute until {data.challenge_expiry} (chain time "
                    f"{now}, {data.challenge_expiry - now} s to go): close it after that"
                )
        elif settle:
            settle_amount = max((await self.balances()).get(self.asset, 0), 0)
        async with self._lock_for(cid):
            op = await self._run(
                "close",
                cid,
                L.plan_close(settle_amount=settle_amount, withdraw=withdraw, in_dispute=in_dispute),
            )
        return await self._close_tx(op)

    async def _close_tx(self, op: L.Operation) -> Tx:
        cid = self._op_channel(op)
        tx = await self._tx(op.results["close_tx"], "submit_close", cid)
        withdrawal = op.results.get("withdraw_tx")
        if withdrawal:
            tx = replace(tx, withdrawal=await self._tx(withdrawal, "withdraw", cid))
        return tx

    async def resize(self, channel_id: str, amount: int) -> Tx:
        """Move ``amount`` smallest units between the wallet and the off-chain balance.

        ``amount > 0``: approve, ``Custody.deposit``, ``resize_channel {+amount, -amount}``,
        ``Custody.resize``: the relay credits the amount. ``amount < 0``: ``resize_channel
        {-|amount|, +|amount|}`` and ``Custody.resize``: the amount leaves the off-chain
        balance and reaches the wallet's custody ledger (see :meth:`withdraw`). Returns the
        ``Custody.resize`` transaction.
        """
        if isinstance(amount, bool) or not isinstance(amount, int) or amount == 0:
            L.units(amount, "amount")  # raises the explanatory error
        L.units(abs(amount), "amount")  # the magnitude's range
        record = await self._open_record(channel_id)
        await self._check_resizable(record, amount)
        async with self._lock_for(record.channel_id):
            op = await self._run("resize", record.channel_id, L.plan_resize(amount))
        return await self._tx(op.results["resize_tx"], "submit_resize", record.channel_id)

    async def _check_resizable(self, record: L.ChannelRecord, amount: int) -> None:
        if record.status != L.ACTIVE:
            raise ChannelStateError(
                f"channel {record.channel_id} is {record.status}: resizing needs an active channel"
            )
        await self._ensure_chain()
        if amount > 0:
            balance = await self._chain(self.custody.token_balance(self._require_asset().token))
            if balance < amount:
                raise InsufficientBalanceError(
                    f"the wallet holds {balance} units of {self.asset}; {amount} cannot be "
                    "deposited: nothing was sent"
                )
        else:
            available = (await self.balances()).get(self.asset, 0)
            if -amount > available:
                raise InsufficientBalanceError(
                    f"the off-chain balance is {available} units of {self.asset}; "
                    f"{-amount} cannot be moved out: nothing was sent"
                )

    async def withdraw(self, amount: int | None = None, *, channel_id: str | None = None) -> Tx:
        """Withdraw to the wallet.

        Without ``channel_id``: ``Custody.withdraw`` of ``amount`` (default: all) of the
        wallet's available custody balance (what a close paid out). With ``channel_id``:
        first move ``amount`` of the off-chain balance out through that channel (a resize
        by ``-amount``), then withdraw it. Returns the ``Custody.withdraw`` transaction.
        """
        if amount is not None:
            L.units(amount, "amount")
        if channel_id is None:
            await self.connect()
            await self._ensure_chain()
            token = self._require_asset().token
            available = await self._chain(self.custody.balance(token))
            if amount is None:
                amount = available
            if amount == 0 or amount > available:
                raise InsufficientBalanceError(
                    f"the custody holds {available} units of {self.asset} for the wallet; "
                    f"{amount} cannot be withdrawn"
                )
            async with self._lock_for(None):
                op = await self._run(
                    "withdraw", None, L.plan_withdraw(amount, through_channel=False)
                )
            return await self._tx(op.results["withdraw_tx"], "withdraw", None)
        if amount is None:
            raise InvalidAmountError(
                "withdrawing through a channel needs an amount (integer smallest units)"
            )
        record = await self._open_record(channel_id)
        await self._check_resizable(record, -amount)
        async with self._lock_for(record.channel_id):
            op = await self._run(
                "withdraw", record.channel_id, L.plan_withdraw(amount, through_channel=True)
            )
        return await self._tx(op.results["withdraw_tx"], "withdraw", record.channel_id)

    async def challenge(self, channel_id: str) -> Tx:
        """Dispute the channel on chain with the latest fully signed state from the store
        (the wallet signs the challenge). The status becomes ``dispute`` until the challenge
        period (``challenge_period`` seconds) ends; then :meth:`close_channel` closes it."""
        record = await self._open_record(channel_id)
        if not record.is_open:
            raise ChannelStateError(
                f"channel {record.channel_id} is {record.status}: only an open channel can be "
                "challenged"
            )
        if self._store.latest_onchain_state(record.channel_id) is None:
            raise ChannelStateError(
                f"no fully signed on-chain state of {record.channel_id} is stored"
            )
        async with self._lock_for(record.channel_id):
            op = await self._run("challenge", record.channel_id, L.plan_challenge())
        return await self._tx(op.results["challenge_tx"], "challenge", record.channel_id)

    async def checkpoint(self, channel_id: str) -> Tx:
        """Record a newer fully signed OPERATE state on chain (clears a challenge).

        A v0.5 relay never co-signs OPERATE states, so unless such a state was stored this
        raises :class:`ChannelStateError` saying so; nothing is sent.
        """
        record = await self._open_record(channel_id)
        if record.status not in (L.ACTIVE, L.RESIZING, L.DISPUTE):
            raise ChannelStateError(f"channel {record.channel_id} is {record.status}")
        self._checkpoint_candidate(record.channel_id)
        async with self._lock_for(record.channel_id):
            op = await self._run("checkpoint", record.channel_id, L.plan_checkpoint())
        return await self._tx(op.results["checkpoint_tx"], "checkpoint", record.channel_id)

    async def balances(self) -> dict[str, int]:
        """The off-chain (unified) balances on the relay: ``{asset symbol: smallest units}``."""
        await self.connect()
        rows = await self._require_relay().get_ledger_balances()
        balances = self._parse_balances(rows)
        self._balances = dict(balances)
        return balances

    # --- reading ------------------------------------------------------------------------

    def _public(self, record: L.ChannelRecord) -> Channel:
        times = self._store.channel_times(record.channel_id) or (None, None)
        states = self._store.states(record.channel_id)
        return Channel(
            id=record.channel_id,
            status=record.status,
            version=record.version,
            intent=record.intent.name,
            state_hash=record.state_hash,
            adjudicator=record.definition.adjudicator,
            challenge_period=record.definition.challenge,
            nonce=record.definition.nonce,
            tx_hashes={
                _TX_NAMES.get(step, step): tx
                for step, tx in self._store.tx_hashes(record.channel_id).items()
            },
            participants=record.definition.participants,
            token=record.token,
            amount=record.amount,
            chain_id=record.chain_id,
            asset=self.asset if record.token == self.config.token else None,
            challenge_expiry=record.challenge_expiry or None,
            proofs_count=sum(1 for s in states if len(s.state.sigs) == 2),
            created_at=times[0],
            updated_at=times[1],
        )

    def channels(self) -> list[Channel]:
        """Every channel in the store, oldest first (closed ones included)."""
        return [self._public(r) for r in self._store.list_channels()]

    def get_channel(self, channel_id: str) -> Channel:
        """The channel ``channel_id`` (:class:`ChannelNotFoundError` if unknown)."""
        return self._public(self._record(_channel_key(channel_id)))

    def history(self, channel_id: str) -> pd.DataFrame:
        """The channel's timeline (signed states, transactions, transfers, status changes)
        as a DataFrame: ``time``, ``event``, ``status``, ``version``, ``intent``, ``amount``,
        ``asset``, ``counterparty``, ``tx_hash``, ``explorer_url``, ``detail``."""
        import pandas as pd

        cid = self._record(_channel_key(channel_id)).channel_id
        rows = self._store.history(cid)
        for row in rows:
            tx = row.get("tx_hash")
            row["explorer_url"] = self._explorer_url(tx) if tx else None
        columns = [*HISTORY_COLUMNS[:-1], "explorer_url", HISTORY_COLUMNS[-1]]
        frame = pd.DataFrame(rows, columns=columns)
        frame["time"] = pd.to_datetime(frame["time"], utc=True)
        frame["version"] = frame["version"].astype("Int64")
        # exact integers (uint256 does not fit int64); None where a row has no amount
        frame["amount"] = pd.Series(
            [row["amount"] for row in rows], index=frame.index, dtype=object
        )
        return frame

    def pending_work(self) -> dict[str, Any]:
        """What is half-done (see :meth:`ChannelStore.pending_work`)."""
        return self._store.pending_work()

    # --- recovery -----------------------------------------------------------------------

    async def recover(self) -> list[L.Operation]:
        """Finish every operation a previous provider over this store left unfinished
        (resubmitting countersigned RESIZE/FINALIZE states, following recorded transactions
        to their receipts, withdrawing what a close paid out). Returns the operations as
        they ended; raises the first error (the operation stays resumable if it was an
        outage)."""
        await self.connect()
        return await self._recover(raise_errors=True)

    async def _recover(self, *, raise_errors: bool) -> list[L.Operation]:
        if self._recovering:
            return []
        self._recovering = True
        finished: list[L.Operation] = []
        try:
            for op in self._store.unfinished_operations():
                async with self._lock_for(op.channel_id if op.kind != "create" else None):
                    current = self._store.operation(op.id)
                    if current is None or not current.resumable:
                        continue
                    self._store.journal(op.id, current.next_step or "-", "resumed")
                    try:
                        done = await self._drive(current.resume())
                    except SettlementError as exc:
                        _log.warning("could not finish operation %s (%s): %s", op.id, op.kind, exc)
                        if raise_errors:
                            raise
                        continue
                finished.append(done)
                self._emit("recovered", done)
        finally:
            self._recovering = False
        return finished


_APPROVE_ABI: Final = [
    {
        "type": "function",
        "name": "approve",
        "stateMutability": "nonpayable",
        "inputs": [{"name": "spender", "type": "address"}, {"name": "value", "type": "uint256"}],
        "outputs": [{"name": "", "type": "bool"}],
    }
]
