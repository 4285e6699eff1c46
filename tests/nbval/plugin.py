"""nbval configuration for the walkthrough notebooks, loaded as a plugin.

``make notebooks`` runs ``python -m pytest -p tests.nbval.plugin --nbval ... notebooks``: the
plugin lives here, not as ``notebooks/conftest.py``, so ``notebooks/`` holds only notebooks
(a reader's file browser lists nothing else there). ``python -m`` puts the repository on
``sys.path``, which ``-p`` needs: it imports the plugin before pytest reads its own settings.

stderr is not compared: it carries library warnings (DeprecationWarning from eth-tester and
jupyter_client, ipykernel's "running over TCP" note) that come and go with versions and say
nothing about what the notebook proves (nbval's own tests use this hook, test_ignore.py).
"""

from __future__ import annotations

from typing import Any


def pytest_collectstart(collector: Any) -> None:
    path = getattr(collector, "path", None)
    if path is not None and path.suffix == ".ipynb":
        collector.skip_compare += ("stderr",)
