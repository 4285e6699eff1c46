"""``python -m benchmarks.reliability [--quick] [--json PATH] [--only CHECK ...] [--keep]``.

Runs every check (the full parameters by default, shortened with ``--quick``), prints the
table and writes ``benchmarks/results/reliability.json``. Exit status 0 when every property
held, 1 otherwise. Everything runs on loopback in a temporary directory (``--keep`` keeps it:
databases, stores, logs) with its own ``SETTLEMENT_HOME``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from .client_crash import CORE_POINTS
from .common import REPO, CheckResult, capture_logs

__all__ = ["FULL", "QUICK", "Plan", "main", "run"]

CHECKS = (
    "fuzz_parsers",
    "soak",
    "client_crash",
    "chain_faults",
    "fuzz_relay",
    "fuzz_endpoint",
    "load",
    "security",
    "channel_model",
    "channel_v1_model",
)
DEFAULT_JSON = REPO / "benchmarks" / "results" / "reliability.json"


@dataclass(frozen=True)
class Plan:
    """The sizes of one run."""

    soak_seconds: float
    soak_kills: int
    crash_points: tuple[str, ...] | None  # None: all
    chain_scenarios: tuple[str, ...] | None
    parser_inputs: int
    relay_inputs: int
    endpoint_inputs_per_case: int
    load_seconds: float
    # the long runs: about half of the draws end up as counted steps (hypothesis ends many
    # sequences early, and a restart, clock move or refusal drawn as "not now" does nothing):
    # v0.5's 70 x 40 gave 1,403 steps, v1's 50 x 40 only 892, hence 60 x 45 for v1
    model_sequences: int = 70
    model_steps: int = 40
    v1_model_sequences: int = 60
    v1_model_steps: int = 45
    #: None: hypothesis's derandomized examples; the short run's seed covers every kind of
    #: operation and a refusal in a few sequences
    v1_model_seed: int | None = None
    session_expiry: int = 2


FULL = Plan(
    soak_seconds=30.0,
    soak_kills=10,
    crash_points=None,
    chain_scenarios=None,
    parser_inputs=6000,
    relay_inputs=5000,
    endpoint_inputs_per_case=150,
    load_seconds=10.0,
)
QUICK = Plan(
    soak_seconds=5.0,
    soak_kills=3,
    crash_points=CORE_POINTS,  # the five the issue names
    chain_scenarios=(
        "unreachable as create tx is sent",
        "unreachable right after deposit sent",
        "anvil restarted right after close sent",
    ),
    parser_inputs=600,
    relay_inputs=400,
    endpoint_inputs_per_case=15,
    load_seconds=3.0,
    model_sequences=4,
    model_steps=14,
    v1_model_sequences=3,
    v1_model_steps=20,
    # draws a migration, one refused and one over a crashed provider's pending escrow
    # deposit, a withdrawal to the second chain, transfers and refusals (the scripted test
    # in tests/reliability covers the round trip and a dispute on the new hub)
    v1_model_seed=14,
)


async def run(plan: Plan, workdir: Path, only: tuple[str, ...] = CHECKS) -> dict[str, CheckResult]:
    """Run the checks of ``only`` with ``plan``'s sizes; results by check key."""
    from .chain_faults import run_chain_faults
    from .channel_model import ModelParams, run_channel_model
    from .channel_v1_model import V1ModelParams, run_channel_v1_model
    from .client_crash import run_client_crash
    from .fuzz import fuzz_endpoint, fuzz_parsers, run_relay_fuzz
    from .load import LoadParams, run_load
    from .security import run_security
    from .soak import SoakParams, run_relay_soak
    from .stack import EndpointStack

    results: dict[str, CheckResult] = {}

    def note(key: str, result: CheckResult) -> None:
        results[key] = result
        state = "ok" if result.ok else f"{len(result.violations)} violation(s)"
        print(f"  {key}: {state} ({result.seconds:.0f} s)", file=sys.stderr, flush=True)

    with capture_logs() as logbuf:
        if "channel_model" in only:
            model = ModelParams(sequences=plan.model_sequences, steps=plan.model_steps)
            note(
                "channel_model",
                await asyncio.to_thread(run_channel_model, workdir / "model", model),
            )
        if "channel_v1_model" in only:
            v1_model = V1ModelParams(
                sequences=plan.v1_model_sequences,
                steps=plan.v1_model_steps,
                seed=plan.v1_model_seed,
            )
            note(
                "channel_v1_model",
                await asyncio.to_thread(run_channel_v1_model, workdir / "v1-model", v1_model),
            )
        if "fuzz_parsers" in only:
            note("fuzz_parsers", await asyncio.to_thread(fuzz_parsers, plan.parser_inputs))
        if "soak" in only:
            params = SoakParams(duration=plan.soak_seconds, min_kills=plan.soak_kills)
            note("soak", await run_relay_soak(workdir / "soak", params))
        if "client_crash" in only:
            note("client_crash", await run_client_crash(workdir / "crash", plan.crash_points))
        if "chain_faults" in only:
            note("chain_faults", await run_chain_faults(workdir / "chain", plan.chain_scenarios))
        if "fuzz_relay" in only:
            note("fuzz_relay", await run_relay_fuzz(workdir / "fuzz-relay", plan.relay_inputs))
        if {"fuzz_endpoint", "load", "security"} & set(only):
            with EndpointStack(workdir / "stack") as stack:
                api = stack.api
                assert api is not None
                if "fuzz_endpoint" in only:
                    note(
                        "fuzz_endpoint",
                        await asyncio.to_thread(
                            fuzz_endpoint,
                            api.base,
                            api.endpoint,
                            api.auth,
                            plan.endpoint_inputs_per_case,
                        ),
                    )
                if "load" in only:
                    load = LoadParams(duration=plan.load_seconds)
                    note("load", await run_load(api.endpoint, api.auth, stack.profile, load))
                if "security" in only:
                    note(
                        "security",
                        await run_security(
                            workdir / "security",
                            endpoint=api.endpoint,
                            token=api.token,
                            log_paths=sorted(workdir.rglob("*.log")),
                            captured_logs=logbuf,
                            expiry_seconds=plan.session_expiry,
                        ),
                    )
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.reliability")
    parser.add_argument("--quick", action="store_true", help="the shortened run")
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON, help="where to write JSON")
    parser.add_argument("--only", nargs="+", choices=CHECKS, help="run only these checks")
    parser.add_argument("--keep", action="store_true", help="keep the working directory")
    parser.add_argument(
        "--update",
        action="store_true",
        help="with --only: replace those checks in the existing JSON, keep the others",
    )
    args = parser.parse_args(argv)
    plan = QUICK if args.quick else FULL
    workdir = Path(tempfile.mkdtemp(prefix="settlement-reliability-"))
    home = workdir / "home"
    home.mkdir()
    os.environ["SETTLEMENT_HOME"] = str(home)  # stores and proof logs stay in the run's dir
    mode = "quick" if args.quick else "full"
    print(f"reliability suite ({mode}) in {workdir}", file=sys.stderr, flush=True)
    started = time.perf_counter()
    try:
        results = asyncio.run(run(plan, workdir, tuple(args.only or CHECKS)))
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    seconds = time.perf_counter() - started
    from .report import merge_json, render_table, to_json, write_json

    print(render_table(results, mode=mode, seconds=seconds))
    document = to_json(results, mode=mode, seconds=seconds)
    if args.update and args.json.exists():
        document = merge_json(json.loads(args.json.read_text()), document)
    write_json(args.json, document)
    print(f"\nwrote {args.json}")
    return 0 if all(r.ok for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
