"""Relay crash soak (shortened): transfers between wallets while the relay process is
SIGKILLed and restarted; nothing acknowledged is lost or doubled, balances are conserved.
The verifier itself is also fed fabricated ledgers, to show it catches each kind of loss."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.reliability.soak import Ledger, Outcomes, SoakParams, run_relay_soak, verify

A, B, C = (f"0x{c * 40}" for c in "abc")
SEED = 1_000


@pytest.mark.slow
async def test_acknowledged_transfers_survive_relay_sigkills(tmp_path: Path) -> None:
    params = SoakParams(duration=4.0, min_kills=3, wallets=4, window=3, max_gap=1.0)
    result = await run_relay_soak(tmp_path, params)
    assert result.violations == []
    m = result.metrics
    assert m["relay_kills"] >= 3
    assert m["acknowledged"] > 0
    assert (m["acknowledged_lost"], m["acknowledged_duplicated"], m["phantom_successes"]) == (
        0,
        0,
        0,
    )
    assert m["balance_sum_conserved"] is True and m["balance_mismatches"] == 0
    assert m["unresolved"] == 0 and m["refused"] == 0
    # every transfer whose answer was lost with the relay ended with a known outcome
    assert m["in_doubt"] == m["in_doubt_applied_before_kill"] + m["in_doubt_applied_on_retry"]
    assert m["ledger_transfers"] == m["acknowledged"] + m["in_doubt_applied_before_kill"]


def _outcomes() -> Outcomes:
    """A acked 1 unit to B, B acked 2 to C, C's 3 to A was confirmed by the replay guard."""
    out = Outcomes()
    out.attempted = {1: (A, B), 2: (B, C), 3: (C, A)}
    out.acked = {1: (10, A, B), 2: (11, B, C)}
    out.replay_confirmed = {3}
    return out


#: funding 500/500/0; after the three transfers: A 502, B 499, C -1 (sum 1000, the seed)
RIGHT = {A: 502, B: 499, C: -1}
ROWS = [(10, A, B, 1), (11, B, C, 2), (12, C, A, 3)]


def _verify(rows: list[tuple[int, str, str, int]], balances: dict[str, int]) -> list[str]:
    return verify(
        _outcomes(),
        Ledger(rows, balances, set()),
        funding={A: 500, B: 500, C: 0},
        live_balances=RIGHT,
        seed_units=SEED,
        now_ms=0,
    )[1]


def test_the_verifier_accepts_an_exact_ledger() -> None:
    assert _verify(ROWS, RIGHT) == []


@pytest.mark.parametrize(
    ("rows", "expected"),
    [
        ([(11, B, C, 2), (12, C, A, 3)], "1 acknowledged transfers are not in the ledger"),
        (
            [(10, A, B, 1), (13, A, B, 1), (11, B, C, 2), (12, C, A, 3)],
            "1 acknowledged transfers are in it more than once",
        ),
        (
            [(99, A, B, 1), (11, B, C, 2), (12, C, A, 3)],
            "1 acks name a ledger row that is another transfer",
        ),
        ([(10, A, B, 1), (11, B, C, 2)], "1 replay-confirmed transfers not in it once"),
        (
            [(10, A, B, 1), (11, B, C, 2), (12, C, A, 3), (13, A, C, 7)],
            "1 ledger transfers no client saw applied",
        ),
    ],
    ids=["lost", "duplicated", "phantom", "replay-confirmed missing", "unknown transfer"],
)
def test_the_verifier_catches_each_kind_of_loss(
    rows: list[tuple[int, str, str, int]], expected: str
) -> None:
    assert expected in _verify(rows, RIGHT)


def test_the_verifier_catches_created_money_and_wrong_balances() -> None:
    violations = _verify(ROWS, {**RIGHT, C: 0})  # one unit created at C
    assert "balances sum to 1001, the seed was 1000" in violations
    assert f"stored balances differ from the transfers for {[C]}" in violations
