"""``python -m benchmarks --quick`` runs end to end and writes a complete, well-typed JSON.

A smoke test, not a measurement: nothing here asserts on timings (the machine is shared).
It checks that every section ran (exit status 0), that every key issue 12 asks for is present
with a sane type, that the SDK and our library signed byte-identical frames, and that the
printed table carries the headline rows.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.interop]

REPO = Path(__file__).resolve().parents[2]

POSITIVE_NUMBERS = (
    # issue 20's headline: what users run
    "provider_transfer_sequential_tps",
    "provider_transfer_sequential_p50_ms",
    "provider_transfer_sequential_p99_ms",
    "provider_transfer_concurrent_tps",
    "relay_pipelined_tps",
    "fsync_floor_us",
    "get_settlement_auth_rps",
    "sandbox_start_process_s",
    # issue 37: CPU per transfer over the same run's floor, both protocols, and v1's rates
    "provider_cpu_per_transfer_ratio",
    "provider_cpu_per_transfer_ratio_concurrent",
    "v1_provider_cpu_per_transfer_ratio",
    "v1_provider_cpu_per_transfer_ratio_concurrent",
    "v1_provider_transfer_sequential_tps",
    "v1_provider_transfer_sequential_p50_ms",
    "v1_provider_transfer_sequential_p99_ms",
    "v1_provider_transfer_concurrent_tps",
    "v1_provider_speed_ratio",
    # the reference rows
    "transfer_sequential_tps",
    "transfer_sequential_p50_ms",
    "transfer_sequential_p99_ms",
    "transfer_sequential_p999_ms",
    "transfer_sequential_client_cpu_us",
    "transfer_sequential_relay_cpu_us",
    "transfer_pipelined_tps",
    "transfer_pipelined_client_cpu_us",
    "transfer_pipelined_relay_cpu_us",
    "cost_ratio_to_floor",
    "cost_ratio_sequential_wall",
    "floor_sign_us",
    "floor_recover_us",
    "floor_echo_rtt_p50_us",
    "floor_echo_pipelined_msgs_per_s",
    "floor_transfer_cpu_us",
    "signing_ours_fps",
    "signing_sdk_fps",
    "signing_ratio_vs_sdk",
    "get_settlement_rps",
    "get_settlement_p99_ms",
    "sandbox_startup_s",
    "import_s",
)


def _positive(value: Any) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value > 0
    )


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], str]:
    out = tmp_path_factory.mktemp("bench") / "latest.json"
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--quick", "--pipeline", "32", "--json", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert proc.returncode == 0, f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr[-4000:]}"
    return json.loads(out.read_text()), proc.stdout


def test_every_headline_key_is_a_positive_number(quick_run: tuple[dict[str, Any], str]) -> None:
    result, _ = quick_run
    bad = {key: result.get(key) for key in POSITIVE_NUMBERS if not _positive(result.get(key))}
    assert bad == {}
    assert result["errors"] == {}


def test_the_percentiles_and_counts_are_consistent(quick_run: tuple[dict[str, Any], str]) -> None:
    result, _ = quick_run
    assert (
        result["transfer_sequential_p50_ms"]
        <= result["transfer_sequential_p99_ms"]
        <= result["transfer_sequential_p999_ms"]
    )
    assert result["transfer_pipeline_window"] == 32
    run = result["details"]["transfer_runs"][0]
    assert run["durability"] == result["transfer_durability"] == result["durability"] == "full"
    assert "fsync" in run["durability_note"]
    assert (
        result["provider_transfer_sequential_p50_ms"]
        <= result["provider_transfer_sequential_p99_ms"]
    )
    assert result["relay_pipelined_tps"] == result["transfer_pipelined_tps"]
    provider = result["details"]["provider_runs"][0]
    assert provider["durability"] == "full" and provider["window"] == 64
    sent = sum(p["count"] for p in provider["sequential"] + provider["concurrent"])
    assert provider["stored_done"] >= sent  # every transfer stored done (plus the warm-up)
    v1 = result["details"]["v1_provider_runs"][0]
    assert v1["protocol"] == "v1" and v1["durability"] == "full"
    assert v1["stored_done"] >= sum(p["count"] for p in v1["sequential"] + v1["concurrent"])
    # the ratios are the CPU totals over the floor, as printed
    for prefix in ("", "v1_"):
        seq = result[f"{prefix}provider_transfer_sequential_cpu_us"]
        assert seq == pytest.approx(
            result[f"{prefix}provider_transfer_sequential_client_cpu_us"]
            + result[f"{prefix}provider_transfer_sequential_server_cpu_us"]
        )
        ratio = result[f"{prefix}provider_cpu_per_transfer_ratio"]
        assert ratio == pytest.approx(seq / result["floor_transfer_cpu_us"])
    assert result["v1_provider_speed_ratio"] == pytest.approx(
        result["v1_provider_transfer_sequential_tps"] / result["provider_transfer_sequential_tps"]
    )
    for sample in run["sequential"] + run["pipelined"]:
        assert sample["count"] > 0 and sample["tps"] > 0
        assert sample["client_cpu_us"] > 0 and sample["relay_cpu_us"] > 0


def test_sdk_and_library_frames_are_byte_identical(quick_run: tuple[dict[str, Any], str]) -> None:
    result, _ = quick_run
    assert result["signing_frames_identical"] is True
    assert "nitrolite" in result["details"]["signing"]["sdk_versions"]


def test_targets_and_meta_are_recorded(quick_run: tuple[dict[str, Any], str]) -> None:
    result, _ = quick_run
    assert set(result["targets"]) >= {
        "provider_transfer_sequential_tps",
        "provider_transfer_sequential_p50_ms",
        "provider_transfer_sequential_p99_ms",
        "provider_transfer_concurrent_tps",
        "relay_pipelined_tps",
        "get_settlement_auth_rps",
        "sandbox_start_process_s",
        "cost_ratio_to_floor",
        "signing_ratio_vs_sdk",
        "import_s",
        "provider_cpu_per_transfer_ratio",
        "provider_cpu_per_transfer_ratio_concurrent",
        "v1_provider_cpu_per_transfer_ratio",
        "v1_provider_cpu_per_transfer_ratio_concurrent",
        "v1_provider_speed_ratio",
    }
    for entry in result["targets"].values():
        assert isinstance(entry["met"], bool)
        assert entry["kind"] in ("min", "max")
    meta = result["meta"]
    assert meta["quick"] is True and meta["loops"] in ("asyncio", "uvloop")
    assert set(meta["filesystem"]) >= {"path", "type", "device"}
    assert "notebooks" not in result  # --quick skips them


def test_the_table_is_printed(quick_run: tuple[dict[str, Any], str]) -> None:
    result, stdout = quick_run
    for label in (
        "ChannelProviderV1.transfer (Nitrolite v1), sequential [full]",
        "ChannelProviderV1.transfer, 64 in flight [full]",
        "CPU ratio to floor, sequential",
        "CPU ratio to floor, in flight",
        f"ledgers and the fsync floor on {result['meta']['filesystem']['type']}",
        "ChannelProvider.transfer, sequential [full]",
        "ChannelProvider.transfer, 64 in flight [full]",
        "floor: fsync",
        "reference: lean client, sequential",
        "relay pipelined (lean client)",
        "CPU/transfer total (cost ratio)",
        "floor: sign | recover",
        "floor: ws echo",
        "request signing",
        "GET /api/settlement, token, Jupyter extension",
        "GET /api/settlement, token, standalone",
        "sandbox start-up, whole process",
        "import settlement_widgets",
    ):
        assert label in stdout


def test_bad_flags_are_refused_with_a_clear_message() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--only", "nonsense"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "unknown section(s) nonsense" in proc.stderr
