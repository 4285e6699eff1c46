"""What the node knows of the chain: a small read-only view the operator plugs in.

The local node does not index the ChannelHub's events itself; it asks a view when a rule
depends on the chain, as Nitronode v1.4.1 (``nitronode/``) does from the events it
indexes. Two questions are asked:

- :class:`ChainView` (the head of the chain): ``get_home_channel`` / ``get_channels``
  report the on-chain status and ``user.v1.get_balances`` reports as ``enforced`` what the
  last on-chain state backs.
- :class:`ConfirmedChainView` (the chain ``confirmation_delay_secs`` ago): what the node
  may *rely on* before it co-signs (:mod:`.backing`). Nitronode v1.4.1 feeds every
  ChannelHub event through a confirmation gate that releases it once its block's timestamp
  is ``confirmation_delay_secs`` old, and only then marks a channel open or moves its
  on-chain version; :meth:`ConfirmedHubView.confirmed_channel` gives the same answer by
  reading ``getChannelData`` at the newest block that old. "Now" is the chain's clock (the
  latest block's timestamp), not this machine's: on a live chain they agree, and on the
  sandbox a test moves time by mining (``time_travel``) instead of sleeping.

:class:`ConfirmedHubView` answers both over a
:class:`~settlement_widgets.channel.v1.chain.hub.ChannelHubClient`. Without a view (unit tests),
the node assumes every co-signed on-chain operation was carried out (see
:class:`~.handlers.NitronodeService`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Protocol, runtime_checkable

from ....errors import ChainUnavailableError, ConfigurationError
from ..core.ids import as_bytes32

if TYPE_CHECKING:
    from ..chain.hub import ChannelHubClient
    from ..chain.hub_types import HubEscrowData

__all__ = [
    "CHANNEL_STATUSES",
    "ChainChannel",
    "ChainView",
    "ChainViews",
    "ConfirmedChainView",
    "ConfirmedHubView",
    "as_confirmed_view",
    "node_view",
    "one_head_per_request",
]

#: ``channel_status`` results, as the wire's ``channel.status`` (SDK ``ChannelStatus``)
CHANNEL_STATUSES: Final = ("void", "open", "challenged", "closed")

#: the hub's ``ChannelStatus`` (Nitrolite v1.4.1 ``interfaces/Types.sol``: VOID, OPERATING,
#: DISPUTED, CLOSED, MIGRATING_IN, MIGRATED_OUT) as the node's wire status. A channel
#: migrating in operates here; one migrated out is gone from this chain, like a closed one.
_STATUS_BY_CODE: Final = {
    0: "void",
    1: "open",
    2: "challenged",
    3: "closed",
    4: "open",
    5: "closed",
}
#: the one hub status in which the node may sign a channel's next state
OPERATING: Final = 1


@dataclass(frozen=True)
class ChainChannel:
    """A home channel as the chain shows it: its hub status (``status_code``, and the wire
    name), the version and user allocation (token units) of its last on-chain state."""

    status_code: int
    version: int
    user_allocation: int

    @property
    def status(self) -> str:
        return _STATUS_BY_CODE.get(self.status_code, "closed")

    @property
    def operating(self) -> bool:
        """Open on chain: the only status in which a new state of the channel is signed."""
        return self.status_code == OPERATING


#: what an id the hub has never seen reads as
VOID_CHANNEL: Final = ChainChannel(0, 0, 0)


@runtime_checkable
class ChainView(Protocol):
    """Read-only on-chain facts about home channels, by channel id (``0x`` + 64 hex)."""

    async def channel_status(self, channel_id: str) -> str:
        """``"void"`` (unknown on chain), ``"open"``, ``"challenged"`` or ``"closed"``."""
        ...

    async def enforced_user_balance(self, channel_id: str) -> int:
        """The user's allocation in the channel's last on-chain state, in token units
        (0 for a channel that is not on chain)."""
        ...


@runtime_checkable
class ConfirmedChainView(ChainView, Protocol):
    """A :class:`ChainView` that can also answer as of ``delay_secs`` ago."""

    async def confirmed_channel(self, channel_id: str, delay_secs: int) -> ChainChannel:
        """The channel as the chain showed it ``delay_secs`` (chain time) before its latest
        block; ``delay_secs`` 0 reads the latest block."""
        ...


#: what the request being handled read of the chain (None: outside a request): the latest
#: block per view, and each confirmed channel record read under that block
_REQUEST_HEAD: ContextVar[dict[Any, Any] | None] = ContextVar(
    "nitronode_request_head", default=None
)


class one_head_per_request:  # a function-like name: used as ``with one_head_per_request():``
    """Within one request, every read of the latest block sees the same block: the node's
    checks of one state (the sender's and the receiver's channels, backing, rescue) agree
    on one chain head, and a transfer reads the head once instead of three times. No
    handler sends a transaction or waits for a block, so nothing inside needs a newer one.

    A class, not a ``contextlib.contextmanager``: it wraps every request, and the generator
    machinery cost several times the two ContextVar calls it does."""

    __slots__ = ("_token",)

    def __enter__(self) -> None:
        self._token = _REQUEST_HEAD.set({})

    def __exit__(self, *exc: object) -> None:
        _REQUEST_HEAD.reset(self._token)


async def latest_block(w3: Any) -> Mapping[str, Any]:
    """The latest block's ``number``, ``hash`` (bytes) and ``timestamp``, asked of the
    provider directly: web3's block formatters (every field of the block turned into
    ``HexBytes``/``AttributeDict``) cost more than the request itself on the in-process chain,
    and the node reads the head on every request."""
    reply = await w3.provider.make_request("eth_getBlockByNumber", ["latest", False])
    block = reply.get("result") if isinstance(reply, Mapping) else None
    if not isinstance(block, Mapping):
        error = reply.get("error") if isinstance(reply, Mapping) else reply
        raise ChainUnavailableError(f"the chain did not return its latest block: {error!r}")
    return {
        "number": _quantity(block["number"]),
        "hash": _raw_bytes(block["hash"]),
        "timestamp": _quantity(block["timestamp"]),
    }


def _quantity(value: Any) -> int:
    """A JSON-RPC quantity: ``0x``-hex text from a node, an int from eth-tester."""
    return int(value, 16) if isinstance(value, str) else int(value)


def _raw_bytes(value: Any) -> bytes:
    return bytes.fromhex(value[2:]) if isinstance(value, str) else bytes(value)


def _decode(raw: Any) -> ChainChannel:
    """``getChannelData``'s tuple (status, definition, lastState, expiry, lockedFunds),
    positionally as the v1.4.1 ABI lays it out: lastState = (version, intent, metadata,
    homeLedger, ...), homeLedger = (chainId, token, decimals, userAllocation, ...)."""
    status, _definition, last_state = raw[0], raw[1], raw[2]
    if int(status) == 0:
        return VOID_CHANNEL
    return ChainChannel(int(status), int(last_state[0]), int(last_state[3][3]))


class ConfirmedHubView:
    """:class:`ConfirmedChainView` over a ChannelHub client (reads only).

    Block timestamps are cached by number: a block's timestamp never changes on the chains
    the sandbox runs (no reorgs), so the confirmed-block search costs a few reads once.
    Channel records are cached by (channel, block number) for the same reason: a transfer
    asks about both parties' channels several times, and each ``getChannelData`` is an
    ``eth_call`` (about 20 ms of EVM on the in-process chain, 90% of the node's work per
    transfer before this cache), while the answer changes only when a block does. A read of
    the latest block asks for that block first (one cheap request) and keys the record by
    its hash, so a chain reverted to a snapshot (``evm_revert``) is never answered from the
    block it replaced.
    """

    #: channel records kept (oldest dropped first): far more than the channels in play
    CACHE_SIZE: Final = 4096

    def __init__(self, hub: ChannelHubClient) -> None:
        self._hub = hub
        self._head_key = f"head:{id(self)}"
        self._timestamps: dict[int, int] = {}
        self._records: dict[tuple[str, int | bytes], ChainChannel] = {}

    @property
    def hub(self) -> ChannelHubClient:
        return self._hub

    async def _read(self, channel_id: str, block: int | str = "latest") -> ChainChannel:
        key = as_bytes32(channel_id, "channel_id")
        latest = block == "latest"
        at: int | bytes
        if latest:
            head = await self._head()
            number, at = int(head["number"]), bytes(head["hash"])
        else:
            number = at = int(block)
        cached = self._records.get((key.hex(), at))
        if cached is not None:
            return cached
        call = self._hub.contract.functions.getChannelData("0x" + key.hex())
        try:
            raw = await call.call(block_identifier=number)
        except Exception:
            if latest:
                raise
            # a block before the hub existed (or whose state the node no longer keeps,
            # e.g. anvil resumed from a state dump): nothing there can be relied on
            return VOID_CHANNEL
        record = _decode(raw)
        if len(self._records) >= self.CACHE_SIZE:
            del self._records[next(iter(self._records))]
        self._records[(key.hex(), at)] = record
        return record

    async def _head(self) -> Mapping[str, Any]:
        """The latest block (the request's, inside :func:`one_head_per_request`; one per
        chain: a node serving two chains reads each chain's head once)."""
        scope = _REQUEST_HEAD.get()
        key = self._head_key
        if scope is not None and key in scope:
            return scope[key]
        head = await latest_block(self._hub.signer.w3)
        if scope is not None:
            scope[key] = head
        return head

    async def _timestamp(self, number: int) -> int:
        """Block ``number``'s timestamp; 0 for a block the node cannot return (anvil resumed
        from a state dump knows no block before it): such blocks precede every block it
        knows, so the search stays ordered, and their state reads as void (:meth:`_read`)."""
        cached = self._timestamps.get(number)
        if cached is None:
            try:
                block = await self._hub.signer.w3.eth.get_block(number)
            except Exception:  # web3 raises BlockNotFound or the node's own error
                return 0
            cached = self._timestamps[number] = int(block["timestamp"])
        return cached

    async def confirmed_block(self, delay_secs: int) -> int | None:
        """The newest block whose timestamp is at least ``delay_secs`` older than the
        latest block's (``None``: the chain is younger than that)."""
        latest = await self._head()
        number, now = int(latest["number"]), int(latest["timestamp"])
        self._timestamps[number] = now
        return await self._block_until(now - delay_secs, number)

    async def block_before(self, timestamp: int) -> int | None:
        """The newest block whose timestamp is before ``timestamp`` (``None``: none is)."""
        latest = await self._head()
        number = int(latest["number"])
        self._timestamps[number] = int(latest["timestamp"])
        return await self._block_until(timestamp - 1, number)

    async def _block_until(self, cutoff: int, number: int) -> int | None:
        """The newest block up to ``number`` whose timestamp is at most ``cutoff``."""
        if await self._timestamp(0) > cutoff:
            return None
        low, high = 0, number  # invariant: ts(low) <= cutoff < ts(high + 1)
        while low < high:
            middle = (low + high + 1) // 2
            if await self._timestamp(middle) <= cutoff:
                low = middle
            else:
                high = middle - 1
        return low

    async def confirmed_channel(self, channel_id: str, delay_secs: int) -> ChainChannel:
        """Inside a request (:func:`one_head_per_request`) each (channel, delay) is read once:
        the answer depends only on the request's head, which is fixed for the request, and a
        transfer asks about both parties' channels twice each (rescue, backing, receiver)."""
        scope = _REQUEST_HEAD.get()
        memo = (self._head_key, channel_id, delay_secs)
        if scope is not None:
            known = scope.get(memo)
            if known is not None:
                return known  # type: ignore[no-any-return]
        if delay_secs <= 0:
            record = await self._read(channel_id)
        else:
            block = await self.confirmed_block(delay_secs)
            record = VOID_CHANNEL if block is None else await self._read(channel_id, block)
        if scope is not None:
            scope[memo] = record
        return record

    async def channel_status(self, channel_id: str) -> str:
        return (await self._read(channel_id)).status

    async def enforced_user_balance(self, channel_id: str) -> int:
        return (await self._read(channel_id)).user_allocation

    async def escrow_deposit(self, escrow_id: str, delay_secs: int) -> HubEscrowData | None:
        """The escrow deposit record on this chain as it stood ``delay_secs`` (chain time)
        before the latest block (None: the chain is younger than that)."""
        if delay_secs <= 0:
            head = await self._head()
            return await self._hub.get_escrow_deposit_data(escrow_id, block=int(head["number"]))
        block = await self.confirmed_block(delay_secs)
        if block is None:
            return None
        return await self._hub.get_escrow_deposit_data(escrow_id, block=block)

    async def escrow_withdrawal(self, escrow_id: str, delay_secs: int) -> HubEscrowData | None:
        """The escrow withdrawal record on this chain (as :meth:`escrow_deposit`)."""
        if delay_secs <= 0:
            head = await self._head()
            return await self._hub.get_escrow_withdrawal_data(escrow_id, block=int(head["number"]))
        block = await self.confirmed_block(delay_secs)
        if block is None:
            return None
        return await self._hub.get_escrow_withdrawal_data(escrow_id, block=block)


class ChainViews:
    """One node, several chains: a :class:`ConfirmedChainView` per blockchain id, each
    channel read on the chain it lives on.

    Nitrolite v1 keeps one balance per (wallet, asset) across chains, and a home channel may
    live on any chain the node serves; the channel id does not name its chain (it hashes the
    definition only), so ``locate`` (the node's ledger) says where a known channel lives. An
    id the ledger does not know is asked of every chain, and any trace on any of them
    counts (a new channel id must be unknown everywhere).
    """

    def __init__(
        self,
        views: Mapping[int, ConfirmedChainView],
        locate: Callable[[str], int | None],
    ) -> None:
        if not views:
            raise ConfigurationError("a node serving several chains needs a view of each")
        self._views = dict(views)
        self._locate = locate

    @property
    def views(self) -> Mapping[int, ConfirmedChainView]:
        return self._views

    def on(self, chain_id: int) -> ConfirmedChainView | None:
        """The view of chain ``chain_id`` (None: the node does not watch it)."""
        return self._views.get(chain_id)

    def _view_of(self, channel_id: str) -> ConfirmedChainView | None:
        chain = self._locate(channel_id)
        if chain is None:
            return None
        view = self._views.get(chain)
        if view is None:
            raise ConfigurationError(f"the node has no view of chain {chain}")
        return view

    async def confirmed_channel(self, channel_id: str, delay_secs: int) -> ChainChannel:
        view = self._view_of(channel_id)
        if view is not None:
            return await view.confirmed_channel(channel_id, delay_secs)
        for each in self._views.values():
            record = await each.confirmed_channel(channel_id, delay_secs)
            if record.status_code != VOID_CHANNEL.status_code:
                return record
        return VOID_CHANNEL

    async def channel_status(self, channel_id: str) -> str:
        return (await self.confirmed_channel(channel_id, 0)).status

    async def enforced_user_balance(self, channel_id: str) -> int:
        return (await self.confirmed_channel(channel_id, 0)).user_allocation


def node_view(
    view: ChainView | Mapping[int, ChainView] | None,
    locate: Callable[[str], int | None],
) -> ConfirmedChainView | None:
    """The view a node's rules use: one chain's (:func:`as_confirmed_view`), or for a
    mapping of blockchain id to view, :class:`ChainViews` over each chain's."""
    if isinstance(view, Mapping):
        views: dict[int, ConfirmedChainView] = {}
        for chain, each in view.items():
            confirmed = as_confirmed_view(each)
            if confirmed is None:
                raise ConfigurationError(f"no view of chain {chain}")
            views[int(chain)] = confirmed
        return ChainViews(views, locate)
    return as_confirmed_view(view)


def as_confirmed_view(view: ChainView | None) -> ConfirmedChainView | None:
    """The view the node's rules use: ``view`` itself when it answers confirmed reads, a
    :class:`ConfirmedHubView` over the hub of a plain ``HubChainView`` (what the sandbox
    and its twins construct), ``None`` for no view."""
    if view is None or isinstance(view, ConfirmedChainView):
        return view
    from ..chain.hub import ChannelHubClient

    hub = None
    with contextlib.suppress(AttributeError):
        hub = view._hub  # type: ignore[attr-defined]  # HubChainView keeps its client there
    if isinstance(hub, ChannelHubClient):
        return ConfirmedHubView(hub)
    raise ConfigurationError(
        f"the Nitronode needs a chain view that can read the chain as of its confirmation "
        f"delay (confirmed_channel); {type(view).__name__} cannot"
    )
