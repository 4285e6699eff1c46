"""Progress bars for slow awaits in a notebook: :func:`with_progress` and :class:`ProgressBar`.

:func:`with_progress` shows a label and an ``ipywidgets.IntProgress`` while something slow is
awaited (starting the sandbox, waiting for Sepolia blocks), then one line saying how long it
took. The bar is advanced from a thread, because the in-process EVM computes on the event
loop's thread without yielding.
"""

from __future__ import annotations

import functools
import html
import math
import threading
import time
from collections.abc import Awaitable
from typing import Any, TypeVar

__all__ = [
    "ProgressBar",
    "format_seconds",
    "progress_percent",
    "progress_summary",
    "with_progress",
]

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


def format_seconds(seconds: float) -> str:
    """A wall-clock duration for people: ``0.4 s``, ``12.3 s``, ``2 min 5 s``."""
    if not math.isfinite(seconds) or seconds < 0:
        seconds = 0.0
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest} s"


def progress_summary(description: str, ok: bool, elapsed: float | None) -> str:
    """The one line a finished bar collapses to: ``Funding: done in 1.4 s`` (or ``failed
    after``). notebooks/nbval_sanitize.cfg masks the time, the only part that varies."""
    if elapsed is None:
        return f"{description}: {'done' if ok else 'failed'}"
    return f"{description}: {'done in' if ok else 'failed after'} {format_seconds(elapsed)}"


def _label_html(text: str, colour: str | None = None) -> str:
    """The bar's label, escaped, at body size in the theme's text colour (or ``colour``)."""
    from .widgets.render import BODY, FG, SANS

    return (
        f'<span class="sw-progress-text" style="font:{BODY} {SANS};'
        f'color:{colour or FG};white-space:nowrap">{html.escape(text)}</span>'
    )


def _in_ipython() -> bool:
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython comes with ipywidgets
        return False
    return get_ipython() is not None


@functools.cache
def _progress_line_class() -> type[Any]:
    """The box class of a bar, made once on first use (ipywidgets is imported lazily)."""
    import ipywidgets

    class ProgressLine(ipywidgets.HBox):  # type: ignore[misc]
        """The bar's box, with a short, stable ``repr``: it is what a notebook saves as the
        output's text (nbval compares it), and an ``IntProgress`` repr carries its style.
        Its display bundle also carries ``text/html``: the line's label as it reads when
        displayed, for readers without a kernel (nbconvert, GitHub), like our widgets'
        snapshots (``widgets/snapshot.py``)."""

        line_description = ""

        def __repr__(self) -> str:
            return f"ProgressBar({self.line_description!r})"

        def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any] | None:
            bundle: dict[str, Any] | None = super()._repr_mimebundle_(**kwargs)
            label = self.children[0] if self.children else None
            if bundle is not None and isinstance(label, ipywidgets.HTML):
                bundle["text/html"] = f'<div class="sw-progress-static">{label.value}</div>'
            return bundle

    return ProgressLine


class ProgressBar:
    """A label and an ``ipywidgets.IntProgress`` that a thread advances with the elapsed time.

    The label is a widget of its own, not the bar's ``description``: a long description
    squeezed the bar to a sliver inside its fixed-width box. ``start()`` begins ticking;
    ``finish(ok)`` stops (green at 100 % on success, red where it stood on failure), records
    :attr:`elapsed` and collapses the line to ``"<description>: done in 1.4 s"``, so a
    finished wait takes one line and says how long it took. A thread, not an asyncio task: the
    in-process EVM computes on the event loop's thread without yielding, so a task would not
    run until the wait is over, while a thread gets its GIL slices meanwhile.
    """

    def __init__(self, description: str, expected_seconds: float, *, tick: float = 0.2) -> None:
        import ipywidgets

        self.description = description
        self.bar = ipywidgets.IntProgress(
            value=0,
            min=0,
            max=100,
            layout=ipywidgets.Layout(width="20em", max_width="100%", margin="0"),
        )
        self.bar.add_class("sw-progress-bar")
        self.label = ipywidgets.HTML(
            _label_html(description), layout=ipywidgets.Layout(margin="0 12px 0 0")
        )
        self.label.add_class("sw-progress-label")
        self.widget = _progress_line_class()(
            [self.label, self.bar],
            layout=ipywidgets.Layout(align_items="center", flex_flow="row wrap"),
        )
        self.widget.line_description = description
        self.widget.add_class("sw-progress-line")
        self.expected_seconds = expected_seconds
        self.elapsed: float | None = None
        self._tick = tick
        self._started: float | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        started = self._started = time.monotonic()

        def run() -> None:
            while not self._stop.wait(self._tick):
                elapsed = time.monotonic() - started
                self.bar.value = progress_percent(elapsed, self.expected_seconds)

        self._thread = threading.Thread(target=run, name="settlement-progress", daemon=True)
        self._thread.start()

    def finish(self, ok: bool) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self._started is not None:
            self.elapsed = time.monotonic() - self._started
        if ok:
            self.bar.value = 100
        self.bar.bar_style = "success" if ok else "danger"
        from .widgets.viewmodels import GREEN, RED

        summary = progress_summary(self.description, ok, self.elapsed)
        self.label.value = _label_html(("✓ " if ok else "✗ ") + summary, GREEN if ok else RED)
        self.widget.children = (self.label,)

    @property
    def summary(self) -> str | None:
        """The collapsed line's text once finished (None while running)."""
        if not self._stop.is_set():
            return None
        return progress_summary(self.description, self.bar.bar_style == "success", self.elapsed)

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
