"""The challenge rescue: what the node issues once a challenged home channel closes on chain.

Why: a channel closes without a finalize only through a challenge whose period ran out. The
wallet's latest state then still names the closed channel, and the SDK (``Client.deposit``)
treats a state with a home channel and no finalize as an open channel: every later deposit
or open is refused ("a home channel is open already") and the wallet is stuck. Nitronode
(``event_handlers/service.go``, ``HandleHomeChannelClosed``) advances the wallet past the
closed channel with a node-issued ``challenge_rescue`` state (transition 201,
``pkg/core/types.go`` ``NewChallengeRescueState``):

- it credits what the chain did not enforce: the net of the closed channel's states above
  the version the chain closed at (receives and releases in, sends and commits out), clamped
  at zero so a close at an older, richer version cannot dock the user further;
- on top of an in-channel state it opens the next epoch at version 1 with a clean ledger
  (user balance = node net flow = the credit), names no home channel, and carries no
  signature: a credit to a user with no open channel, folded into the next channel the user
  opens (its creation is built on top of it, as on top of a transfer received without one);
- its transaction (type 201) runs from the closed channel to the wallet.

Our node reads the chain on demand instead of following events, so it issues the rescue the
first time it handles a request of the wallet for that asset after the chain (as of
``confirmation_delay_secs`` ago) shows the close.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal
from typing import Any, Final

from ..core.decimals import exact_add, exact_sub, plain_decimal_string
from ..core.ids import receiver_transaction_id, state_id
from ..core.transitions import TransitionType
from .backing import BackingGuard
from .ledger import NitronodeLedger
from .params import _iso

__all__ = ["ChallengeRescues", "challenge_rescue_state", "rescue_amount", "rescue_due"]

_log = logging.getLogger(__name__)
_ADDRESS: Final = re.compile(r"^0x[0-9a-fA-F]{40}$")

T = TransitionType

#: transitions above the closure version that the rescue credits (+) or debits (-)
_CREDITS: Final = frozenset({T.TRANSFER_RECEIVE, T.RELEASE})
_DEBITS: Final = frozenset({T.TRANSFER_SEND, T.COMMIT})


def rescue_amount(
    states: Sequence[Mapping[str, Any]], channel_id: str, closure_version: int
) -> Decimal:
    """Net of the channel's transitions strictly above ``closure_version`` (signed or not),
    clamped at zero."""
    net = Decimal(0)
    for state in states:
        if str(state.get("home_channel_id") or "").lower() != channel_id.lower():
            continue
        if int(state["version"]) <= closure_version:
            continue
        kind, amount = int(state["transition"]["type"]), state["transition"]["amount"]
        if kind in _CREDITS:
            net = exact_add(net, amount)
        elif kind in _DEBITS:
            net = exact_sub(net, amount)
    return max(net, Decimal(0))


def challenge_rescue_state(
    previous: Mapping[str, Any], closed_channel_id: str, amount: Decimal
) -> dict[str, Any]:
    """The rescue state on top of ``previous`` (the wallet's latest state, in the closed
    channel): the next epoch at version 1, a clean ledger seeded with ``amount``."""
    epoch, version = int(previous["epoch"]) + 1, 1
    new_id = state_id(previous["user_wallet"], previous["asset"], epoch, version)
    credit = plain_decimal_string(amount)
    return {
        "id": new_id,
        "transition": {
            "type": int(T.CHALLENGE_RESCUE),
            "tx_id": receiver_transaction_id(closed_channel_id, new_id),
            "account_id": closed_channel_id,
            "amount": credit,
        },
        "asset": previous["asset"],
        "user_wallet": previous["user_wallet"],
        "epoch": str(epoch),
        "version": str(version),
        "home_ledger": {
            "token_address": "0x0",
            "blockchain_id": "0",
            "user_balance": credit,
            "user_net_flow": "0",
            "node_balance": "0",
            "node_net_flow": credit,
        },
    }


async def rescue_due(
    ledger: NitronodeLedger, backing: BackingGuard, wallet: str, asset: str
) -> tuple[Mapping[str, Any], str, int] | None:
    """``(latest state, closed channel id, closure version)`` when the wallet's latest state
    still names a home channel that the chain shows closed (confirmed) and no finalize ended
    it; else None."""
    latest = ledger.latest_state(wallet, asset)
    if latest is None:
        return None
    channel_id = str(latest.get("home_channel_id") or "").lower()
    if not channel_id or int(latest["transition"]["type"]) == T.FINALIZE:
        return None
    channel = ledger.channels.get(channel_id) or next(
        (c for c in ledger.channels.values() if c["channel_id"].lower() == channel_id), None
    )
    if channel is None or backing.view is None:
        return None  # without a chain view the ledger closes channels only by finalize
    chain = await backing.on_chain(channel)
    if chain.status != "closed":
        return None
    return latest, channel["channel_id"], chain.version


class ChallengeRescues:
    """The node's side of the rescue: every handler that reads or builds on a wallet's
    latest state calls :meth:`_settle_closed` (or :meth:`_settle_transfer_parties`) first."""

    ledger: NitronodeLedger
    backing: BackingGuard
    _clock_ms: Callable[[], int]

    async def _settle_closed(self, wallet: str, asset: str) -> None:
        """Issue the challenge rescue if ``wallet``'s latest ``asset`` state still names a
        channel the chain shows closed without a finalize."""
        due = await rescue_due(self.ledger, self.backing, wallet, asset)
        if due is None:
            return
        latest, channel_id, closure_version = due
        chain = self.ledger.state_chain(wallet, asset)
        rescue = challenge_rescue_state(
            latest, channel_id, rescue_amount(chain, channel_id, closure_version)
        )
        channel = dict(self.ledger.channels[channel_id])
        channel["status"] = "closed"
        self.ledger.put_channel(channel)
        self.ledger.put_state(rescue)
        now = self._clock_ms()
        self.ledger.add_transaction(
            {
                "id": rescue["transition"]["tx_id"],
                "asset": asset,
                "tx_type": int(T.CHALLENGE_RESCUE),
                "from_account": channel_id,
                "to_account": rescue["user_wallet"],
                "receiver_new_state_id": rescue["id"],
                "amount": rescue["transition"]["amount"],
                "created_at": _iso(now),
                "created_at_ms": now,
            }
        )
        _log.info("challenge rescue for %s after channel %s closed on chain", wallet, channel_id)

    async def _settle_transfer_parties(self, state: Mapping[str, Any]) -> None:
        """:meth:`_settle_closed` for the state's wallet and, for a transfer, its receiver
        (whose receive state is built on top of their latest)."""
        await self._settle_closed(state["user_wallet"], state["asset"])
        if state["transition"]["type"] == T.TRANSFER_SEND:
            receiver = str(state["transition"]["account_id"])
            if _ADDRESS.fullmatch(receiver):
                await self._settle_closed(receiver, state["asset"])
