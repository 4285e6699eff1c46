"""``V1Store.channels`` is kept between reads, and never answers stale.

A transfer reads the channels to find the open one; the store keeps them until one of its
own writes touches the table or another connection commits to the file (``PRAGMA
data_version``), so these tests change the table each of those ways and read it back.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from settlement_widgets.channel.v1.client.base import ProviderV1Base
from settlement_widgets.channel.v1.client.store import V1Store

CHANNEL = "0x" + "ab" * 32
OTHER = "0x" + "cd" * 32


def _put(store: V1Store, channel_id: str, status: str = "open") -> None:
    store.put_channel(
        channel_id,
        asset="yusd",
        definition={"nonce": "1", "challenge": 86400, "approved_sig_validators": "0x01"},
        token="0x" + "11" * 20,
        chain_id=31337,
        status=status,
    )


@pytest.fixture
def store(tmp_path: Path) -> V1Store:
    return V1Store(tmp_path / "v1.sqlite")


def test_own_writes_are_seen(store: V1Store) -> None:
    assert store.channels() == []
    _put(store, CHANNEL, "opening")
    assert [c["status"] for c in store.channels()] == ["opening"]
    store.set_channel_status(CHANNEL, "open")
    assert [c["status"] for c in store.channels()] == ["open"]
    store.move_channel(CHANNEL, chain_id=5, token="0x" + "22" * 20)
    assert store.channels()[0]["chain_id"] == 5
    _put(store, OTHER, "opening")
    assert [c["channel_id"] for c in store.channels()] == [CHANNEL, OTHER]
    store.forget_refused({"asset": "yusd", "epoch": "0", "version": "1", "home_channel_id": OTHER})
    assert [c["channel_id"] for c in store.channels()] == [CHANNEL]


def test_another_connections_commit_is_seen(store: V1Store) -> None:
    _put(store, CHANNEL)
    assert store.channels()[0]["status"] == "open"
    other = sqlite3.connect(store.path, isolation_level=None)
    other.execute("UPDATE channels SET status = 'final'")
    other.close()
    assert store.channels()[0]["status"] == "final"


def test_a_rolled_back_write_is_not_kept(store: V1Store) -> None:
    _put(store, CHANNEL)
    with pytest.raises(RuntimeError), store.transaction():
        store.set_channel_status(CHANNEL, "final")
        assert store.channels()[0]["status"] == "final"  # read inside the transaction
        raise RuntimeError("abandon")
    assert store.channels()[0]["status"] == "open"


def test_callers_get_copies(store: V1Store) -> None:
    _put(store, CHANNEL)
    first = store.channels()
    first[0]["status"] = "mangled"
    first[0]["definition"]["nonce"] = "mangled"
    again = store.channels()
    assert again[0]["status"] == "open"
    assert again[0]["definition"]["nonce"] == "1"


@pytest.mark.parametrize(
    "display", ["1", "0.5", "10.50", "-2", "1e-3", "1E+2", " 3 ", "0.000001", "7" * 40]
)
def test_units_reads_plain_text_as_the_decimal_route_does(display: str) -> None:
    from decimal import Decimal

    from settlement_widgets.channel.v1.core.decimals import to_units

    provider = ProviderV1Base.__new__(ProviderV1Base)
    provider._decimals = 6
    try:
        expected: int | str = to_units(Decimal(display), 6)
    except Exception as exc:  # the same error either way
        expected = f"{type(exc).__name__}: {exc}"
    try:
        got: int | str = provider._units(display)
    except Exception as exc:
        got = f"{type(exc).__name__}: {exc}"
    assert got == expected
