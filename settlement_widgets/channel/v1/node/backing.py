"""What backs a state before the node co-signs it: the node never signs unbacked funds.

A user's off-chain balance is only as good as what stands behind it: funds the chain holds
for the channel (its creation and deposits, once the chain shows them) and funds the node
actually received off chain (transfers and app-session releases, themselves checked when
they were sent). :class:`BackingGuard` applies the rules Nitronode v1.4.1 enforces for this
before any signature, with its error texts:

- **Channel ids are never reused** (``request_creation``): an id the node's ledger knows,
  or that the chain knows (created, even if closed since), is refused with ``"cannot use
  same home channel id"``; a co-signed creation for such an id could never go on chain and
  would let the user spend a deposit that never arrives.
- **One channel lifecycle at a time**: a new channel needs every previous one of the same
  wallet and asset *closed on chain* (confirmed), else ``"existing channel is not yet
  closed on-chain; wait for settlement before opening a new channel"``.
- **An on-chain step must settle before the next state** (upstream
  ``EnsureNoOngoingStateTransitions``): while the last co-signed state is a home deposit or
  withdrawal whose version the chain does not show yet (as of ``confirmation_delay_secs``
  ago), every user state is refused with ``"ongoing state transitions check failed: home
  deposit is still ongoing"`` (``withdrawal``). So a deposit counts towards what the user
  can spend only once the chain confirms it, and a creation with a deposit likewise.
- **Only a channel operating on chain takes new states**: one the chain does not show
  (yet) is refused with ``"home channel is not materialized onchain"``, one challenged,
  closed or migrated away with ``"user has no active channel"``.
- **A spend never exceeds the backed balance** (transfer, withdrawal, app-session
  deposit): the previous balance less every deposit of the channel the chain has not
  confirmed. The rules above already keep unconfirmed deposits from being spent; this is
  the arithmetic statement of the invariant, kept as a second line of defence.
- **Node-issued states** (a transfer's receive, an app session's release) are node-signed
  only for a channel operating on chain with nothing ongoing; otherwise they are stored
  unsigned, as upstream does for a channel that is not open, and the user acknowledges
  them later.

The chain is read through a :class:`~.chain_view.ConfirmedChainView`; without one (unit
tests of the RPC surface) the ledger's own record stands in, which assumes every co-signed
on-chain step was carried out at once.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any, Final

from ....errors import RelayError
from ..core.decimals import exact_add, exact_sub, parse_decimal, plain_decimal_string
from ..core.transitions import TransitionType
from .chain_view import VOID_CHANNEL, ChainChannel, ConfirmedChainView
from .config import NitronodeConfig
from .ledger import NitronodeLedger

__all__ = [
    "CHANNEL_ID_REUSED",
    "NOT_CLOSED_ON_CHAIN",
    "NOT_MATERIALIZED",
    "NO_ACTIVE_CHANNEL",
    "ONGOING",
    "BackingGuard",
]

T = TransitionType

#: Nitronode v1.4.1 texts (``request_creation.go``, ``submit_state.go``, ``db_store.go``)
CHANNEL_ID_REUSED: Final = "cannot use same home channel id"
NOT_CLOSED_ON_CHAIN: Final = (
    "existing channel is not yet closed on-chain; wait for settlement before opening a new channel"
)
ONGOING: Final = "ongoing state transitions check failed: "
NOT_MATERIALIZED: Final = "home channel is not materialized onchain"
NO_ACTIVE_CHANNEL: Final = "user has no active channel"

#: on-chain steps a later state must wait for, with the upstream wording of each
_ONGOING_TEXT: Final[dict[int, str]] = {
    T.HOME_DEPOSIT: "home deposit is still ongoing",
    T.HOME_WITHDRAWAL: "home withdrawal is still ongoing",
}
#: transitions that take funds out of the user's balance
#: (an escrow lock is the start of a withdrawal to another chain, a migrate moves the whole
#: balance to another chain where the node locks as much: their amounts must be backed)
_SPENDS: Final = frozenset({T.TRANSFER_SEND, T.HOME_WITHDRAWAL, T.COMMIT, T.ESCROW_LOCK, T.MIGRATE})
#: the ledger's channel status as a hub status code (for the no-view mode)
_LEDGER_CODES: Final = {"void": 0, "open": 1, "challenged": 2, "closed": 3}


def _fail(text: str) -> RelayError:
    return RelayError(text)


class BackingGuard:
    """The node's backing rules over its ledger and (optionally) a confirmed chain view.

    Every method only reads; the handlers call them before their first mutation, so a
    refused request changes nothing.
    """

    def __init__(
        self,
        config: NitronodeConfig,
        ledger: NitronodeLedger,
        view: ConfirmedChainView | None,
    ) -> None:
        self.config = config
        self.ledger = ledger
        self.view = view

    def confirmation_delay(self, channel: Mapping[str, Any]) -> int:
        """``confirmation_delay_secs`` of the chain the channel lives on."""
        chain = self.config.chain(int(channel["blockchain_id"]))
        return int(chain.confirmation_delay_secs) if chain is not None else 0

    async def on_chain(self, channel: Mapping[str, Any]) -> ChainChannel:
        """The channel as the node may rely on it: as the chain showed it
        ``confirmation_delay_secs`` ago (without a view: as the ledger assumes it)."""
        if self.view is None:
            code = _LEDGER_CODES.get(str(channel["status"]), 3)
            return ChainChannel(code, int(channel["state_version"]), 0)
        return await self.view.confirmed_channel(
            str(channel["channel_id"]), self.confirmation_delay(channel)
        )

    # --- channel creation ---------------------------------------------------------------

    async def check_previous_closed(self, wallet: str, asset: str) -> None:
        """Every earlier channel of (wallet, asset) is closed on chain (confirmed)."""
        for channel in self.ledger.channels_of(wallet, asset):
            if (await self.on_chain(channel)).status != "closed":
                raise _fail(NOT_CLOSED_ON_CHAIN)

    async def check_new_channel_id(self, channel_id: str) -> None:
        """Neither the ledger nor the chain (at its head: any trace at all counts) knows
        ``channel_id``."""
        if channel_id.lower() in {known.lower() for known in self.ledger.channels}:
            raise _fail(CHANNEL_ID_REUSED)
        if self.view is not None:
            head = await self.view.confirmed_channel(channel_id, 0)
            if head.status_code != VOID_CHANNEL.status_code:
                raise _fail(CHANNEL_ID_REUSED)

    # --- states of an existing channel --------------------------------------------------

    def _ongoing(self, wallet: str, asset: str, channel_id: str, chain: ChainChannel) -> str:
        """The upstream text of an on-chain step the chain has not confirmed yet ("" if
        none): the last co-signed state of the wallet's chain is a deposit or withdrawal on
        this channel and the chain is not at its version."""
        signed = self.ledger.latest_state(wallet, asset, only_signed=True)
        if signed is None or str(signed.get("home_channel_id", "")).lower() != channel_id:
            return ""
        text = _ONGOING_TEXT.get(int(signed["transition"]["type"]), "")
        if text and (not chain.operating or chain.version != int(signed["version"])):
            return text
        return ""

    async def check_active(self, channel: Mapping[str, Any], wallet: str) -> ChainChannel:
        """The channel may take a new user state: nothing on chain is still ongoing and the
        channel operates on chain. Returns the chain's (confirmed) view of it."""
        chain = await self.on_chain(channel)
        ongoing = self._ongoing(wallet, channel["asset"], str(channel["channel_id"]), chain)
        if ongoing:
            raise _fail(ONGOING + ongoing)
        if not chain.operating:
            if chain.status == "void":
                raise _fail(NOT_MATERIALIZED)
            raise _fail(f"{NO_ACTIVE_CHANNEL}: channel {channel['channel_id']} is {chain.status}")
        return chain

    def unconfirmed_deposits(
        self, wallet: str, asset: str, channel_id: str, version: int
    ) -> Decimal:
        """What the wallet deposited into ``channel_id`` in states after on-chain
        ``version``: counted in its balance, not yet held by the chain."""
        total = Decimal(0)
        for state in reversed(self.ledger.deposit_chain(wallet, asset)):
            if str(state.get("home_channel_id", "")).lower() != channel_id:
                continue
            if int(state["version"]) <= version:
                break  # a channel's versions rise along the chain: the rest is on chain too
            if state.get("node_sig"):
                total = exact_add(total, state["transition"]["amount"])
        return total

    def check_backed(
        self,
        previous: Mapping[str, Any],
        proposed: Mapping[str, Any],
        channel_id: str,
        chain: ChainChannel,
    ) -> None:
        """A spend leaves the balance backed: its amount is at most the previous balance
        less the deposits the chain has not confirmed."""
        transition = proposed["transition"]
        if int(transition["type"]) not in _SPENDS:
            return
        unconfirmed = self.unconfirmed_deposits(
            proposed["user_wallet"], proposed["asset"], channel_id.lower(), chain.version
        )
        backed = exact_sub(previous["home_ledger"]["user_balance"], unconfirmed)
        amount = parse_decimal(transition["amount"])
        if amount > backed:
            raise _fail(
                f"insufficient backed funds: spending {plain_decimal_string(amount)} "
                f"{proposed['asset']} but only {plain_decimal_string(max(backed, Decimal(0)))} "
                f"is backed ({plain_decimal_string(unconfirmed)} deposited is not confirmed on "
                "chain yet)"
            )

    # --- node-issued states -------------------------------------------------------------

    async def may_sign_issued(self, wallet: str, asset: str) -> bool:
        """Whether a node-issued state on top of ``wallet``'s latest gets the node's
        signature: only when its home channel operates on chain with nothing ongoing."""
        latest = self.ledger.latest_state(wallet, asset)
        if latest is None or int(latest["transition"]["type"]) == T.FINALIZE:
            return False
        channel_id = str(latest.get("home_channel_id") or "")
        channel = self.ledger.channels.get(channel_id) if channel_id else None
        if channel is None:
            return False
        chain = await self.on_chain(channel)
        return chain.operating and not self._ongoing(wallet, asset, channel_id.lower(), chain)
