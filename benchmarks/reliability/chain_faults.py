"""Chain faults: the JSON-RPC node (anvil) unreachable for a while, or restarted, in the
middle of channel operations.

anvil runs behind a loopback TCP proxy (:class:`~.processes.TcpProxy`); the whole sandbox
(deployment, relay watcher, providers) talks to the chain through it. "Unreachable" closes
the proxy's listening socket and resets its connections: connections are refused, as for a
node that went away. "Restarted" stops anvil (its state is dumped) and starts it again from
that state behind the same proxy port.

Each scenario checks what the issue asks: the operation either goes through or fails with
:class:`~settlement_widgets.errors.ChainUnavailableError` (within a bound, never a hang);
the store never records a transaction that did not happen (nothing *confirmed* without a
successful receipt, nothing *dropped* that was mined, pending work stays pending); and once
the chain is back, ``recover()`` finishes the operation with every transaction sent exactly
once (the wallet's nonce equals the number of transactions the store records as mined).
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from .client_crash import WALLET_TOKENS, check_end_state, finish
from .common import CheckResult, secrets
from .processes import AnvilProcess, TcpProxy

__all__ = ["SCENARIOS", "run_chain_faults"]

U = 10**6
#: bound on how long an operation may take to fail while the chain is away
FAIL_WITHIN_S = 120.0


class _Faults:
    """The fault injector: proxy and anvil, and what was done to them."""

    def __init__(self, anvil: AnvilProcess, proxy: TcpProxy) -> None:
        self.anvil = anvil
        self.proxy = proxy
        self.outages = 0
        self.restarts = 0
        #: the store watched in this scenario, and its confirmed txs when the chain went away
        self.store: Path | None = None
        self.confirmed_at_outage: set[str] = set()

    def _snapshot(self) -> None:
        if self.store is not None and self.store.exists():
            rows = _store_rows(self.store)
            self.confirmed_at_outage = {h for h, _, s in rows if s == "confirmed"}

    async def down(self) -> None:
        self._snapshot()
        self.outages += 1
        await self.proxy.down()

    async def up(self) -> None:
        await self.proxy.up()

    async def restart(self, settle: str | None = None) -> None:
        """Cut the node off, restart it from its dumped state, reconnect the proxy.

        ``settle``: a transaction hash anvil accepted just before; the node is stopped only
        once that transaction's block is sealed. anvil answers ``eth_sendRawTransaction``
        before its miner task has stored the block, and a SIGTERM in between dumped the
        block's post-state without the block (the channel closed on chain, no ``Closed``
        log, no receipt): a chain no real node presents, which made this scenario fail
        about one run in ten with a provider that could never find the event.
        """
        self._snapshot()
        await self.proxy.down()
        if settle is not None:
            await asyncio.to_thread(self.anvil.wait_for_receipt, settle)
        port = await asyncio.to_thread(self.anvil.restart)
        self.proxy.retarget(port)
        self.restarts += 1
        await self.proxy.up()


def _store_rows(path: Path) -> list[tuple[str, str, str]]:
    with contextlib.closing(sqlite3.connect(path)) as conn:
        return conn.execute("SELECT tx_hash, step, status FROM txs").fetchall()


async def _hook_wallet(sb: Any, rpc_url: str) -> Any:
    """A funded wallet whose ``send`` runs ``hooks[step]`` right after broadcasting the
    transaction of that step (the provider tells it the step through its events)."""
    from settlement_widgets.contracts import load_artifact
    from settlement_widgets.keys import PrivateKey
    from settlement_widgets.wallet import WalletClient

    class HookWallet(WalletClient):
        hooks: dict[str, Callable[[], Awaitable[None]]]
        before: dict[str, Callable[[], Awaitable[None]]]
        step: str | None = None

        last_sent: str | None = None

        async def send(self, call: Any = None, **kwargs: Any) -> str:
            step = self.step
            first = self.before.pop(step, None) if step else None
            if first is not None:
                await first()
            tx_hash = await super().send(call, **kwargs)
            self.last_sent = tx_hash
            hook = self.hooks.pop(step, None) if step else None
            if hook is not None:
                await hook()
            return tx_hash

    key = PrivateKey.generate()
    secrets.add_key(key, "chain-fault wallet key")
    wallet = HookWallet(key, rpc_url=rpc_url)
    wallet.hooks = {}
    wallet.before = {}
    deployer = sb.chain.wallet(0)
    await deployer.transact(to=wallet.address, value=10**18)
    abi = load_artifact("TestToken").abi
    token = deployer.w3.eth.contract(address=sb.token, abi=abi)
    await deployer.transact(token.functions.mint(wallet.address, WALLET_TOKENS), abis=[abi])
    return wallet


def _provider(sb: Any, wallet: Any, store: Path) -> Any:
    from dataclasses import replace

    from settlement_widgets.channel import ChannelProvider
    from settlement_widgets.providers import create_local_channel_config

    config = replace(create_local_channel_config(sb), store_path=store)
    provider = ChannelProvider(config, wallet, watch_interval=None)

    def track(event: Any) -> None:
        if event.phase == "start":
            wallet.step = event.step

    provider.on("step", track)
    return provider


async def _attempt(action: Awaitable[Any]) -> tuple[str, str, float]:
    """Run ``action``; ("ok" | error class name, message, seconds). A hang is an error."""
    started = time.perf_counter()
    try:
        await asyncio.wait_for(action, FAIL_WITHIN_S)
    except TimeoutError:
        return "hang", f"no answer within {FAIL_WITHIN_S:g} s", time.perf_counter() - started
    except Exception as exc:
        return type(exc).__name__, str(exc), time.perf_counter() - started
    return "ok", "", time.perf_counter() - started


def _check_outcome(outcome: tuple[str, str, float], problems: list[str]) -> None:
    kind, message, _ = outcome
    if kind not in ("ok", "ChainUnavailableError"):
        problems.append(f"the operation ended with {kind}: {message}")
    elif kind == "ChainUnavailableError" and not (
        "cannot reach the chain" in message or "lost the chain" in message
    ):
        problems.append(f"unclear ChainUnavailableError message: {message}")


def _check_no_phantoms(faults: _Faults, store: Path, problems: list[str]) -> None:
    """While the chain was away nothing may have become *confirmed* (no receipt can have
    been read); what was sent stays *pending*."""
    for tx_hash, step, status in _store_rows(store):
        if tx_hash not in faults.confirmed_at_outage and status == "confirmed":
            problems.append(f"{step} tx {tx_hash} recorded confirmed while the chain was away")


async def _scenario_unreachable_before(
    sb: Any, faults: _Faults, rpc_url: str, store: Path
) -> tuple[dict[str, Any], list[str], Any]:
    """The node is away when create_channel is called: a clear error and nothing changed;
    the user tries again once it is back."""
    problems: list[str] = []
    wallet = await _hook_wallet(sb, rpc_url)
    provider = _provider(sb, wallet, store)
    await provider.connect()
    await faults.down()
    outcome = await _attempt(provider.create_channel(sb.broker_address, sb.token, 3 * U))
    _check_outcome(outcome, problems)
    if outcome[0] == "ok":
        problems.append("create_channel succeeded with the chain unreachable")
    work = provider.pending_work()
    if provider.channels() or _store_rows(store) or any(work.values()):
        problems.append(f"a refused create_channel left something behind: {work}")
    await faults.up()
    await provider.create_channel(sb.broker_address, sb.token, 3 * U)  # the user's retry
    return {"error": outcome[0], "seconds_to_error": round(outcome[2], 2)}, problems, provider


async def _scenario_unreachable_at_send(
    sb: Any, faults: _Faults, rpc_url: str, store: Path
) -> tuple[dict[str, Any], list[str], Any]:
    """The node goes away just as ``Custody.create`` is about to be sent (the relay already
    countersigned INITIALIZE): the operation is interrupted, pending, and resumable."""
    problems: list[str] = []
    wallet = await _hook_wallet(sb, rpc_url)
    provider = _provider(sb, wallet, store)
    await provider.connect()
    wallet.before["submit_create"] = faults.down
    outcome = await _attempt(provider.create_channel(sb.broker_address, sb.token, 3 * U))
    _check_outcome(outcome, problems)
    _check_no_phantoms(faults, store, problems)
    ops = provider.pending_work()["operations"]
    if outcome[0] != "ok" and [(o["status"], o["next_step"]) for o in ops] != [
        ("interrupted", "submit_create")
    ]:
        problems.append(f"the interrupted create is not pending at submit_create: {ops}")
    await faults.up()
    return {"error": outcome[0], "seconds_to_error": round(outcome[2], 2)}, problems, provider


async def _scenario_lost_after_send(
    sb: Any, faults: _Faults, rpc_url: str, store: Path
) -> tuple[dict[str, Any], list[str], Any]:
    """The node goes away right after the deposit transaction was broadcast: the receipt
    cannot be read, the transaction must stay pending (it did happen) and be followed to its
    receipt, not sent again, once the node is back."""
    problems: list[str] = []
    wallet = await _hook_wallet(sb, rpc_url)
    provider = _provider(sb, wallet, store)
    await provider.connect()
    wallet.hooks["deposit"] = faults.down
    outcome = await _attempt(provider.create_channel(sb.broker_address, sb.token, 3 * U))
    _check_outcome(outcome, problems)
    rows = _store_rows(store)
    _check_no_phantoms(faults, store, problems)
    pending = [h for h, step, status in rows if step == "deposit" and status == "pending"]
    if outcome[0] != "ok" and len(pending) != 1:
        problems.append(f"the broadcast deposit is not pending in the store: {rows}")
    await faults.up()
    return {"error": outcome[0], "seconds_to_error": round(outcome[2], 2)}, problems, provider


async def _scenario_restart_mid_close(
    sb: Any, faults: _Faults, rpc_url: str, store: Path
) -> tuple[dict[str, Any], list[str], Any]:
    """anvil is restarted (from its saved state) right after ``Custody.close`` was sent."""
    problems: list[str] = []
    wallet = await _hook_wallet(sb, rpc_url)
    provider = _provider(sb, wallet, store)
    await provider.connect()
    channel = await provider.create_channel(sb.broker_address, sb.token, 3 * U)
    wallet.hooks["submit_close"] = lambda: faults.restart(settle=wallet.last_sent)
    outcome = await _attempt(provider.close_channel(channel.id))
    _check_outcome(outcome, problems)
    if outcome[0] != "ok":
        _check_no_phantoms(faults, store, problems)
    return {"error": outcome[0], "seconds_to_error": round(outcome[2], 2)}, problems, provider


async def _scenario_restart_between(
    sb: Any, faults: _Faults, rpc_url: str, store: Path
) -> tuple[dict[str, Any], list[str], Any]:
    """anvil restarted between two operations: the provider (same objects, same HTTP
    session) keeps working against the restarted node."""
    problems: list[str] = []
    wallet = await _hook_wallet(sb, rpc_url)
    provider = _provider(sb, wallet, store)
    await provider.connect()
    channel = await provider.create_channel(sb.broker_address, sb.token, 3 * U)
    await faults.restart()
    outcome = await _attempt(provider.close_channel(channel.id))
    _check_outcome(outcome, problems)
    return {"error": outcome[0], "seconds_to_error": round(outcome[2], 2)}, problems, provider


SCENARIOS: dict[str, Callable[..., Awaitable[tuple[dict[str, Any], list[str], Any]]]] = {
    "unreachable before create": _scenario_unreachable_before,
    "unreachable as create tx is sent": _scenario_unreachable_at_send,
    "unreachable right after deposit sent": _scenario_lost_after_send,
    "anvil restarted right after close sent": _scenario_restart_mid_close,
    "anvil restarted between operations": _scenario_restart_between,
}


async def run_chain_faults(workdir: Path, scenarios: tuple[str, ...] | None = None) -> CheckResult:
    """Run ``scenarios`` (default: all) against one sandbox behind a proxy."""
    from settlement_widgets.sandbox import LocalSandbox

    result = CheckResult("chain faults")
    began = time.perf_counter()
    workdir.mkdir(parents=True, exist_ok=True)
    anvil = AnvilProcess(workdir)
    await asyncio.to_thread(anvil.start)
    proxy = await TcpProxy(anvil.port).start()
    faults = _Faults(anvil, proxy)
    rows: list[dict[str, Any]] = []
    try:
        async with LocalSandbox(
            chain=proxy.url, v4=False, wallets=1, data_dir=workdir / "sandbox"
        ) as sb:
            for name in scenarios or tuple(SCENARIOS):
                slug = "".join(c if c.isalnum() else "-" for c in name)
                store = workdir / f"{slug}.sqlite"
                started = time.perf_counter()
                faults.store, faults.confirmed_at_outage = store, set()
                figures, problems, provider = await SCENARIOS[name](sb, faults, proxy.url, store)
                remedies: list[str] = []
                try:
                    await finish(sb, provider, remedies)
                    await check_end_state(sb, provider.wallet, provider, problems)
                except Exception as exc:
                    problems.append(f"no end state after the chain came back: {exc!r}")
                finally:
                    await provider.close()
                    with contextlib.suppress(Exception):
                        await provider.wallet.w3.provider.disconnect()
                if remedies:
                    problems.append(f"needed remedies after the chain came back: {remedies}")
                rows.append(
                    {
                        "scenario": name,
                        **figures,
                        "completed_after_return": not problems,
                        "problems": problems,
                        "seconds": round(time.perf_counter() - started, 2),
                    }
                )
                for problem in problems:
                    result.fail(f"{name}: {problem}")
    finally:
        await proxy.aclose()
        await asyncio.to_thread(anvil.stop)
    result.metrics = {
        "chain_fault_scenarios": len(rows),
        "chain_fault_scenarios_ok": sum(1 for r in rows if not r["problems"]),
        "chain_outages": faults.outages,
        "anvil_restarts": faults.restarts,
        "phantom_txs": sum(1 for r in rows for p in r["problems"] if "while the chain" in p),
        "scenarios": rows,
    }
    result.seconds = time.perf_counter() - began
    return result
