"""Where callback errors go: an ``Output`` shown beside the widget, never swallowed.

Exceptions raised inside ``observe``/``on_click`` handlers or provider event callbacks have no
cell to print into, so ipywidgets loses them. Each composite carries an :class:`ErrorOutput`
as its last child and reports there (lonboard's ``ErrorOutput`` habit).
"""

from __future__ import annotations

import asyncio
import traceback
from collections.abc import Awaitable, Callable
from typing import Any

import ipywidgets

from ..errors import SettlementError

__all__ = ["ErrorOutput", "run_callback"]


class ErrorOutput(ipywidgets.Output):
    """An ``Output`` that shows ``<Widget>: <where> raised <Error>: <message>`` plus the
    traceback in stderr style; :attr:`messages` lists the one-line summaries."""

    def __init__(self, owner: str) -> None:
        super().__init__()
        self._owner = owner
        self._messages: list[str] = []
        self.add_class("sw-error-output")

    @property
    def messages(self) -> tuple[str, ...]:
        return tuple(self._messages)

    def report(self, exc: BaseException, where: str) -> None:
        summary = f"{self._owner}: {where} raised {type(exc).__name__}: {exc}"
        self._messages.append(summary)
        tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        self.append_stderr(f"{summary}\n{tb}")

    def clear(self) -> None:
        """Forget the shown errors (no kernel needed, unlike ``clear_output``)."""
        self._messages.clear()
        self.outputs = ()

    def __repr__(self) -> str:
        return f"ErrorOutput(owner={self._owner!r}, errors={len(self._messages)})"


def run_callback(errors: ErrorOutput, where: str, callback: Callable[..., Any], *args: Any) -> None:
    """Call ``callback(*args)``; an exception goes to ``errors``. A coroutine result is
    scheduled on the running loop (callbacks schedule coroutines) and its exception,
    if any, is reported the same way."""
    try:
        result = callback(*args)
    except Exception as exc:
        errors.report(exc, where)
        return
    if not asyncio.iscoroutine(result) and not isinstance(result, asyncio.Future):
        return
    awaitable: Awaitable[Any] = result
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        if asyncio.iscoroutine(awaitable):
            awaitable.close()
        errors.report(
            SettlementError(
                "the callback returned a coroutine but no event loop is running to await it"
            ),
            where,
        )
        return
    future = asyncio.ensure_future(awaitable, loop=loop)

    def _done(fut: asyncio.Future[Any]) -> None:
        if fut.cancelled():
            return
        exc = fut.exception()
        if exc is not None:
            errors.report(exc, where)

    future.add_done_callback(_done)
