"""The notebook helpers' pure parts: the progress curve, the network choice, the progress bar
(a real ipywidgets IntProgress driven by its thread) and with_progress inside and outside
IPython."""

from __future__ import annotations

import asyncio
import math
import threading
from collections.abc import Iterator

import pytest

from settlement_widgets.errors import InvalidNetworkError
from settlement_widgets.notebook import (
    ProgressBar,
    _network_name,
    progress_percent,
    with_progress,
)


def test_progress_is_linear_to_90_at_the_expected_time() -> None:
    assert progress_percent(0, 10) == 0
    assert progress_percent(5, 10) == 45
    assert progress_percent(10, 10) == 90


def test_progress_creeps_towards_99_and_never_reaches_100() -> None:
    values = [progress_percent(t, 10) for t in (11, 15, 20, 40, 1000, 1e9)]
    assert values == sorted(values)
    assert 90 < values[1] < 99 and values[-1] == 99
    assert all(v < 100 for v in values)


@pytest.mark.parametrize(("elapsed", "expected"), [(-1, 10), (5, 0), (5, -3), (math.nan, 10)])
def test_progress_of_nonsense_inputs_is_zero(elapsed: float, expected: float) -> None:
    assert progress_percent(elapsed, expected) == 0


def test_network_name_reads_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SETTLEMENT_NETWORK", raising=False)
    assert _network_name(None) == "local"
    monkeypatch.setenv("SETTLEMENT_NETWORK", " Sepolia ")
    assert _network_name(None) == "sepolia"
    assert _network_name("local") == "local"  # an explicit name wins


def test_unknown_network_name_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SETTLEMENT_NETWORK", "mainnet")
    with pytest.raises(InvalidNetworkError, match=r"mainnet.*local, sepolia.*SETTLEMENT_NETWORK"):
        _network_name(None)


def _wait_for_value(bar: ProgressBar, minimum: int) -> bool:
    reached = threading.Event()

    def seen(change: dict[str, int]) -> None:
        if change["new"] >= minimum:
            reached.set()

    bar.widget.observe(seen, names=["value"])
    return reached.wait(10)


def test_progress_bar_advances_from_its_thread_and_ends_green() -> None:
    bar = ProgressBar("waiting", expected_seconds=0.5, tick=0.05)
    assert bar.widget.value == 0 and bar.widget.description == "waiting"
    bar.start()
    assert _wait_for_value(bar, 1)
    assert bar.running
    bar.finish(True)
    assert not bar.running
    assert (bar.widget.value, bar.widget.bar_style) == (100, "success")


def test_progress_bar_ends_red_where_it_stood_on_failure() -> None:
    bar = ProgressBar("failing", expected_seconds=0.5, tick=0.05)
    bar.start()
    assert _wait_for_value(bar, 1)
    bar.finish(False)
    assert bar.widget.bar_style == "danger" and 0 < bar.widget.value < 100
    assert not bar.running


async def test_with_progress_outside_ipython_just_awaits() -> None:
    async def answer() -> int:
        await asyncio.sleep(0)
        return 42

    assert await with_progress(answer(), "x") == 42

    async def boom() -> None:
        raise KeyError("boom")

    with pytest.raises(KeyError, match="boom"):
        await with_progress(boom(), "x")


@pytest.fixture
def ipython() -> Iterator[object]:
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    yield shell
    InteractiveShell.clear_instance()


async def test_with_progress_in_ipython_displays_a_bar(
    ipython: object, capsys: pytest.CaptureFixture[str]
) -> None:
    async def answer() -> str:
        await asyncio.sleep(0)
        return "done"

    assert await with_progress(answer(), "Starting", expected_seconds=1) == "done"
    shown = capsys.readouterr().out
    assert "IntProgress(" in shown and "description='Starting'" in shown

    async def boom() -> None:
        raise ConnectionError("no chain")

    with pytest.raises(ConnectionError, match="no chain"):
        await with_progress(boom(), "Failing")
    assert "description='Failing'" in capsys.readouterr().out
