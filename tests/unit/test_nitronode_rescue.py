"""The challenge rescue's arithmetic and shape (Nitronode ``NewChallengeRescueState``):
only the closed channel's transitions above the closing version count, receives and
releases in, sends and commits out, clamped at zero; the next epoch at version 1, no home
channel, no signatures."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from settlement_widgets.channel.v1.core.ids import receiver_transaction_id, state_id
from settlement_widgets.channel.v1.node.rescue import challenge_rescue_state, rescue_amount

CH = "0x" + "ab" * 32
OTHER = "0x" + "cd" * 32
WALLET = "0x" + "11" * 20


def _state(version: int, kind: int, amount: str, channel: str | None = CH) -> dict[str, Any]:
    state: dict[str, Any] = {
        "version": str(version),
        "epoch": "3",
        "transition": {"type": kind, "amount": amount},
    }
    if channel:
        state["home_channel_id"] = channel
    return state


def test_only_the_channels_transitions_above_the_closing_version_count() -> None:
    chain = [
        _state(4, 31, "100"),  # at or below the closing version: enforced on chain
        _state(5, 30, "7"),
        _state(6, 31, "2.5"),  # receive above it: credited
        _state(7, 41, "1.25"),  # release: credited
        _state(8, 30, "0.75"),  # send above it: debited
        _state(9, 40, "1"),  # commit: debited
        _state(10, 10, "50"),  # a deposit needs the chain: not counted
        _state(11, 31, "9", channel=OTHER),  # another channel
    ]
    assert rescue_amount(chain, "0x" + CH[2:].upper(), 5) == Decimal("2")


def test_a_close_at_a_richer_version_is_clamped_at_zero() -> None:
    assert rescue_amount([_state(6, 30, "3"), _state(7, 31, "1")], CH, 5) == Decimal(0)


def test_a_credit_beyond_28_digits_is_exact() -> None:
    big = "12345678901234567890123456789.123456789012345678"
    total = Decimal("12345678901234567890123456790.123456789012345678")
    assert rescue_amount([_state(6, 31, big), _state(7, 31, "1")], CH, 5) == total


def test_the_rescue_opens_the_next_epoch_off_channel() -> None:
    previous = {**_state(9, 31, "1"), "asset": "usdc", "user_wallet": WALLET}
    rescue = challenge_rescue_state(previous, CH, Decimal("2.50"))
    new_id = state_id(WALLET, "usdc", 4, 1)
    assert rescue["id"] == new_id and (rescue["epoch"], rescue["version"]) == ("4", "1")
    assert rescue["transition"] == {
        "type": 201,
        "tx_id": receiver_transaction_id(CH, new_id),
        "account_id": CH,
        "amount": "2.5",
    }
    ledger = rescue["home_ledger"]
    assert (ledger["user_balance"], ledger["node_net_flow"], ledger["user_net_flow"]) == (
        "2.5",
        "2.5",
        "0",
    )
    assert "home_channel_id" not in rescue and "user_sig" not in rescue
    assert "node_sig" not in rescue
