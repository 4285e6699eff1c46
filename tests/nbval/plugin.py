"""nbval configuration for the walkthrough notebooks, loaded as a plugin.

``make notebooks`` runs ``python -m pytest -p tests.nbval.plugin --nbval ... notebooks``: the
plugin lives here, not as ``notebooks/conftest.py``, so ``notebooks/`` holds only notebooks
(a reader's file browser lists nothing else there). ``python -m`` puts the repository on
``sys.path``, which ``-p`` needs: it imports the plugin before pytest reads its own settings.

stderr is not compared: it carries library warnings (DeprecationWarning from eth-tester and
jupyter_client, ipykernel's "running over TCP" note) that come and go with versions and say
nothing about what the notebook proves (nbval's own tests use this hook, test_ignore.py).

With ``--notebook-probes`` a notebook that has a probe in :mod:`tests.nbval.probes` gets it as
one more cell before its last (the clean-up cell, which must close the session): run in the
same kernel, its outputs not compared, an error in it fails the run. The notebook then runs
once for both checks (nbclient used to run each a second time for its probe).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from typing import Any

import pytest

PROBE_CELL = "probe"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--notebook-probes",
        action="store_true",
        help="run each notebook's probe (tests/nbval/probes.py) before its clean-up cell",
    )


def pytest_collectstart(collector: Any) -> None:
    path = getattr(collector, "path", None)
    if path is None or path.suffix != ".ipynb":
        return
    collector.skip_compare += ("stderr",)
    if not collector.config.getoption("--notebook-probes"):
        return
    from .probes import PROBES

    probe = PROBES.get(path.name)
    if probe is None:
        return
    collect = collector.collect

    def with_probe() -> Iterator[Any]:
        items = list(collect())
        last = items[-1] if items else None
        if last is None or "aclose()" not in last.cell.source:
            raise pytest.UsageError(
                f"{path.name}: its last cell must close the session (the probe runs before it)"
            )
        from nbformat.v4 import new_code_cell
        from nbval.plugin import IPyNbCell

        cell = new_code_cell(probe)
        options = defaultdict(bool, check=False)
        yield from items[:-1]
        yield IPyNbCell.from_parent(
            collector, name=PROBE_CELL, cell_num=last.cell_num, cell=cell, options=options
        )
        yield last

    collector.collect = with_probe
