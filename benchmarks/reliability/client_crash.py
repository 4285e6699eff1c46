"""Client crash at every lifecycle step: a provider in a child process is SIGKILLed at one
point of ``create_channel`` or ``close_channel``; a new provider over the same store must
reach a consistent end state.

The end state is checked against the chain and the relay, not against the store alone:

- the recovered provider's store has no unfinished operation, pending transaction or
  unsubmitted state left;
- every channel the store knows is closed on chain (custody status VOID) and ``final`` in
  the store, and every test token came back to the wallet (nothing stuck in the custody,
  the channel or the relay's off-chain balance);
- every transaction the store calls confirmed has a successful receipt, and the wallet's
  on-chain nonce equals the number of transactions the store recorded as mined: nothing was
  sent twice, nothing was sent without being recorded.

The new provider gets there with the public API only: ``recover()`` and ``close_channel()``
(what any user does), plus, where those cannot finish, a *remedy* a user could apply
(closing without settling, ``withdraw()``, a fresh channel to carry an off-chain balance out).
A point *survived* when the end state above is reached and no unit was lost; it is
*without remedy* when recover() and close_channel() alone got there. Figures: survived /
tried, and without remedy / tried.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sqlite3
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from .common import REPO, CheckResult, secrets
from .processes import child_env

__all__ = [
    "CORE_POINTS",
    "CRASH_POINTS",
    "INITIAL_AMOUNT",
    "PointOutcome",
    "run_client_crash",
]

U: Final = 10**6
INITIAL_AMOUNT: Final = 3 * U
WALLET_TOKENS: Final = 10 * U

#: point -> (operation, kind, target). kind: "rpc" (die when the relay's answer to method
#: ``target`` is in, before anything of it is checked, signed or stored), "step" (die when
#: step ``target`` starts: everything before it is persisted), "signed" (die after the
#: transaction of step ``target`` is signed and recorded, before it is broadcast), "sent"
#: (die after it was broadcast, before its receipt is read).
CRASH_POINTS: Final[dict[str, tuple[str, str, str]]] = {
    "after create RPC": ("create", "rpc", "create_channel"),
    "after INITIALIZE signed": ("create", "step", "submit_create"),
    "after create tx signed": ("create", "signed", "submit_create"),
    "after create tx sent": ("create", "sent", "submit_create"),
    "after approve tx sent": ("create", "sent", "approve"),
    "after deposit tx sent": ("create", "sent", "deposit"),
    "after deposit resize RPC": ("create", "rpc", "resize_channel"),
    "after deposit RESIZE signed": ("create", "step", "submit_resize"),
    "after resize tx sent": ("create", "sent", "submit_resize"),
    "after settle resize RPC": ("close", "rpc", "resize_channel"),
    "after settle RESIZE signed": ("close", "step", "submit_resize"),
    "after close RPC": ("close", "rpc", "close_channel"),
    "after FINALIZE signed": ("close", "step", "submit_close"),
    "after close tx sent": ("close", "sent", "submit_close"),
    "after withdraw tx signed": ("close", "signed", "withdraw"),
    "after withdraw tx sent": ("close", "sent", "withdraw"),
}
#: the five the issue names (the tests run these; the full run runs all)
CORE_POINTS: Final = (
    "after create RPC",
    "after INITIALIZE signed",
    "after create tx sent",
    "after close RPC",
    "after FINALIZE signed",
)


@dataclass
class PointOutcome:
    point: str
    reached: bool
    survived: bool
    automatic: bool
    remedies: list[str]
    problems: list[str]
    seconds: float

    def to_json(self) -> dict[str, Any]:
        return {
            "point": self.point,
            "reached": self.reached,
            "survived": self.survived,
            "automatic": self.automatic,
            "remedies": self.remedies,
            "problems": self.problems,
            "seconds": round(self.seconds, 2),
        }


async def _fresh_wallet(sb: Any) -> Any:
    from settlement_widgets.contracts import load_artifact
    from settlement_widgets.keys import PrivateKey

    key = PrivateKey.generate()
    secrets.add_key(key, "crash-test wallet key")
    wallet = sb.chain.wallet_for(key)
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
    return ChannelProvider(config, wallet, watch_interval=None)


async def _run_child(
    profile: Path, store: Path, point: str, secret: str, channel_id: str | None, log: Path
) -> tuple[int | None, list[str]]:
    args = [
        sys.executable,
        "-m",
        "benchmarks.reliability.crash_child",
        str(profile),
        str(store),
        point,
    ]
    if channel_id:
        args.append(channel_id)
    child = await asyncio.create_subprocess_exec(
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=child_env(),
        cwd=str(REPO),
    )
    out, err = await asyncio.wait_for(child.communicate(secret.encode() + b"\n"), 180)
    with log.open("ab") as fh:
        fh.write(f"--- {point}\n".encode() + out + err)
    return child.returncode, out.decode(errors="replace").splitlines()


async def check_end_state(sb: Any, wallet: Any, provider: Any, problems: list[str]) -> None:
    """Append to ``problems`` everything that is not a clean, fully closed end state."""
    from settlement_widgets.channel.v0_5.core.types import ChannelStatus

    await sb.relay.sync_chain()  # no race with the relay's custody-event polling

    work = provider.pending_work()
    for key in ("operations", "unsubmitted_states", "pending_txs", "pending_transfers"):
        if work[key]:
            problems.append(f"left in the store: {key} {work[key]}")
    custody = sb.custody(sb.chain.wallet(0))
    for channel in provider.channels():
        if channel.status != "final":
            problems.append(f"channel {channel.id} is {channel.status} in the store")
        status = await custody.channel_status(channel.id)
        if status != ChannelStatus.VOID:
            problems.append(f"channel {channel.id} is {status.name} on chain")
    held = await custody.token_balance(sb.token, wallet.address)
    if held != WALLET_TOKENS:
        problems.append(f"the wallet holds {held} token units, not {WALLET_TOKENS}")
    in_custody = await provider.custody.balance(sb.token)
    if in_custody:
        problems.append(f"{in_custody} units left in the custody ledger")
    off_chain = (await provider.balances()).get(provider.asset, 0)
    if off_chain:
        problems.append(f"{off_chain} units left in the relay's off-chain balance")
    w3 = wallet.w3
    with contextlib.closing(sqlite3.connect(provider.store.path)) as conn:
        rows = conn.execute("SELECT tx_hash, status FROM txs").fetchall()
    mined = 0
    for tx_hash, status in rows:
        receipt = None
        with contextlib.suppress(Exception):
            receipt = await w3.eth.get_transaction_receipt(tx_hash)
        if status in ("confirmed", "reverted"):
            mined += 1
            if receipt is None:
                problems.append(f"{tx_hash} is {status} in the store but has no receipt")
            elif (int(receipt["status"]) == 1) != (status == "confirmed"):
                problems.append(f"{tx_hash} is {status} in the store, status {receipt['status']}")
        elif status == "dropped" and receipt is not None:
            problems.append(f"{tx_hash} is dropped in the store but was mined")
    nonce = int(await w3.eth.get_transaction_count(wallet.address))
    if nonce != mined:
        problems.append(f"the wallet sent {nonce} transactions, the store records {mined} mined")


async def _one_point(sb: Any, workdir: Path, profile: Path, point: str) -> PointOutcome:
    started = time.perf_counter()
    phase = CRASH_POINTS[point][0]
    slug = "".join(c if c.isalnum() else "-" for c in point)
    store = workdir / f"{slug}.sqlite"
    problems: list[str] = []
    wallet = await _fresh_wallet(sb)
    channel_id = None
    if phase == "close":
        async with _provider(sb, wallet, store) as p:
            channel = await p.create_channel(sb.broker_address, sb.token, INITIAL_AMOUNT)
            channel_id = channel.id
    code, lines = await _run_child(
        profile, store, point, wallet.key.secret_hex(), channel_id, workdir / "children.log"
    )
    reached = code == -signal.SIGKILL and bool(lines) and lines[-1] == f"CRASH {point}"
    if not reached:
        problems.append(f"the child did not die at the point (exit {code}): {lines[-3:]}")
    remedies: list[str] = []
    try:
        async with _provider(sb, wallet, store) as fresh:
            await finish(sb, fresh, remedies)
            if not fresh.channels():
                problems.append("no channel was recovered or created")
            await check_end_state(sb, wallet, fresh, problems)
    except Exception as exc:
        problems.append(f"could not reach an end state: {type(exc).__name__}: {exc}")
    return PointOutcome(
        point,
        reached,
        reached and not problems,
        not remedies,
        remedies,
        problems,
        time.perf_counter() - started,
    )


async def finish(sb: Any, provider: Any, remedies: list[str]) -> None:
    """Bring a recovered provider to the end state with the public API only: ``recover()``
    and ``close_channel()`` are what any user does; anything beyond them is a *remedy*
    (recorded in ``remedies``): closing without settling, withdrawing the custody balance,
    or a fresh channel to carry the off-chain balance out."""
    from settlement_widgets.errors import SettlementError

    try:
        await provider.recover()
    except SettlementError as exc:
        remedies.append(f"recover() could not finish: {exc}")
    for op in provider.store.operations():
        if op.status == "failed":  # automatic recovery on connect gave up on it
            remedies.append(f"operation {op.id} ({op.kind}) failed: {op.error}")
    for channel in provider.channels():
        if channel.status == "final":
            continue
        try:
            await provider.close_channel(channel.id)
        except SettlementError as exc:
            remedies.append(f"close_channel failed ({exc}); closed with settle=False")
            await provider.close_channel(channel.id, settle=False)
    if await provider.custody.balance(sb.token):
        remedies.append("withdrew what stayed in the custody ledger")
        await provider.withdraw()
    if (await provider.balances()).get(provider.asset, 0):
        remedies.append("opened and closed a new channel to carry the off-chain balance out")
        channel = await provider.create_channel(sb.broker_address, sb.token, 0)
        await provider.close_channel(channel.id)


async def run_client_crash(workdir: Path, points: tuple[str, ...] | None = None) -> CheckResult:
    """Kill a provider at each of ``points`` (default: all) and recover it."""
    from settlement_widgets.sandbox import LocalSandbox
    from settlement_widgets.sandbox.local import sandbox_key

    result = CheckResult("client crash at every step")
    began = time.perf_counter()
    chosen = points or tuple(CRASH_POINTS)
    workdir.mkdir(parents=True, exist_ok=True)
    outcomes: list[PointOutcome] = []
    async with LocalSandbox(chain="anvil", v4=False, wallets=1, data_dir=workdir / "sandbox") as sb:
        secrets.add_key(sandbox_key("broker"), "sandbox broker key")
        secrets.add_key(sandbox_key("faucet"), "sandbox faucet key")
        profile = workdir / "profile.json"
        profile.write_text(json.dumps(sb.network.to_json()))
        for point in chosen:
            outcome = await _one_point(sb, workdir, profile, point)
            outcomes.append(outcome)
            for problem in outcome.problems:
                result.fail(f"{point}: {problem}")
    survived = sum(o.survived for o in outcomes)
    result.metrics = {
        "client_steps_tried": len(outcomes),
        "client_steps_survived": survived,
        "client_steps_without_remedy": sum(o.survived and o.automatic for o in outcomes),
        "points": [o.to_json() for o in outcomes],
    }
    result.seconds = time.perf_counter() - began
    return result
