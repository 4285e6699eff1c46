"""Fuzzing (shortened): the frame parsers, every relay method over a live WebSocket, and the
endpoint through schemathesis; nothing crashes, hangs or answers 500, refusals are clear."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from benchmarks.reliability.fuzz import fuzz_endpoint, fuzz_parsers, run_relay_fuzz
from benchmarks.reliability.stack import EndpointStack
from settlement_widgets.errors import InvalidFrameError


def test_the_frame_parsers_refuse_garbage_cleanly() -> None:
    result = fuzz_parsers(400)
    assert result.violations == []
    assert result.metrics["parser_inputs"] == 400
    assert result.metrics["parser_crashes"] == 0
    assert result.metrics["parser_refused"] > 0


def test_the_parser_fuzzer_reports_a_crashing_or_vague_parser() -> None:
    def crashes(frame: Any) -> None:
        raise TypeError("boom")

    def vague(frame: Any) -> None:
        raise InvalidFrameError("internal error")

    result = fuzz_parsers(20, {"crashes": crashes, "vague": vague})
    assert result.metrics["parser_crashes"] == 40
    assert any(v.startswith("crashes: TypeError") for v in result.violations)
    assert any(v.startswith("vague: unclear message") for v in result.violations)


@pytest.mark.slow
async def test_every_relay_method_refuses_fuzzed_frames_cleanly(tmp_path: Path) -> None:
    result = await run_relay_fuzz(tmp_path, 250)
    assert result.violations == []
    m = result.metrics
    # 250 random frames, plus one frame for any method the random run did not reach
    assert 250 <= m["relay_inputs"] <= 250 + 14
    assert m["relay_methods_covered"] == 14
    assert (m["relay_hangs"], m["relay_dropped_connections"], m["relay_internal_errors"]) == (
        0,
        0,
        0,
    )
    assert m["relay_refused"] > 0 and m["relay_ledger_conserved"] is True


@pytest.mark.slow
def test_the_endpoint_never_answers_500(endpoint_stack: EndpointStack) -> None:
    api = endpoint_stack.api
    assert api is not None
    result = fuzz_endpoint(api.base, api.endpoint, api.auth, 6)
    assert result.violations == []
    m = result.metrics
    assert m["endpoint_operations"] == 4
    assert 4 <= m["endpoint_inputs"] <= 4 * 2 * 6  # hypothesis stops early on small spaces
    assert m["endpoint_500s"] == m["endpoint_5xx"] == m["endpoint_auth_bypasses"] == 0
    assert m["endpoint_schema_violations"] == 0 and m["endpoint_unclear_errors"] == 0
