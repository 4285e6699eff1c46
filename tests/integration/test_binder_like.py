"""The "binder-like" job: build what Binder builds, without Docker.

From a copy of the repository as a fresh clone would have it (tracked and new files; no
node_modules, no compiled artifacts), in a fresh virtual environment of this machine's Python
(conda is skipped: the pins of binder/environment.yml's pip section are installed with pip):

1. ``pip install`` the pinned packages (and nbval + pytest, the test tools, at this venv's
   versions);
2. ``bash binder/postBuild`` from the repository root: it really runs npm install in
   contracts/, compiles every contract with solc-js and installs the package;
3. the server extension is enabled and ``pip check`` finds the environment consistent;
4. ``binder/start pytest --nbval ...`` runs notebooks 01 and 05 under the environment
   ``start`` sets, against the installed package (not the source tree).

Slow (minutes; the contract build dominates): marked ``slow``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from importlib.metadata import version
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ("notebooks/01_settlement_methods.ipynb", "notebooks/05_aggregator_routes.ipynb")


def _clone_like_copy(target: Path) -> None:
    """Copy what a fresh clone has: tracked files plus new, not-ignored ones (read-only git)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for raw in filter(None, listed):
        rel = raw.decode()
        source = ROOT / rel
        if not source.is_file():  # deleted in the working tree
            continue
        dest = target / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, dest)  # keeps the executable bits of postBuild and start


def _pip_pins(environment_yml: Path) -> tuple[str, list[str]]:
    deps = yaml.safe_load(environment_yml.read_text())["dependencies"]
    conda = {d.split("=")[0]: d.split("=", 1)[1] for d in deps if isinstance(d, str)}
    pip = [line for d in deps if isinstance(d, dict) for line in d["pip"]]
    return conda["pip"], pip


def _run(
    args: list[str], cwd: Path, env: dict[str, str], timeout: float
) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, (
        f"{' '.join(args)} failed ({result.returncode}):\n{result.stdout[-4000:]}\n"
        f"{result.stderr[-4000:]}"
    )
    return result


def test_binder_like_build_and_notebooks(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    _clone_like_copy(repo)
    assert not (repo / "contracts" / "node_modules").exists()
    assert not (repo / "settlement_widgets" / "_artifacts").exists()

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    bin_dir = venv / "bin"
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SETTLEMENT_", "JUPYTER_", "PYTHON", "VIRTUAL_ENV", "PIP_"))
    }
    env.update(
        PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}",
        VIRTUAL_ENV=str(venv),
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        SETTLEMENT_HOME=str(tmp_path / "home"),
        JUPYTER_CONFIG_DIR=str(tmp_path / "jupyter-config"),
        JUPYTER_DATA_DIR=str(tmp_path / "jupyter-data"),
        JUPYTER_RUNTIME_DIR=str(tmp_path / "jupyter-runtime"),
    )
    timings: dict[str, float] = {}

    started = time.monotonic()
    pip_version, pins = _pip_pins(repo / "binder" / "environment.yml")
    python = str(bin_dir / "python")
    _run([python, "-m", "pip", "install", "-q", f"pip=={pip_version}"], repo, env, 600)
    tools = [f"nbval=={version('nbval')}", f"pytest=={version('pytest')}"]
    _run([python, "-m", "pip", "install", "-q", *pins, *tools], repo, env, 1800)
    timings["pip install"] = time.monotonic() - started

    started = time.monotonic()
    _run(["bash", "binder/postBuild"], repo, env, 1800)
    timings["postBuild"] = time.monotonic() - started
    assert (repo / "contracts" / "node_modules" / "solc").is_dir()  # npm install really ran
    site = Path(
        _run(
            [
                python,
                "-c",
                "import settlement_widgets, os; print(os.path.dirname("
                "settlement_widgets.__file__))",
            ],
            tmp_path,
            env,
            120,
        ).stdout.strip()
    )
    assert site.is_relative_to(venv), f"the package must come from the venv, not {site}"
    assert (site / "_artifacts" / "PolicyHook.json").is_file()  # built and shipped

    listing = _run([str(bin_dir / "jupyter"), "server", "extension", "list"], repo, env, 300)
    text = re.sub(r"\x1b\[[0-9;]*m", "", listing.stdout + listing.stderr)
    assert re.search(r"settlement_widgets\s+enabled", text), text
    _run([python, "-m", "pip", "check"], repo, env, 300)

    started = time.monotonic()
    result = _run(
        [
            "bash",
            "binder/start",
            python,
            "-m",
            "pytest",
            "-p",
            "tests.nbval.plugin",
            "--nbval",
            "--nbval-current-env",
            "--nbval-sanitize-with",
            "tests/nbval/sanitize.cfg",
            "-p",
            "no:cacheprovider",
            "-q",
            *NOTEBOOKS,
        ],
        repo,
        env,
        1800,
    )
    timings["nbval 01+05"] = time.monotonic() - started
    assert re.search(r"\d+ passed", result.stdout) and "failed" not in result.stdout
    print("binder-like timings: " + ", ".join(f"{k} {v:.0f} s" for k, v in timings.items()))
