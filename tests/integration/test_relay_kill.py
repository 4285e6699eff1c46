"""Crash safety: SIGKILL the relay process during a stream of transfers, restart it on the same
database, and check that no acknowledged transfer was lost and none was applied twice.

The relay runs as ``python -m settlement_widgets.channel.v0_5.node`` in its own process. The client
pipelines signed transfers (1 unit each, Alice -> Bob), kills the relay after some replies,
restarts it, then re-sends every frame byte for byte: a transfer that was committed before the
kill must be refused as a replay, one that was not must now be applied, and Bob's balance must
end at exactly the number of transfers.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import resource
import signal
import sqlite3
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from relay_helpers import ADJUDICATOR, ASSET, CHAIN_ID, CUSTODY, TOKEN, RelayTestClient

from settlement_widgets.channel.v0_5.core import messages as M
from settlement_widgets.channel.v0_5.core.amounts import parse_decimal_amount
from settlement_widgets.channel.v0_5.core.rpc import now_ms
from settlement_widgets.keys import PrivateKey

pytestmark = pytest.mark.slow

ALICE = PrivateKey("0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80")
BOB = PrivateKey("0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d")
TOTAL = 300
KILL_AFTER = 40
WINDOW = 32


@contextlib.asynccontextmanager
async def relay_process(
    db: Path, durability: str, file_limit: int | None = None
) -> AsyncIterator[tuple[asyncio.subprocess.Process, dict[str, str]]]:
    def limit_files() -> None:  # a disk that fills up: writes past the limit fail (EFBIG)
        if file_limit is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (file_limit, file_limit))

    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "settlement_widgets.channel.v0_5.node",
        "--db", str(db),
        "--chain-id", str(CHAIN_ID),
        "--custody", CUSTODY,
        "--adjudicator", ADJUDICATOR,
        "--token", TOKEN,
        "--faucet-account", ALICE.address,
        "--durability", durability,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        preexec_fn=limit_files,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        line = await asyncio.wait_for(proc.stdout.readline(), 60)
        if not line:
            assert proc.stderr is not None
            raise AssertionError(f"relay did not start: {(await proc.stderr.read()).decode()}")
        yield proc, json.loads(line)
    finally:
        if proc.returncode is None:
            proc.kill()
        await proc.wait()


async def _stream_then_kill(
    url: str, broker: str, proc: asyncio.subprocess.Process
) -> tuple[list[str], set[int]]:
    """Pipeline TOTAL transfers, SIGKILL after KILL_AFTER replies; (frames, acknowledged ids)."""
    client = RelayTestClient(url, broker)
    await client.__aenter__()
    try:
        await client.authenticate(ALICE, ALICE, application="clearnode", allowances=())
        timestamp = now_ms() + 30_000  # future-dated: still fresh when re-sent after restart
        reqs = [
            M.transfer_message(
                ALICE,
                [(ASSET, "0.000001")],
                destination=BOB.address,
                request_id=client.next_id(),
                timestamp=timestamp,
            )
            for _ in range(TOTAL)
        ]
        frames = [r.to_frame() for r in reqs]
        ids = {r.request_id for r in reqs}

        async def send_windowed() -> None:
            # at most WINDOW transfers in flight: when the relay dies, some are mid-way
            for i, frame in enumerate(frames):
                if i >= WINDOW:
                    await client.reply(reqs[i - WINDOW].request_id, timeout=60)
                await client.send_raw(frame)

        sender = asyncio.create_task(send_windowed())
        await client.wait_for(
            lambda f: sum(1 for x in client.frames if x.request_id in ids) >= KILL_AFTER,
            timeout=60,
        )
        os.kill(proc.pid, signal.SIGKILL)
        await proc.wait()
        sender.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await sender
        acked = {
            f.request_id
            for f in list(client.frames)
            if f.request_id in ids and f.method == "transfer"
        }
        errors = [f.error for f in client.frames if f.request_id in ids and f.is_error]
        assert errors == [], errors
        return frames, acked
    finally:
        await client.close()


@pytest.mark.parametrize("durability", ["full", "normal"])
async def test_sigkill_loses_no_acknowledged_transfer_and_applies_none_twice(
    tmp_path: Path, durability: str
) -> None:
    db = tmp_path / "relay.sqlite"
    async with relay_process(db, durability) as (proc, info):
        frames, acked = await _stream_then_kill(info["relayUrl"], info["brokerAddress"], proc)
    assert KILL_AFTER <= len(acked) < TOTAL  # killed mid-stream, with acknowledged transfers

    async with relay_process(db, durability) as (proc, info):
        client = RelayTestClient(info["relayUrl"], info["brokerAddress"])
        async with client:
            await client.authenticate(ALICE, ALICE, application="clearnode", allowances=())
            before = await client.call(M.get_ledger_balances_message(ALICE, account_id=BOB.address))
            survived = parse_decimal_amount(before.result["ledger_balances"][0]["amount"], 6)
            assert survived >= len(acked)  # nothing acknowledged was lost
            replayed, applied = set(), 0
            for frame in frames:
                request_id = json.loads(frame)["req"][0]
                start = len(client.frames)
                await client.send_raw(frame)
                reply = await client.reply(request_id, after=start)
                if reply.is_error:
                    assert reply.error == "operation denied: the request has already been processed"
                    replayed.add(request_id)
                else:
                    assert reply.method == "transfer"
                    applied += 1
            assert acked <= replayed  # every acknowledged transfer was durable...
            assert len(replayed) == survived  # ...and so was exactly what the ledger holds
            assert survived + applied == TOTAL
            after = await client.call(M.get_ledger_balances_message(ALICE, account_id=BOB.address))
            assert after.result["ledger_balances"] == [{"asset": ASSET, "amount": "0.0003"}]
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(proc.wait(), 30) == 0
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT COUNT(*), COALESCE(SUM(CAST(amount AS INTEGER)), 0) FROM transactions "
            "WHERE tx_type = 'transfer' AND from_account = ? AND to_account = ?",
            (ALICE.address, BOB.address),
        ).fetchone()
        (seen,) = conn.execute("SELECT COUNT(*) FROM seen_requests").fetchone()
    assert rows == (TOTAL, TOTAL)
    assert seen >= TOTAL


async def test_a_relay_process_whose_ledger_cannot_commit_stops_and_exits_1(
    tmp_path: Path,
) -> None:
    """The disk fills up under a running relay process: the COMMIT that fails acknowledges
    nothing, the process exits with status 1 (a supervisor sees it stopped, rather than a
    process that listens no more), and a restart with room again holds exactly what was
    acknowledged."""
    db = tmp_path / "relay.sqlite"
    acked: list[int] = []
    async with relay_process(db, "full", file_limit=160 * 1024) as (proc, info):
        client = RelayTestClient(info["relayUrl"], info["brokerAddress"])
        exited = asyncio.ensure_future(proc.wait())
        async with client:
            await client.authenticate(ALICE, ALICE, application="clearnode", allowances=())
            for _ in range(TOTAL):  # each transfer grows the WAL until a write is refused
                req = M.transfer_message(
                    ALICE,
                    [(ASSET, "0.000001")],
                    destination=BOB.address,
                    request_id=client.next_id(),
                    timestamp=now_ms(),
                )
                answer = asyncio.ensure_future(client.call(req))
                await asyncio.wait({answer, exited}, return_when=asyncio.FIRST_COMPLETED)
                if not answer.done():  # the node stopped: this transfer was not acknowledged
                    answer.cancel()
                    break
                reply = answer.result()
                assert reply.method == "transfer", reply.error
                acked.append(req.request_id)
            else:
                raise AssertionError("the ledger never outgrew the file size limit")
        assert await asyncio.wait_for(exited, 30) == 1
        assert proc.stderr is not None
        log = (await proc.stderr.read()).decode()
        assert "COMMIT failed" in log and "could not commit" in log
    assert acked  # the stream ran before the disk filled
    async with relay_process(db, "full") as (proc, info):
        client = RelayTestClient(info["relayUrl"], info["brokerAddress"])
        async with client:
            await client.authenticate(ALICE, ALICE, application="clearnode", allowances=())
            balance = await client.call(
                M.get_ledger_balances_message(ALICE, account_id=BOB.address)
            )
            amounts = balance.result["ledger_balances"]
            assert parse_decimal_amount(amounts[0]["amount"], 6) == len(acked)
