"""``python -m benchmarks.reliability --only X --update`` replaces check X in the published
JSON and keeps every other check and headline figure."""

from __future__ import annotations

from benchmarks.reliability.common import CheckResult
from benchmarks.reliability.report import merge_json, to_json


def _result(name: str, metrics: dict[str, int], violations: list[str] | None = None) -> CheckResult:
    return CheckResult(name, metrics=metrics, violations=violations or [], seconds=1.0)


def test_an_update_replaces_only_the_checks_it_ran() -> None:
    full = to_json(
        {
            "channel_model": _result("channel_model", {"model_steps": 1403}),
            "channel_v1_model": _result("channel_v1_model", {"v1_model_steps": 892}, ["x"]),
        },
        mode="full",
        seconds=4000.0,
    )
    assert full["all_ok"] is False and full["v1_model_steps"] == 892
    update = to_json(
        {"channel_v1_model": _result("channel_v1_model", {"v1_model_steps": 1210})},
        mode="full",
        seconds=3000.0,
    )
    merged = merge_json(full, update)
    assert merged["v1_model_steps"] == 1210 and merged["model_steps"] == 1403
    assert merged["checks"]["channel_model"] == full["checks"]["channel_model"]
    assert merged["checks"]["channel_v1_model"]["metrics"]["v1_model_steps"] == 1210
    assert merged["all_ok"] is True and merged["seconds"] == 4000.0
    assert merged["updated"] == {"checks": ["channel_v1_model"], "mode": "full", "seconds": 3000.0}
