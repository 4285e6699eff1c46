"""``ChannelProvider``: the channel operations on Nitrolite v0.5, persisted.

The provider is the effects runner around :mod:`.lifecycle` (what to check, which steps, how a
record changes) and :mod:`.store` (the write-ahead log): every user operation is stored with
its step plan before it starts, each step is journaled before it runs, a signed state or a
transaction hash is written before the relay or the chain is asked to act on it, and a
step's results land in the same SQLite transaction that marks it done. A provider created
over the same store later (another process, after a crash) finds unfinished operations and
finishes them: automatically on its first use (:meth:`ChannelProvider.connect`), or when
:meth:`ChannelProvider.recover` is awaited.

Amounts are integers in smallest units everywhere in this API; the wire's decimal strings
are produced and parsed at the edge (:mod:`settlement_widgets.channel.v0_5.core.amounts`).

Events (:meth:`ChannelProvider.on`): ``channel_created``, ``channel_updated`` (every change,
with the :class:`Channel`), ``channel_challenged``, ``channel_closed``, ``transfer`` (a
:class:`Transfer`, sent or received), ``balance`` (``{symbol: units}``), ``step`` (a
:class:`StepEvent` before and after each step) and ``recovered`` (an operation finished by
recovery). They are fed by the relay's ``cu``/``bu``/``tr``/``channels`` notifications, by
the receipts of our own transactions and by a custody-event watcher (``watch_interval``).

Where the code lives: this module holds :class:`ChannelProvider` itself (construction,
identity, events and the public operations); it is composed of mixins, one module per
concern: :mod:`.connection` (relay and chain connection, login, close),
:mod:`.notifications` (the relay's pushed updates, balances), :mod:`.transfers`
(:meth:`~ChannelProvider.transfer` and received transfers), :mod:`.chain_events` (custody
events, the watcher, :meth:`~ChannelProvider.sync`), :mod:`.transactions` (sending and
following transactions, proofs), :mod:`.operations` (the write-ahead runner, recovery),
:mod:`.steps` (one method per operation step) and :mod:`.reading` (channels, history).
:mod:`._base` declares for mypy what the mixins share.
"""

from __future__ import annotations

import asyncio
import contextlib
import difflib
import inspect
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Final

from ....addresses import validate_address
from ....errors import (
    ChannelNotFoundError,
    ChannelStateError,
    ConfigurationError,
    InsufficientBalanceError,
    InvalidAmountError,
    SettlementValueError,
    UnknownOptionError,
)
from ....networks import Explorer
from ....proofs import ProofWriter
from ...models import Channel, StepEvent, Transfer, Tx
from ..chain.custody import ChannelData, CustodyClient
from ..core import lifecycle as L
from ..core.amounts import format_amount
from ._base import _channel_key, _log
from .chain_events import _ChainEventsMixin
from .config import ChannelConfig
from .connection import DEFAULT_ALLOWANCE_TOKENS as DEFAULT_ALLOWANCE_TOKENS
from .connection import _ConnectionMixin
from .notifications import _NotificationsMixin
from .operations import _OperationsMixin
from .reading import _ReadingMixin
from .relay_client import RelayClient
from .steps import _StepsMixin
from .store import ChannelStore
from .transactions import _TransactionsMixin
from .transfers import _TransfersMixin
from .write_group import WriteGroup

if TYPE_CHECKING:
    from ....signer import Signer

__all__ = [
    "EVENTS",
    "Channel",
    "ChannelProvider",
    "StepEvent",
    "Transfer",
    "Tx",
    "adopted_record",
]

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


class ChannelProvider(
    _ConnectionMixin,
    _NotificationsMixin,
    _TransfersMixin,
    _ChainEventsMixin,
    _TransactionsMixin,
    _OperationsMixin,
    _StepsMixin,
    _ReadingMixin,
):
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
        wallet: Signer,
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
        from ....signer import Signer

        if not isinstance(wallet, Signer):
            raise SettlementValueError(
                "wallet must be a Signer: a WalletClient (a key) or a BrowserWallet, got "
                f"{type(wallet).__name__}"
            )
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
        self._writes = WriteGroup(self._store)
        self._transfers_in_flight = 0
        self._relay = relay
        self._allowance = allowance
        self._watch_interval = watch_interval
        self._auto_recover = auto_recover
        self.custody = CustodyClient(wallet, config.custody)
        self._explorer = Explorer(config.explorer_base) if config.explorer_base else None
        self._asset = None
        self._decimals = {}
        self._ready = False
        self._ready_lock = None
        self._recovering = False
        self._recovered_once = False
        self._chain_checked = False
        self._closed = False
        self._listeners = {}
        self._channel_locks = {}
        self._relay_channels = {}
        self._relay_changed = None
        self._balances = None
        self._watcher = None
        self._sync_lock = None
        self._tasks = set()
        self._proof_queue = []
        self._proof_writer = None
        self._proof_log = ProofWriter()
        self._unsubscribe = []

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

    def _amount(self, units: int) -> str:
        """``units`` of the channel asset as a person reads them (``10 ytest.usd``), for
        messages: exact, never smallest units or a float."""
        decimals = self._asset.decimals if self._asset is not None else self.config.asset_decimals
        return format_amount(units, decimals, self.asset)

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
        from ....errors import InvalidAddressError

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
                    f"initial_amount {self._amount(amount)} exceeds the wallet's "
                    f"{self._amount(balance)}: nothing was sent"
                )
        async with self._lock_for(None):
            op = await self._run("create", None, L.plan_create(amount))
        return self._public(self._record(self._op_channel(op)))

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
                    f"the wallet holds {self._amount(balance)}; {self._amount(amount)} "
                    "cannot be deposited: nothing was sent"
                )
        else:
            available = (await self.balances()).get(self.asset, 0)
            if -amount > available:
                raise InsufficientBalanceError(
                    f"the off-chain balance is {self._amount(available)}; "
                    f"{self._amount(-amount)} cannot be moved out: nothing was sent"
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
                    f"the custody holds {self._amount(available)} for the wallet; "
                    f"{self._amount(amount)} cannot be withdrawn"
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

    # --- channels this store does not know ---------------------------------------------------

    async def adopt_open_channels(self) -> list[Channel]:
        """Take over the wallet's channels the relay reports open but this store does not
        know (the store was lost, or another process opened them with the same key): each
        is rebuilt from the custody contract (its definition and the last state it accepted,
        signed by both sides; v0.5 transfers move the relay's ledger, not the channel's
        state) and stored, so :meth:`close_channel` (and challenge, resize) work on it.
        Without this, ``create_channel`` would refuse ("close it first") with nothing to
        close. Returns the adopted channels (none when the store knows them all)."""
        await self.connect()
        await self._ensure_chain()
        relay = self._require_relay()
        listed = await relay.get_channels(participant=self.wallet.address)
        adopted: list[Channel] = []
        for entry in listed:
            cid = str(entry.get("channel_id", "")).lower()
            if entry.get("status") == "closed" or not cid or self._store.get_channel(cid):
                continue
            if int(entry.get("chain_id", self.config.chain_id)) != self.config.chain_id:
                continue
            try:
                data = await self._chain(self.custody.get_channel_data(cid))
            except ChannelNotFoundError:
                continue  # closed on chain meanwhile: nothing to adopt
            record = adopted_record(cid, self.config.chain_id, data, self.wallet.address)
            if record is None:
                continue
            state = data.last_valid_state
            with self._store.transaction():
                self._store.put_channel(record)
                self._store.put_state(
                    cid,
                    state,
                    record.state_hash,
                    status="onchain",
                    server_signature=state.sigs[1] if len(state.sigs) > 1 else None,
                )
                self._store.add_history(
                    cid,
                    "adopted from the relay and the custody",
                    status=record.status,
                    version=record.version,
                    intent=record.intent.name,
                    amount=record.amount,
                    counterparty=record.broker,
                )
            channel = self._public(record)
            adopted.append(channel)
            self._emit("channel_updated", channel)
        return adopted

    # --- recovery -----------------------------------------------------------------------

    async def recover(self) -> list[L.Operation]:
        """Finish every operation a previous provider over this store left unfinished
        (resubmitting countersigned RESIZE/FINALIZE states, following recorded transactions
        to their receipts, withdrawing what a close paid out). Returns the operations as
        they ended; raises the first error (the operation stays resumable if it was an
        outage)."""
        await self.connect()
        return await self._recover(raise_errors=True)


def adopted_record(
    channel_id: str, chain_id: int, data: ChannelData, wallet: str
) -> L.ChannelRecord | None:
    """The record of a channel this store never saw, from the custody's ``getChannelData``
    (None when ``wallet`` is not its participant 0, or it is not active or in dispute)."""
    from ..core.types import ChannelStatus

    if data.channel.participants[0].lower() != wallet.lower():
        return None
    status = {ChannelStatus.ACTIVE: L.ACTIVE, ChannelStatus.DISPUTE: L.DISPUTE}.get(data.status)
    if status is None:
        return None
    state = data.last_valid_state
    record = L.ChannelRecord(
        channel_id=channel_id,
        chain_id=chain_id,
        definition=data.channel,
        token=state.allocations[0].token,
        status=status,
        version=state.version,
        intent=state.intent,
        state_hash="",
        challenge_expiry=data.challenge_expiry,
    )
    return record.with_state(state)
