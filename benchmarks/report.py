"""Turn the measurements into the result JSON and the printed table (pure functions).

The headline keys of ``latest.json`` (issue 12) and how each is derived:

- ``transfer_sequential_tps`` / ``transfer_pipelined_tps``: median over the samples of the
  first durability mode run (``*_best_tps``: the best sample; this machine is shared, so
  the best sample is the one least disturbed by other work);
- ``transfer_sequential_p50_ms`` / ``_p99_ms`` / ``_p999_ms``: over all sequential
  transfers of that mode;
- ``cost_ratio_to_floor``: CPU per transfer, client + relay, pipelined, divided by the
  floor's CPU for the same work measured in the same run: two signatures and two recoveries
  (raw coincurve) plus one bare websockets echo message (client + server CPU, pipelined).
  CPU time is the stable measure on a shared machine;
  ``cost_ratio_sequential_wall`` is the wall-clock version for one transfer in flight
  (sequential time per transfer / (echo round trip + 2 x (sign + recover) wall));
- ``signing_ratio_vs_sdk``: frames/s of our library path over the SDK's;
- ``get_settlement_rps``, ``sandbox_startup_s`` (cold, fresh interpreter), ``import_s``.

Issue 20's headline keys: ``provider_transfer_*`` (``ChannelProvider.transfer`` against the
sandbox process, first durability mode, ``durability`` names it; other modes suffixed),
``relay_pipelined_tps`` (the lean client against a bare relay: the relay's own capacity),
``fsync_floor_us``, ``get_settlement_auth_rps`` (through the Jupyter extension with a token)
and ``sandbox_start_process_s`` (a whole ``python -m settlement_widgets.sandbox`` process,
warm; ``..._cold_s`` cold).

Issue 37's targets are ratios, since absolute rates on a shared machine move by 40% from one
run to the next while CPU per transfer does not: ``provider_cpu_per_transfer_ratio`` is the
provider path's CPU per transfer (client + sandbox, sequential) over the floor measured in
the same run (two signatures, two recoveries and one WebSocket echo message: what any
transfer must do), ``..._concurrent`` the same with ``provider_window`` in flight; the
``v1_`` keys are ``ChannelProviderV1`` against the sandbox's Nitronode (rates too:
``v1_provider_transfer_sequential_tps``...), and ``v1_provider_speed_ratio`` is v1's
sequential rate over v0.5's in the same run.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["TARGETS", "percentile", "render_table", "summarize"]

#: (key, comparison, target); "min" means the value must be >= target. The headline is what
#: users run (issue 20): the provider path, durable, an authenticated GET, a whole sandbox
#: process; the lean client's rows and issue 12's targets stay as reference.
TARGETS: dict[str, tuple[str, float]] = {
    "provider_transfer_sequential_tps": ("min", 1500.0),
    "provider_transfer_sequential_p50_ms": ("max", 0.7),
    "provider_transfer_sequential_p99_ms": ("max", 3.0),
    "provider_transfer_concurrent_tps": ("min", 4000.0),
    "relay_pipelined_tps": ("min", 6000.0),
    "get_settlement_auth_rps": ("min", 2000.0),
    "sandbox_start_process_s": ("max", 1.0),
    "sandbox_start_process_cold_s": ("max", 2.0),
    "import_s": ("max", 0.05),
    "cost_ratio_to_floor": ("max", 2.0),
    "signing_ratio_vs_sdk": ("min", 3.0),
    # issue 37: CPU per transfer against the same run's floor, both protocols
    "provider_cpu_per_transfer_ratio": ("max", 4.0),
    "provider_cpu_per_transfer_ratio_concurrent": ("max", 2.0),
    "v1_provider_cpu_per_transfer_ratio": ("max", 4.0),
    "v1_provider_cpu_per_transfer_ratio_concurrent": ("max", 2.0),
    "v1_provider_speed_ratio": ("min", 1.0),
}
#: the sequential provider target is also met within this factor of the same run's fsync
#: floor, if the disk is what binds (one fsync per transfer when one is in flight)
FSYNC_SLACK = 1.5


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (``q`` in 0..100) of unsorted ``values``."""
    if not values:
        raise IndexError("percentile of no values")
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, math.ceil(q / 100 * len(ordered)) - 1))
    return float(ordered[rank])


def _median(values: Sequence[float]) -> float:
    return float(statistics.median(values))


def _transfer_keys(run: dict[str, Any], latencies_ns: list[int]) -> dict[str, Any]:
    seq, pipe = run["sequential"], run["pipelined"]
    lat_ms = [v / 1e6 for v in latencies_ns]
    return {
        "transfer_durability": run["durability"],
        "transfer_sequential_tps": _median([s["tps"] for s in seq]),
        "transfer_sequential_best_tps": max(s["tps"] for s in seq),
        "transfer_sequential_p50_ms": percentile(lat_ms, 50),
        "transfer_sequential_p99_ms": percentile(lat_ms, 99),
        "transfer_sequential_p999_ms": percentile(lat_ms, 99.9),
        "transfer_sequential_client_cpu_us": _median([s["client_cpu_us"] for s in seq]),
        "transfer_sequential_relay_cpu_us": _median([s["relay_cpu_us"] for s in seq]),
        "transfer_pipelined_tps": _median([s["tps"] for s in pipe]),
        "transfer_pipelined_best_tps": max(s["tps"] for s in pipe),
        "transfer_pipelined_client_cpu_us": _median([s["client_cpu_us"] for s in pipe]),
        "transfer_pipelined_relay_cpu_us": _median([s["relay_cpu_us"] for s in pipe]),
        "transfer_pipeline_window": run["window"],
    }


def _provider_keys(run: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    seq, conc = run["sequential"], run["concurrent"]
    keys = {
        "provider_transfer_sequential_tps": _median([s["tps"] for s in seq]),
        "provider_transfer_sequential_best_tps": max(s["tps"] for s in seq),
        "provider_transfer_sequential_p50_ms": _median([s["p50_ms"] for s in seq]),
        "provider_transfer_sequential_p99_ms": max(s["p99_ms"] for s in seq),
        "provider_transfer_sequential_client_cpu_us": _median([s["client_cpu_us"] for s in seq]),
        "provider_transfer_sequential_server_cpu_us": _median([s["server_cpu_us"] for s in seq]),
        "provider_transfer_concurrent_tps": _median([s["tps"] for s in conc]),
        "provider_transfer_concurrent_best_tps": max(s["tps"] for s in conc),
        "provider_transfer_concurrent_client_cpu_us": _median([s["client_cpu_us"] for s in conc]),
        "provider_transfer_concurrent_server_cpu_us": _median([s["server_cpu_us"] for s in conc]),
        "provider_window": run["window"],
    }
    return {prefix + k: v for k, v in keys.items()}


def _cpu_ratios(out: dict[str, Any], prefix: str) -> None:
    """``{prefix}provider_cpu_per_transfer_ratio`` (and ``_concurrent``): client + sandbox
    CPU per transfer over the floor's (``floor_transfer_cpu_us``, the same run)."""
    floor = out.get("floor_transfer_cpu_us")
    for phase, suffix in (("sequential", ""), ("concurrent", "_concurrent")):
        client = out.get(f"{prefix}provider_transfer_{phase}_client_cpu_us")
        server = out.get(f"{prefix}provider_transfer_{phase}_server_cpu_us")
        total = None if client is None or server is None else client + server
        out[f"{prefix}provider_transfer_{phase}_cpu_us"] = total
        out[f"{prefix}provider_cpu_per_transfer_ratio{suffix}"] = (
            total / floor if total is not None and floor else None
        )


def summarize(raw: dict[str, Any]) -> dict[str, Any]:
    """The flat result dictionary (every headline key present; ``None`` when not measured)."""
    out: dict[str, Any] = dict.fromkeys(TARGETS)
    out.update(
        dict.fromkeys(
            (
                "durability",
                "fsync_floor_us",
                "provider_vs_fsync_floor",
                "provider_vs_library",
                "get_settlement_rps",
                "sandbox_startup_s",
                "transfer_sequential_tps",
                "transfer_pipelined_tps",
            )
        )
    )
    providers = raw.get("provider_runs") or []
    if providers:
        out["durability"] = providers[0]["durability"]
        out.update(_provider_keys(providers[0]))
        for run in providers[1:]:
            mode = run["durability"]
            out.update({f"{k}_{mode}": v for k, v in _provider_keys(run).items()})
    v1_runs = raw.get("v1_provider_runs") or []
    out.update(
        dict.fromkeys(
            (
                "v1_provider_transfer_sequential_tps",
                "v1_provider_transfer_sequential_p50_ms",
                "v1_provider_transfer_sequential_p99_ms",
                "v1_provider_transfer_concurrent_tps",
            )
        )
    )
    if v1_runs:
        out["v1_durability"] = v1_runs[0]["durability"]
        out.update(_provider_keys(v1_runs[0], "v1_"))
    out.update(
        {
            "transfer_sequential_p999_ms": None,
            "transfer_pipelined_client_cpu_us": None,
            "transfer_pipelined_relay_cpu_us": None,
            "cost_ratio_sequential_wall": None,
            "signing_ratio_vs_sdk_lean": None,
        }
    )
    runs = raw.get("transfer_runs") or []
    if runs:
        out.update(_transfer_keys(runs[0], raw["transfer_latencies_ns"][0]))
        library = runs[0].get("library") or {}
        for key, value in library.items():
            out[f"transfer_library_{key}"] = value
        for run, lat in zip(runs[1:], raw["transfer_latencies_ns"][1:], strict=True):
            extra = _transfer_keys(run, lat)
            mode = run["durability"]
            out.update({f"{k}_{mode}": v for k, v in extra.items() if k != "transfer_durability"})
    floor = raw.get("floor")
    if floor:
        crypto, echo = floor["crypto"], floor["echo"]
        out["floor_sign_us"] = crypto["sign_us"]
        out["floor_recover_us"] = crypto["recover_us"]
        rtts = [v / 1e3 for v in echo["sequential_rtt_ns"]]
        seq_n = len(rtts)
        out["floor_echo_rtt_p50_us"] = percentile(rtts, 50)
        out["floor_echo_sequential_rt_per_s"] = seq_n / echo["sequential_wall_s"]
        out["floor_echo_pipelined_msgs_per_s"] = echo["pipelined_count"] / echo["pipelined_wall_s"]
        echo_cpu = (echo["pipelined_client_cpu_s"] + echo["pipelined_server_cpu_s"]) / echo[
            "pipelined_count"
        ]
        out["floor_echo_cpu_us"] = echo_cpu * 1e6
        out["floor_echo_client_cpu_us"] = (
            echo["pipelined_client_cpu_s"] / echo["pipelined_count"] * 1e6
        )
        out["floor_echo_server_cpu_us"] = (
            echo["pipelined_server_cpu_s"] / echo["pipelined_count"] * 1e6
        )
        fsync = floor.get("fsync")
        if fsync:
            out["fsync_floor_us"] = fsync["median_us"]
            out["fsync_floor_p99_us"] = fsync["p99_us"]
        floor_cpu = 2 * (crypto["sign_us"] + crypto["recover_us"]) + echo_cpu * 1e6
        out["floor_transfer_cpu_us"] = floor_cpu
        floor_seq_us = echo["sequential_wall_s"] / seq_n * 1e6 + 2 * (
            crypto["sign_wall_us"] + crypto["recover_wall_us"]
        )
        out["floor_transfer_sequential_us"] = floor_seq_us
        out["floor_transfer_sequential_tps"] = 1e6 / floor_seq_us
        if out.get("transfer_pipelined_relay_cpu_us") is not None:
            ours = out["transfer_pipelined_client_cpu_us"] + out["transfer_pipelined_relay_cpu_us"]
            out["transfer_pipelined_cpu_us"] = ours
            out["cost_ratio_to_floor"] = ours / floor_cpu
            out["cost_ratio_to_floor_client"] = out["transfer_pipelined_client_cpu_us"] / (
                crypto["sign_us"] + crypto["recover_us"] + out["floor_echo_client_cpu_us"]
            )
            out["cost_ratio_to_floor_relay"] = out["transfer_pipelined_relay_cpu_us"] / (
                crypto["sign_us"] + crypto["recover_us"] + out["floor_echo_server_cpu_us"]
            )
            out["cost_ratio_sequential_wall"] = (
                1e6 / out["transfer_sequential_tps"]
            ) / floor_seq_us
    _cpu_ratios(out, "")
    _cpu_ratios(out, "v1_")
    v05_tps, v1_tps = (
        out.get("provider_transfer_sequential_tps"),
        out.get("v1_provider_transfer_sequential_tps"),
    )
    out["v1_provider_speed_ratio"] = v1_tps / v05_tps if v05_tps and v1_tps else None
    if runs:
        # the lean client against a bare relay in its own process: the relay's own capacity
        out["relay_pipelined_tps"] = out.get("transfer_pipelined_tps")
    seq_tps = out.get("provider_transfer_sequential_tps")
    if seq_tps and out.get("fsync_floor_us"):
        out["provider_vs_fsync_floor"] = (1e6 / seq_tps) / out["fsync_floor_us"]
    if seq_tps and out.get("transfer_library_sequential_tps"):
        out["provider_vs_library"] = out["transfer_library_sequential_tps"] / seq_tps
    signing = raw.get("signing")
    if signing:
        out["signing_ours_fps"] = signing["ours_fps"]
        out["signing_ours_cpu_us"] = signing["ours_cpu_us"]
        out["signing_lean_fps"] = signing["lean_fps"]
        out["signing_sdk_fps"] = signing["sdk_fps"]
        out["signing_sdk_cpu_us"] = signing["sdk_cpu_us"]
        out["signing_frames_identical"] = signing["frames_identical"]
        if signing["sdk_fps"]:
            out["signing_ratio_vs_sdk"] = signing["ours_fps"] / signing["sdk_fps"]
            out["signing_ratio_vs_sdk_lean"] = signing["lean_fps"] / signing["sdk_fps"]
    http = raw.get("http")
    if http and http.get("extension"):
        ext, standalone = http["extension"], http.get("standalone") or {}
        out["get_settlement_auth_rps"] = ext["settlement"]["rps"]
        out["get_settlement_auth_p50_ms"] = ext["settlement"]["p50_ms"]
        out["get_settlement_auth_sequential_p50_ms"] = ext["settlement"]["sequential_p50_ms"]
        out["get_settlement_auth_server_cpu_us"] = ext["settlement"]["server_cpu_us"]
        if ext.get("floor"):
            out["get_auth_floor_rps"] = ext["floor"]["rps"]
            out["get_settlement_auth_ratio_to_floor"] = ext["ratio_to_floor"]
        if ext.get("revalidated"):
            out["get_settlement_auth_304_rps"] = ext["revalidated"]["rps"]
        if standalone.get("settlement"):
            out["get_settlement_standalone_auth_rps"] = standalone["settlement"]["rps"]
        if standalone.get("floor"):
            out["get_standalone_floor_rps"] = standalone["floor"]["rps"]
            out["get_settlement_standalone_ratio_to_floor"] = standalone["ratio_to_floor"]
    if http:
        conc = [v / 1e6 for v in http["concurrent_ns"]]
        seq = [v / 1e6 for v in http["sequential_ns"]]
        out["get_settlement_rps"] = len(conc) / http["concurrent_wall_s"]
        out["get_settlement_p50_ms"] = percentile(conc, 50)
        out["get_settlement_p99_ms"] = percentile(conc, 99)
        out["get_settlement_sequential_p50_ms"] = percentile(seq, 50)
        out["get_settlement_sequential_p99_ms"] = percentile(seq, 99)
        out["get_settlement_server_cpu_us"] = http["server_cpu_us"]
        out["get_settlement_connections"] = http["connections"]
    sandbox = raw.get("sandbox")
    if sandbox:
        for key in (
            "sandbox_start_process_s",
            "sandbox_start_process_cold_s",
            "sandbox_start_process_nobytecode_s",
            "sandbox_start_process_no_snapshot_s",
            "sandbox_start_process_lab_s",
            "sandbox_start_process_source",
            "notebook_first_cell_s",
        ):
            out[key] = sandbox.get(key)
        out["sandbox_startup_s"] = sandbox["inprocess_cold_s"]
        out["sandbox_startup_warm_s"] = sandbox["inprocess_warm_s"]
        out["sandbox_import_s"] = sandbox["inprocess_import_s"]
        if out.get("import_s") is None:
            out["import_s"] = sandbox["import_s"]
    if raw.get("import") is not None:
        out["import_s"] = raw["import"]["median_s"]
        out["import_samples_s"] = raw["import"]["samples_s"]
    if raw.get("notebooks") is not None:
        out["notebooks"] = raw["notebooks"]
    out["targets"] = {
        key: {
            "target": target,
            "kind": kind,
            "met": None
            if out.get(key) is None
            else (out[key] >= target if kind == "min" else out[key] <= target),
        }
        for key, (kind, target) in TARGETS.items()
    }
    bound = out.get("provider_vs_fsync_floor")
    seq = out["targets"]["provider_transfer_sequential_tps"]
    if seq["met"] is False and bound is not None and bound <= FSYNC_SLACK:
        seq["met"] = True
        seq["by"] = f"within {FSYNC_SLACK}x of the fsync floor"
    return out


def _pair(s: Mapping[str, Any], first: str, second: str, unit: str, digits: int = 0) -> str:
    """Two figures of one row, ``first | second`` (client | server, p50 | p99 ...)."""
    return _fmt(s.get(first), unit, digits) + " | " + _fmt(s.get(second), unit, digits)


def _fmt(value: Any, unit: str = "", digits: int = 0) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "NO"
    if isinstance(value, int | float):
        text = f"{value:,.{digits}f}"
        return f"{text} {unit}".strip()
    return str(value)


def _status(summary: dict[str, Any], key: str) -> str:
    """``ok``, ``MISSED`` or nothing (not measured); a target met by an alternative rule
    names the rule (``ok: within 1.5x of the fsync floor``), in the table as in the JSON."""
    target = summary["targets"].get(key, {})
    met = target.get("met")
    if met is None:
        return ""
    if not met:
        return "MISSED"
    return f"ok: {target['by']}" if target.get("by") else "ok"


def render_table(summary: dict[str, Any], meta: dict[str, Any]) -> str:
    """The human-readable table: measured | floor/reference | ratio | target | status."""
    s = summary
    rows: list[tuple[str, str, str, str, str, str]] = []

    def row(label: str, value: str, ref: str = "", ratio: str = "", key: str = "") -> None:
        target = ""
        if key in TARGETS:
            kind, goal = TARGETS[key]
            target = (">= " if kind == "min" else "<= ") + f"{goal:,g}"
        rows.append((label, value, ref, ratio, target, _status(s, key) if key else ""))

    def other_modes(headline: str, label: str, prefix: str, second: str, key: str) -> None:
        """One row per durability mode run besides the headline one: seq | second."""
        for extra in ("full", "normal"):
            if extra == headline or s.get(f"{prefix}_sequential_tps_{extra}") is None:
                continue
            row(
                f"{label} [{extra}] seq | {second}",
                _fmt(s.get(f"{prefix}_sequential_tps_{extra}"), "/s")
                + " | "
                + _fmt(s.get(f"{prefix}_{key}_tps_{extra}"), "/s"),
                "p50 "
                + _fmt(s.get(f"{prefix}_sequential_p50_ms_{extra}"), "ms", 3)
                + " p99 "
                + _fmt(s.get(f"{prefix}_sequential_p99_ms_{extra}"), "ms", 3),
            )

    pmode = s.get("durability") or "-"
    row(
        f"ChannelProvider.transfer, sequential [{pmode}]",
        _fmt(s.get("provider_transfer_sequential_tps"), "/s"),
        "RelayClient " + _fmt(s.get("transfer_library_sequential_tps"), "/s"),
        _fmt(s.get("provider_vs_library"), "x", 2),
        "provider_transfer_sequential_tps",
    )
    row(
        "  latency p50",
        _fmt(s.get("provider_transfer_sequential_p50_ms"), "ms", 3),
        "fsync floor " + _fmt(s.get("fsync_floor_us"), "us"),
        _fmt(s.get("provider_vs_fsync_floor"), "x", 1),
        "provider_transfer_sequential_p50_ms",
    )
    row(
        "  latency p99",
        _fmt(s.get("provider_transfer_sequential_p99_ms"), "ms", 3),
        key="provider_transfer_sequential_p99_ms",
    )
    row(
        "  CPU/transfer client | sandbox",
        _pair(
            s,
            "provider_transfer_sequential_client_cpu_us",
            "provider_transfer_sequential_server_cpu_us",
            "us",
        ),
    )
    row(
        f"ChannelProvider.transfer, {s.get('provider_window') or '-'} in flight [{pmode}]",
        _fmt(s.get("provider_transfer_concurrent_tps"), "/s"),
        "RelayClient " + _fmt(s.get("transfer_library_pipelined_tps"), "/s"),
        "",
        "provider_transfer_concurrent_tps",
    )
    row(
        "  CPU/transfer client | sandbox",
        _pair(
            s,
            "provider_transfer_concurrent_client_cpu_us",
            "provider_transfer_concurrent_server_cpu_us",
            "us",
        ),
    )
    floor_cpu = "floor " + _fmt(s.get("floor_transfer_cpu_us"), "us")
    row(
        "  CPU/transfer total, seq | in flight",
        _pair(
            s, "provider_transfer_sequential_cpu_us", "provider_transfer_concurrent_cpu_us", "us"
        ),
        floor_cpu,
    )
    row(
        "  CPU ratio to floor, sequential",
        _fmt(s.get("provider_cpu_per_transfer_ratio"), "x", 2),
        key="provider_cpu_per_transfer_ratio",
    )
    row(
        "  CPU ratio to floor, in flight",
        _fmt(s.get("provider_cpu_per_transfer_ratio_concurrent"), "x", 2),
        key="provider_cpu_per_transfer_ratio_concurrent",
    )
    other_modes(pmode, "ChannelProvider.transfer", "provider_transfer", "in flight", "concurrent")
    v1mode = s.get("v1_durability") or "-"
    row(
        f"ChannelProviderV1.transfer (Nitrolite v1), sequential [{v1mode}]",
        _fmt(s.get("v1_provider_transfer_sequential_tps"), "/s"),
        "v0.5 " + _fmt(s.get("provider_transfer_sequential_tps"), "/s"),
        _fmt(s.get("v1_provider_speed_ratio"), "x", 2),
        "v1_provider_speed_ratio",
    )
    row(
        "  latency p50 | p99",
        _pair(
            s,
            "v1_provider_transfer_sequential_p50_ms",
            "v1_provider_transfer_sequential_p99_ms",
            "ms",
            3,
        ),
    )
    row(
        "  CPU/transfer client | node",
        _pair(
            s,
            "v1_provider_transfer_sequential_client_cpu_us",
            "v1_provider_transfer_sequential_server_cpu_us",
            "us",
        ),
        floor_cpu,
        _fmt(s.get("v1_provider_cpu_per_transfer_ratio"), "x", 2),
        "v1_provider_cpu_per_transfer_ratio",
    )
    row(
        f"ChannelProviderV1.transfer, {s.get('v1_provider_window') or '-'} in flight [{v1mode}]",
        _fmt(s.get("v1_provider_transfer_concurrent_tps"), "/s"),
        "v0.5 " + _fmt(s.get("provider_transfer_concurrent_tps"), "/s"),
    )
    row(
        "  CPU/transfer client | node",
        _pair(
            s,
            "v1_provider_transfer_concurrent_client_cpu_us",
            "v1_provider_transfer_concurrent_server_cpu_us",
            "us",
        ),
        floor_cpu,
        _fmt(s.get("v1_provider_cpu_per_transfer_ratio_concurrent"), "x", 2),
        "v1_provider_cpu_per_transfer_ratio_concurrent",
    )
    row(
        "floor: fsync (4 KiB pwrite+fsync)",
        _fmt(s.get("fsync_floor_us"), "us"),
        "p99 " + _fmt(s.get("fsync_floor_p99_us"), "us"),
    )
    mode = s.get("transfer_durability") or "-"
    window = s.get("transfer_pipeline_window") or "-"
    row(
        f"reference: lean client, sequential [{mode}]",
        _fmt(s.get("transfer_sequential_tps"), "/s"),
        "floor " + _fmt(s.get("floor_transfer_sequential_tps"), "/s"),
        _fmt(s.get("cost_ratio_sequential_wall"), "x", 2),
    )
    row("  best sample", _fmt(s.get("transfer_sequential_best_tps"), "/s"))
    row(
        "  latency p50",
        _fmt(s.get("transfer_sequential_p50_ms"), "ms", 3),
        "echo RT p50 " + _fmt(s.get("floor_echo_rtt_p50_us"), "us"),
    )
    row("  latency p99", _fmt(s.get("transfer_sequential_p99_ms"), "ms", 3))
    row("  latency p99.9", _fmt(s.get("transfer_sequential_p999_ms"), "ms", 3))
    row(
        "  CPU/transfer client | relay",
        _pair(s, "transfer_sequential_client_cpu_us", "transfer_sequential_relay_cpu_us", "us"),
    )
    row(
        f"relay pipelined (lean client) w={window} [{mode}]",
        _fmt(s.get("relay_pipelined_tps"), "/s"),
        "echo " + _fmt(s.get("floor_echo_pipelined_msgs_per_s"), "msg/s"),
        key="relay_pipelined_tps",
    )
    row("  best sample", _fmt(s.get("transfer_pipelined_best_tps"), "/s"))
    row(
        "  CPU/transfer client | relay",
        _pair(s, "transfer_pipelined_client_cpu_us", "transfer_pipelined_relay_cpu_us", "us"),
        "floor "
        + _fmt(
            s.get("floor_sign_us", 0)
            + s.get("floor_recover_us", 0)
            + s.get("floor_echo_client_cpu_us", 0),
            "us",
        )
        + " | "
        + _fmt(
            s.get("floor_sign_us", 0)
            + s.get("floor_recover_us", 0)
            + s.get("floor_echo_server_cpu_us", 0),
            "us",
        )
        if s.get("floor_sign_us") is not None
        else "",
        _pair(s, "cost_ratio_to_floor_client", "cost_ratio_to_floor_relay", "x", 2),
    )
    row(
        "  CPU/transfer total (cost ratio)",
        _fmt(s.get("transfer_pipelined_cpu_us"), "us"),
        "floor " + _fmt(s.get("floor_transfer_cpu_us"), "us"),
        _fmt(s.get("cost_ratio_to_floor"), "x", 2),
        "cost_ratio_to_floor",
    )
    if s.get("transfer_library_sequential_tps") is not None:
        row(
            "RelayClient (library) seq | pipelined",
            _pair(s, "transfer_library_sequential_tps", "transfer_library_pipelined_tps", "/s"),
            "p50 "
            + _fmt(s.get("transfer_library_sequential_p50_ms"), "ms", 3)
            + " p99 "
            + _fmt(s.get("transfer_library_sequential_p99_ms"), "ms", 3),
        )
        row(
            "  CPU/transfer client | relay (pipe)",
            _pair(
                s,
                "transfer_library_pipelined_client_cpu_us",
                "transfer_library_pipelined_relay_cpu_us",
                "us",
            ),
        )
    other_modes(mode, "reference: lean client", "transfer", "pipelined", "pipelined")
    row(
        "floor: sign | recover (coincurve)",
        _fmt(s.get("floor_sign_us"), "us", 1) + " | " + _fmt(s.get("floor_recover_us"), "us", 1),
    )
    row(
        "floor: ws echo seq | pipelined",
        _fmt(s.get("floor_echo_sequential_rt_per_s"), "RT/s")
        + " | "
        + _fmt(s.get("floor_echo_pipelined_msgs_per_s"), "msg/s"),
        "CPU c+s " + _fmt(s.get("floor_echo_cpu_us"), "us/msg"),
    )
    row(
        "request signing: ours (library)",
        _fmt(s.get("signing_ours_fps"), "frames/s"),
        "SDK " + _fmt(s.get("signing_sdk_fps"), "frames/s"),
        _fmt(s.get("signing_ratio_vs_sdk"), "x", 1),
        "signing_ratio_vs_sdk",
    )
    row(
        "  lean builder | frames identical",
        _fmt(s.get("signing_lean_fps"), "frames/s"),
        "identical: " + _fmt(s.get("signing_frames_identical")),
        _fmt(s.get("signing_ratio_vs_sdk_lean"), "x", 1),
    )
    conns = s.get("get_settlement_connections") or "-"
    row(
        f"GET /api/settlement, token, Jupyter extension ({conns} conns)",
        _fmt(s.get("get_settlement_auth_rps"), "req/s"),
        "GET /api, token " + _fmt(s.get("get_auth_floor_rps"), "req/s"),
        _fmt(s.get("get_settlement_auth_ratio_to_floor"), "x", 2),
        "get_settlement_auth_rps",
    )
    row(
        "  304 revalidation | seq p50",
        _fmt(s.get("get_settlement_auth_304_rps"), "req/s"),
        "p50 " + _fmt(s.get("get_settlement_auth_sequential_p50_ms"), "ms", 2),
    )
    row(
        "GET /api/settlement, token, standalone",
        _fmt(s.get("get_settlement_standalone_auth_rps"), "req/s"),
        "GET /api, token " + _fmt(s.get("get_standalone_floor_rps"), "req/s"),
        _fmt(s.get("get_settlement_standalone_ratio_to_floor"), "x", 2),
    )
    row(
        "  reference: standalone, no auth",
        _fmt(s.get("get_settlement_rps"), "req/s"),
        "p99 " + _fmt(s.get("get_settlement_p99_ms"), "ms", 2),
    )
    row(
        "  server CPU/request | seq p50",
        _fmt(s.get("get_settlement_server_cpu_us"), "us"),
        "p50 " + _fmt(s.get("get_settlement_sequential_p50_ms"), "ms", 2),
    )
    row(
        "sandbox start-up, whole process, warm",
        _fmt(s.get("sandbox_start_process_s"), "s", 2),
        "no snapshot " + _fmt(s.get("sandbox_start_process_no_snapshot_s"), "s", 2),
        f"({s.get('sandbox_start_process_source') or '-'})",
        "sandbox_start_process_s",
    )
    row(
        "  cold (first run, files out of the cache)",
        _fmt(s.get("sandbox_start_process_cold_s"), "s", 2),
        "no .pyc " + _fmt(s.get("sandbox_start_process_nobytecode_s"), "s", 2),
        key="sandbox_start_process_cold_s",
    )
    row(
        "  make lab flags | notebook 03 first cell",
        _pair(s, "sandbox_start_process_lab_s", "notebook_first_cell_s", "s", 2),
    )
    row(
        "  in-process LocalSandbox().start() cold | warm",
        _pair(s, "sandbox_startup_s", "sandbox_startup_warm_s", "s", 2),
    )
    row("import settlement_widgets", _fmt(s.get("import_s"), "s", 3), "", "", "import_s")
    for name, nb in (s.get("notebooks") or {}).items():
        row(
            f"notebook {name}",
            _fmt(nb.get("seconds"), "s", 1),
            "" if nb.get("passed") else "FAILED",
        )
    headers = ("measure", "measured", "floor / reference", "ratio", "target", "")
    widths = [max(len(r[i]) for r in [headers, *rows]) for i in range(6)]
    line = "  ".join("-" * w for w in widths)
    out = [
        "settlement_widgets benchmarks  "
        + "  ".join(f"{k}={v}" for k, v in meta.items() if k in ("date", "quick", "loops", "load")),
        line,
        "  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)),
        line,
    ]
    for r in rows:
        out.append("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
    out.append(line)
    durability = meta.get("durability_note")
    if durability:
        out.append(f"durability [{pmode if pmode != '-' else mode}]: {durability}")
    filesystem = meta.get("filesystem")
    if filesystem:
        out.append(
            f"ledgers and the fsync floor on {filesystem['type']} ({filesystem['path']}, "
            f"{filesystem['device']})"
            + ("; fsync there does not reach a disk" if filesystem["type"] == "tmpfs" else "")
        )
    return "\n".join(out)
