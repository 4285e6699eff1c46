"""The start-up benchmark's own parts run and report what they measured (never how fast: tests
do not assert on timings): the sandbox CLI timed to its profile line, the snapshot source it
reports, the page-cache eviction, and the whole figure set with the slow parts off."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from benchmarks import startup
from benchmarks.page_cache import evict

pytestmark = pytest.mark.slow


async def test_the_cli_is_timed_to_its_profile_line() -> None:
    took, source = await startup.sandbox_process_start(("--no-v4", "--wallets", "1"))
    assert took > 0 and source in ("snapshot", "deployed")


async def test_the_figures_with_the_slow_parts_off() -> None:
    times = await startup.sandbox_start_times(
        runs=1, cold=False, notebook=False, lab=False, no_snapshot=False
    )
    figures = dataclasses.asdict(times)
    assert figures["sandbox_start_process_s"] == times.sandbox_start_process_samples_s[0] > 0
    assert times.sandbox_start_process_source in ("snapshot", "deployed", "deployed/snapshot")
    assert times.inprocess_cold_s > 0 and times.inprocess_warm_s > 0 and times.import_s > 0
    assert times.sandbox_start_process_cold_s is None and times.notebook_first_cell_s is None


def test_eviction_advises_every_file(tmp_path: Path) -> None:
    for i in range(3):
        (tmp_path / f"f{i}").write_bytes(b"x" * 4096)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "g").write_text("y")
    assert evict([tmp_path]) == 4
