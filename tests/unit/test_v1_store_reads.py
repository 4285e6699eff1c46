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


def _state(version: int, *, epoch: int = 0, user: bool = True, node: bool = False) -> dict:
    state: dict = {
        "asset": "yusd",
        "epoch": str(epoch),
        "version": str(version),
        "home_channel_id": CHANNEL,
        "transition": {"type": 30, "amount": str(version)},
    }
    if user:
        state["user_sig"] = f"0xu{version}"
    if node:
        state["node_sig"] = f"0xn{version}"
    return state


def _uncached(store: V1Store) -> dict | None:
    """What the file says, read by a connection of its own (no cache)."""
    other = V1Store(store.path)
    try:
        return other.latest_state("yusd")
    finally:
        other.close()


def test_latest_state_follows_every_write(store: V1Store) -> None:
    steps = [
        lambda: store.put_state(_state(1)),
        lambda: store.put_state(_state(1, user=False, node=True)),  # adds the node's, keeps ours
        lambda: store.put_state(_state(2)),
        lambda: store.put_state(_state(1, node=True)),  # an older version: latest unchanged
        lambda: store.put_state(_state(3)),
        lambda: store.forget_refused(_state(3)),
        lambda: store.put_state(_state(1, epoch=1)),  # a new epoch outranks any version
        lambda: store.put_state(_state(9)),
    ]
    assert store.latest_state("yusd") is None
    for step in steps:
        store.latest_state("yusd")  # read (and keep) before each write
        step()
        assert store.latest_state("yusd") == _uncached(store)
    latest = store.latest_state("yusd")
    assert latest is not None and (latest["epoch"], latest["version"]) == ("1", "1")


def test_latest_state_sees_another_connection_and_rollbacks(store: V1Store) -> None:
    store.put_state(_state(1))
    assert store.latest_state("yusd")["version"] == "1"  # type: ignore[index]
    other = V1Store(store.path)
    other.put_state(_state(2, node=True))
    other.close()
    assert store.latest_state("yusd") == _uncached(store)
    assert store.latest_state("yusd")["version"] == "2"  # type: ignore[index]
    with pytest.raises(RuntimeError), store.transaction():
        store.put_state(_state(5))
        assert store.latest_state("yusd")["version"] == "5"  # type: ignore[index]
        raise RuntimeError("abandon")
    assert store.latest_state("yusd")["version"] == "2"  # type: ignore[index]
    copy = store.latest_state("yusd")
    assert copy is not None
    copy["transition"]["amount"] = "mangled"
    assert store.latest_state("yusd") == _uncached(store)


def test_latest_signed_state_is_read_from_the_file(store: V1Store) -> None:
    store.put_state(_state(1, node=True))
    store.put_state(_state(2))
    assert store.latest_state("yusd", signed=True)["version"] == "1"  # type: ignore[index]
    assert store.latest_state("yusd")["version"] == "2"  # type: ignore[index]
