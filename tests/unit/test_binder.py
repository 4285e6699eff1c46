"""Lint of binder/: what repo2docker reads must build the same environment
next month as today, and the README's Binder links must point at files that exist.

- environment.yml: conda-forge; python and nodejs pinned; every conda package pinned with
  ``=``; every pip package pinned with ``==`` (no ranges, no local paths); the Jupyter stack
  pinned together; and every dependency of the package (postBuild installs it with
  ``--no-deps``) listed at a version its pyproject range allows.
- no runtime.txt (ignored next to environment.yml) or requirements.txt (same).
- postBuild: executable, a bash shebang, ``set -euo pipefail`` before any command, builds the
  contracts and installs the package; never ``jupyter lab build``.
- start: executable, a bash shebang, sets the local network, ends with ``exec "$@"``, and
  runs the server with the app's Jupyter settings (``jupyter-app/``: kernel culling, the
  Voila template, hidden cells) first on Jupyter's config and data paths.
- README: every ``labpath=`` / ``urlpath=voila/render/`` link names an existing notebook, and
  the JupyterLab badge is there.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
BINDER = ROOT / "binder"
JUPYTER_STACK = (
    "jupyterlab",
    "jupyter-server",
    "ipywidgets",
    "jupyterlab-widgets",
    "widgetsnbextension",
    "ipykernel",
    "voila",
)
LAB_BADGE_PATH = "notebooks/01_settlement_methods.ipynb"


def _environment() -> dict[str, object]:
    data = yaml.safe_load((BINDER / "environment.yml").read_text())
    assert isinstance(data, dict)
    return data


def _conda_and_pip(env: dict[str, object]) -> tuple[list[str], list[str]]:
    conda: list[str] = []
    pip: list[str] = []
    for dep in env["dependencies"]:  # type: ignore[attr-defined]
        if isinstance(dep, dict):
            pip.extend(dep["pip"])
        else:
            conda.append(str(dep))
    return conda, pip


def _pip_pins() -> dict[str, Requirement]:
    _, pip = _conda_and_pip(_environment())
    return {canonicalize_name(Requirement(line).name): Requirement(line) for line in pip}


def test_environment_uses_conda_forge_and_pins_python_and_node() -> None:
    env = _environment()
    assert env["channels"] == ["conda-forge"]
    conda, _ = _conda_and_pip(env)
    names = {}
    for dep in conda:
        match = re.fullmatch(r"([A-Za-z0-9_.-]+)=(\d+(?:\.\d+)+)", dep)
        assert match, f"conda dependency {dep!r} is not pinned as name=X.Y.Z"
        names[match.group(1)] = match.group(2)
    assert {"python", "nodejs", "pip"} <= names.keys()
    assert names["python"].startswith("3.11") or names["python"].startswith("3.12")
    assert int(names["nodejs"].split(".")[0]) >= 20


def test_every_pip_package_is_pinned_exactly_once() -> None:
    _, pip = _conda_and_pip(_environment())
    seen: set[str] = set()
    for line in pip:
        assert not line.startswith(("-", ".", "/", "file:", "git+")), f"local/option: {line}"
        req = Requirement(line)
        assert req.url is None, f"{line}: no URLs"
        specs = list(req.specifier)
        assert len(specs) == 1 and specs[0].operator == "==", f"{line} is not pinned with =="
        assert "*" not in specs[0].version, f"{line}: no wildcards"
        name = canonicalize_name(req.name)
        assert name not in seen, f"{req.name} is listed twice"
        seen.add(name)


def test_the_jupyter_stack_is_pinned_together() -> None:
    pins = _pip_pins()
    missing = [name for name in JUPYTER_STACK if name not in pins]
    assert not missing, f"pin the Jupyter stack in binder/environment.yml: {missing}"
    # ipywidgets 8 needs jupyterlab_widgets 3 and widgetsnbextension 4 (ipywidgets#3577)
    assert str(pins["ipywidgets"].specifier).startswith("==8.")
    assert str(pins["jupyterlab-widgets"].specifier).startswith("==3.")
    assert str(pins["widgetsnbextension"].specifier).startswith("==4.")


def test_every_package_dependency_is_pinned_within_its_range() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    needed = [*project["dependencies"], *project["optional-dependencies"]["lab"]]
    pins = _pip_pins()
    for line in needed:
        req = Requirement(line)
        name = canonicalize_name(req.name)
        assert name in pins, f"{req.name} (a dependency in pyproject.toml) is not in binder/"
        pinned = next(iter(pins[name].specifier)).version
        assert req.specifier.contains(pinned, prereleases=True), (
            f"binder pins {req.name}=={pinned}, outside pyproject's {req.specifier}"
        )
        assert req.extras <= pins[name].extras, f"{req.name}: pin the extras {req.extras}"


def test_no_config_that_environment_yml_would_shadow() -> None:
    assert not (BINDER / "runtime.txt").exists()
    assert not (BINDER / "requirements.txt").exists()
    assert not (ROOT / ".binder").exists(), "binder/ and .binder/ together are an error"


def _script(name: str) -> list[str]:
    path = BINDER / name
    assert os.access(path, os.X_OK), f"binder/{name} must be executable (chmod +x)"
    lines = path.read_text().splitlines()
    assert lines[0] in ("#!/usr/bin/env bash", "#!/bin/bash"), f"binder/{name}: bash shebang"
    return [ln.strip() for ln in lines[1:] if ln.strip() and not ln.strip().startswith("#")]


def test_post_build_stops_on_errors_and_installs_the_built_package() -> None:
    commands = _script("postBuild")
    assert commands[0] == "set -euo pipefail", "the first command must be set -euo pipefail"
    text = "\n".join(commands)
    assert "node contracts/build.js" in text
    assert re.search(r"pip install .*--no-deps .*\.$", text, re.MULTILINE)
    assert text.index("node contracts/build.js") < text.index("pip install")
    assert "jupyter lab build" not in text


def test_start_selects_the_local_network_and_execs() -> None:
    commands = _script("start")
    assert commands[-1] == 'exec "$@"'
    assert any(
        re.match(r'export SETTLEMENT_NETWORK="\$\{SETTLEMENT_NETWORK:-local\}"', c)
        for c in commands
    )


def test_start_puts_the_app_settings_first_on_jupyters_paths(tmp_path: Path) -> None:
    # run binder/start from elsewhere (repo2docker's working directory is not ours to assume)
    # with a stand-in server command that prints the environment it was given
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER_", "SETTLEMENT_"))}
    env["JUPYTER_CONFIG_PATH"] = "/image/etc/jupyter"  # the image's own entries stay, after ours
    out = subprocess.run(
        [
            str(BINDER / "start"),
            sys.executable,
            "-c",
            "import json, os; print(json.dumps(dict(os.environ)))",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    ).stdout
    seen = json.loads(out)
    app = ROOT / "jupyter-app"
    assert seen["JUPYTER_CONFIG_PATH"].split(os.pathsep) == [
        str(app / "etc" / "jupyter"),
        "/image/etc/jupyter",
    ]
    assert seen["JUPYTER_PATH"].split(os.pathsep) == [str(app / "share" / "jupyter")]
    assert (app / "etc" / "jupyter" / "jupyter_server_config.py").is_file()
    assert (app / "etc" / "jupyter" / "voila.py").is_file()
    assert (app / "share" / "jupyter" / "nbconvert" / "templates" / "settlement").is_dir()
    assert seen["SETTLEMENT_NETWORK"] == "local"


def binder_link_paths(markdown: str) -> list[str]:
    """The repository paths named by the mybinder.org links of ``markdown``."""
    paths = []
    for url in re.findall(r"https://mybinder\.org/v2/[^\s)\"'>]+", markdown):
        query = parse_qs(urlsplit(url).query)
        for value in query.get("labpath", []):
            paths.append(unquote(value))
        for value in query.get("urlpath", []):
            target = unquote(value)
            for prefix in ("voila/render/", "lab/tree/", "tree/"):
                if target.startswith(prefix):
                    paths.append(target.removeprefix(prefix))
                    break
            else:
                paths.append(target)  # an unknown form: it must still name a file
    return paths


def missing_paths(markdown: str, root: Path) -> list[str]:
    return [p for p in binder_link_paths(markdown) if not (root / p).is_file()]


def test_badge_checker_finds_lab_and_voila_paths_and_missing_files(tmp_path: Path) -> None:
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "01.ipynb").write_text("{}")
    markdown = (
        "[![lab](https://mybinder.org/badge_logo.svg)](https://mybinder.org/v2/gh/o/r/v1"
        "?labpath=notebooks%2F01.ipynb)\n"
        "[![voila](https://img.shields.io/badge/x)](https://mybinder.org/v2/gh/o/r/v1"
        "?urlpath=voila%2Frender%2Fnotebooks%2Fdashboard.ipynb)\n"
    )
    assert binder_link_paths(markdown) == ["notebooks/01.ipynb", "notebooks/dashboard.ipynb"]
    assert missing_paths(markdown, tmp_path) == ["notebooks/dashboard.ipynb"]


def test_readme_binder_links_point_at_existing_notebooks() -> None:
    readme = (ROOT / "README.md").read_text()
    assert missing_paths(readme, ROOT) == []
    assert LAB_BADGE_PATH in binder_link_paths(readme), (
        f"README.md needs the JupyterLab Binder badge (labpath={LAB_BADGE_PATH})"
    )


@pytest.mark.parametrize("name", ["postBuild", "start"])
def test_scripts_have_unix_line_endings(name: str) -> None:
    assert b"\r\n" not in (BINDER / name).read_bytes()
