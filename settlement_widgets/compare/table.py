"""The comparison as a table for people: units in the cells, every transaction a link.

:meth:`Comparison.frame` is the table for code (numbers, one unit per column). Here each
cell says its unit (``ETH``, ``USD``, the asset's symbol), the transactions of a run are
links to the explorer (a link no reader could open, such as a private sandbox's loopback
port, stays text: :func:`~settlement_widgets.links.link_html`), and wall-clock figures carry
a ``⏱`` so a reader (and the notebook test's sanitizer) knows they change from run to run.
"""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING

from ..links import link_html
from .result import FEE_KINDS, Comparison, MethodRun

if TYPE_CHECKING:
    from pandas.io.formats.style import Styler

__all__ = ["comparison_styler", "wall_clock"]

#: the columns of :func:`comparison_styler`, units in the cells
STYLER_COLUMNS = (
    "transactions",
    "gas",
    "cost (native)",
    "cost (USD)",
    "fees",
    "received",
    "time to final",
    "blocks",
    "prompts (sign / send)",
    "capital locked",
    "dispute window",
)


def wall_clock(seconds: float) -> str:
    """Seconds measured by the clock on this run, marked as such (``⏱ 1.23 s``)."""
    return f"⏱ {seconds:.2f} s"


def _units(amount: int, run: MethodRun) -> str:
    value = Decimal(amount).scaleb(-run.decimals)
    return f"{value.normalize():f} {run.asset}" if amount else f"0 {run.asset}"


def _tx_links(run: MethodRun) -> str:
    parts = []
    for tx in run.txs:
        name = tx.step if tx.payment is None else f"{tx.step}#{tx.payment + 1}"
        parts.append(link_html(tx.explorer_url, name))
    return f"{len(run.txs)}: " + ", ".join(parts)


def comparison_styler(comparison: Comparison) -> Styler:
    """A pandas Styler of ``comparison``: one row per run, units in the cells, the cheapest
    and the fastest rows marked, every transaction a link to its explorer page."""
    import pandas as pd

    rows = {}
    for run in comparison.runs:
        fees = ", ".join(
            f"{kind} {_units(run.fees_base_units[kind], run)}"
            for kind in FEE_KINDS
            if run.fees_base_units[kind]
        )
        marks = [m for m in ("cheapest", "fastest") if getattr(comparison, m) == run.label]
        label = run.label + (f" ({', '.join(marks)})" if marks else "")
        window = run.dispute_window_seconds
        rows[label] = {
            "transactions": _tx_links(run),
            "gas": f"{run.gas_used:,}",
            "cost (native)": f"{Decimal(run.cost_native_wei).scaleb(-18):.8f} ETH",
            "cost (USD)": "n/a" if run.cost_usd is None else f"${run.cost_usd:,.4f}",
            "fees": fees or "none",
            "received": _units(run.received_base_units, run),
            "time to final": wall_clock(run.wall_seconds),
            "blocks": str(run.blocks),
            "prompts (sign / send)": f"{run.signature_prompts} / {run.transaction_prompts}",
            "capital locked": (
                f"{_units(run.locked_base_units, run)} for {wall_clock(run.locked_seconds)}"
                if run.locked_base_units
                else "none"
            ),
            "dispute window": "none" if window is None else f"{window:,} s",
        }
    frame = pd.DataFrame.from_dict(rows, orient="index", columns=list(STYLER_COLUMNS))
    frame.index.name = f"{comparison.intent.payments} payment(s), measured on {comparison.network}"
    marked = {comparison.cheapest, comparison.fastest}

    def highlight(row: pd.Series) -> list[str]:
        hit = any(str(row.name).startswith(f"{label} (") for label in marked if label)
        return ["background-color: rgba(34, 197, 94, 0.12)" if hit else ""] * len(row)

    styler = frame.style.format(escape=None).apply(highlight, axis=1)
    styler = styler.set_uuid("compare").set_table_styles(
        [{"selector": "td", "props": "text-align: left; vertical-align: top; font-size: 0.85em"}]
    )
    return styler
