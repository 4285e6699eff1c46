"""``ChannelStore``: file mode 0600, WAL, round trips, owner checks, atomic writes, the
operation journal and the pending-work summary a restarted provider relies on."""

from __future__ import annotations

import os
import sqlite3
import stat
import time
from dataclasses import replace
from pathlib import Path

import pytest

from settlement_widgets.channel import ChannelStore
from settlement_widgets.channel.v0_5.client.store import SessionRecord, default_store_path
from settlement_widgets.channel.v0_5.core import lifecycle as L
from settlement_widgets.channel.v0_5.core.ids import channel_id, state_hash
from settlement_widgets.channel.v0_5.core.types import Allocation, Channel, State, StateIntent
from settlement_widgets.errors import ConfigurationError, InvalidStateError
from settlement_widgets.keys import PrivateKey
from settlement_widgets.networks import SEPOLIA

WALLET = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"
BROKER = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"
assert SEPOLIA.token is not None
TOKEN: str = SEPOLIA.token
ADJUDICATOR = SEPOLIA.contracts.adjudicator
CUSTODY = SEPOLIA.contracts.custody
TX = "0x" + "ab" * 32


def make_record() -> tuple[L.ChannelRecord, State]:
    channel = Channel((WALLET, BROKER), ADJUDICATOR, 3600, 42)
    cid = channel_id(channel, 31337)
    initial = State(
        StateIntent.INITIALIZE,
        0,
        b"",
        (Allocation(WALLET, TOKEN, 0), Allocation(BROKER, TOKEN, 0)),
        ("0x" + "11" * 65, "0x" + "22" * 65),
    )
    return L.new_record(cid, 31337, channel, initial), initial


def test_file_is_private_and_in_wal_mode(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "store.sqlite"
    with ChannelStore(path, wallet=WALLET) as store:
        store.set_meta("x", "1")
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        wal = path.with_name(path.name + "-wal")
        assert wal.exists() and stat.S_IMODE(os.stat(wal).st_mode) & 0o077 == 0
        assert store._conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    os.chmod(path, 0o644)
    with ChannelStore(path):
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600  # tightened on reopen


def test_default_path_is_under_settlement_home(tmp_path: Path) -> None:
    home = Path(os.environ["SETTLEMENT_HOME"])
    assert (
        default_store_path("local", WALLET.lower()) == home / "channel" / f"local-{WALLET}.sqlite"
    )
    with ChannelStore(network="local", wallet=WALLET) as store:
        assert store.path == home / "channel" / f"local-{WALLET}.sqlite"
    with pytest.raises(ConfigurationError, match="needs a path"):
        ChannelStore()


def test_a_store_belongs_to_one_wallet_chain_and_custody(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    ChannelStore(path, wallet=WALLET, chain_id=1, custody=CUSTODY).close()
    ChannelStore(path, wallet=WALLET.lower(), chain_id=1).close()  # same owner
    with pytest.raises(ConfigurationError, match="belongs to wallet"):
        ChannelStore(path, wallet=BROKER)
    with pytest.raises(ConfigurationError, match="belongs to chain_id 1"):
        ChannelStore(path, chain_id=2)
    with pytest.raises(ConfigurationError, match="belongs to custody"):
        ChannelStore(path, custody=TOKEN)


def test_channels_states_and_transactions_round_trip(tmp_path: Path) -> None:
    record, initial = make_record()
    with ChannelStore(tmp_path / "s.sqlite") as store:
        store.put_channel(record)
        store.put_state(
            record.channel_id, initial, record.state_hash, status="signed", server_signature="0x22"
        )
        assert store.get_channel(record.channel_id.upper().replace("0X", "0x")) == record
        assert store.latest_onchain_state(record.channel_id) is None
        (pending,) = store.unsubmitted_states()
        assert pending.state == initial and pending.server_signature == "0x22"
        store.add_tx(TX, step="submit_create", channel_id=record.channel_id, op_id=7)
        assert store.tx_for(7, "submit_create") == (TX, "pending")
        assert store.pending_txs()[0]["tx_hash"] == TX
        store.set_state_status(record.channel_id, 0, StateIntent.INITIALIZE, "onchain", tx_hash=TX)
        store.set_tx_status(TX, "confirmed", 12)
        assert store.latest_onchain_state(record.channel_id) == initial
        assert store.unsubmitted_states() == [] and store.pending_txs() == []
        assert store.tx_hashes(record.channel_id) == {"submit_create": TX}
        active = record.with_state(initial, status=L.ACTIVE)
        store.put_channel(active)
        assert store.get_channel(record.channel_id) == active
        assert [r.channel_id for r in store.list_channels()] == [record.channel_id]
        with pytest.raises(InvalidStateError):
            store.put_state(record.channel_id, initial, "0x", status="lost")
    # a second store over the file sees everything (another process after a crash)
    with ChannelStore(tmp_path / "s.sqlite") as again:
        assert again.get_channel(record.channel_id) == active
        assert again.find_state(record.channel_id, 0, StateIntent.INITIALIZE) is not None
        assert state_hash(record.channel_id, initial) == record.state_hash


def test_session_key_round_trip_never_shows_the_secret(tmp_path: Path) -> None:
    key = PrivateKey.generate()
    session = SessionRecord(
        wallet=WALLET,
        application="app",
        key=key,
        scope="console",
        allowances=(("ytest.usd", "100"),),
        expires_at=int(time.time()) + 3600,
    )
    assert key.secret_hex() not in repr(session) and "jwt" not in repr(session)
    with ChannelStore(tmp_path / "s.sqlite") as store:
        store.save_session(session)
        store.save_jwt(WALLET, "app", "header.claims.sig")
        loaded = store.load_session(WALLET, "app")
        assert loaded is not None
        assert loaded.key.secret_hex() == key.secret_hex()
        assert (loaded.jwt, loaded.allowances, loaded.is_valid()) == (
            "header.claims.sig",
            (("ytest.usd", "100"),),
            True,
        )
        assert store.load_session(WALLET, "other app") is None
    assert not SessionRecord(WALLET, "a", key, "s", (), int(time.time()) + 30).is_valid()


def test_transactions_are_atomic(tmp_path: Path) -> None:
    record, _ = make_record()
    with ChannelStore(tmp_path / "s.sqlite") as store:
        with pytest.raises(RuntimeError), store.transaction():
            store.put_channel(record)
            store.add_history(record.channel_id, "opened")
            raise RuntimeError("crash between the two writes")
        assert store.get_channel(record.channel_id) is None
        assert store.history(record.channel_id) == []
        with store.transaction(durable=False):
            store.put_channel(record)
        assert store.get_channel(record.channel_id) == record
        # another connection cannot see a transaction before it commits
        other = sqlite3.connect(tmp_path / "s.sqlite")
        with store.transaction():
            store.set_meta("k", "v")
            assert other.execute("SELECT value FROM meta WHERE key='k'").fetchall() == []
        assert other.execute("SELECT value FROM meta WHERE key='k'").fetchall() == [("v",)]
        other.close()


def test_operations_journal_and_pending_work(tmp_path: Path) -> None:
    with ChannelStore(tmp_path / "s.sqlite") as store:
        steps, params = L.plan_close(settle_amount=0, withdraw=True, in_dispute=False)
        op = store.begin_operation("close", "0xAB", steps, params)
        assert store.unfinished_operations() == [op]
        store.journal(op.id, "rpc_close", "start")
        op = op.advance("rpc_close", {"final_version": 3})
        store.save_operation(op)
        store.journal(op.id, "rpc_close", "done", {"final_version": 3})
        (loaded,) = store.unfinished_operations()
        assert loaded == op and loaded.next_step == "submit_close"
        work = store.pending_work()
        assert work["operations"] == [
            {
                "id": op.id,
                "kind": "close",
                "channel_id": "0xab",
                "status": "running",
                "next_step": "submit_close",
                "error": None,
            }
        ]
        store.save_operation(op.fail("failed", "reverted"))
        assert store.unfinished_operations() == []  # a refusal is not retried automatically
        assert store.operation(op.id).error == "reverted"  # type: ignore[union-attr]
        phases = [(e["step"], e["phase"]) for e in store.journal_entries(op.id)]
        assert phases == [("-", "planned"), ("rpc_close", "start"), ("rpc_close", "done")]
        with pytest.raises(InvalidStateError):
            store.begin_operation("explode", None, ("rpc_close",), {})


def test_transfers_and_history(tmp_path: Path) -> None:
    with ChannelStore(tmp_path / "s.sqlite") as store:
        row = store.add_transfer(
            channel_id="0xAB",
            direction="out",
            from_account=WALLET,
            to_account=BROKER,
            asset="ytest.usd",
            amount=2**100,
            request_id=99,
        )
        assert row is not None
        assert store.pending_work()["pending_transfers"][0]["amount"] == 2**100
        store.finish_transfer(row, status="done", relay_tx_id=5)
        assert store.has_relay_transfer(5)
        duplicate = store.add_transfer(
            channel_id=None,
            direction="in",
            from_account=BROKER,
            to_account=WALLET,
            asset="ytest.usd",
            amount=1,
            status="done",
            relay_tx_id=5,
        )
        assert duplicate is None  # the relay's id is unique
        assert [t["status"] for t in store.transfers("0xab")] == ["done"]
        store.add_history("0xAB", "transfer sent", amount=2**100, version=3)
        (entry,) = store.history("0xab")
        assert (entry["event"], entry["amount"], entry["version"]) == ("transfer sent", 2**100, 3)


def test_channel_records_are_cached_until_the_file_changes(tmp_path: Path) -> None:
    """A cached record is returned while nothing changed, is replaced when this store writes
    the channel, and is dropped when another connection commits to the file."""
    path = tmp_path / "s.sqlite"
    record, _ = make_record()
    with ChannelStore(path, wallet=WALLET) as store, ChannelStore(path) as other:
        store.put_channel(record)
        first = store.get_channel(record.channel_id)
        assert first == record
        assert store.get_channel(record.channel_id.upper().replace("0X", "0x")) is first
        active = replace(record, status=L.ACTIVE)
        store.put_channel(active)  # our own write
        assert store.get_channel(record.channel_id) == active
        closing = replace(record, status=L.CLOSING)
        other.put_channel(closing)  # another connection (a recovery run, a second provider)
        assert store.get_channel(record.channel_id) == closing


def test_a_rolled_back_write_leaves_no_cached_record(tmp_path: Path) -> None:
    record, _ = make_record()
    with ChannelStore(tmp_path / "s.sqlite", wallet=WALLET) as store:
        store.put_channel(record)
        with pytest.raises(RuntimeError), store.transaction():
            store.put_channel(replace(record, status=L.ACTIVE))
            assert store.get_channel(record.channel_id).status == L.ACTIVE  # type: ignore[union-attr]
            raise RuntimeError("the operation failed after the write")
        assert store.get_channel(record.channel_id) == record
