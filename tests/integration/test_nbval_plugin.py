"""tests/nbval/plugin.py (``make notebooks`` loads it with ``-p``) really makes nbval ignore
stderr (and only stderr): a probe notebook whose stored stderr differs from what it prints
passes with the plugin and fails without; a stdout difference still fails with it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook, new_output

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def _probe(path: Path, stored_stdout: str) -> None:
    nb = new_notebook(
        metadata={
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}
        }
    )
    cell = new_code_cell(
        "import sys, uuid\nprint(uuid.uuid4(), file=sys.stderr)\nprint('same')", execution_count=1
    )
    cell.outputs = [
        new_output("stream", name="stderr", text="a warning from another run\n"),
        new_output("stream", name="stdout", text=stored_stdout),
    ]
    nb.cells.append(cell)
    nbformat.write(nb, path)


def _nbval(folder: Path, *plugin: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            *plugin,
            "--nbval",
            "--nbval-current-env",
            "-p",
            "no:cacheprovider",
            "-rA",
            "-q",
            ".",
        ],
        cwd=folder,
        # as `make notebooks` runs it: the repository importable, so -p finds the plugin
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_only_stderr_is_left_out_of_the_comparison(tmp_path: Path) -> None:
    _probe(tmp_path / "stderr_differs.ipynb", "same\n")
    _probe(tmp_path / "stdout_differs.ipynb", "different\n")
    without = _nbval(tmp_path)
    assert "FAILED stderr_differs.ipynb" in without.stdout, without.stdout
    result = _nbval(tmp_path, "-p", "tests.nbval.plugin")
    assert "PASSED stderr_differs.ipynb" in result.stdout, result.stdout
    assert "FAILED stdout_differs.ipynb" in result.stdout, result.stdout


def _notebook(path: Path, *sources: str) -> None:
    nb = new_notebook(
        metadata={
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}
        }
    )
    nb.cells = [new_code_cell(src, execution_count=None) for src in sources]
    nbformat.write(nb, path)


SESSION_CLOSED = "class Session:\n    async def aclose(self): pass\n\nawait Session().aclose()"


def test_notebook_probes_run_before_the_clean_up_cell_and_fail_the_run(tmp_path: Path) -> None:
    """``--notebook-probes`` runs the notebook's probe (tests/nbval/probes.py, by file name) as
    a cell before the last, in the same kernel: here 01's probe meets a namespace without the
    selector it checks, so the run fails on that cell and only there."""
    _notebook(tmp_path / "01_settlement_methods.ipynb", "selector = None", SESSION_CLOSED)
    plain = _nbval(tmp_path, "-p", "tests.nbval.plugin")
    assert plain.returncode == 0 and "::probe" not in plain.stdout, plain.stdout
    probed = _nbval(tmp_path, "-p", "tests.nbval.plugin", "--notebook-probes")
    assert "FAILED 01_settlement_methods.ipynb::probe" in probed.stdout, probed.stdout
    assert "AttributeError" in probed.stdout
    assert "PASSED 01_settlement_methods.ipynb::Cell 0" in probed.stdout
    assert "PASSED 01_settlement_methods.ipynb::Cell 1" in probed.stdout


def test_a_notebook_whose_last_cell_keeps_the_session_is_refused(tmp_path: Path) -> None:
    _notebook(tmp_path / "01_settlement_methods.ipynb", "selector = None", "print('done')")
    probed = _nbval(tmp_path, "-p", "tests.nbval.plugin", "--notebook-probes")
    assert probed.returncode != 0
    assert "its last cell must close the session" in probed.stdout + probed.stderr
