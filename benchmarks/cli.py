"""``python -m benchmarks``: run the benchmarks, print the table, write the JSON.

    python -m benchmarks [--quick] [--pipeline N] [--window N] [--json PATH]
                         [--only NAME[,NAME]] [--durability full,normal] [--samples N]
                         [--loop auto|asyncio|uvloop] [--pin]

Sections (``--only``): ``floor``, ``provider``, ``transfer``, ``signing``, ``http``,
``sandbox``, ``import``, ``notebooks``. The headline is ``provider``: what a user runs,
``ChannelProvider.transfer()`` against the sandbox's relay in its own process, in the first
durability mode (``full`` unless told otherwise). ``transfer`` (the benchmark-only lean
client and the library's RelayClient against a bare relay) and ``floor`` are the reference
rows. ``--quick`` shortens everything and skips the notebooks (a smoke test, not a
measurement). Servers run in their own processes; this process is the client.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import datetime
import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any

from .procs import REPO
from .report import render_table, summarize

__all__ = ["SECTIONS", "main", "parse_args", "run"]

SECTIONS = (
    "floor",
    "provider",
    "transfer",
    "signing",
    "http",
    "sandbox",
    "import",
    "notebooks",
)
DEFAULT_JSON = Path(__file__).resolve().parent / "results" / "latest.json"


@dataclasses.dataclass(frozen=True)
class Sizes:
    """How much work each section does."""

    seq: int
    pipe: int
    samples: int
    crypto_s: float
    echo_seq: int
    echo_pipe: int
    sign_ours: int
    sign_sdk: int
    http_seq: int
    http_conc: int
    import_runs: int
    lib_seq: int
    lib_pipe: int
    provider_seq: int
    provider_conc: int
    fsync_s: float


FULL = Sizes(
    2000, 12000, 3, 1.5, 3000, 20000, 5000, 1000, 1000, 4000, 5, 1000, 4000, 2000, 6000, 1.0
)
QUICK = Sizes(200, 1000, 1, 0.3, 300, 2000, 500, 50, 100, 400, 2, 100, 400, 200, 400, 0.2)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="short runs, no notebooks (smoke test)")
    p.add_argument(
        "--pipeline", type=int, default=256, metavar="N", help="transfers in flight (default 256)"
    )
    p.add_argument(
        "--window",
        type=int,
        default=64,
        metavar="N",
        help="provider transfers in flight, asyncio.gather (default 64)",
    )
    p.add_argument("--json", type=Path, default=DEFAULT_JSON, metavar="PATH", help="result file")
    p.add_argument(
        "--only",
        default="",
        metavar="NAME",
        help=f"comma-separated sections: {', '.join(SECTIONS)}",
    )
    p.add_argument(
        "--durability",
        default=None,
        help="relay durability modes to run, first is the headline (default full,normal; "
        "--quick: full)",
    )
    p.add_argument("--samples", type=int, default=None, help="transfer samples per mode")
    p.add_argument(
        "--loop",
        choices=("auto", "asyncio", "uvloop"),
        default="auto",
        help="event loop for the relay, echo server and client (auto: uvloop if installed)",
    )
    p.add_argument("--pin", action="store_true", help="pin servers to core 0, client to core 1")
    args = p.parse_args(argv)
    only = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = [s for s in only if s not in SECTIONS]
    if unknown:
        p.error(f"unknown section(s) {', '.join(unknown)}: choose from {', '.join(SECTIONS)}")
    args.sections = only or [s for s in SECTIONS if not (args.quick and s == "notebooks")]
    modes = args.durability or ("full" if args.quick else "full,normal")
    args.modes = [m.strip() for m in modes.split(",") if m.strip()]
    if any(m not in ("normal", "full") for m in args.modes) or not args.modes:
        p.error("--durability takes normal and/or full")
    if args.pipeline < 1 or args.window < 1:
        p.error("--pipeline and --window must be at least 1")
    return args


def _uvloop_available() -> bool:
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return False
    return True


def _meta(args: argparse.Namespace, use_uvloop: bool) -> dict[str, Any]:
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = ""
    return {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "commit": commit,
        "python": platform.python_version(),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
        "quick": args.quick,
        "loops": "uvloop" if use_uvloop else "asyncio",
        "pipeline_window": args.pipeline,
        "provider_window": args.window,
        "durability_modes": args.modes,
        "pinned": args.pin,
        "load_start": _load(),
        "argv": sys.argv[1:],
        # where the ledgers and the fsync floor live: `full` on tmpfs is not a disk's fsync
        "filesystem": _filesystem(),
    }


def _filesystem() -> dict[str, str]:
    from .floor import filesystem_of

    return filesystem_of()


def _load() -> str:
    """Load average and CPU pressure: how busy the shared machine was."""
    parts = []
    try:
        parts.append("loadavg " + " ".join(Path("/proc/loadavg").read_text().split()[:3]))
    except OSError:
        pass
    try:
        some = Path("/proc/pressure/cpu").read_text().splitlines()[0].split()
        parts.append("cpu-pressure " + some[1])
    except (OSError, IndexError):
        pass
    return ", ".join(parts)


async def _section(name: str, errors: dict[str, str], fn: Callable[[], Awaitable[Any]]) -> Any:
    """Run one section; a failure is recorded (and printed) instead of ending the run."""
    t0 = time.perf_counter()
    print(f"[bench] {name} ...", file=sys.stderr, flush=True)
    try:
        result = await fn()
    except Exception as exc:  # a broken section must not hide the others' numbers
        errors[name] = f"{type(exc).__name__}: {exc}"
        print(f"[bench] {name} FAILED: {errors[name]}", file=sys.stderr, flush=True)
        return None
    print(f"[bench] {name} done in {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
    return result


async def run(args: argparse.Namespace, use_uvloop: bool) -> dict[str, Any]:
    """Every selected section; returns the JSON document (summary + meta + details)."""
    from . import floor as floor_mod
    from . import http_get, provider, sdk, startup, transfer

    sizes = QUICK if args.quick else FULL
    samples = args.samples or sizes.samples
    server_core = 0 if args.pin else None
    if args.pin and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {1})
    meta = _meta(args, use_uvloop)
    errors: dict[str, str] = {}
    raw: dict[str, Any] = {}
    payload = (
        b'{"req":[1700000000000123,"transfer",{"destination":"0x70997970C51812dc3A010C7d01b50e0d17dc79C8",'
        b'"allocations":[{"asset":"ytest.usd","amount":"0.000001"}]},1700000000000],"sig":["0x'
        + b"ab" * 65
        + b'"]}'
    )  # the size of a transfer request

    if "floor" in args.sections:

        async def floor() -> dict[str, Any]:
            crypto = floor_mod.crypto_floor(sizes.crypto_s)
            echo = await floor_mod.echo_floor(
                payload,
                sizes.echo_seq,
                sizes.echo_pipe,
                args.pipeline,
                use_uvloop=use_uvloop,
                pin=server_core,
            )
            fsync = floor_mod.fsync_floor(sizes.fsync_s)
            return {
                "crypto": dataclasses.asdict(crypto),
                "echo": dataclasses.asdict(echo),
                "fsync": dataclasses.asdict(fsync),
            }

        raw["floor"] = await _section("floor (coincurve, websockets echo, fsync)", errors, floor)

    if "provider" in args.sections:
        provider_runs: list[dict[str, Any]] = []
        for mode in args.modes:

            async def provider_run(mode: str = mode) -> provider.ProviderRun:
                return await provider.provider_benchmark(
                    mode,
                    sequential=sizes.provider_seq,
                    concurrent=sizes.provider_conc,
                    window=args.window,
                    samples=samples,
                    pin=server_core,
                )

            label = f"ChannelProvider.transfer, sandbox process [{mode}]"
            result = await _section(label, errors, provider_run)
            if result is not None:
                provider_runs.append(result.to_json())
        raw["provider_runs"] = provider_runs

        # Nitrolite v1 (today's network): the headline durability mode, same sizes
        async def provider_v1_run() -> provider.ProviderRun:
            return await provider.provider_benchmark(
                args.modes[0],
                sequential=sizes.provider_seq,
                concurrent=sizes.provider_conc,
                window=args.window,
                samples=samples,
                pin=server_core,
                protocol="v1",
            )

        label = f"ChannelProviderV1.transfer, sandbox process [{args.modes[0]}]"
        v1_run = await _section(label, errors, provider_v1_run)
        raw["v1_provider_runs"] = [v1_run.to_json()] if v1_run is not None else []

    if "transfer" in args.sections:
        runs: list[dict[str, Any]] = []
        latencies: list[list[int]] = []
        for mode in args.modes:

            async def one(mode: str = mode) -> transfer.TransferRun:
                return await transfer.transfer_benchmark(
                    mode,
                    sequential=sizes.seq,
                    pipelined=sizes.pipe,
                    window=args.pipeline,
                    samples=samples,
                    relay_uvloop=use_uvloop,
                    client_loop="uvloop" if use_uvloop else "asyncio",
                    pin=server_core,
                    library=(sizes.lib_seq, sizes.lib_pipe) if mode == args.modes[0] else None,
                )

            result = await _section(f"transfers through the relay [{mode}]", errors, one)
            if result is not None:
                runs.append(result.to_json())
                latencies.append([v for s in result.sequential for v in s.phase.latencies_ns])
        raw["transfer_runs"] = runs
        raw["transfer_latencies_ns"] = latencies
        if "floor" in args.sections and raw.get("floor"):
            # the crypto floor again after the long phase; keep the lower (conservative ratio)
            again = floor_mod.crypto_floor(sizes.crypto_s)
            crypto = raw["floor"]["crypto"]
            for key, value in dataclasses.asdict(again).items():
                crypto[key] = min(crypto[key], value)

    if "signing" in args.sections:

        async def signing() -> dict[str, Any]:
            return dataclasses.asdict(await sdk.signing_benchmark(sizes.sign_ours, sizes.sign_sdk))

        raw["signing"] = await _section("request signing vs the official SDK", errors, signing)

    if "http" in args.sections:

        async def http() -> dict[str, Any]:
            result = await http_get.get_settlement_benchmark(
                sequential=sizes.http_seq, concurrent=sizes.http_conc, connections=4
            )
            return dataclasses.asdict(result)

        raw["http"] = await _section("GET /api/settlement", errors, http)

    if "sandbox" in args.sections:

        async def sandbox() -> dict[str, Any]:
            times = await startup.sandbox_start_times(
                runs=2 if args.quick else 5,
                cold=True,
                notebook=not args.quick,
                lab=not args.quick,
                no_snapshot=not args.quick,
            )
            return dataclasses.asdict(times)

        raw["sandbox"] = await _section("sandbox start-up (whole processes)", errors, sandbox)

    if "import" in args.sections:

        async def imports() -> dict[str, Any]:
            median, samples_s = await startup.import_time(sizes.import_runs)
            return {"median_s": median, "samples_s": samples_s}

        raw["import"] = await _section("import settlement_widgets", errors, imports)

    if "notebooks" in args.sections:

        async def notebooks() -> dict[str, Any]:
            results = await startup.notebook_times()
            return {
                r.name: {"seconds": r.seconds, "passed": r.passed, "summary": r.summary}
                for r in results
            }

        raw["notebooks"] = await _section("notebooks under nbval", errors, notebooks)

    summary = summarize(raw)
    meta["load_end"] = _load()
    if raw.get("transfer_runs"):
        meta["durability_note"] = raw["transfer_runs"][0]["durability_note"]
    elif raw.get("provider_runs"):
        meta["durability_note"] = transfer.DURABILITY_NOTES[raw["provider_runs"][0]["durability"]]
    return {
        **summary,
        "meta": meta,
        "errors": errors,
        "details": {
            "provider_runs": raw.get("provider_runs"),
            "v1_provider_runs": raw.get("v1_provider_runs"),
            "transfer_runs": raw.get("transfer_runs"),
            "floor": None
            if not raw.get("floor")
            else {
                "crypto": raw["floor"]["crypto"],
                "echo": {k: v for k, v in raw["floor"]["echo"].items() if k != "sequential_rtt_ns"},
                "fsync": raw["floor"].get("fsync"),
            },
            "signing": raw.get("signing"),
        },
    }


def _run_loop(coro: Coroutine[Any, Any, dict[str, Any]], use_uvloop: bool) -> dict[str, Any]:
    if use_uvloop:
        import uvloop

        result: dict[str, Any] = uvloop.run(coro)
        return result
    return asyncio.run(coro)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    use_uvloop = args.loop == "uvloop" or (args.loop == "auto" and _uvloop_available())
    if args.loop == "uvloop" and not _uvloop_available():
        print("uvloop is not installed: using asyncio", file=sys.stderr)
        use_uvloop = False
    document = _run_loop(run(args, use_uvloop), use_uvloop)
    meta = dict(document["meta"])
    meta["load"] = meta.get("load_start", "")
    print(render_table(document, meta))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")
    print(f"wrote {args.json}")
    if document["errors"]:
        for name, error in document["errors"].items():
            print(f"section failed: {name}: {error}", file=sys.stderr)
        return 1
    return 0
