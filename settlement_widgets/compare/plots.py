"""matplotlib figures of a comparison: cost against payments, time to final.

Figures are built with :class:`matplotlib.figure.Figure` (not ``pyplot``), so nothing global
changes and a caller decides whether to show, save or close them; Jupyter renders a returned
Figure as PNG. matplotlib comes with the ``lab`` extra and is imported here, on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .curve import break_even, comparison_curve
from .result import Comparison

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["cost_vs_payments", "time_to_final"]

_COLOURS = {"channel": "#38bdf8", "v4": "#a855f7", "aggregator": "#f97316"}
_STYLES = ("-", "--", ":", "-.")


def _figure(width: float, height: float) -> Figure:
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), dpi=80)


def cost_vs_payments(comparison: Comparison, up_to: int | None = None) -> Figure:
    """Cumulative cost (USD when the comparison has a price, else gwei) of 1..``up_to``
    payments per run, the channels' break-even points marked."""
    curve = comparison_curve(comparison, up_to)
    usd = comparison.native_usd is not None
    column = "cumulative_cost_usd" if usd else "cumulative_cost_wei"
    fig = _figure(9, 4)
    ax = fig.subplots()
    seen: dict[str, int] = {}
    for label, rows in curve.groupby("label", sort=False):
        method = str(rows["method"].iloc[0])
        style = _STYLES[seen.get(method, 0) % len(_STYLES)]
        seen[method] = seen.get(method, 0) + 1
        values = rows[column] if usd else rows[column] / 10**9
        ax.plot(rows["payments"], values, style, color=_COLOURS.get(method), label=str(label))
    points = break_even(comparison)
    for _, row in points.dropna(subset=["break_even_payments"]).iterrows():
        n = int(row["break_even_payments"])
        if n <= int(curve["payments"].max()) and n > 1:
            ax.axvline(n, color="#94a3b8", lw=0.8, alpha=0.6)
    ax.set_xlabel("payments")
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel("cumulative cost (USD)" if usd else "cumulative cost (gwei)")
    price = f"ETH at ${comparison.native_usd:,.2f} ({comparison.price_source})" if usd else ""
    ax.set_title(
        f"Cost against payments on {comparison.network}, from measured per-step gas"
        + (f"\n{price}" if price else ""),
        fontsize="medium",
    )
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small", loc="upper left")
    fig.tight_layout()
    return fig


def time_to_final(comparison: Comparison) -> Figure:
    """Wall-clock seconds to final per run, split into open, payments and close."""
    fig = _figure(9, 3.2)
    ax = fig.subplots()
    labels = [r.label for r in comparison.runs][::-1]
    runs = list(comparison.runs)[::-1]
    left = [0.0] * len(runs)
    for phase, colour in (("open", "#22c55e"), ("payments", "#38bdf8"), ("close", "#ef4444")):
        widths = [r.phase_seconds[phase] for r in runs]
        ax.barh(labels, widths, left=left, color=colour, label=phase)
        left = [a + b for a, b in zip(left, widths, strict=True)]
    ax.set_xlabel("seconds (wall clock, this run)")
    ax.set_title(
        f"Time to final, {comparison.intent.payments} payment(s) on {comparison.network}",
        fontsize="medium",
    )
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.grid(alpha=0.3, axis="x")
    fig.tight_layout()
    return fig
