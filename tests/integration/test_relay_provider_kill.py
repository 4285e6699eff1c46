"""SIGKILL of the relay process in the middle of a stream of ``ChannelProvider.transfer`` calls.

The relay runs in its own process (:class:`RelayProcess`, ``durability="full"``) over the
sandbox's chain with the sandbox's broker key, so it serves the same custody. A provider for a
funded wallet opens a channel through it and streams transfers, pipelined (a semaphore over
``asyncio.gather``) and sequential at the same time, each with an amount of its own. Once
KILL_AFTER transfers are acknowledged the relay is SIGKILLed (on that event, not a timer), then
restarted on the same database and port. Then:

- every acknowledged transfer is in the relay's ledger exactly once, under the id the provider
  was given, with its amount and accounts (the file and the restarted node's
  ``get_ledger_transactions`` agree);
- a transfer that raised may or may not have been applied, never twice, and the provider's
  store marks it ``unknown``/``failed``, never ``done``;
- balances hold exactly the transfers the ledger holds;
- the provider reconnects by itself and transfers again.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sqlite3
from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest
from channel_helpers import ASSET, U, config_for, fresh_wallet, sandbox

from settlement_widgets.channel import ChannelProvider, Transfer
from settlement_widgets.channel.v0_5.core.amounts import parse_decimal_amount
from settlement_widgets.channel.v0_5.node.process import RelayProcess
from settlement_widgets.errors import RelayUnavailableError
from settlement_widgets.keys import PrivateKey
from settlement_widgets.sandbox import LocalSandbox
from settlement_widgets.sandbox.local import sandbox_key

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.slow]
__all__ = ["sandbox"]

DEPOSIT = 20 * U
PIPELINED = 150  # amounts 1..150 units, at most CONCURRENCY in flight
SEQUENTIAL = 50  # amounts 151..200 units, one after the other, at the same time
CONCURRENCY = 8
KILL_AFTER = 30
AFTER_RESTART = 1_000  # the amount of the transfer after the restart
TIMEOUT = 120.0


@dataclass
class Outcomes:
    """Each attempted transfer by its (unique) amount."""

    acked: dict[int, Transfer] = field(default_factory=dict)
    raised: dict[int, Exception] = field(default_factory=dict)


async def _stream_and_kill(
    provider: ChannelProvider, channel_id: str, recipient: str, relay: RelayProcess
) -> Outcomes:
    out = Outcomes()
    enough = asyncio.Event()
    gate = asyncio.Semaphore(CONCURRENCY)

    async def one(units: int) -> None:
        try:
            transfer = await provider.transfer(channel_id, units, recipient)
        except Exception as exc:  # every failure is collected and checked below
            out.raised[units] = exc
        else:
            out.acked[units] = transfer
            if len(out.acked) >= KILL_AFTER:
                enough.set()

    async def limited(units: int) -> None:
        async with gate:
            await one(units)

    async def pipelined() -> None:
        await asyncio.gather(*(limited(u) for u in range(1, PIPELINED + 1)))

    async def sequential() -> None:
        for units in range(PIPELINED + 1, PIPELINED + SEQUENTIAL + 1):
            await one(units)

    async def killer() -> None:
        await enough.wait()
        await relay.kill()

    kill = asyncio.create_task(killer())
    try:
        await asyncio.wait_for(asyncio.gather(pipelined(), sequential()), TIMEOUT)
        await asyncio.wait_for(kill, TIMEOUT)
    finally:
        kill.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await kill
    return out


def _ledger_rows(db: Path, sender: str) -> list[tuple[int, str, str, str, str, int]]:
    """The relay file's transactions from ``sender``: (id, type, from, to, asset, units)."""
    with contextlib.closing(sqlite3.connect(db)) as conn:
        rows = conn.execute(
            "SELECT id, tx_type, from_account, to_account, asset, amount FROM transactions "
            "WHERE from_account = ? ORDER BY id",
            (sender,),
        ).fetchall()
    return [(int(i), t, a, b, s, int(v)) for i, t, a, b, s, v in rows]


def _stored_balance(db: Path, account: str) -> int:
    with contextlib.closing(sqlite3.connect(db)) as conn:
        row = conn.execute(
            "SELECT amount FROM balances WHERE account = ? AND asset = ?", (account, ASSET)
        ).fetchone()
    return int(row[0]) if row else 0


async def _relay_transactions(provider: ChannelProvider, account: str) -> dict[int, int]:
    """id -> units of every ``transfer`` the (restarted) relay reports for ``account``."""
    relay = provider.relay
    assert relay is not None
    found: dict[int, int] = {}
    while True:
        page = await relay.call(
            "get_ledger_transactions",
            {
                "account_id": account,
                "tx_type": "transfer",
                "sort": "asc",
                "limit": 100,
                "offset": len(found),
            },
            signed=False,
        )
        txs = page["ledger_transactions"]
        found.update({int(t["id"]): parse_decimal_amount(t["amount"], 6) for t in txs})
        if len(txs) < 100:
            return found


async def test_sigkill_mid_stream_loses_no_acknowledged_provider_transfer(
    sandbox: LocalSandbox, tmp_path: Path
) -> None:
    assert sandbox.relay is not None
    wallet = await fresh_wallet(sandbox, tokens=100 * U)
    db = tmp_path / "relay.sqlite"
    relay = RelayProcess(
        db_path=db,
        network=sandbox.relay.config.networks[0],
        asset=sandbox.relay.config.assets[0],
        broker_key=sandbox_key("broker"),
        rpc_url=sandbox.rpc_url,
        durability="full",
    )
    await relay.start()
    try:
        assert relay.broker_address == sandbox.broker_address  # the custody's broker
        config = replace(config_for(sandbox), node_url=relay.url, store_path=tmp_path / "a.sqlite")
        recipient = PrivateKey.generate().address
        async with ChannelProvider(config, wallet) as provider:
            channel = await provider.create_channel(sandbox.broker_address, sandbox.token, DEPOSIT)
            assert await provider.balances() == {ASSET: DEPOSIT}

            out = await _stream_and_kill(provider, channel.id, recipient, relay)
            assert relay.returncode == -signal.SIGKILL
            attempted = set(range(1, PIPELINED + SEQUENTIAL + 1))
            assert set(out.acked) | set(out.raised) == attempted
            assert not set(out.acked) & set(out.raised)
            assert len(out.acked) >= KILL_AFTER and out.raised  # killed mid-stream
            for exc in out.raised.values():  # lost with the relay, or it was not there
                assert isinstance(exc, RelayUnavailableError), repr(exc)

            await relay.restart()  # same database, same port

            # the relay's file: every acknowledged transfer once, as acknowledged
            rows = _ledger_rows(db, wallet.address)
            transfers = [r for r in rows if r[1] == "transfer"]
            by_units: dict[int, list[tuple[int, str, str, str, str, int]]] = {}
            for row in transfers:
                by_units.setdefault(row[5], []).append(row)
            for units, transfer in out.acked.items():
                assert by_units.get(units) == [
                    (transfer.id, "transfer", wallet.address, recipient, ASSET, units)
                ], f"acknowledged transfer of {units} units (relay tx {transfer.id})"
                assert (transfer.amount, transfer.recipient) == (units, recipient)
            assert all(len(same) == 1 for same in by_units.values())  # none applied twice
            in_doubt_applied = set(by_units) - set(out.acked)
            assert in_doubt_applied <= set(out.raised)  # nothing no one sent
            applied = sum(by_units)

            # the restarted node says the same over the wire (the provider reconnected)
            reported = await _relay_transactions(provider, recipient)
            assert reported == {row[0]: row[5] for row in transfers}

            # balances hold exactly the applied transfers
            assert _stored_balance(db, recipient) == applied
            assert _stored_balance(db, wallet.address) == DEPOSIT - applied
            assert await provider.balances() == {ASSET: DEPOSIT - applied}

            # the provider's store: done only for what was acknowledged
            sent = {
                r["amount"]: r
                for r in provider.store.transfers(channel.id)
                if r["direction"] == "out"
            }
            assert set(sent) == attempted
            for units, entry in sent.items():
                if units in out.acked:
                    assert (entry["status"], entry["relay_tx_id"]) == ("done", out.acked[units].id)
                else:
                    assert entry["status"] in ("unknown", "failed"), entry
                    assert entry["relay_tx_id"] is None

            # and it goes on: a transfer through the restarted relay
            again = await provider.transfer(channel.id, AFTER_RESTART, recipient)
            assert again.id > max(row[0] for row in rows)
            assert _ledger_rows(db, wallet.address)[-1] == (
                again.id,
                "transfer",
                wallet.address,
                recipient,
                ASSET,
                AFTER_RESTART,
            )
            assert await provider.balances() == {ASSET: DEPOSIT - applied - AFTER_RESTART}
    finally:
        await relay.aclose()
