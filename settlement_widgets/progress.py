"""Progress bars for slow awaits in a notebook: :func:`with_progress` and :class:`ProgressBar`.

:func:`with_progress` shows an ``ipywidgets.IntProgress`` while something slow is awaited
(starting the sandbox, waiting for Sepolia blocks). The bar is advanced from a thread, because
the in-process EVM computes on the event loop's thread without yielding.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Awaitable
from typing import TypeVar

__all__ = ["ProgressBar", "progress_percent", "with_progress"]

T = TypeVar("T")


# --- progress ------------------------------------------------------------------------------


def progress_percent(elapsed: float, expected: float) -> int:
    """Where the bar stands after ``elapsed`` of an ``expected`` wait: linear to 90 % at the
    expected time, then creeping towards 99 % (never 100 % before the wait is really over)."""
    if expected <= 0 or elapsed <= 0 or math.isnan(elapsed):
        return 0
    ratio = elapsed / expected
    if ratio <= 1:
        return int(90 * ratio)
    return min(99, 90 + int(9.5 * (1 - math.exp(-(ratio - 1)))))


def _in_ipython() -> bool:
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython comes with ipywidgets
        return False
    return get_ipython() is not None


class ProgressBar:
    """An ``ipywidgets.IntProgress`` that a thread advances with the elapsed time.

    ``start()`` begins ticking, ``finish(ok)`` stops (green at 100 % on success, red where it
    stood on failure). A thread, not an asyncio task: the in-process EVM computes on the event
    loop's thread without yielding, so a task would not run until the wait is over, while a
    thread gets its GIL slices meanwhile.
    """

    def __init__(self, description: str, expected_seconds: float, *, tick: float = 0.2) -> None:
        import ipywidgets

        self.widget = ipywidgets.IntProgress(
            value=0,
            min=0,
            max=100,
            description=description,
            style={"description_width": "initial"},
        )
        self.expected_seconds = expected_seconds
        self._tick = tick
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        started = time.monotonic()

        def run() -> None:
            while not self._stop.wait(self._tick):
                elapsed = time.monotonic() - started
                self.widget.value = progress_percent(elapsed, self.expected_seconds)

        self._thread = threading.Thread(target=run, name="settlement-progress", daemon=True)
        self._thread.start()

    def finish(self, ok: bool) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if ok:
            self.widget.value = 100
        self.widget.bar_style = "success" if ok else "danger"

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()


async def with_progress(
    awaitable: Awaitable[T], description: str, *, expected_seconds: float = 10.0
) -> T:
    """Await ``awaitable`` while a :class:`ProgressBar` (shown in IPython) moves with the
    elapsed time; an error is re-raised unchanged. Outside IPython nothing is shown."""
    if not _in_ipython():
        return await awaitable
    from IPython.display import display

    bar = ProgressBar(description, expected_seconds)
    display(bar.widget)
    bar.start()
    ok = False
    try:
        result = await awaitable
        ok = True
        return result
    finally:
        bar.finish(ok)
