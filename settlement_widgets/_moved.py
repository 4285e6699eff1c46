"""Old import paths of moved modules: a warning and the same objects, for one release.

The channel method's modules moved into ``settlement_widgets/channel/<version>/<layer>/``.
Each old module path is kept as a thin module that star-imports the new one (so its public
names are the very same objects), warns once with :class:`DeprecationWarning` pointing at the
importing line, and forwards any other attribute (private helpers included) with
:func:`moved`'s ``__getattr__``.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable
from typing import Any

__all__ = ["moved"]


def moved(old: str, new: str) -> Callable[[str], Any]:
    """Warn that ``old`` is now ``new`` and return a module ``__getattr__`` forwarding to it."""
    warnings.warn(
        f"{old} moved to {new}; import it from there (the old path goes in the next release)",
        DeprecationWarning,
        stacklevel=3,
    )
    module = importlib.import_module(new)

    def __getattr__(name: str) -> Any:
        try:
            return getattr(module, name)
        except AttributeError:
            raise AttributeError(f"module {old!r} has no attribute {name!r}") from None

    return __getattr__
