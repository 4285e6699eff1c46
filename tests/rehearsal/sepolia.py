"""The Sepolia rehearsal: every notebook, ``SETTLEMENT_NETWORK=sepolia``, against the twin.

A notebook's Sepolia branch cannot run against Sepolia from here, so it runs against
:class:`~settlement_widgets.sandbox.twin.SepoliaTwin` (chain id 11155111, our contracts at
Sepolia's addresses, relay and faucet on loopback) with the environment a real user sets:
``SEPOLIA_RPC_URL``, ``SETTLEMENT_PRIVATE_KEY``, ``SETTLEMENT_RELAY_URL``,
``SETTLEMENT_FAUCET_URL``. LI.FI's API is the loopback server answering from the synthetic
fixtures (its schema, not live rates). Each notebook runs top to bottom in a fresh kernel:
its own asserts must hold (outputs are not compared with the committed ones), and
:func:`sepolia_problems` fails a run that printed ``skipped`` (a step the Sepolia branch
promises did not run) or lacks what its Sepolia branch must show (:data:`REQUIRED`).

- ``make sepolia-rehearsal`` (``python -m tests.rehearsal.sepolia``): every notebook, each
  twice in a row on one twin and one ``SETTLEMENT_HOME``, as a user running them again the
  next day would (the second notebook 04 reuses the own v4 deployment the first recorded).
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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat
from nbclient import NotebookClient

from settlement_widgets.sandbox.twin import SepoliaTwin
from tests.lifi_synthetic import LifiTestServer

__all__ = [
    "NOTEBOOKS",
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
#: where the Sepolia branch differs from the sandbox's: the dispute waits for real blocks
#: past the challenge period, and v4 settles through the user's own deployment
SHORT = ("03_channel_lifecycle", "04_v4_contracts")
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
    # v1 has no Sepolia twin: SETTLEMENT_NETWORK=sepolia names the v0.5 profile, so the
    # notebook runs on a private local v1 sandbox (sepolia-v1 is Yellow's public v1 sandbox)
    "06_nitrolite_v1": ("SETTLEMENT_NETWORK=sepolia: nitrolite-v1 runs locally",),
    "dashboard": ("network='sepolia'",),
}
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
    """Execute notebook ``name`` top to bottom in a fresh kernel started with ``env``; a
    failing cell raises (nbclient's ``CellExecutionError``)."""
    path = NOTEBOOK_DIR / f"{name}.ipynb"
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
    )
    await client.async_execute(env=env)
    return nb


async def rehearse(
    names: Iterable[str] = NOTEBOOKS,
    *,
    runs: int = 1,
    home: Path | None = None,
    report: Any = None,
) -> list[NotebookRun]:
    """Start a twin and the LI.FI test server, then run each notebook ``runs`` times in a
    row with the Sepolia environment; ``report(run)`` is called after each."""
    names = list(names)
    unknown = sorted(set(names) - set(NOTEBOOKS))
    if unknown:
        raise ValueError(f"no such notebook(s): {', '.join(unknown)}")
    results: list[NotebookRun] = []
    with tempfile.TemporaryDirectory(prefix="sepolia-rehearsal-") as tmp, LifiTestServer() as lifi:
        async with SepoliaTwin() as twin:
            env = dict(os.environ) | twin.env()
            env |= {"LIFI_API_URL": lifi.url, "SETTLEMENT_HOME": str(home or Path(tmp))}
            for var in ("SETTLEMENT_PROFILE", "SETTLEMENT_AGGREGATOR", "SETTLEMENT_LIFI_SEND"):
                env.pop(var, None)
            for var in [v for v in env if v.startswith("SETTLEMENT_SHARED_")]:
                env.pop(var)
            for name in names:
                for run in range(1, runs + 1):
                    started = time.perf_counter()
                    nb = await run_notebook(name, env)
                    result = NotebookRun(
                        name, run, time.perf_counter() - started, tuple(sepolia_problems(name, nb))
                    )
                    results.append(result)
                    if report is not None:
                        report(result)
    return results


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run the notebooks against the Sepolia twin.")
    parser.add_argument("notebooks", nargs="*", default=list(NOTEBOOKS))
    parser.add_argument("--runs", type=int, default=2, help="runs of each notebook (default 2)")
    args = parser.parse_args(argv)

    def report(run: NotebookRun) -> None:
        verdict = "ok" if not run.problems else "NOT A REHEARSAL"
        print(f"{run.name:<24} run {run.run}  {run.seconds:6.1f} s  {verdict}", flush=True)
        for problem in run.problems:
            print(f"    {problem}", flush=True)

    print(f"Sepolia rehearsal: {len(args.notebooks)} notebooks x {args.runs} runs", flush=True)
    results = asyncio.run(rehearse(args.notebooks, runs=args.runs, report=report))
    failed = [r for r in results if r.problems]
    total = sum(r.seconds for r in results)
    print(f"{len(results) - len(failed)}/{len(results)} runs passed in {total:.1f} s", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
