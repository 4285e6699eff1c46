"""Which method, when: one intent run through every method that can serve it, measured
side by side (gas, fees, time, prompts, capital locked, trust) and projected onto a real
network.

- :mod:`.intent`: :class:`Intent`, what to do (exported at the top level as
  ``ComparisonIntent``);
- :mod:`.run`: :func:`compare_methods`, which runs it for real on the sandbox;
- :mod:`.result`: :class:`MethodRun`, :class:`Comparison` and their JSON;
- :mod:`.curve`: cost and time against the number of payments, break-even points;
- :mod:`.projection`: the rows projected onto a network profile, assumptions beside them;
- :mod:`.plots`: matplotlib figures of the curve.

Names load on first use, so the pure parts import without web3 or pandas.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    "Intent": "intent",
    "Comparison": "result",
    "MethodRun": "result",
    "TxRecord": "result",
    "compare_methods": "run",
}

__all__ = ["Comparison", "Intent", "MethodRun", "TxRecord", "compare_methods"]

__getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)

if TYPE_CHECKING:  # pragma: no cover
    from .intent import Intent
    from .result import Comparison, MethodRun, TxRecord
    from .run import compare_methods
