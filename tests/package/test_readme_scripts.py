"""The README's scripts, run exactly as printed beside the sandboxes they name, from the
checkout's environment (``test_build_and_install.py`` runs them from the installed wheel)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from readme_scripts import readme_scripts, run_beside_sandbox

pytestmark = pytest.mark.slow


def test_the_readme_names_a_script_for_each_method() -> None:
    scripts = readme_scripts()
    imports = "\n".join(s.code for s in scripts)
    for provider in ("ChannelProvider", "ChannelProviderV1", "V4Provider", "AggregatorProvider"):
        assert f"import {provider}" in imports or f", {provider}" in imports, provider
    assert all("asyncio.run(main())" in s.code for s in scripts)


def test_every_readme_script_runs_as_printed(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SETTLEMENT_")}
    outputs = run_beside_sandbox(Path(sys.executable).parent, readme_scripts(), tmp_path, env)
    printed = "\n".join(outputs.values())
    assert printed.count("sent 1.0 ytest.usd to 0x") == 2  # v0.5 and v1
    assert "IntentSettled" in printed
    assert "DONE COMPLETED" in printed
