"""The suite's table and JSON file, both from the checks' :class:`~.common.CheckResult`s.

The headline figures the issue names are lifted to the top level of the JSON
(``relay_kills``, ``acknowledged_lost``, ``acknowledged_duplicated``,
``client_steps_survived``, ``client_steps_tried``, ``fuzz_inputs``, ``fuzz_crashes``,
``endpoint_500s``, ``load_error_rate``, plus the p99s and the conservation check); each
check's full metrics and violations follow under ``checks``.
"""

from __future__ import annotations

import json
import os
import platform
import time
from pathlib import Path
from typing import Any

from .common import CheckResult

__all__ = ["headline", "merge_json", "render_table", "to_json", "write_json"]


def _m(results: dict[str, CheckResult], check: str, key: str, default: Any = None) -> Any:
    result = results.get(check)
    return result.metrics.get(key, default) if result is not None else default


def headline(results: dict[str, CheckResult]) -> dict[str, Any]:
    """The top-level figures (None where a check did not run)."""

    def total(*pairs: tuple[str, str]) -> int | None:
        values = [_m(results, c, k) for c, k in pairs]
        present = [v for v in values if v is not None]
        return sum(present) if present else None

    return {
        "relay_kills": _m(results, "soak", "relay_kills"),
        "acknowledged_lost": _m(results, "soak", "acknowledged_lost"),
        "acknowledged_duplicated": _m(results, "soak", "acknowledged_duplicated"),
        "balance_sum_conserved": _m(results, "soak", "balance_sum_conserved"),
        "soak_ack_p99_ms": _m(results, "soak", "ack_p99_ms"),
        "client_steps_survived": _m(results, "client_crash", "client_steps_survived"),
        "client_steps_tried": _m(results, "client_crash", "client_steps_tried"),
        "client_steps_without_remedy": _m(results, "client_crash", "client_steps_without_remedy"),
        "chain_fault_scenarios_ok": _m(results, "chain_faults", "chain_fault_scenarios_ok"),
        "chain_fault_scenarios": _m(results, "chain_faults", "chain_fault_scenarios"),
        "fuzz_inputs": total(
            ("fuzz_parsers", "parser_inputs"),
            ("fuzz_relay", "relay_inputs"),
            ("fuzz_endpoint", "endpoint_inputs"),
        ),
        "fuzz_crashes": total(
            ("fuzz_parsers", "parser_crashes"),
            ("fuzz_relay", "relay_crashes"),
            ("fuzz_endpoint", "endpoint_5xx"),
            ("fuzz_endpoint", "endpoint_transport_errors"),
        ),
        "endpoint_500s": _m(results, "fuzz_endpoint", "endpoint_500s"),
        "load_error_rate": _m(results, "load", "load_error_rate"),
        "load_endpoint_p99_ms": _m(results, "load", "endpoint_p99_ms"),
        "load_relay_p99_ms": _m(results, "load", "relay_p99_ms"),
        "security_checks_passed": _m(results, "security", "security_checks_passed"),
        "security_checks": _m(results, "security", "security_checks"),
        "model_sequences": _m(results, "channel_model", "model_sequences"),
        "model_steps": _m(results, "channel_model", "model_steps"),
        "model_violations": _m(results, "channel_model", "model_violations"),
        "v1_model_sequences": _m(results, "channel_v1_model", "v1_model_sequences"),
        "v1_model_steps": _m(results, "channel_v1_model", "v1_model_steps"),
        "v1_model_violations": _m(results, "channel_v1_model", "v1_model_violations"),
    }


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "NO"
    if isinstance(value, float):
        return f"{value:,.6f}".rstrip("0").rstrip(".") if abs(value) < 1 else f"{value:,.1f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def _rows(results: dict[str, CheckResult]) -> list[tuple[str, str, str]]:
    rows: list[tuple[str, str, str]] = []

    def add(check: str, label: str, *keys: str, sep: str = " / ") -> None:
        if check not in results:
            return
        values = [_m(results, check, k) for k in keys]
        rows.append((check, label, sep.join(_fmt(v) for v in values)))

    add("channel_model", "model sequences / steps / violations", "model_sequences",
        "model_steps", "model_violations")  # fmt: skip
    add("channel_model", "invalid operations refused", "model_rejected_operations")
    add("channel_v1_model", "v1 model sequences / steps / violations", "v1_model_sequences",
        "v1_model_steps", "v1_model_violations")  # fmt: skip
    add("channel_v1_model", "invalid operations refused", "v1_model_rejected_operations")
    add("channel_v1_model", "steps per second", "v1_model_steps_per_second")
    add("soak", "relay SIGKILLs + restarts", "relay_kills")
    add("soak", "soak seconds / wallets / transfers in flight", "soak_seconds", "wallets",
        "in_flight")  # fmt: skip
    add("soak", "transfers attempted / acknowledged", "transfers_attempted", "acknowledged")
    add("soak", "acknowledged lost / duplicated", "acknowledged_lost", "acknowledged_duplicated")
    add("soak", "client successes the relay lacks", "phantom_successes")
    add("soak", "in doubt at a kill / applied before it / on retry", "in_doubt",
        "in_doubt_applied_before_kill", "in_doubt_applied_on_retry")  # fmt: skip
    add("soak", "unresolved / refused", "unresolved", "refused")
    add("soak", "balance sum conserved / balance mismatches", "balance_sum_conserved",
        "balance_mismatches")  # fmt: skip
    add("soak", "acks/s, ack p50 / p99 ms", "acks_per_s", "ack_p50_ms", "ack_p99_ms")
    add("soak", "relay restart p50 / max ms", "restart_p50_ms", "restart_max_ms")
    add("client_crash", "lifecycle steps survived / tried", "client_steps_survived",
        "client_steps_tried")  # fmt: skip
    add("client_crash", "... of which without any remedy", "client_steps_without_remedy")
    if "client_crash" in results:
        for point in _m(results, "client_crash", "points", []):
            verdict = "survived" if point["survived"] else "NOT survived"
            how = "" if point["automatic"] else " (with remedy)"
            rows.append(("client_crash", f"  {point['point']}", verdict + how))
    add("chain_faults", "scenarios ok / tried", "chain_fault_scenarios_ok",
        "chain_fault_scenarios")  # fmt: skip
    add("chain_faults", "outages / anvil restarts / phantom txs", "chain_outages",
        "anvil_restarts", "phantom_txs")  # fmt: skip
    if "chain_faults" in results:
        for sc in _m(results, "chain_faults", "scenarios", []):
            outcome = sc["error"] if sc["error"] != "ok" else "went through"
            state = "completed after return" if sc["completed_after_return"] else "NOT completed"
            rows.append(("chain_faults", f"  {sc['scenario']}",
                         f"{outcome} in {sc['seconds_to_error']} s; {state}"))  # fmt: skip
    add("fuzz_parsers", "parser inputs / calls / crashes", "parser_inputs", "parser_calls",
        "parser_crashes")  # fmt: skip
    add("fuzz_relay", "relay frames / methods covered / refused", "relay_inputs",
        "relay_methods_covered", "relay_refused")  # fmt: skip
    add("fuzz_relay", "relay hangs / dropped / internal errors", "relay_hangs",
        "relay_dropped_connections", "relay_internal_errors")  # fmt: skip
    add("fuzz_relay", "relay ledger total unchanged", "relay_ledger_conserved")
    add("fuzz_endpoint", "endpoint inputs / operations", "endpoint_inputs",
        "endpoint_operations")  # fmt: skip
    add("fuzz_endpoint", "endpoint 500s / other 5xx / unclear errors", "endpoint_500s",
        "endpoint_5xx", "endpoint_unclear_errors")  # fmt: skip
    add("fuzz_endpoint", "schema violations / auth bypasses", "endpoint_schema_violations",
        "endpoint_auth_bypasses")  # fmt: skip
    add("load", "seconds / endpoint clients / relay connections", "load_seconds",
        "endpoint_clients", "relay_connections")  # fmt: skip
    add("load", "endpoint requests / errors / req/s", "endpoint_requests", "endpoint_errors",
        "endpoint_rps")  # fmt: skip
    add("load", "endpoint p50 / p99 ms", "endpoint_p50_ms", "endpoint_p99_ms")
    add("load", "relay requests / errors / req/s", "relay_requests", "relay_errors",
        "relay_rps")  # fmt: skip
    add("load", "relay p50 / p99 ms", "relay_p50_ms", "relay_p99_ms")
    add("load", "error rate", "load_error_rate")
    if "security" in results:
        add("security", "checks passed / run", "security_checks_passed", "security_checks")
        for name, finding in _m(results, "security", "findings", {}).items():
            rows.append(("security", f"  {name}", "pass" if finding["ok"] else "FAIL"))
    return rows


TITLES = {
    "soak": "relay crash soak",
    "client_crash": "client crash",
    "chain_faults": "chain faults",
    "fuzz_parsers": "fuzz: parsers",
    "fuzz_relay": "fuzz: relay",
    "fuzz_endpoint": "fuzz: endpoint",
    "load": "load",
    "security": "security",
    "channel_model": "channel model",
    "channel_v1_model": "channel model (v1)",
}


def render_table(results: dict[str, CheckResult], *, mode: str, seconds: float) -> str:
    rows = _rows(results)
    w1 = max([len(TITLES.get(c, c)) for c, _, _ in rows] + [5])
    w2 = max([len(label) for _, label, _ in rows] + [6])
    lines = [
        f"Reliability and security suite ({mode} run, {seconds:.0f} s, "
        f"{os.cpu_count()} CPUs, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})",
        f"{'check':<{w1}}  {'figure':<{w2}}  value",
        f"{'-' * w1}  {'-' * w2}  {'-' * 24}",
    ]
    previous = None
    for check, label, value in rows:
        shown = TITLES.get(check, check) if check != previous else ""
        previous = check
        lines.append(f"{shown:<{w1}}  {label:<{w2}}  {value}")
    lines.append("")
    for key, result in results.items():
        mark = "ok" if result.ok else f"FAILED ({len(result.violations)})"
        lines.append(f"{TITLES.get(key, key):<{w1}}  {mark} in {result.seconds:.0f} s")
        for violation in result.violations[:8]:
            lines.append(f"{'':<{w1}}    - {violation[:300]}")
    return "\n".join(lines)


def to_json(results: dict[str, CheckResult], *, mode: str, seconds: float) -> dict[str, Any]:
    return {
        **headline(results),
        "all_ok": all(r.ok for r in results.values()),
        "mode": mode,
        "seconds": round(seconds, 1),
        "finished_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "checks": {key: r.to_json() for key, r in results.items()},
    }


def merge_json(previous: dict[str, Any], update: dict[str, Any]) -> dict[str, Any]:
    """``previous`` with the checks of ``update`` (a run of some checks only) replacing
    theirs: the headline keys those checks give, their ``checks`` entries, ``all_ok`` over
    every check; each check keeps its own ``seconds``, and ``updated`` lists what this run
    replaced, so a long check can be re-run without repeating the whole suite."""
    merged = dict(previous)
    merged["checks"] = {**previous.get("checks", {}), **update["checks"]}
    for key, value in update.items():
        if key not in ("checks", "all_ok", "seconds", "mode") and value is not None:
            merged[key] = value
    merged["all_ok"] = all(bool(c.get("ok")) for c in merged["checks"].values())
    merged["updated"] = {"checks": sorted(update["checks"]), "mode": update["mode"],
                         "seconds": update["seconds"]}  # fmt: skip
    return merged


def write_json(path: Path, document: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(document, indent=2, default=str) + "\n")
    tmp.replace(path)
