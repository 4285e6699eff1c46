"""Which method, when: one intent run through every method that can serve it, measured
side by side (gas, fees, time, prompts, capital locked, trust) and projected onto a real
network.

- :mod:`.intent`: :class:`Intent`, what to do (exported at the top level as
  ``ComparisonIntent``);
- :mod:`.run`: :func:`compare_methods`, which runs it for real on the sandbox;
- :mod:`.result`: :class:`MethodRun`, :class:`Comparison` and their JSON;
- :mod:`.curve`: cost and time against the number of payments, break-even points;
- :mod:`.projection`: the rows projected onto a network profile, assumptions beside them;
- :mod:`.plots`: matplotlib figures of the curve;
- :mod:`.wire`: a strict reader of the JSON into the read-only view widgets and the
  endpoint use; :mod:`.published`: the last comparison of a network, for the server.

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
    "RunProfile": "curve",
    "break_even": "curve",
    "comparison_curve": "curve",
    "profile_of": "curve",
    "MAINNET_LIKE_PROFILE": "projection",
    "SEPOLIA_PROFILE": "projection",
    "NetworkProfile": "projection",
    "Projection": "projection",
    "profile_from_chain": "projection",
    "project": "projection",
    "cost_vs_payments": "plots",
    "time_to_final": "plots",
    "comparison_styler": "table",
    "ComparisonView": "wire",
    "parse_comparison": "wire",
    "comparison_path": "published",
    "publish_comparison": "published",
    "read_published": "published",
}

__all__ = [
    "MAINNET_LIKE_PROFILE",
    "SEPOLIA_PROFILE",
    "Comparison",
    "ComparisonView",
    "Intent",
    "MethodRun",
    "NetworkProfile",
    "Projection",
    "RunProfile",
    "TxRecord",
    "break_even",
    "compare_methods",
    "comparison_curve",
    "comparison_path",
    "comparison_styler",
    "cost_vs_payments",
    "parse_comparison",
    "profile_from_chain",
    "profile_of",
    "project",
    "publish_comparison",
    "read_published",
    "time_to_final",
]

__getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)

if TYPE_CHECKING:  # pragma: no cover
    from .curve import RunProfile, break_even, comparison_curve, profile_of
    from .intent import Intent
    from .plots import cost_vs_payments, time_to_final
    from .projection import (
        MAINNET_LIKE_PROFILE,
        SEPOLIA_PROFILE,
        NetworkProfile,
        Projection,
        profile_from_chain,
        project,
    )
    from .published import comparison_path, publish_comparison, read_published
    from .result import Comparison, MethodRun, TxRecord
    from .run import compare_methods
    from .table import comparison_styler
    from .wire import ComparisonView, parse_comparison
