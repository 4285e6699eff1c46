"""Routes as a pandas DataFrame: one row per route, best first, stable columns and dtypes.

Dtype choices (``ROUTE_COLUMNS`` is the contract, and a test holds us to it):

- Amounts in smallest units (``from_amount``, ``to_amount``, ``to_amount_min``) are
  ``object`` columns holding Python ``int``. They must be exact and uint256 amounts overflow
  ``int64``/``Int64`` (1e18-decimal tokens pass 2**63 at about 9.2 tokens).
- The same amounts in human units (``*_units``) and every USD value are ``float64``: for
  reading, sorting and plotting. They are rounded views; the exact values stay in the int
  columns and on the :class:`~settlement_widgets.aggregator.models.Route` objects
  (:class:`~decimal.Decimal`). Unknown USD values are NaN.
- Counts and chain ids are nullable ``Int64``; text is the ``string`` dtype.

``df.attrs`` says where the data came from: ``source`` is ``"recorded"`` or ``"live"``,
``recorded`` a bool, and ``note`` a sentence for recorded data. pandas is imported when the
function runs, so importing the aggregator stays light.

:func:`routes_styler` is the same frame for people: a pandas ``Styler`` with the columns a
reader needs under plain names ("Tool", "You receive", "Fees (USD)"...), every text escaped,
in the notebook theme's colours.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from .models import RECORDED_NOTE, Route
from .ranking import net_value, rank_routes

if TYPE_CHECKING:
    import pandas as pd
    from pandas.io.formats.style import Styler
    from pandas.io.formats.style_render import CSSDict

__all__ = ["ROUTE_COLUMNS", "ROUTE_TABLE_COLUMNS", "routes_frame", "routes_styler"]

#: Column -> dtype of :func:`routes_frame`, in order.
ROUTE_COLUMNS: dict[str, str] = {
    "rank": "Int64",
    "route_id": "string",
    "tools": "string",
    "steps": "Int64",
    "from_chain_id": "Int64",
    "to_chain_id": "Int64",
    "from_token": "string",
    "to_token": "string",
    "from_amount": "object",
    "from_amount_units": "float64",
    "to_amount": "object",
    "to_amount_units": "float64",
    "to_amount_min": "object",
    "to_amount_min_units": "float64",
    "from_amount_usd": "float64",
    "to_amount_usd": "float64",
    "fees_usd": "float64",
    "included_fees_usd": "float64",
    "gas_usd": "float64",
    "net_usd": "float64",
    "net_min_usd": "float64",
    "duration_s": "float64",
    "tags": "string",
}


def _f(value: Decimal | None) -> float:
    return math.nan if value is None else float(value)


def _row(route: Route) -> dict[str, Any]:
    value = net_value(route)
    return {
        "rank": route.rank,
        "route_id": route.id,
        "tools": " > ".join(route.tools),
        "steps": len(route.steps),
        "from_chain_id": route.from_chain_id,
        "to_chain_id": route.to_chain_id,
        "from_token": route.from_token.symbol,
        "to_token": route.to_token.symbol,
        "from_amount": route.from_amount,
        "from_amount_units": float(route.from_amount_units),
        "to_amount": route.to_amount,
        "to_amount_units": float(route.to_amount_units),
        "to_amount_min": route.to_amount_min,
        "to_amount_min_units": float(route.to_token.units(route.to_amount_min)),
        "from_amount_usd": _f(route.from_amount_usd),
        "to_amount_usd": _f(value.received_usd if value else route.to_amount_usd),
        "fees_usd": _f(value.fees_usd if value else None),
        "included_fees_usd": _f(value.included_fees_usd if value else None),
        "gas_usd": _f(value.gas_usd if value else route.gas_cost_usd),
        "net_usd": _f(value.net_usd if value else None),
        "net_min_usd": _f(value.net_min_usd if value else None),
        "duration_s": route.duration,
        "tags": ",".join(route.tags),
    }


def routes_frame(routes: Iterable[Route], *, recorded: bool | None = None) -> pd.DataFrame:
    """One row per route, ranked best first (see :mod:`.ranking` for the rule).

    ``recorded`` overrides the label; by default the frame is recorded when any route is.
    An empty input gives an empty frame with the same columns and dtypes.
    """
    import pandas as pd

    ranked = rank_routes(routes)
    rows = [_row(r) for r in ranked]
    data = {
        name: pd.Series([row[name] for row in rows], dtype=dtype)
        for name, dtype in ROUTE_COLUMNS.items()
    }
    frame = pd.DataFrame(data, columns=list(ROUTE_COLUMNS))
    is_recorded = any(r.recorded for r in ranked) if recorded is None else recorded
    frame.attrs["source"] = "recorded" if is_recorded else "live"
    frame.attrs["recorded"] = is_recorded
    if is_recorded:
        frame.attrs["note"] = RECORDED_NOTE
    return frame


#: The columns of :func:`routes_styler`: its header -> the frame column it shows.
ROUTE_TABLE_COLUMNS: dict[str, str] = {
    "#": "rank",
    "Tool": "tools",
    "You receive": "to_amount_units",
    "Fees (USD)": "fees_usd",
    "Gas (USD)": "gas_usd",
    "Net (USD)": "net_usd",
    "Duration": "duration_s",
}
_USD_HEADERS = ("Fees (USD)", "Gas (USD)", "Net (USD)")
#: the notebook theme's variables (JupyterLab, Notebook 7, Voila), with light fallbacks
_TABLE_CSS: list[CSSDict] = [
    {
        "selector": "",
        "props": [
            ("border-collapse", "collapse"),
            ("font-size", "13px"),
            ("font-family", "var(--jp-ui-font-family, system-ui, sans-serif)"),
            ("color", "var(--jp-ui-font-color1, #1f2937)"),
            ("margin", "6px 0 0 0"),
        ],
    },
    {
        "selector": "th",
        "props": [
            ("padding", "4px 12px"),
            ("text-align", "right"),
            ("font-weight", "700"),
            ("border-bottom", "1px solid var(--jp-border-color1, #d1d5db)"),
            ("white-space", "nowrap"),
        ],
    },
    {
        "selector": "td",
        "props": [
            ("padding", "4px 12px"),
            ("text-align", "right"),
            ("border-bottom", "1px solid var(--jp-border-color2, #e5e7eb)"),
            ("white-space", "nowrap"),
            ("font-variant-numeric", "tabular-nums"),
        ],
    },
    {"selector": "tbody tr:first-child td", "props": [("font-weight", "700")]},
    {"selector": "th.col1, td.col1", "props": [("text-align", "left")]},
]


def _amount(units: float, symbol: object) -> str:
    """``1,234.5 USDC``: up to 6 decimals, at least 2, with the token's symbol."""
    if math.isnan(units):
        return "n/a"
    text = f"{units:,.6f}".rstrip("0")
    text = text + "0" * max(0, 2 - len(text.split(".")[1]))
    return f"{text} {symbol}" if isinstance(symbol, str) and symbol else text


def _duration(seconds: float) -> str:
    """``45 s``, ``19 min``, ``2 min 5 s`` (an estimate: whole seconds)."""
    if math.isnan(seconds):
        return "n/a"
    minutes, rest = divmod(round(seconds), 60)
    if not minutes:
        return f"{rest} s"
    return f"{minutes} min {rest} s" if rest else f"{minutes} min"


def routes_styler(frame: pd.DataFrame) -> Styler:
    """The routes of :func:`routes_frame` as a table for people: one row per route, best
    first (in bold), under the headers of :data:`ROUTE_TABLE_COLUMNS`; what you receive with
    the token's symbol, USD values with two decimals, durations in s/min.

    Every text (tool names come from the API) is HTML-escaped (``escape="html"``, headers
    too), and the table's id is fixed, so ``to_html()`` is the same on every run (nbval
    compares it). Its colours are the notebook theme's (``--jp-*`` with light fallbacks).
    """
    import pandas as pd
    from pandas.io.formats.style import Styler

    table = pd.DataFrame(
        {
            "#": frame["rank"].astype("Int64"),
            "Tool": frame["tools"].astype("string"),
            "You receive": [
                _amount(float(u), sym)
                for u, sym in zip(frame["to_amount_units"], frame["to_token"], strict=True)
            ],
            **{header: frame[ROUTE_TABLE_COLUMNS[header]] for header in _USD_HEADERS},
            "Duration": [_duration(float(s)) for s in frame["duration_s"]],
        },
        columns=list(ROUTE_TABLE_COLUMNS),
    )
    styler = Styler(table, uuid="sw_routes", cell_ids=False)
    return (
        styler.hide(axis="index")
        .format(escape="html", na_rep="n/a")
        .format("{:,.2f}", subset=list(_USD_HEADERS), na_rep="n/a")
        .format_index(escape="html", axis=1)
        .set_table_attributes('class="sw-routes-grid"')
        .set_table_styles(_TABLE_CSS)
    )
