"""The Nitronode's per-request shortcuts give the answers of the general path: the
transaction timestamp text (``params._iso``) and the confirmed-channel reads memoised within
one request (``chain_view.ConfirmedHubView.confirmed_channel``)."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest

from settlement_widgets.channel.v1.node import params
from settlement_widgets.channel.v1.node.chain_view import (
    ChainChannel,
    ConfirmedHubView,
    one_head_per_request,
)


@pytest.mark.parametrize(
    "ms",
    [
        0,
        1,
        999,
        1000,
        1001,
        59_999,
        86_399_999,
        951_782_400_000,  # 2000-02-29
        1_764_440_000_999,
        2**33 * 1000 - 1,  # the last millisecond of the fast path
        2**33 * 1000,  # the definition from here on
        253_402_300_799_999,  # 9999-12-31T23:59:59.999
        -1,  # before 1970: the definition
    ],
)
def test_the_timestamp_text_is_the_definitions(ms: int) -> None:
    assert params._iso(ms) == params._iso_slow(ms)


def test_the_timestamp_text_over_random_and_consecutive_milliseconds() -> None:
    rng = random.Random(37)
    values = [rng.randrange(0, 2**33 * 1000) for _ in range(20_000)]
    start = 1_764_440_000_000
    values += list(range(start - 2_500, start + 2_500))  # seconds rolling over, in order
    values += [start + 5, start - 5_000, start + 5]  # and back to an older second
    for ms in values:
        assert params._iso(ms) == params._iso_slow(ms), ms


class _CountingView(ConfirmedHubView):
    """A hub view whose chain reads are counted (no chain behind it)."""

    def __init__(self) -> None:
        super().__init__(hub=None)  # type: ignore[arg-type]
        self.reads: list[tuple[str, Any]] = []

    async def _read(self, channel_id: str, block: int | str = "latest") -> ChainChannel:
        self.reads.append((channel_id, block))
        return ChainChannel(1, len(self.reads), 0)

    async def confirmed_block(self, delay_secs: int) -> int | None:
        return 7


def test_a_request_reads_each_channel_once_and_the_next_request_reads_again() -> None:
    async def run() -> None:
        view = _CountingView()
        a, b = "0x" + "aa" * 32, "0x" + "bb" * 32
        with one_head_per_request():
            first = await view.confirmed_channel(a, 0)
            assert await view.confirmed_channel(a, 0) is first
            await view.confirmed_channel(b, 0)
            confirmed = await view.confirmed_channel(a, 36)  # another delay: another read
            assert await view.confirmed_channel(a, 36) is confirmed
        assert view.reads == [(a, "latest"), (b, "latest"), (a, 7)]
        with one_head_per_request():  # a new request sees the chain anew
            assert await view.confirmed_channel(a, 0) != first
        await view.confirmed_channel(a, 0)  # outside a request: always read
        assert len(view.reads) == 5

    asyncio.run(run())


@pytest.mark.parametrize(
    "value",
    [
        {
            "id": "0x" + "ab" * 32,
            "transition": {"type": 30, "tx_id": "0x" + "cd" * 32, "account_id": "0x" + "12" * 20},
            "asset": "usdc",
            "home_ledger": {"user_balance": "12345678901234567890123456789.123456789012345678"},
            "user_sig": "0x00" + "9a" * 65,
        },
        {"text": 'quotes " and \\ backslash, \n\t controls \x00\x1f\x7f, é, 😀, \u2028'},
        {"created_at_ms": 1_764_440_000_123, "challenge_duration": 86400, "ok": True, "x": None},
        {"int64": 2**63 - 1, "uint64": 2**64 - 1, "neg": -(2**63)},
        {"big": 2**256 - 1},  # beyond orjson: the general way
        {1: "a key that is not a string"},  # json writes "1": the general way
        [],
    ],
)
def test_the_ledger_writes_the_same_json_value_as_the_general_encoder(value: Any) -> None:
    import json

    from settlement_widgets.channel.v1.node.ledger import _dumps, _dumps_built

    text = _dumps_built(value)
    assert isinstance(text, str)
    assert json.loads(text) == json.loads(_dumps(value))
