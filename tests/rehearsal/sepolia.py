"""The Sepolia rehearsal: every notebook on its Sepolia profile, against the twins.

A notebook's Sepolia branch cannot run against Sepolia from here, so it runs against a twin
with the environment a real user sets: ``SEPOLIA_RPC_URL``, ``SETTLEMENT_PRIVATE_KEY``,
``SETTLEMENT_RELAY_URL``, ``SETTLEMENT_FAUCET_URL``.

- Nitrolite v0.5 and v4 (``SETTLEMENT_NETWORK=sepolia``):
  :class:`~settlement_widgets.sandbox.twin.SepoliaTwin` (chain id 11155111, our contracts at
  Sepolia's addresses, relay and faucet on loopback): every notebook but notebook 06.
- Nitrolite v1 (``SETTLEMENT_NETWORK=sepolia-v1``):
  :class:`~settlement_widgets.sandbox.twin_v1.SepoliaV1Twin` (our ChannelHub at the public v1
  sandbox's address, our Nitronode and the v1 faucet on loopback): notebook 06 and the
  dashboard's v1 path (:data:`DASHBOARD_V1`: the dashboard notebook, then its channel buttons
  clicked as a Voila user clicks them).

LI.FI's API is the loopback server answering from the synthetic fixtures (its schema, not
live rates). Each notebook runs top to bottom in a fresh kernel: its own asserts must hold
(outputs are not compared with the committed ones), and :func:`sepolia_problems` fails a run
that printed ``skipped`` (a step the Sepolia branch promises did not run) or lacks what its
Sepolia branch must show (:data:`REQUIRED`).

- ``make sepolia-rehearsal`` (``python -m tests.rehearsal.sepolia``): every rehearsal, each
  twice in a row on one twin and one ``SETTLEMENT_HOME``, as a user running them again the
  next day would (the second notebook 04 reuses the own v4 deployment the first recorded;
  the second notebook 06 opens new channels where the first closed its own, with the SDK's
  nonces, and nothing is reset between the two).
- the short form in ``make test`` (``tests/rehearsal/test_sepolia_rehearsal.py``): the
  notebooks whose Sepolia branch differs from the sandbox's (:data:`SHORT`), once.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from settlement_widgets.sandbox.twin import SepoliaTwin, TwinBase
from settlement_widgets.sandbox.twin_v1 import SepoliaV1Twin
from tests.lifi_synthetic import LifiTestServer

__all__ = [
    "DASHBOARD_V1",
    "NOTEBOOKS",
    "ON_V1",
    "REHEARSALS",
    "REQUIRED",
    "SHORT",
    "NotebookRun",
    "notebook_text",
    "rehearse",
    "run_notebook",
    "sepolia_problems",
]

NOTEBOOK_DIR = Path(__file__).resolve().parents[2] / "notebooks"
#: every walkthrough notebook, in the order a reader meets them
NOTEBOOKS = tuple(sorted(p.stem for p in NOTEBOOK_DIR.glob("*.ipynb")))
#: the dashboard's Nitrolite v1 path: ``dashboard.ipynb`` with ``SETTLEMENT_NETWORK=sepolia-v1``,
#: then its channel buttons clicked (:data:`_DASHBOARD_CLICKS`)
DASHBOARD_V1 = "dashboard-v1"
#: every rehearsal: each notebook, and the dashboard's v1 path
REHEARSALS = (*NOTEBOOKS, DASHBOARD_V1)
#: what runs on the v1 twin (``SETTLEMENT_NETWORK=sepolia-v1``); the rest on the v0.5 twin
ON_V1 = ("06_nitrolite_v1", DASHBOARD_V1)
#: where the Sepolia branch differs from the sandbox's: the dispute waits for real blocks
#: past the challenge period (v0.5 and v1), v4 settles through the user's own deployment,
#: and v1 runs on the public profile, whose token the node names
SHORT = ("03_channel_lifecycle", "04_v4_contracts", "06_nitrolite_v1")
#: text each notebook's Sepolia run must show (its Sepolia-only steps ran)
REQUIRED: dict[str, tuple[str, ...]] = {
    "01_settlement_methods": ("network='sepolia'",),
    "02_faucet": ("sepolia",),
    "03_channel_lifecycle": (
        "network='sepolia'",
        "Waiting out the challenge period",
        "the challenge period is over on chain",
        "https://sepolia.etherscan.io/tx/0x",
    ),
    "04_v4_contracts": (
        "network='sepolia'",
        "(create2-factory): the mistake itself",
        "own v4 deployment of",
        "settleIntent: 0x",
        "https://sepolia.etherscan.io/tx/0x",
        "PolicyRejectedError: error PolicyRejected, reason SLIPPAGE_EXCEEDED",
    ),
    "05_aggregator_routes": ("NOT LIVE: a LI.FI-schema server on this machine",),
    "06_nitrolite_v1": (
        "network    sepolia-v1 (chain 11155111), protocol nitrolite-v1",
        "ChannelHub 0x5DBa8515af063Db0c243C15eCE7B99F91459C7C3",
        "Waiting out the challenge period",
        "the challenge period is over on chain",
        "https://sepolia.etherscan.io/tx/0x",
    ),
    "07_compare_methods": (
        "SETTLEMENT_NETWORK=sepolia: measured on a private local sandbox",
        "projected onto sepolia, gas price read from SEPOLIA_RPC_URL",
        "PROJECTION, not a measurement",
    ),
    "08_nitrolite_v1_two_chains": (
        "SETTLEMENT_NETWORK=sepolia: runs on a private local sandbox with two chains",
    ),
    "dashboard": ("network='sepolia'",),
    DASHBOARD_V1: (
        "network='sepolia-v1'",
        "faucet: [ok] faucet: +10 yusd off-chain",
        "open_channel: [ok] channel 0x01",
        "transfer: [ok] transfer",
        "close_channel: [ok] channel closed on chain",
        "https://sepolia.etherscan.io/tx/0x",
    ),
}
#: the cell appended to the dashboard notebook for :data:`DASHBOARD_V1`: each channel button
#: clicked in turn (the click schedules the action on the kernel's loop, as in Voila), what
#: it logged printed, and every line of it must be ``ok``
_DASHBOARD_CLICKS = """\
for action in ("faucet", "open_channel", "transfer", "close_channel"):
    before = len(dashboard.activity)
    dashboard.buttons[action].click()
    await dashboard.wait_idle(timeout=300)
    logged = dashboard.activity[before:]
    for line in logged:
        print(f"{action}: [{line.level}] {line.text} {line.href or ''}")
    assert logged and all(line.level == "ok" for line in logged), logged
assert dashboard.errors.messages == () and dashboard.channel.status == "final"
print(repr(dashboard))
await dashboard.aclose()
await session.aclose()
"""
_SKIPPED = re.compile(r"^\s*skipped\b", re.IGNORECASE | re.MULTILINE)


@dataclass(frozen=True)
class NotebookRun:
    """One executed notebook: its name, the run (1, 2, ...), seconds, and what was wrong."""

    name: str
    run: int
    seconds: float
    problems: tuple[str, ...]


def notebook_text(nb: Any) -> list[tuple[int, str]]:
    """(cell index, text) of every code cell's outputs: streams, text/plain, text/html."""
    found = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        parts = []
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream":
                parts.append(out.get("text", ""))
            data = out.get("data", {})
            parts.extend(str(data.get(kind, "")) for kind in ("text/plain", "text/html"))
        found.append((index, "\n".join(parts)))
    return found


def sepolia_problems(name: str, nb: Any) -> list[str]:
    """Why a Sepolia run of notebook ``name`` is not a rehearsal of its Sepolia branch."""
    texts = notebook_text(nb)
    problems = [
        f"cell {index} skipped a step on Sepolia: {match.group(0).strip()}"
        + text[match.end() :].splitlines()[0][:160]
        for index, text in texts
        if (match := _SKIPPED.search(text))
    ]
    everything = "\n".join(text for _, text in texts)
    problems += [
        f"the Sepolia run never showed {needed!r}"
        for needed in REQUIRED.get(name, ())
        if needed not in everything
    ]
    return problems


async def run_notebook(name: str, env: dict[str, str], *, timeout: int = 600) -> Any:
    """Execute rehearsal ``name`` top to bottom in a fresh kernel started with ``env``; a
    failing cell raises (nbclient's ``CellExecutionError``). :data:`DASHBOARD_V1` is the
    dashboard notebook with :data:`_DASHBOARD_CLICKS` appended (the file is not changed)."""
    stem = "dashboard" if name == DASHBOARD_V1 else name
    path = NOTEBOOK_DIR / f"{stem}.ipynb"
    nb = nbformat.read(path, as_version=4)
    if name == DASHBOARD_V1:
        nb.cells.append(nbformat.v4.new_code_cell(_DASHBOARD_CLICKS))
    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
    )
    await client.async_execute(env=env)
    return nb


async def rehearse(
    names: Iterable[str] = REHEARSALS,
    *,
    runs: int = 1,
    home: Path | None = None,
    report: Any = None,
) -> list[NotebookRun]:
    """Run each rehearsal ``runs`` times in a row on its twin with the Sepolia environment:
    those of :data:`ON_V1` on a :class:`SepoliaV1Twin`, the others on a :class:`SepoliaTwin`
    (each twin started only when a rehearsal needs it, one after the other), with one
    LI.FI test server and one ``SETTLEMENT_HOME``; ``report(run)`` is called after each.
    A run whose cell fails is reported with that error as its problem, and the next runs go
    on (on the same twin, as a user would try again)."""
    names = list(names)
    unknown = sorted(set(names) - set(REHEARSALS))
    if unknown:
        raise ValueError(f"no such notebook(s): {', '.join(unknown)}")
    groups: list[tuple[Callable[[], TwinBase], list[str]]] = [
        (SepoliaTwin, [n for n in names if n not in ON_V1]),
        (SepoliaV1Twin, [n for n in names if n in ON_V1]),
    ]
    results: list[NotebookRun] = []
    with tempfile.TemporaryDirectory(prefix="sepolia-rehearsal-") as tmp, LifiTestServer() as lifi:
        for twin_class, group in groups:
            if not group:
                continue
            async with twin_class() as twin:
                env = _user_env(twin, lifi.url, home or Path(tmp))
                for name in group:
                    for run in range(1, runs + 1):
                        started = time.perf_counter()
                        try:
                            nb = await run_notebook(name, env)
                            problems = tuple(sepolia_problems(name, nb))
                        except CellExecutionError as exc:  # the next rehearsals still run
                            problems = (f"a cell failed: {exc.ename}: {exc.evalue}"[:500],)
                        seconds = time.perf_counter() - started
                        result = NotebookRun(name, run, seconds, problems)
                        results.append(result)
                        if report is not None:
                            report(result)
    return results


def _user_env(twin: TwinBase, lifi_url: str, home: Path) -> dict[str, str]:
    """This process's environment as a user on the twin's public profile has it: the twin's
    variables, the LI.FI test server, ``home``; nothing that would point elsewhere (a local
    profile, the Jupyter server's shared sandbox, a protocol or wallet choice)."""
    env = dict(os.environ) | twin.env()
    env |= {"LIFI_API_URL": lifi_url, "SETTLEMENT_HOME": str(home)}
    dropped = ("SETTLEMENT_PROFILE", "SETTLEMENT_AGGREGATOR", "SETTLEMENT_LIFI_SEND")
    for var in (*dropped, "SETTLEMENT_PROTOCOL", "SETTLEMENT_WALLET"):
        env.pop(var, None)
    for var in [v for v in env if v.startswith("SETTLEMENT_SHARED_")]:
        env.pop(var)
    return env


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run the notebooks against the Sepolia twins.")
    parser.add_argument("notebooks", nargs="*", default=list(REHEARSALS))
    parser.add_argument("--runs", type=int, default=2, help="runs of each notebook (default 2)")
    args = parser.parse_args(argv)

    def report(run: NotebookRun) -> None:
        verdict = "ok" if not run.problems else "NOT A REHEARSAL"
        print(f"{run.name:<24} run {run.run}  {run.seconds:6.1f} s  {verdict}", flush=True)
        for problem in run.problems:
            print(f"    {problem}", flush=True)

    print(f"Sepolia rehearsal: {len(args.notebooks)} rehearsals x {args.runs} runs", flush=True)
    results = asyncio.run(rehearse(args.notebooks, runs=args.runs, report=report))
    failed = [r for r in results if r.problems]
    total = sum(r.seconds for r in results)
    print(f"{len(results) - len(failed)}/{len(results)} runs passed in {total:.1f} s", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
