"""The notebook helpers' pure parts: the progress curve, the network choice, the progress bar
(a label and a real ipywidgets IntProgress driven by its thread, collapsing to one line with
the elapsed time) and with_progress inside and outside IPython."""

from __future__ import annotations

import asyncio
import math
import threading
from collections.abc import Iterator

import pytest

from settlement_widgets.errors import InvalidNetworkError
from settlement_widgets.notebook import ProgressBar, _network_name, progress_percent, with_progress
from settlement_widgets.progress import format_seconds, progress_summary


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

    bar.bar.observe(seen, names=["value"])
    return reached.wait(10)


def test_progress_bar_advances_from_its_thread_and_ends_green() -> None:
    bar = ProgressBar("Starting the local sandbox", expected_seconds=0.5, tick=0.05)
    # the label is a widget of its own: a long description does not squeeze the bar
    assert bar.widget.children == (bar.label, bar.bar)
    assert bar.bar.description == "" and bar.bar.layout.width == "20em"
    assert "Starting the local sandbox" in bar.label.value
    assert bar.bar.value == 0 and bar.summary is None
    bar.start()
    assert _wait_for_value(bar, 1)
    assert bar.running
    bar.finish(True)
    assert not bar.running
    assert (bar.bar.value, bar.bar.bar_style) == (100, "success")
    # finished: one line that says how long it took
    assert bar.widget.children == (bar.label,)
    assert bar.elapsed is not None and bar.elapsed > 0
    assert bar.summary == f"Starting the local sandbox: done in {bar.elapsed:.1f} s"
    assert bar.summary in bar.label.value


def test_progress_bar_ends_red_where_it_stood_on_failure() -> None:
    bar = ProgressBar("failing", expected_seconds=0.5, tick=0.05)
    bar.start()
    assert _wait_for_value(bar, 1)
    bar.finish(False)
    assert bar.bar.bar_style == "danger" and 0 < bar.bar.value < 100
    assert not bar.running
    assert bar.widget.children == (bar.label,)
    assert "failing: failed after " in bar.label.value


def test_progress_line_displays_a_stable_text_and_a_drawing_for_readers_without_a_kernel() -> None:
    bar = ProgressBar("Funding the channel", expected_seconds=1)
    bundle = bar.widget._repr_mimebundle_()
    assert bundle["text/plain"] == "ProgressBar('Funding the channel')"
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert "Funding the channel" in bundle["text/html"] and "done" not in bundle["text/html"]
    bar.start()
    bar.finish(True)
    assert "Funding the channel: done in " in bar.widget._repr_mimebundle_()["text/html"]


def test_progress_label_is_escaped() -> None:
    bar = ProgressBar("<img src=x onerror=alert(1)>", expected_seconds=1)
    assert "<img" not in bar.label.value and "&lt;img src=x" in bar.label.value
    bar.finish(True)
    assert "<img" not in bar.label.value and "&lt;img src=x" in bar.label.value


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0.0 s"), (1.44, "1.4 s"), (59.9, "59.9 s"), (60, "1 min 0 s"), (125.4, "2 min 5 s")],
)
def test_format_seconds(seconds: float, text: str) -> None:
    assert format_seconds(seconds) == text


@pytest.mark.parametrize("bad", [-1.0, math.nan, math.inf])
def test_format_seconds_of_nonsense_is_zero(bad: float) -> None:
    assert format_seconds(bad) == "0.0 s"


def test_progress_summary() -> None:
    assert progress_summary("Funding", True, 1.44) == "Funding: done in 1.4 s"
    assert progress_summary("Funding", False, 0.2) == "Funding: failed after 0.2 s"
    assert progress_summary("Funding", True, None) == "Funding: done"


def test_summary_times_are_masked_for_nbval() -> None:
    """tests/nbval/sanitize.cfg masks the times a finished bar and the dashboard's log
    show, and nothing else of the line."""
    import configparser
    import re
    from pathlib import Path

    cfg = configparser.ConfigParser()
    cfg.read(Path(__file__).resolve().parents[2] / "tests" / "nbval" / "sanitize.cfg")

    def sanitize(text: str) -> str:
        for section in cfg.sections():
            text = re.sub(cfg[section]["regex"], cfg[section]["replace"], text)
        return text

    one = sanitize(progress_summary("Funding", True, 1.44) + " | " + "12:03:04  faucet (1.2 s)")
    two = sanitize(progress_summary("Funding", True, 125.0) + " | " + "23:59:01  faucet (61 s)")
    assert one == two == "Funding: done in N s | HH:MM:SS  faucet (N s)"
    assert sanitize("Funding: failed after 2 min 5 s") == "Funding: failed after N s"
    assert sanitize("challenge period 3600 s") == "challenge period 3600 s"


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
    # a short, stable text for the output nbval compares (not the IntProgress' traits)
    assert shown == "ProgressBar('Starting')\n"

    async def boom() -> None:
        raise ConnectionError("no chain")

    with pytest.raises(ConnectionError, match="no chain"):
        await with_progress(boom(), "Failing")
    assert capsys.readouterr().out == "ProgressBar('Failing')\n"
