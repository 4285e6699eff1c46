"""A user error at ``settlement-sandbox``'s start is one line on stderr and exit status 2,
never a traceback: what to do, named (an anvil that is not there, contracts that are not)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

SCRIPT = Path(sys.executable).parent / "settlement-sandbox"


def _run(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SCRIPT), *args],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
        env={**os.environ, "SETTLEMENT_HOME": str(tmp_path / "home"), **env},
    )  # fmt: skip


@pytest.mark.parametrize(
    ("args", "env", "says"),
    [
        (
            ("--chain", "anvil"),
            {"SETTLEMENT_ANVIL": "/nonexistent/anvil"},
            "SETTLEMENT_ANVIL (/nonexistent/anvil) is not an executable anvil binary",
        ),
        (
            ("--no-snapshot",),
            {"SETTLEMENT_ARTIFACTS": "/nonexistent"},
            "SETTLEMENT_ARTIFACTS points at a directory without it",
        ),
    ],
    ids=["anvil", "artifacts"],
)
def test_a_user_error_is_one_line_and_exit_status_2(
    tmp_path: Path, args: tuple[str, ...], env: dict[str, str], says: str
) -> None:
    ran = _run(tmp_path, *args, **env)
    assert ran.returncode == 2
    assert "Traceback" not in ran.stderr
    errors = [line for line in ran.stderr.splitlines() if line.startswith("settlement-sandbox:")]
    assert len(errors) == 1 and says in errors[0], ran.stderr[-2000:]
    assert ran.stdout == ""  # no profile printed: nothing started
    assert not (tmp_path / "home" / "sandbox" / "profile.json").exists()
