"""Validation as the SDK's: ``StateAdvancerV1.validateAdvancement`` order and messages.

A state the SDK would refuse must be refused by us with the SDK's words and at the SDK's
step, before anything is packed or signed: a transfer of more than the balance fails with
``user balance cannot be negative`` (validateLedger), never in ABI packing as "does not fit
uint256".
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from settlement_widgets.channel.v1.core.client_calls import (
    ChannelDefaultSigner,
    KeyMessageSigner,
    V1ClientCore,
    run_without_suspending,
)
from settlement_widgets.channel.v1.core.lifecycle import (
    apply_transition,
    check_advancement,
    next_state,
    validate_advancement,
    validate_ledger,
)
from settlement_widgets.channel.v1.core.wire import Frame, decode_frame
from settlement_widgets.errors import InvalidStateError
from settlement_widgets.keys import PrivateKey

DATA = Path(__file__).resolve().parent / "data" / "nitrolite-v1-vectors.json"
VECTORS: dict[str, Any] = json.loads(DATA.read_text())
META = VECTORS["meta"]
LIFECYCLE = {v["id"]: v for v in VECTORS["vectors"]["state_lifecycle"]}
PEER = META["keys"]["peer"]["address"]


def _after_deposit() -> dict[str, Any]:
    """The co-signed first state of the vectors' channel (deposit of 100)."""
    state: dict[str, Any] = copy.deepcopy(LIFECYCLE["state_lifecycle-001"]["outputs"]["state"])
    return state


def _transfer(current: dict[str, Any], amount: str) -> dict[str, Any]:
    proposed = next_state(current)
    apply_transition(proposed, {"type": 30, "account_id": PEER, "amount": amount})
    return proposed


def test_overdraw_is_the_sdk_validate_ledger_error() -> None:
    current = _after_deposit()
    proposed = _transfer(current, "100.000001")
    with pytest.raises(InvalidStateError, match=r"^user balance cannot be negative$"):
        check_advancement(current, proposed, asset_decimals=6)
    assert validate_advancement(current, proposed) == "rejected: user balance cannot be negative"
    assert validate_advancement(current, _transfer(current, "100")) == "ok"


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda s: s.pop("home_channel_id"), "home channel ID cannot be nil"),
        (lambda s: s.update(version="9"), "version mismatch: expected=2, proposed=9"),
        (lambda s: s.update(asset="usdc"), "asset mismatch: expected=yusd, proposed=usdc"),
        (lambda s: s.update(epoch="3"), "epoch mismatch: expected=0, proposed=3"),
        (lambda s: s["transition"].update(amount="0"), "transition amount must be positive, got 0"),
        (
            lambda s: s["transition"].update(amount="-1"),
            "transition amount must be positive, got -1",
        ),
        (
            lambda s: s["transition"].update(type=0),
            "cannot apply void transition as new transition",
        ),
        (lambda s: s["transition"].update(type=31), "unsupported type for new transition: 31"),
        (
            lambda s: s["transition"].update(account_id=""),
            "missing account ID for transfer send transition",
        ),
        (
            lambda s: s["home_ledger"].update(user_balance="81"),
            "home ledger mismatch: user balance mismatch: expected=80, proposed=81",
        ),
        (
            lambda s: s["transition"].update(tx_id="0xbad"),
            "new transition does not match expected: tx ID mismatch: expected=",
        ),
        (
            lambda s: s["transition"].update(amount="21"),
            "home ledger mismatch: user balance mismatch: expected=79, proposed=80",
        ),
    ],
)
def test_checks_run_in_the_sdk_order_with_its_messages(mutate: Any, message: str) -> None:
    current = _after_deposit()
    proposed = _transfer(current, "20")
    mutate(proposed)
    with pytest.raises(InvalidStateError) as info:
        check_advancement(current, proposed, asset_decimals=6)
    if message.endswith("expected="):  # the rest names the recomputed tx id
        assert str(info.value).startswith(message)
        assert str(info.value).endswith(", proposed=0xbad")
    else:
        assert str(info.value) == message


def test_precision_is_checked_first_among_amount_rules() -> None:
    current = _after_deposit()
    proposed = _transfer(current, "0.0000001")
    with pytest.raises(InvalidStateError) as info:
        check_advancement(current, proposed, asset_decimals=6)
    assert str(info.value) == (
        "amount exceeds maximum decimal precision: max 6 decimals allowed, got 7"
    )


def test_acknowledging_a_signed_state_and_escrow_order_are_refused() -> None:
    current = _after_deposit()
    ack = next_state(current)
    apply_transition(ack, {"type": 1})
    with pytest.raises(InvalidStateError, match=r"^current state is already acknowledged$"):
        check_advancement(current, ack)
    deposit = next_state(current)
    apply_transition(deposit, {"type": 10, "amount": "1"})
    deposit["transition"]["type"] = 20
    with pytest.raises(
        InvalidStateError, match=r"^escrow deposit transition must follow a mutual lock transition$"
    ):
        check_advancement(current, deposit)


def test_validate_ledger_rules() -> None:
    ledger = dict(_after_deposit()["home_ledger"])
    validate_ledger(ledger)
    for change, message in [
        ({"token_address": "0x0"}, "invalid token address"),
        ({"blockchain_id": "0"}, "invalid blockchain ID"),
        ({"node_balance": "-1", "node_net_flow": "-1"}, "node balance cannot be negative"),
        (
            {"node_net_flow": "1"},
            "ledger balances do not match net flows: balances=100, net_flows=101",
        ),
    ]:
        with pytest.raises(InvalidStateError) as info:
            validate_ledger({**ledger, **change})
        assert str(info.value) == message


def test_apply_transition_preconditions_are_the_sdks() -> None:
    void_next = next_state(LIFECYCLE["state_lifecycle-001"]["inputs"]["previous_state"])
    cases: list[tuple[dict[str, Any], str]] = [
        ({"type": 10, "amount": "1"}, "missing home channel ID"),
        ({"type": 11, "amount": "1"}, "missing home channel ID"),
        ({"type": 200}, "missing home channel ID"),
        ({"type": 120, "amount": "1", "blockchain_id": "1", "token_address": PEER},
         "missing home channel ID"),
        ({"type": 20, "amount": "1"}, "internal error: escrow channel ID is nil"),
        ({"type": 100, "amount": "1"}, "migrate transition not implemented yet"),
    ]  # fmt: skip
    for spec, message in cases:
        with pytest.raises(InvalidStateError) as info:
            apply_transition(copy.deepcopy(void_next), spec)
        assert str(info.value) == message
    opened = next_state(_after_deposit())
    cases = [
        ({"type": 120, "amount": "1", "blockchain_id": "0", "token_address": PEER},
         "invalid blockchain ID"),
        ({"type": 110, "amount": "1", "blockchain_id": "5", "token_address": "0x0"},
         "invalid token address"),
        ({"type": 31, "amount": "1", "tx_id": "0x01"},
         "missing account ID for transfer receive transition"),
    ]  # fmt: skip
    for spec, message in cases:
        with pytest.raises(InvalidStateError) as info:
            apply_transition(copy.deepcopy(opened), spec)
        assert str(info.value) == message


class _Replay:
    """Answers with a vector's scripted replies, re-addressed; remembers what was sent."""

    def __init__(self, vector_id: str) -> None:
        vector = next(v for v in VECTORS["vectors"]["rpc_client_frames"] if v["id"] == vector_id)
        self.script = [e["scripted_response_frame"] for e in vector["inputs"]["exchanges"]]
        self.cache = vector["inputs"]["client"]["asset_store_cache"]
        self.sent: list[Frame] = []

    async def exchange(self, request: Frame) -> Frame:
        frame = decode_frame(self.script[len(self.sent)])
        self.sent.append(request)
        return Frame(
            frame.type, request.request_id, frame.method, frame.payload, frame.timestamp_ms
        )


def test_a_client_transfer_of_more_than_the_balance_fails_with_the_sdk_message() -> None:
    """``Client.transfer`` (vector 010's node) with more than the channel holds: refused by
    the advancement check, nothing signed or submitted, no ABI packing error."""
    transport = _Replay("rpc_client_frames-010")
    client = V1ClientCore(
        transport,
        state_signer=ChannelDefaultSigner(
            KeyMessageSigner(PrivateKey(META["keys"]["user"]["private_key"]))
        ),
        asset_cache=transport.cache,
    )
    huge = "1" + "0" * 80  # would not even fit a uint256 once scaled
    with pytest.raises(InvalidStateError) as info:
        run_without_suspending(client.transfer(PEER, "yusd", huge))
    assert str(info.value) == "user balance cannot be negative"
    assert [f.method for f in transport.sent] == ["channels.v1.get_latest_state"]
