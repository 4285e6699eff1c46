"""``HomeLoop``: the event loop a widget was built on, and the way back to it.

JupyterLab 4.6 with ipykernel 7 delivers widget callbacks on *subshell* threads, each with
an event loop of its own. Providers hold state bound to the loop and thread they were made
on (a SQLite connection, a WebSocket, asyncio locks), so an action scheduled on whichever
loop runs the click fails (``SQLite objects created in a thread can only be used in that
same thread``). A widget therefore remembers the loop it was built on and hands every
action to it (``call_soon_threadsafe``); on that loop's own thread it runs at once.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["HomeLoop"]


class HomeLoop:
    """The running loop (and its thread) at construction; adopted at first use if none ran
    then (a widget built in a script before its loop started)."""

    def __init__(self) -> None:
        self.loop: asyncio.AbstractEventLoop | None = None
        self.thread: int | None = None
        try:
            self._adopt(asyncio.get_running_loop())
        except RuntimeError:
            pass

    def _adopt(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop, self.thread = loop, threading.get_ident()

    def usable(self) -> bool:
        """Whether there is a home loop that still runs (adopting the current one if none)."""
        if self.loop is None or self.loop.is_closed():
            try:
                self._adopt(asyncio.get_running_loop())
            except RuntimeError:
                return False
        return True

    def is_here(self) -> bool:
        """Whether the caller runs on the home loop's thread."""
        return self.thread == threading.get_ident()

    def hand_over(self, fn: Callable[..., Any], *args: Any) -> bool:
        """Run ``fn(*args)`` on the home loop if the caller is elsewhere (returns True: it
        will run there, soon); False when the caller is home and should run it itself."""
        if not self.usable() or self.is_here():
            return False
        assert self.loop is not None
        self.loop.call_soon_threadsafe(fn, *args)
        return True
