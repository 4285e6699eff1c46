"""The package as a pip user gets it: ``python -m build`` on a fresh copy of the repository
gives an sdist and a wheel; the wheel installs into a new venv (no checkout on its path), with
its dependencies, where ``settlement-sandbox`` starts without writing a file into the
installed package and the README's scripts run against it; then pip builds the sdist into a
wheel and installs it over the first (``--no-deps``: the dependencies are the same, and
installing them twice cost CI two minutes), and the same holds for it. A build without the
compiled contracts fails, naming them.

Slow (a venv, a few minutes), still in ``make test``: a package that imports but cannot
start a sandbox is what this catches, and nothing else does.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from readme_scripts import readme_scripts, run_beside_sandbox

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "settlement_widgets" / "_artifacts"


def _fresh_copy(dest: Path, *, artifacts: bool) -> Path:
    """The files a clone has (tracked, or new and not ignored), as they are in the working
    tree, plus the compiled artifacts ``make contracts`` built when ``artifacts``."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, capture_output=True, check=True,
    ).stdout.decode().split("\0")  # fmt: skip
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():
            target = dest / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    if artifacts:
        (dest / "settlement_widgets" / "_artifacts").mkdir(parents=True)
        for path in ARTIFACTS.glob("*.json"):
            shutil.copy2(path, dest / "settlement_widgets" / "_artifacts" / path.name)
    return dest


def _build(source: Path, outdir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(outdir), str(source)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip


@pytest.fixture(scope="module")
def dists(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    if not list(ARTIFACTS.glob("*.json")):
        pytest.fail("no compiled artifacts in the checkout: run `make contracts` first")
    work = tmp_path_factory.mktemp("dist")
    source = _fresh_copy(work / "src", artifacts=True)
    built = _build(source, work / "out")
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-3000:]
    (sdist,) = (work / "out").glob("*.tar.gz")
    (wheel,) = (work / "out").glob("*.whl")
    yield {"sdist": sdist, "wheel": wheel}


def test_a_build_without_the_compiled_contracts_fails_and_names_them(tmp_path: Path) -> None:
    source = _fresh_copy(tmp_path / "src", artifacts=False)
    built = _build(source, tmp_path / "out")
    assert built.returncode != 0
    assert "lacks" in built.stderr and "make contracts" in built.stderr
    assert not list((tmp_path / "out").glob("*.whl"))


def test_sdist_and_wheel_carry_every_artifact_and_the_licences(dists: dict[str, Path]) -> None:
    expected = sorted(p.name for p in ARTIFACTS.glob("*.json"))
    with tarfile.open(dists["sdist"]) as sdist:
        names = sdist.getnames()
    in_sdist = sorted(Path(n).name for n in names if "/settlement_widgets/_artifacts/" in n)
    assert in_sdist == expected
    assert not [n for n in names if "node_modules" in n or "/snapshots/" in n]
    with zipfile.ZipFile(dists["wheel"]) as wheel:
        files = wheel.namelist()
    in_wheel = sorted(Path(n).name for n in files if n.startswith("settlement_widgets/_artifacts/"))
    assert in_wheel == expected
    licences = {Path(n).name for n in files if ".dist-info/licenses/" in n}
    assert {"LICENSE", "THIRD_PARTY_NOTICES.md", "BUSL-1.1-uniswap-v4-core.txt"} <= licences


def _pip(python: Path, *args: str) -> None:
    installed = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", *args],
        capture_output=True, text=True, timeout=1200,
    )  # fmt: skip
    assert installed.returncode == 0, installed.stderr[-3000:]


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new venv (its python): the tests install the wheel, then the sdist, into it."""
    where = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", str(where)], check=True, timeout=300)
    return where / "bin" / "python"


def _install(python: Path, dist: Path, kind: str) -> None:
    """The wheel with its dependencies; the sdist (built into a wheel by pip) over it."""
    if kind == "wheel":
        _pip(python, str(dist))
    else:
        _pip(python, "--no-deps", "--force-reinstall", str(dist))
    # what pip installed last is this file (PEP 610's record of where it came from)
    site = python.parent.parent / "lib"
    (record,) = site.glob("python*/site-packages/settlement_widgets-*.dist-info")
    assert dist.name in (record / "direct_url.json").read_text()


def _tree(folder: Path) -> dict[str, int]:
    return {str(p.relative_to(folder)): p.stat().st_mtime_ns for p in folder.rglob("*")}


@pytest.mark.parametrize("kind", ["wheel", "sdist"])
def test_installed_package_starts_a_sandbox_and_runs_the_readme_scripts(
    kind: str, dists: dict[str, Path], venv: Path, tmp_path: Path
) -> None:
    """The wheel runs every README script; the sdist (built into a wheel by pip, without
    node) the v0.5 channel one. Neither writes a file into the installed package."""
    python = venv
    _install(python, dists[kind], kind)
    ours = ("SETTLEMENT_", "PYTHON", "VIRTUAL")
    env = {k: v for k, v in os.environ.items() if not k.startswith(ours)}
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    located = subprocess.run(
        [str(python), "-c", "import settlement_widgets, sys; print(settlement_widgets.__file__)"],
        capture_output=True, text=True, cwd=tmp_path, env=env, check=True,
    )  # fmt: skip
    package = Path(located.stdout.strip()).parent
    assert package.is_relative_to(python.parent.parent), package  # the install, not the checkout
    before = _tree(package)
    scripts = readme_scripts()
    if kind == "sdist":
        scripts = [s for s in scripts if "import ChannelProvider\n" in s.code]
        assert len(scripts) == 1
    outputs = run_beside_sandbox(python.parent, scripts, tmp_path, env)
    assert all(out.strip() for out in outputs.values())
    assert _tree(package) == before  # nothing written into the installed package
    assert list((tmp_path / "cache" / "settlement_widgets" / "snapshots").rglob("*.state"))
