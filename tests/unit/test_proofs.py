"""The proof log: records round-trip in order, bad input writes nothing, WAL mode."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from settlement_widgets.errors import SettlementValueError, UnknownOptionError
from settlement_widgets.networks import SEPOLIA
from settlement_widgets.proofs import default_proofs_path, list_proofs, record_proof, record_proofs

TX = "0x" + "AB" * 32


def test_round_trip_in_order_under_settlement_home(tmp_path: Path) -> None:
    url = SEPOLIA.explorer.tx_url(TX.lower())
    first = record_proof(
        "channel",
        "sepolia",
        11155111,
        "create_channel",
        "on-chain",
        TX,
        url,
        data={"channelId": "0x01", "amount": "10"},
        timestamp="2026-02-08T17:23:00Z",
    )
    assert first == {
        "step": "create_channel",
        "type": "on-chain",
        "txHash": TX.lower(),
        "explorerUrl": url,
        "data": {"amount": "10", "channelId": "0x01"},
        "timestamp": "2026-02-08T17:23:00.000Z",
    }
    second = record_proof("channel", SEPOLIA, 11155111, "transfer", "off-chain")
    assert default_proofs_path().exists()
    listed = list_proofs("channel", SEPOLIA)
    assert listed == {
        "method": "channel",
        "network": "sepolia",
        "chainId": 11155111,
        "proofs": [first, second],
    }
    assert "txHash" not in second and second["data"] == {}
    stamp = datetime.fromisoformat(second["timestamp"].replace("Z", "+00:00"))
    assert abs(stamp - datetime.now(UTC)) < timedelta(minutes=1)


def test_filters_by_method_network_and_chain(tmp_path: Path) -> None:
    db = tmp_path / "p.sqlite"
    record_proof("v4", "local", 31337, "settle_intent", "on-chain", TX, path=db)
    record_proof("v4", "local", 1337, "settle_intent", "on-chain", TX, path=db)
    record_proof("channel", "local", 31337, "auth", "off-chain", path=db)
    assert len(list_proofs("v4", "local", path=db)["proofs"]) == 2
    assert list_proofs("v4", "local", path=db)["chainId"] == 1337  # latest record's chain
    assert list_proofs("v4", "sepolia", path=db) == {
        "method": "v4",
        "network": "sepolia",
        "chainId": None,
        "proofs": [],
    }
    assert list_proofs("v4", SEPOLIA, path=db)["chainId"] == 11155111


def test_timestamps_are_normalised_to_utc(tmp_path: Path) -> None:
    db = tmp_path / "p.sqlite"
    plus2 = datetime(2026, 2, 8, 19, 0, tzinfo=timezone(timedelta(hours=2)))
    assert (
        record_proof("v4", "local", 1, "s", "read-only", timestamp=plus2, path=db)["timestamp"]
        == "2026-02-08T17:00:00.000Z"
    )
    naive = datetime(2026, 2, 8, 17, 0)
    assert (
        record_proof("v4", "local", 1, "s", "read-only", timestamp=naive, path=db)["timestamp"]
        == "2026-02-08T17:00:00.000Z"
    )


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"method": "yellow"}, UnknownOptionError),
        ({"type": "onchain"}, UnknownOptionError),
        ({"chain_id": 0}, SettlementValueError),
        ({"chain_id": True}, SettlementValueError),
        ({"network": ""}, SettlementValueError),
        ({"step": ""}, SettlementValueError),
        ({"step": "x" * 101}, SettlementValueError),
        ({"tx_hash": "0x1234"}, SettlementValueError),
        ({"type": "on-chain", "tx_hash": None}, SettlementValueError),
        ({"explorer_url": "javascript:alert(1)"}, SettlementValueError),
        ({"explorer_url": "//evil.example/tx/0x1"}, SettlementValueError),
        ({"explorer_url": "settlement/explorer/tx/0x1"}, SettlementValueError),
        ({"data": [1, 2]}, SettlementValueError),
        ({"data": {"x": object()}}, SettlementValueError),
        ({"data": {"x": float("nan")}}, SettlementValueError),
        ({"data": {"x": "y" * 20_000}}, SettlementValueError),
        ({"timestamp": "yesterday"}, SettlementValueError),
    ],
)
def test_bad_input_raises_and_writes_nothing(
    tmp_path: Path, kwargs: dict[str, Any], error: type[Exception]
) -> None:
    db = tmp_path / "p.sqlite"
    args: dict[str, Any] = {
        "method": "channel",
        "network": "local",
        "chain_id": 31337,
        "step": "close_channel",
        "type": "on-chain",
        "tx_hash": TX,
        "path": db,
    }
    args.update(kwargs)
    with pytest.raises(error):
        record_proof(**args)
    if db.exists():
        assert list_proofs("channel", "local", path=db)["proofs"] == []


def test_log_is_in_wal_mode(tmp_path: Path) -> None:
    db = tmp_path / "p.sqlite"
    record_proof("channel", "local", 1, "auth", "off-chain", path=db)
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_a_burst_of_proofs_is_written_together_and_a_bad_one_is_left_out(tmp_path: Path) -> None:
    """``record_proofs`` (a provider's burst of transfers): every valid proof is written, in
    order; an invalid one comes back as its error and is not written."""
    path = tmp_path / "proofs.sqlite"
    record_proof("channel", "local", 31337, "create_channel", "off-chain", path=path)
    burst = [
        ("transfer", "off-chain", {"relayTxId": 1}),
        ("transfer", "nonsense", {"relayTxId": 2}),
        ("transfer", "off-chain", {"relayTxId": 3}),
    ]
    results = record_proofs("channel", "local", 31337, burst, path=path)
    assert isinstance(results[1], UnknownOptionError)
    assert [r["data"] for r in results if isinstance(r, dict)] == [
        {"relayTxId": 1},
        {"relayTxId": 3},
    ]
    served = list_proofs("channel", "local", path=path)["proofs"]
    assert [p["step"] for p in served] == ["create_channel", "transfer", "transfer"]
    assert [p["data"].get("relayTxId") for p in served[1:]] == [1, 3]
    only_bad = record_proofs("channel", "local", 31337, [burst[1]], path=path)
    assert isinstance(only_bad[0], UnknownOptionError)
    assert len(list_proofs("channel", "local", path=path)["proofs"]) == 3
