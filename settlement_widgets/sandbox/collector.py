"""The cyclic garbage collector, paused while a sandbox starts.

A first start imports web3, eth-account, py-evm and their dependencies (well over a million
objects, nearly none of them garbage): the collector runs a few hundred times meanwhile,
twice over everything, about 0.1 s of CPU for nothing. :func:`paused_collector` switches it
off for the duration of a block and restores the previous state after; reference counting
still frees everything acyclic as usual. :func:`settle_collector` is for a process that owns
its lifetime (the sandbox CLI): what exists once it is running stays for good, so it is moved
out of the collector's sight (``gc.freeze``) instead of being scanned again later.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

__all__ = ["paused_collector", "settle_collector"]


@contextlib.contextmanager
def paused_collector() -> Iterator[None]:
    """Disable the cyclic collector inside the block (nested use is fine)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def settle_collector() -> None:
    """Freeze every object alive now (a long-running process after its start) and make sure
    the collector runs from here on."""
    gc.freeze()
    gc.enable()
