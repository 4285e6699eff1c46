"""Shared test configuration: every test gets its own SETTLEMENT_HOME, so stores, proof logs
and sandbox profiles never leak between tests or into the user's data dir."""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

# Hypothesis's per-example deadline (200 ms) is a wall-clock assertion: on a shared 2-core
# machine a busy moment failed a property that holds (tests/unit/test_api_protocol.py passed
# 5,000 examples without one). Properties are asserted, times are measured in benchmarks/.
settings.register_profile("settlement", deadline=None)
settings.load_profile("settlement")


@pytest.fixture(autouse=True)
def _isolated_settlement_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    home = tmp_path / "settlement-home"
    home.mkdir()
    monkeypatch.setenv("SETTLEMENT_HOME", str(home))
    monkeypatch.delenv("SETTLEMENT_PROFILE", raising=False)
    monkeypatch.delenv("SETTLEMENT_PRIVATE_KEY", raising=False)
    monkeypatch.delenv("SETTLEMENT_API_NETWORK", raising=False)
    # a Jupyter server exports its home to what it starts (a terminal running pytest):
    # publications go to this test's home (and see below)
    monkeypatch.delenv("SETTLEMENT_SERVER_HOME", raising=False)
    shared = (
        "SETTLEMENT_SHARED_SANDBOX",
        "SETTLEMENT_SHARED_PROFILE",
        "SETTLEMENT_SHARED_EXPLORER",
    )
    for name in shared:
        monkeypatch.delenv(name, raising=False)
    yield home
    # an in-process server that owns a sandbox exports these for its kernels, and every one
    # its home (compare.published.SERVER_HOME_ENV): not past its test
    for name in (*shared[1:], "SETTLEMENT_SERVER_HOME"):
        os.environ.pop(name, None)


def _open_widgets() -> dict[str, object]:
    """The ipywidgets registry (every widget not closed), if ipywidgets is loaded at all."""
    import sys

    module = sys.modules.get("ipywidgets.widgets.widget")
    return getattr(module, "_instances", {}) if module is not None else {}


@pytest.fixture(autouse=True)
def _close_the_widgets_the_test_opened() -> Iterator[None]:
    """ipywidgets keeps every open widget alive: a panel bound to a provider kept its wallet's
    aiohttp session until a later test closed all widgets, and CI blamed a label test for
    another file's leak. The widgets a test opened are closed when it ends."""
    before = set(_open_widgets())
    yield
    for key, widget in list(_open_widgets().items()):
        if key not in before:
            widget.close()  # type: ignore[attr-defined]


@pytest.fixture(autouse=True, scope="module")
def _collect_what_the_module_left() -> Iterator[None]:
    """Collect garbage when a test module ends, so an object its tests left unclosed (an
    aiohttp session warns from ``__del__``) fails in that module (at the teardown of its last
    test) and not wherever the collector next happens to pass. Per module, not per test: a
    full collection costs 50-300 ms on this suite's heap, and after each of 2,800 tests it
    added minutes to ``make test``."""
    yield
    gc.collect()
