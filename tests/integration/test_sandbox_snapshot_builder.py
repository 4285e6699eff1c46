"""The chain snapshots' key and builder: what makes a snapshot stale, and ``python -m
settlement_widgets.sandbox.snapshot`` (what ``make contracts`` runs) building what is missing and
removing what is stale, in a directory of the test's own."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from settlement_widgets.contracts import artifacts_dir
from settlement_widgets.sandbox import LocalSandbox
from settlement_widgets.sandbox.snapshot import key_for
from settlement_widgets.sandbox.snapshot.__main__ import main as build_main


def test_the_key_follows_the_artifacts_and_the_plan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan = LocalSandbox().provision_plan()
    before = key_for("inprocess", plan)
    copy = tmp_path / "artifacts"
    shutil.copytree(artifacts_dir(), copy, ignore=shutil.ignore_patterns("snapshots"))
    monkeypatch.setenv("SETTLEMENT_ARTIFACTS", str(copy))
    assert key_for("inprocess", plan).digest == before.digest  # same content, same key
    custody = copy / "Custody.json"
    custody.write_text(custody.read_text() + " ")
    after = key_for("inprocess", plan)
    assert after.name == before.name and after.digest != before.digest  # stale, same files
    other = key_for("inprocess", dataclasses.replace(plan, wallets=3))
    assert other.name != before.name


def test_the_builder_builds_what_is_missing_and_prunes_what_is_stale(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "snapshots"
    assert build_main(["--dir", str(folder), "--no-anvil"]) == 0
    first = capsys.readouterr().out
    assert first.count("built in") == 2 and "current" not in first
    stale = folder / "inprocess-0000000000000000"
    stale.with_suffix(".json").write_text(
        json.dumps({"key": "0", "inputs": {"backend": "inprocess", "plan": {}}})
    )
    stale.with_suffix(".state").write_bytes(b"")
    assert build_main(["--dir", str(folder), "--no-anvil"]) == 0
    second = capsys.readouterr().out
    assert second.count("current") == 2 and "built in" not in second
    assert "inprocess-0000000000000000: stale, removed" in second
    assert sorted(p.suffix for p in folder.iterdir()) == [".json", ".json", ".state", ".state"]
