"""Cost and time against the number of payments, built from measured per-step figures.

A run of ``payments = N`` measured three things per method: what happened before the first
payment (``open``: a channel's deposit and creation, an approval), what each payment cost
(``payment``: the v4 policy and settlement, the aggregator's approval, bridge transfer and
release; nothing on chain for a channel's off-chain transfer), and what happened after the
last (``close``). From those, the cumulative cost and time of ``n`` payments is

    fixed + n * per_payment,   fixed = open + close,   per_payment = payment phase / N

so the channel's open and close are amortised over its transfers, and v4 and the
aggregator pay per settlement. The figures are the run's own (gas from receipts, seconds from
the clock); only their combination for ``n != N`` is computed, and the frame says so.

:func:`break_even` solves ``fixed_a + n * per_a <= fixed_b + n * per_b`` for the smallest
whole ``n >= 1`` that holds for every larger ``n`` too: from that many payments on, ``a`` (a
channel) costs no more than ``b``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import SettlementValueError
from .result import Comparison, MethodRun

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["RunProfile", "break_even", "comparison_curve", "profile_of", "solve_break_even"]


@dataclass(frozen=True)
class RunProfile:
    """A run split into what it costs once and what it costs per payment (measured)."""

    label: str
    method: str
    measured_payments: int
    fixed_gas: int
    fixed_cost_wei: int
    fixed_seconds: float
    per_payment_gas: float
    per_payment_cost_wei: float
    per_payment_seconds: float

    def cost_wei(self, n: int) -> float:
        return self.fixed_cost_wei + n * self.per_payment_cost_wei

    def gas(self, n: int) -> float:
        return self.fixed_gas + n * self.per_payment_gas

    def seconds(self, n: int) -> float:
        return self.fixed_seconds + n * self.per_payment_seconds


def profile_of(run: MethodRun) -> RunProfile:
    """``run`` as fixed and per-payment figures (see the module docstring)."""
    n = run.payments
    return RunProfile(
        label=run.label,
        method=run.method,
        measured_payments=n,
        fixed_gas=run.phase_gas("open") + run.phase_gas("close"),
        fixed_cost_wei=run.phase_cost_wei("open") + run.phase_cost_wei("close"),
        fixed_seconds=run.phase_seconds["open"] + run.phase_seconds["close"],
        per_payment_gas=run.phase_gas("payment") / n,
        per_payment_cost_wei=run.phase_cost_wei("payment") / n,
        per_payment_seconds=run.phase_seconds["payments"] / n,
    )


def comparison_curve(comparison: Comparison, up_to: int | None = None) -> pd.DataFrame:
    """A tidy frame: one row per run and number of payments ``1..up_to`` (default: the
    comparison's own), with cumulative gas, cost (wei, and USD where the comparison has a
    price), seconds and cost per payment."""
    import pandas as pd

    last = up_to if up_to is not None else comparison.intent.payments
    if isinstance(last, bool) or not isinstance(last, int) or last < 1:
        raise SettlementValueError(f"up_to must be an int >= 1, got {up_to!r}")
    rows = []
    for run in comparison.runs:
        p = profile_of(run)
        for n in range(1, last + 1):
            cost = p.cost_wei(n)
            rows.append(
                {
                    "label": p.label,
                    "method": p.method,
                    "payments": n,
                    "cumulative_gas": round(p.gas(n)),
                    "cumulative_cost_wei": round(cost),
                    "cumulative_cost_usd": (
                        cost / 10**18 * comparison.native_usd
                        if comparison.native_usd is not None
                        else None
                    ),
                    "cumulative_seconds": p.seconds(n),
                    "cost_per_payment_wei": cost / n,
                }
            )
    frame = pd.DataFrame(rows)
    frame.attrs.update(
        {
            "kind": "built from the measured per-step figures of one run per method",
            "measuredPayments": comparison.intent.payments,
            "network": comparison.network,
            "priceSource": comparison.price_source,
        }
    )
    return frame


def solve_break_even(a: RunProfile, b: RunProfile, metric: str = "cost") -> int | None:
    """The smallest ``n >= 1`` from which on ``a`` costs (``metric="cost"``, wei) or takes
    (``"seconds"``) no more than ``b`` for every larger ``n`` too; ``None`` if there is no
    such ``n`` (``a`` costs more per payment, so it ends dearer whatever it starts at)."""
    if metric == "cost":
        fa, pa = float(a.fixed_cost_wei), a.per_payment_cost_wei
        fb, pb = float(b.fixed_cost_wei), b.per_payment_cost_wei
    elif metric == "seconds":
        fa, pa = a.fixed_seconds, a.per_payment_seconds
        fb, pb = b.fixed_seconds, b.per_payment_seconds
    else:
        raise SettlementValueError(f"metric must be 'cost' or 'seconds', got {metric!r}")
    if pa > pb:
        return None  # whatever it starts at, a ends dearer: no break-even that lasts
    if pa == pb:
        return 1 if fa <= fb else None
    return max(1, math.ceil((fa - fb) / (pb - pa)))


def break_even(comparison: Comparison, metric: str = "cost") -> pd.DataFrame:
    """For each channel run against each other run: the number of payments from which the
    channel costs (or takes) no more; ``None`` where it never does."""
    import pandas as pd

    profiles = [profile_of(r) for r in comparison.runs]
    rows = [
        {
            "channel": a.label,
            "against": b.label,
            "metric": metric,
            "break_even_payments": solve_break_even(a, b, metric),
        }
        for a in profiles
        if a.method == "channel"
        for b in profiles
        if b.method != "channel"
    ]
    return pd.DataFrame(rows, columns=["channel", "against", "metric", "break_even_payments"])
