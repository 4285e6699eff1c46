"""The store's chain identity, its storage errors, its schema migration, and history rows
keyed by chain event; and the pure rule of what "the relay reflects it" means."""

from __future__ import annotations

import json
import os
import sqlite3
from dataclasses import replace
from pathlib import Path

import pytest

from settlement_widgets.channel import ChannelStore
from settlement_widgets.channel.v0_5.client.store import default_store_path
from settlement_widgets.channel.v0_5.core import lifecycle as L
from settlement_widgets.errors import ConfigurationError, SettlementError, StorageError
from settlement_widgets.networks import Network, local

WALLET = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"
CID = "0x" + "cd" * 32
TX_A, TX_B = "0x" + "aa" * 32, "0x" + "bb" * 32


def test_each_chain_instance_has_its_own_default_store() -> None:
    home = Path(os.environ["SETTLEMENT_HOME"])
    one = default_store_path("local", WALLET, "sb-0123456789ab")
    two = default_store_path("local", WALLET, "sb-ba9876543210")
    assert one != two and one.parent == two.parent == home / "channel"
    assert one.name == f"local-sb-0123456789ab-{WALLET}.sqlite"
    assert default_store_path("sepolia", WALLET).name == f"sepolia-{WALLET}.sqlite"
    with pytest.raises(ConfigurationError, match="plain identifier"):
        default_store_path("local", WALLET, "../escape")


def test_the_profile_carries_the_instance() -> None:
    net = local(
        chain_id=31337,
        custody=WALLET,
        adjudicator=WALLET,
        policy_hook=WALLET,
        settlement_adapter=WALLET,
        pool_manager=WALLET,
        node_url="ws://127.0.0.1:1/ws",
        faucet_url="http://127.0.0.1:1/faucet",
        explorer_base="http://127.0.0.1:1/explorer",
        instance="sb-0123456789ab",
    )
    again = Network.from_json(json.loads(json.dumps(net.to_json())))
    assert again.instance == "sb-0123456789ab" and again == net
    assert replace(net, instance="sb-other") != net


def test_a_contradicting_row_is_a_storage_error_and_nothing_is_written(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite"
    with ChannelStore(path, wallet=WALLET) as store:
        first = store.add_transfer(
            channel_id=None, direction="out", from_account=WALLET, to_account=WALLET,
            asset="ytest.usd", amount=1, relay_tx_id=7,
        )  # fmt: skip
        second = store.add_transfer(
            channel_id=None, direction="out", from_account=WALLET, to_account=WALLET,
            asset="ytest.usd", amount=2,
        )  # fmt: skip
        assert first is not None and second is not None
        with pytest.raises(StorageError, match=r"store\.sqlite.*UNIQUE.*another chain") as info:
            store.finish_transfer(second, status="done", relay_tx_id=7)
        assert isinstance(info.value, SettlementError)
        assert not isinstance(info.value.__cause__, StorageError)
        rows = {r["id"]: r for r in store.transfers()}
        assert rows[second]["status"] == "pending"  # rolled back
        store.set_meta("still", "writable")  # the connection is usable after the error


def test_a_read_error_is_a_storage_error(tmp_path: Path) -> None:
    store = ChannelStore(tmp_path / "store.sqlite", wallet=WALLET)
    store.close()
    with pytest.raises(StorageError, match=r"could not read.*create a new provider"):
        store.get_meta("wallet")


def test_a_store_used_from_another_thread_says_which_loop_owns_it(tmp_path: Path) -> None:
    import threading

    store = ChannelStore(tmp_path / "store.sqlite", wallet=WALLET)
    caught: list[BaseException] = []

    def elsewhere() -> None:
        try:
            store.get_meta("wallet")
        except BaseException as exc:
            caught.append(exc)

    thread = threading.Thread(target=elsewhere)
    thread.start()
    thread.join()
    (error,) = caught
    assert isinstance(error, StorageError) and "event loop (and thread) it was created on" in str(
        error
    )
    store.close()


def test_a_chain_event_is_one_history_row_shown_in_chain_order(tmp_path: Path) -> None:
    with ChannelStore(tmp_path / "store.sqlite", wallet=WALLET) as store:
        assert store.add_history(CID, "countersigned", version=1)
        assert store.add_history(CID, "Resized [2, -2]", tx_hash=TX_B, cursor=(9, 0))
        assert not store.add_history(CID, "Resized [2, -2]", tx_hash=TX_B, cursor=(9, 0))
        # the watcher learns an older event late: it is shown before the newer one
        assert store.add_history(CID, "Created", tx_hash=TX_A, cursor=(5, 3))
        assert store.add_history(CID, "transfer sent", amount=1)
        assert store.has_event(CID, TX_A, 3) and not store.has_event(CID, TX_A, 4)
        events = [r["event"] for r in store.history(CID)]
        assert events == ["countersigned", "Created", "Resized [2, -2]", "transfer sent"]


def test_a_schema_1_store_is_migrated_in_place(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.executescript(
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;"
        "INSERT INTO meta VALUES ('schema', '1');"
        "CREATE TABLE history (id INTEGER PRIMARY KEY AUTOINCREMENT, channel_id TEXT, "
        "event TEXT NOT NULL, status TEXT, version TEXT, intent TEXT, amount TEXT, asset TEXT, "
        "counterparty TEXT, tx_hash TEXT, detail TEXT, at TEXT NOT NULL);"
        f"INSERT INTO history (channel_id, event, at) VALUES ('{CID}', 'old row', "
        "'2026-01-01T00:00:00.000Z');"
    )
    conn.close()
    with ChannelStore(path, wallet=WALLET) as store:
        assert store.get_meta("schema") == "2"
        assert store.add_history(CID, "Created", tx_hash=TX_A, cursor=(1, 0))
        assert not store.add_history(CID, "Created", tx_hash=TX_A, cursor=(1, 0))
        assert [r["event"] for r in store.history(CID)] == ["old row", "Created"]


@pytest.mark.parametrize(
    ("status", "info", "reflects"),
    [
        (L.ACTIVE, {"status": "open", "version": 3}, True),
        (L.ACTIVE, {"status": "open", "version": 4}, True),
        (L.ACTIVE, {"status": "open", "version": 2}, False),
        (L.ACTIVE, {"status": "resizing", "version": 3}, False),
        (L.ACTIVE, {"status": "open", "version": "x"}, False),
        (L.FINAL, {"status": "open", "version": 9}, False),
        (L.FINAL, {"status": "closed", "version": 3}, True),
        (L.DISPUTE, {"status": "challenged", "version": 3}, True),
        (L.DISPUTE, {"status": "open", "version": 3}, False),
    ],
)
def test_what_the_relay_must_show_before_an_operation_returns(
    status: str, info: dict[str, object], reflects: bool
) -> None:
    record = _record(status, version=3)
    assert L.relay_reflects(record, info) is reflects
    wanted = {L.FINAL: "closed", L.DISPUTE: "challenged"}.get(status, "open at version 3")
    assert L.describe_relay_wait(record).endswith(wanted)


def _record(status: str, version: int) -> L.ChannelRecord:
    from settlement_widgets.channel.v0_5.core.types import Allocation, Channel, State, StateIntent

    broker = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"
    channel = Channel((WALLET, broker), WALLET, 3600, 1)
    state = State(
        StateIntent.INITIALIZE,
        0,
        b"",
        (Allocation(WALLET, WALLET, 0), Allocation(broker, WALLET, 0)),
        ("0x" + "11" * 65, "0x" + "22" * 65),
    )
    record = L.new_record(CID, 31337, channel, state)
    return replace(record, status=status, version=version)
