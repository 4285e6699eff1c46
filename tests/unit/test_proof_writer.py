"""``ProofWriter``: the provider's proof log on one kept connection writes exactly the rows
``record_proofs`` writes, refuses what it refuses, follows a moved ``SETTLEMENT_HOME`` and
works from whichever worker thread runs it."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

from settlement_widgets.errors import SettlementValueError, UnknownOptionError
from settlement_widgets.proofs import ProofWriter, list_proofs, record_proofs

BURST: list[tuple[str, str, Any]] = [
    ("transfer", "off-chain", {"relayTxId": 1, "amount": "0.000001", "asset": "usdc"}),
    ("transfer", "nonsense", {"relayTxId": 2}),
    ("transfer", "off-chain", {"b": [1, 2], "a": "é"}),
    ("", "off-chain", {}),
    ("transfer", "on-chain", {}),
    ("transfer", "off-chain", {"bad": float("nan")}),
    ("transfer", "off-chain", ["not", "an", "object"]),
    ("transfer", "off-chain", {"big": "9" * 17_000}),
    ("auth", "read-only", None),
]


def _rows(path: Path) -> list[tuple[Any, ...]]:
    with sqlite3.connect(path) as conn:
        return conn.execute(
            "SELECT method, network, chain_id, step, type, tx_hash, explorer_url, data "
            "FROM proofs ORDER BY id"
        ).fetchall()


def test_the_same_rows_and_errors_as_record_proofs(tmp_path: Path) -> None:
    reference = record_proofs("channel", "local", 31337, BURST, path=tmp_path / "a.sqlite")
    writer = ProofWriter(tmp_path / "b.sqlite")
    try:
        results = writer.record_proofs("channel", "local", 31337, BURST)
    finally:
        writer.close()
    assert [type(r) if not isinstance(r, dict) else None for r in reference] == [
        type(r) if r is not None else None for r in results
    ]
    assert [str(r) for r in reference if not isinstance(r, dict)] == [
        str(r) for r in results if r is not None
    ]
    assert _rows(tmp_path / "a.sqlite") == _rows(tmp_path / "b.sqlite")
    served = list_proofs("channel", "local", path=tmp_path / "b.sqlite")["proofs"]
    assert [p["data"] for p in served] == [BURST[0][2], BURST[2][2], {}]
    assert all(p["timestamp"].endswith("Z") for p in served)


def test_a_bad_first_proof_or_bad_burst_arguments_are_refused(tmp_path: Path) -> None:
    writer = ProofWriter(tmp_path / "p.sqlite")
    results = writer.record_proofs("channel", "local", 1, [BURST[1], BURST[0]])
    assert isinstance(results[0], UnknownOptionError) and results[1] is None
    bad_chain = writer.record_proofs("channel", "local", 0, [BURST[0], BURST[0]])
    assert all(isinstance(r, SettlementValueError) for r in bad_chain)
    writer.close()
    assert len(_rows(tmp_path / "p.sqlite")) == 1


def test_follows_settlement_home_and_runs_on_any_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SETTLEMENT_HOME", str(tmp_path / "one"))
    writer = ProofWriter()
    writer.record_proofs("channel", "local", 1, [BURST[0]])
    errors: list[BaseException] = []

    def later() -> None:
        try:
            writer.record_proofs("channel", "local", 1, [BURST[2]])
        except BaseException as exc:  # reported below
            errors.append(exc)

    thread = threading.Thread(target=later)
    thread.start()
    thread.join()
    assert errors == []
    monkeypatch.setenv("SETTLEMENT_HOME", str(tmp_path / "two"))
    writer.record_proofs("channel", "local", 1, [BURST[8]])
    writer.close()
    assert len(_rows(tmp_path / "one" / "proofs.sqlite")) == 2
    assert [r[3] for r in _rows(tmp_path / "two" / "proofs.sqlite")] == ["auth"]
    writer.close()  # idempotent
