"""Relay crash soak: transfers between several wallets while the relay process is SIGKILLed
and restarted at random moments; afterwards nothing acknowledged is lost or doubled.

Every transfer carries a unique amount (transfer *k* moves *k* smallest units), so each row
of the relay's ledger can be matched to the client transfer that caused it, whatever id the
relay gave it. Clients use the package's :class:`~settlement_widgets.channel.RelayClient`
(session-key login, JWT re-login after a reconnect). A transfer whose answer was lost with the
relay is *in doubt*; the client re-sends the very same signed frame once the relay is back,
which the relay's replay guard turns into "applied now" or "already processed". So every
transfer ends with a known outcome, and the checks are exact:

- every acknowledged transfer is in the ledger exactly once, under the id the ack named;
- the relay holds no transfer the clients do not know as applied (and the reverse);
- the sum of all balances equals the faucet's seed (nothing created or destroyed), and each
  wallet's balance equals what its transfers imply, both on the live relay and in SQLite.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import sqlite3
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from settlement_widgets.channel import RelayClient
from settlement_widgets.channel.v0_5.core.amounts import parse_decimal_amount, to_decimal_string
from settlement_widgets.channel.v0_5.node.config import DEFAULT_FAUCET_SEED_UNITS
from settlement_widgets.errors import (
    RelayError,
    RelayUnavailableError,
    SettlementError,
    SettlementTimeoutError,
)
from settlement_widgets.keys import PrivateKey

from .common import CheckResult, free_port, ms, percentile, secrets
from .processes import ASSET, RelayProcess

__all__ = ["Ledger", "Outcomes", "SoakParams", "run_relay_soak", "verify"]

DECIMALS = 6
REPLAYED = "operation denied: the request has already been processed"


@dataclass(frozen=True)
class SoakParams:
    """``duration`` seconds of transfers and at least ``min_kills`` kills (the soak runs on
    until both are reached); ``window`` transfers in flight per wallet; a kill comes after a
    random number (1..``max_acks_between_kills``) of acknowledgements since the last start,
    or after ``max_gap`` seconds."""

    duration: float = 30.0
    min_kills: int = 10
    wallets: int = 6
    window: int = 4
    max_acks_between_kills: int = 400
    max_gap: float = 3.0
    funding_units: int = 10**12
    durability: str = "full"
    seed: int | None = None


@dataclass
class Outcomes:
    """What the clients know, keyed by the transfer's unique amount."""

    attempted: dict[int, tuple[str, str]] = field(default_factory=dict)
    acked: dict[int, tuple[int, str, str]] = field(default_factory=dict)  # id, from, to
    acked_hashes: dict[int, tuple[bytes, int]] = field(default_factory=dict)  # hash, ts
    replay_confirmed: set[int] = field(default_factory=set)
    refused: dict[int, str] = field(default_factory=dict)
    unresolved: set[int] = field(default_factory=set)
    in_doubt: int = 0
    retried_then_acked: int = 0
    latencies: list[float] = field(default_factory=list)


class _Supervisor:
    """Kills and restarts the relay; workers wait on its generation counter (no sleeps)."""

    def __init__(self, relay: RelayProcess) -> None:
        self.relay = relay
        self.generation = 0
        self.up = asyncio.Event()
        self.changed = asyncio.Condition()
        self.acks = 0
        self.kills = 0
        self.restart_seconds: list[float] = []
        self.stopping = False

    async def note_ack(self) -> None:
        self.acks += 1
        async with self.changed:
            self.changed.notify_all()

    async def wait_acks(self, target: int, timeout: float) -> None:
        async with self.changed:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.changed.wait_for(lambda: self.acks >= target), timeout)

    async def wait_new_generation(self, seen: int, timeout: float) -> None:
        """Until the relay was restarted after generation ``seen`` (bounded: a failure that
        was not a kill, a timeout say, is retried after ``timeout``)."""
        async with self.changed:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(
                    self.changed.wait_for(lambda: self.generation > seen and self.up.is_set()),
                    timeout,
                )

    async def kill_and_restart(self) -> None:
        self.up.clear()
        await self.relay.kill()
        self.kills += 1
        started = time.perf_counter()
        await self.relay.start()
        self.restart_seconds.append(time.perf_counter() - started)
        async with self.changed:
            self.generation += 1
            self.up.set()
            self.changed.notify_all()


async def _client(url: str, broker: str, wallet: PrivateKey, *, clearnode: bool) -> RelayClient:
    session = PrivateKey.generate()
    secrets.add_key(session, "soak session key")
    client = RelayClient(url, broker_address=broker, request_timeout=15.0, reconnect=False)
    await client.authenticate(
        wallet,
        session,
        application="clearnode" if clearnode else "reliability soak",
        allowances=[] if clearnode else [(ASSET, "1000000000")],
        expires_at=int(time.time()) + 3600,
    )
    return client


async def _worker(
    client: RelayClient,
    me: PrivateKey,
    others: list[PrivateKey],
    counter: list[int],
    out: Outcomes,
    sup: _Supervisor,
    stop: asyncio.Event,
    rng: random.Random,
) -> None:
    while not stop.is_set():
        counter[0] += 1
        amount = counter[0]
        dest = rng.choice(others)
        out.attempted[amount] = (me.address, dest.address)
        req = client.transfer_request(dest.address, [(ASSET, to_decimal_string(amount, DECIMALS))])
        started = time.perf_counter()
        first = True
        deadline = time.monotonic() + 50  # the frame's timestamp stays fresh for 60 s
        while True:
            await sup.up.wait()  # not sent while the relay is down: not in doubt yet
            generation = sup.generation
            try:
                reply = await client.request(req, timeout=10.0)
            except RelayError as exc:
                if exc.message == REPLAYED and not first:
                    out.replay_confirmed.add(amount)  # applied before the kill: durable
                else:
                    out.refused[amount] = exc.message
                break
            except (RelayUnavailableError, SettlementTimeoutError, OSError) as exc:
                if first:
                    out.in_doubt += 1
                    first = False
                if time.monotonic() > deadline:
                    out.unresolved.add(amount)
                    out.refused.setdefault(amount, f"unresolved: {exc}")
                    break
                await sup.wait_new_generation(generation, timeout=2.0)
                continue
            tx = reply.result["transactions"][0]
            out.acked[amount] = (int(tx["id"]), str(tx["from_account"]), str(tx["to_account"]))
            out.acked_hashes[amount] = (req.payload_hash, req.timestamp)
            if first:
                out.latencies.append(time.perf_counter() - started)
            else:
                out.retried_then_acked += 1
            await sup.note_ack()
            break


def _read_ledger(db: Path) -> tuple[list[tuple[int, str, str, int]], dict[str, int], set[bytes]]:
    """(transfer rows, balances of the asset, seen request hashes) from the relay's SQLite."""
    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
        rows = [
            (int(i), f, t, int(a))
            for i, f, t, a in conn.execute(
                "SELECT id, from_account, to_account, amount FROM transactions "
                "WHERE tx_type = 'transfer' AND asset = ?",
                (ASSET,),
            )
        ]
        balances = {
            account: int(amount)
            for account, amount in conn.execute(
                "SELECT account, amount FROM balances WHERE asset = ?", (ASSET,)
            )
        }
        seen = {bytes(h) for (h,) in conn.execute("SELECT hash FROM seen_requests")}
    return rows, balances, seen


@dataclass(frozen=True)
class Ledger:
    """What the relay's SQLite holds after the soak: transfer rows ``(id, from, to,
    units)``, balances of the asset by account, and the replay guard's request hashes."""

    rows: list[tuple[int, str, str, int]]
    balances: dict[str, int]
    seen: set[bytes]


def verify(
    out: Outcomes,
    ledger: Ledger,
    *,
    funding: dict[str, int],
    live_balances: dict[str, int],
    seed_units: int,
    now_ms: int,
) -> tuple[dict[str, Any], list[str]]:
    """Compare what the clients hold with what the relay stored (pure): the figures and the
    violated properties. Transfers are matched by their unique amounts."""
    wallets = set(funding)
    by_amount: dict[int, list[tuple[int, str, str]]] = {}
    for row_id, source, target, units in ledger.rows:
        if source in wallets:
            by_amount.setdefault(units, []).append((row_id, source, target))
    lost = duplicated = phantom = 0
    for units, acked in out.acked.items():
        found = by_amount.get(units, [])
        if not found:
            lost += 1
        elif len(found) > 1:
            duplicated += 1
        elif found[0] != acked:
            phantom += 1  # the relay's row under that id is not the transfer the client holds
    confirmed_wrong = sum(1 for a in out.replay_confirmed if len(by_amount.get(a, [])) != 1)
    applied = set(out.acked) | out.replay_confirmed
    unexpected = sorted(a for a in by_amount if a not in applied)
    refused_but_applied = sorted(a for a in out.refused if a in by_amount)
    missing_hashes = sum(
        1
        for digest, ts in out.acked_hashes.values()
        if ts + 60_000 > now_ms + 5_000 and digest not in ledger.seen
    )
    # balances: conserved in total, and per wallet what the applied transfers imply
    total = sum(ledger.balances.values())
    expected: Counter[str] = Counter(funding)
    for units in applied:
        source, target = out.attempted[units]
        expected[source] -= units
        expected[target] += units
    wrong_db = sorted(w for w in wallets if ledger.balances.get(w, 0) != expected[w])
    wrong_live = sorted(w for w in wallets if live_balances.get(w) != expected[w])
    other_refusals = Counter(m for a, m in out.refused.items() if a not in out.unresolved)
    checks = [
        (lost == 0, f"{lost} acknowledged transfers are not in the ledger"),
        (duplicated == 0, f"{duplicated} acknowledged transfers are in it more than once"),
        (phantom == 0, f"{phantom} acks name a ledger row that is another transfer"),
        (confirmed_wrong == 0, f"{confirmed_wrong} replay-confirmed transfers not in it once"),
        (not unexpected, f"{len(unexpected)} ledger transfers no client saw applied"),
        (not refused_but_applied, f"{len(refused_but_applied)} refused transfers were applied"),
        (not out.unresolved, f"{len(out.unresolved)} transfers left unresolved"),
        (missing_hashes == 0, f"{missing_hashes} acked request hashes not in the replay guard"),
        (total == seed_units, f"balances sum to {total}, the seed was {seed_units}"),
        (not wrong_db, f"stored balances differ from the transfers for {wrong_db}"),
        (not wrong_live, f"the live relay's balances differ for {wrong_live}"),
        (not other_refusals, f"transfers refused: {dict(other_refusals)}"),
    ]
    figures = {
        "acknowledged_lost": lost,
        "acknowledged_duplicated": duplicated,
        "phantom_successes": phantom,
        "ledger_transfers": sum(len(v) for v in by_amount.values()),
        "balance_sum_conserved": total == seed_units,
        "balance_mismatches": len(wrong_db) + len(wrong_live),
    }
    return figures, [message for ok, message in checks if not ok]


async def run_relay_soak(workdir: Path, params: SoakParams | None = None) -> CheckResult:
    """Run the soak in ``workdir`` (relay database and log) and check every property."""
    p = params or SoakParams()
    result = CheckResult("relay crash soak")
    began = time.perf_counter()
    rng = random.Random(p.seed)
    workdir.mkdir(parents=True, exist_ok=True)
    faucet = PrivateKey.generate()
    wallets = [PrivateKey.generate() for _ in range(p.wallets)]
    secrets.add_key(faucet, "soak faucet key")
    for w in wallets:
        secrets.add_key(w, "soak wallet key")
    relay = RelayProcess(
        workdir / "relay.sqlite",
        port=free_port(),
        faucet_account=faucet.address,
        log_path=workdir / "relay.log",
        durability=p.durability,
    )
    await relay.start()
    sup = _Supervisor(relay)
    sup.up.set()
    out = Outcomes()
    clients: list[RelayClient] = []
    funding: dict[str, int] = {}
    live_balances: dict[str, int] = {}
    try:
        bank = await _client(relay.url, relay.broker_address, faucet, clearnode=True)
        clients.append(bank)
        for i, w in enumerate(wallets):  # unique funding amounts too, far above the soak's
            units = p.funding_units + i
            await bank.transfer(w.address, [(ASSET, to_decimal_string(units, DECIMALS))])
            funding[w.address] = units
        wallet_clients = [
            await _client(relay.url, relay.broker_address, w, clearnode=False) for w in wallets
        ]
        clients += wallet_clients
        stop = asyncio.Event()
        counter = [0]
        workers = [
            asyncio.create_task(
                _worker(
                    c,
                    w,
                    [o for o in wallets if o is not w],
                    counter,
                    out,
                    sup,
                    stop,
                    random.Random(rng.random()),
                )
            )
            for c, w in zip(wallet_clients, wallets, strict=True)
            for _ in range(p.window)
        ]
        soak_start = time.perf_counter()
        while True:
            elapsed = time.perf_counter() - soak_start
            if elapsed >= p.duration and sup.kills >= p.min_kills:
                break
            if elapsed > 4 * p.duration + 120:
                result.fail(f"only {sup.kills} kills in {elapsed:.0f} s")
                break
            if all(t.done() for t in workers):
                result.fail("every transfer worker stopped early")
                break
            target = sup.acks + rng.randint(1, p.max_acks_between_kills)
            await sup.wait_acks(target, timeout=rng.uniform(0.2, p.max_gap))
            await sup.kill_and_restart()
        soak_seconds = time.perf_counter() - soak_start
        stop.set()
        done = await asyncio.gather(*workers, return_exceptions=True)
        for item in done:
            if isinstance(item, BaseException):
                result.fail(f"a transfer worker crashed: {type(item).__name__}: {item}")
        for c, w in zip(wallet_clients, wallets, strict=True):
            rows = await c.get_ledger_balances()
            live_balances[w.address] = sum(
                parse_decimal_amount(r["amount"], DECIMALS) for r in rows if r["asset"] == ASSET
            )
    finally:
        for c in clients:
            with contextlib.suppress(SettlementError, OSError):
                await c.close()
        exit_code = await relay.stop()
    result.expect(exit_code == 0, f"the relay did not stop cleanly after the soak: {exit_code}")

    ledger_rows, balances, seen = _read_ledger(relay.db)
    figures, violations = verify(
        out,
        Ledger(ledger_rows, balances, seen),
        funding=funding,
        live_balances=live_balances,
        seed_units=DEFAULT_FAUCET_SEED_UNITS,
        now_ms=int(time.time() * 1000),
    )
    result.violations += violations
    result.expect(sup.kills >= p.min_kills, f"{sup.kills} kills, wanted >= {p.min_kills}")
    acked_total = len(out.acked)
    result.metrics = {
        "relay_kills": sup.kills,
        "soak_seconds": round(soak_seconds, 1),
        "wallets": p.wallets,
        "in_flight": p.wallets * p.window,
        "transfers_attempted": len(out.attempted),
        "acknowledged": acked_total,
        **figures,
        "in_doubt": out.in_doubt,
        "in_doubt_applied_before_kill": len(out.replay_confirmed),
        "in_doubt_applied_on_retry": out.retried_then_acked,
        "unresolved": len(out.unresolved),
        "refused": len(out.refused),
        "acks_per_s": round(acked_total / soak_seconds, 1) if soak_seconds else None,
        "ack_p50_ms": ms(percentile(out.latencies, 50)),
        "ack_p99_ms": ms(percentile(out.latencies, 99)),
        "restart_p50_ms": ms(percentile(sup.restart_seconds, 50)),
        "restart_max_ms": ms(max(sup.restart_seconds, default=None)),
        "durability": p.durability,
    }
    result.seconds = time.perf_counter() - began
    return result
