"""The benchmark report's ratios and statuses (pure: benchmarks/report.py on made-up runs).

What a run measures is the smoke test's (tests/integration/test_benchmarks_smoke.py); here,
that the ratios are computed from the CPU per transfer and the floor of the same run, and
that the table says what the JSON says: MISSED for a missed target, and the rule by which a
target was met when it was an alternative one.
"""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks.report import render_table, summarize


def _phase(tps: float, client: float, server: float) -> dict[str, Any]:
    return {
        "count": 100,
        "wall_s": 100 / tps,
        "tps": tps,
        "client_cpu_us": client,
        "server_cpu_us": server,
        "p50_ms": 1.0,
        "p99_ms": 2.0,
    }


def _raw(*, v05: tuple[float, float, float], v1: tuple[float, float, float]) -> dict[str, Any]:
    def run(protocol: str, seq: tuple[float, float, float]) -> dict[str, Any]:
        return {
            "durability": "full",
            "window": 64,
            "protocol": protocol,
            "sequential": [_phase(*seq)],
            "concurrent": [_phase(seq[0] * 3, seq[1] / 3, seq[2] / 3)],
            "stored_done": 200,
        }

    return {
        "provider_runs": [run("v0.5", v05)],
        "v1_provider_runs": [run("v1", v1)],
        "floor": {
            # floor CPU per transfer: 2 x (20 + 30) + (10 + 10) = 120 us
            "crypto": {
                "sign_us": 20.0,
                "recover_us": 30.0,
                "sign_wall_us": 20.0,
                "recover_wall_us": 30.0,
            },
            "echo": {
                "sequential_rtt_ns": [50_000] * 10,
                "sequential_wall_s": 0.0005,
                "pipelined_count": 1000,
                "pipelined_wall_s": 0.02,
                "pipelined_client_cpu_s": 0.01,
                "pipelined_server_cpu_s": 0.01,
            },
            "fsync": {"median_us": 150.0, "p99_us": 800.0},
        },
    }


META = {
    "date": "2026-11-29T00:00:00Z",
    "quick": True,
    "loops": "asyncio",
    "filesystem": {"path": "/tmp", "mount": "/tmp", "type": "tmpfs", "device": "tmpfs"},
}


def test_cpu_ratios_are_over_the_same_runs_floor() -> None:
    out = summarize(_raw(v05=(1000, 300, 180), v1=(500, 700, 500)))
    assert out["floor_transfer_cpu_us"] == pytest.approx(120)
    assert out["provider_cpu_per_transfer_ratio"] == pytest.approx(480 / 120)
    assert out["provider_cpu_per_transfer_ratio_concurrent"] == pytest.approx(160 / 120)
    assert out["v1_provider_cpu_per_transfer_ratio"] == pytest.approx(1200 / 120)
    assert out["v1_provider_transfer_sequential_tps"] == 500
    assert out["v1_provider_speed_ratio"] == pytest.approx(0.5)
    targets = out["targets"]
    assert targets["provider_cpu_per_transfer_ratio"]["met"] is True  # 4.0 <= 4
    assert targets["provider_cpu_per_transfer_ratio_concurrent"]["met"] is True
    assert targets["v1_provider_cpu_per_transfer_ratio"]["met"] is False
    assert targets["v1_provider_speed_ratio"]["met"] is False


def _status_of(table: str, label: str) -> str:
    line = next(line for line in table.splitlines() if line.strip().startswith(label))
    return line.rstrip().rsplit("  ", 1)[-1].strip()


def test_the_table_says_missed_where_the_json_does_and_names_the_filesystem() -> None:
    out = summarize(_raw(v05=(1000, 300, 180), v1=(500, 700, 500)))
    table = render_table(out, META)
    assert _status_of(table, "CPU ratio to floor, sequential") == "ok"
    assert _status_of(table, "ChannelProviderV1.transfer (Nitrolite v1), sequential") == "MISSED"
    missed = [key for key, t in out["targets"].items() if t["met"] is False]
    assert table.count("MISSED") == len(missed)
    assert "ledgers and the fsync floor on tmpfs (/tmp, tmpfs)" in table
    assert "fsync there does not reach a disk" in table


def test_a_target_met_by_the_fsync_rule_names_the_rule_in_the_table() -> None:
    raw = _raw(v05=(1000, 300, 180), v1=(500, 700, 500))
    # 1,000 transfers/s is short of 1,500, but 1 ms per transfer is within 1.5x... of a
    # 700 us fsync floor: the disk binds, and the row says so
    raw["floor"]["fsync"]["median_us"] = 700.0
    out = summarize(raw)
    target = out["targets"]["provider_transfer_sequential_tps"]
    assert target["met"] is True and target["by"] == "within 1.5x of the fsync floor"
    table = render_table(out, META)
    assert (
        _status_of(table, "ChannelProvider.transfer, sequential")
        == "ok: within 1.5x of the fsync floor"
    )


def test_the_v1_bench_lifts_every_rate_limit_of_the_node_and_no_size_limit() -> None:
    """The v1 provider run measures the work, not the node's limiters: with one request per
    transfer, the byte rate (not only the request rate) cut the full run's connection."""
    from benchmarks.provider import unlimited_node_env
    from settlement_widgets.channel.v1.node.config import RATE_LIMIT_ENV, rate_limits_from_env

    limits = rate_limits_from_env(unlimited_node_env())
    assert set(limits) == set(RATE_LIMIT_ENV) - {"ws_max_message_size"}
    assert all(value >= 1e9 for value in limits.values())


def test_the_bench_times_notebooks_with_make_notebooks_command() -> None:
    """The bench's nbval run is the Makefile's (a sanitize file that moved made every
    notebook fail in the bench, not in make test): every flag of ``NBVAL`` and the probes,
    with files that exist."""
    import re
    import shlex

    from benchmarks.startup import REPO, notebook_command

    makefile = (REPO / "Makefile").read_text()
    nbval = re.search(r"^NBVAL := (.*?[^\\])$", makefile, re.MULTILINE | re.DOTALL)
    assert nbval is not None
    flags = shlex.split(nbval.group(1).replace("\\\n", " "))
    flags = flags[flags.index("pytest") + 1 :]
    command = notebook_command(REPO / "notebooks" / "dashboard.ipynb")
    for flag in flags:
        assert flag in command or str(REPO / flag) in command, flag
    assert "--notebook-probes" in command
    sanitize = command[command.index("--nbval-sanitize-with") + 1]
    assert (REPO / sanitize).is_file()
