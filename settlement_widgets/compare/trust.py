"""What a researcher trusts with each method, stated once per method.

These are the qualitative columns of a comparison: who can delay or stop the funds, and what
happens when the counterparty or the node disappears. They describe the protocols as this
toolkit runs them (the custody contract's challenge, the ChannelHub's, the hook's policy, the
bridges' relayer) and carry no figure: the dispute window beside them is read from the
contracts at run time.
"""

from __future__ import annotations

from typing import Final

__all__ = ["TRUST", "TrustText"]


class TrustText:
    """The two sentences of one method: ``trust`` and ``if_counterparty_vanishes``."""

    __slots__ = ("if_counterparty_vanishes", "trust")

    def __init__(self, trust: str, if_counterparty_vanishes: str) -> None:
        self.trust = trust
        self.if_counterparty_vanishes = if_counterparty_vanishes


TRUST: Final[dict[str, TrustText]] = {
    "channel/nitrolite-v0.5": TrustText(
        "The node (broker) co-signs every state and can delay a transfer or a cooperative "
        "close by not answering; it cannot take funds: the custody contract pays out the "
        "latest state both signed.",
        "The payer challenges on chain with the latest co-signed state and closes after the "
        "challenge period; the counterparty's funds wait at the node until the counterparty "
        "comes back and withdraws them.",
    ),
    "channel/nitrolite-v1": TrustText(
        "The Nitronode co-signs every state and rate-limits requests; it can delay but not "
        "take funds: the ChannelHub enforces the latest state signed by both, the node's "
        "side backed by its vault.",
        "The payer challenges the home channel on the ChannelHub and closes after the "
        "challenge period; a vanished counterparty's credit stays at the node until it opens "
        "a channel of its own.",
    ),
    "channel/nitrolite-v1-crosschain": TrustText(
        "The Nitronode co-signs every state on both chains and can delay but not take funds; "
        "the payee is paid out of the node's vault on the destination chain, which must hold "
        "the payout when the payee withdraws (the payer's deposit stays in the hub on the "
        "source chain: nothing is bridged, no escrow is used). Home channels on two chains "
        "with transfers between them run on Yellow's network today.",
        "The payer challenges its home channel on the source chain's ChannelHub and closes "
        "after the challenge period; the payee's credit is the node's to honour until the "
        "payee's home channel on the destination chain carries it in a state both signed "
        "(then the payee can challenge there), and a vanished payee's credit waits at the "
        "node.",
    ),
    "v4/policy-hook": TrustText(
        "The hook's owner sets each intent's policy and the adapter's owner chooses the "
        "solvers: either can stop a settlement (no policy, no solver), neither can take the "
        "signed amount beyond the intent's minimum; the swap is atomic.",
        "Nothing is in flight: an intent not settled before its deadline simply expires and "
        "the payer's tokens never left the wallet; there is no counterparty on chain but the "
        "pool.",
    ),
    "aggregator": TrustText(
        "The bridge's relayer (and LI.FI's routing) can delay the release on the destination "
        "chain; the bridge contract holds the amount meanwhile and pays it out or refunds it.",
        "The counterparty has nothing to sign; if the relayer stops, the amount stays locked "
        "in the source bridge until it releases or refunds it.",
    ),
}
