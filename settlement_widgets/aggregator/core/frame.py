"""Routes as a pandas DataFrame: one row per route, best first, stable columns and dtypes.

Dtype choices (``ROUTE_COLUMNS`` is the contract, and a test holds us to it):

- Amounts in smallest units (``from_amount``, ``to_amount``, ``to_amount_min``) are
  ``object`` columns holding Python ``int``. They must be exact and uint256 amounts overflow
  ``int64``/``Int64`` (1e18-decimal tokens pass 2**63 at about 9.2 tokens).
- The same amounts in human units (``*_units``) and every USD value are ``float64``: for
  reading, sorting and plotting. They are rounded views; the exact values stay in the int
  columns and on the :class:`~settlement_widgets.aggregator.core.models.Route` objects
  (:class:`~decimal.Decimal`). Unknown USD values are NaN.
- Counts and chain ids are nullable ``Int64``; text is the ``string`` dtype.

Rows are in rank order (worst-case net first, see :mod:`.ranking`); both values are
columns: ``net_min_usd`` (the ranking key) and ``net_usd`` (the headline), and ``gas_usd``
includes the ERC-20 approvals, whose share is ``approval_gas_usd``.

``df.attrs["source"]`` says where the data came from: ``"local"`` (a route server on this
machine, not live rates) or ``"live"`` (see
:attr:`~settlement_widgets.aggregator.AggregatorProvider.source`). pandas is imported when
the function runs, so importing the aggregator stays light.

:func:`routes_styler` is the same frame for people: a pandas ``Styler`` with the columns a
reader needs under plain names ("Tool", "You receive", "At least", "Net, worst case
(USD)"...), every text escaped, in the notebook theme's colours.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from ...errors import SettlementValueError
from .models import Route
from .ranking import net_value, rank_routes
from .source import DataSource

if TYPE_CHECKING:
    import pandas as pd
    from pandas.io.formats.style import Styler
    from pandas.io.formats.style_render import CSSDict

__all__ = [
    "MEASURED_HEADER",
    "ROUTE_COLUMNS",
    "ROUTE_TABLE_COLUMNS",
    "routes_frame",
    "routes_styler",
]

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
    "approval_gas_usd": "float64",
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
        "approval_gas_usd": _f(value.approval_gas_usd if value else None),
        "net_usd": _f(value.net_usd if value else None),
        "net_min_usd": _f(value.net_min_usd if value else None),
        "duration_s": route.duration,
        "tags": ",".join(route.tags),
    }


def routes_frame(routes: Iterable[Route], *, source: DataSource = "live") -> pd.DataFrame:
    """One row per route, ranked best first (see :mod:`.ranking` for the rule).

    ``source`` goes to ``attrs["source"]``: the provider passes its own (``"local"`` for a
    loopback route server). An empty input gives an empty frame with the same columns and
    dtypes.
    """
    if source not in ("local", "live"):
        raise SettlementValueError(f"source must be 'local' or 'live', got {source!r}")
    import pandas as pd

    ranked = rank_routes(routes)
    rows = [_row(r) for r in ranked]
    data = {
        name: pd.Series([row[name] for row in rows], dtype=dtype)
        for name, dtype in ROUTE_COLUMNS.items()
    }
    frame = pd.DataFrame(data, columns=list(ROUTE_COLUMNS))
    frame.attrs["source"] = source
    return frame


#: The columns of :func:`routes_styler`: its header -> the frame column it shows.
ROUTE_TABLE_COLUMNS: dict[str, str] = {
    "#": "rank",
    "Tool": "tools",
    "You receive": "to_amount_units",
    "At least": "to_amount_min_units",
    "Fees (USD)": "fees_usd",
    "Gas (USD)": "gas_usd",
    "Net, worst case (USD)": "net_min_usd",
    "Est. duration": "duration_s",
}
#: the column :func:`routes_styler` adds for routes a run has timed (``measured``)
MEASURED_HEADER = "Measured"
_AMOUNT_HEADERS = ("You receive", "At least")
_USD_HEADERS = ("Fees (USD)", "Gas (USD)", "Net, worst case (USD)")
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
    return _clock(round(seconds))


def _measured(seconds: float | None) -> str:
    """A measured time: ``6.4 s`` (tenths below a minute), ``2 min 5 s``; ``not run`` for a
    route this run did not execute."""
    if seconds is None or math.isnan(seconds):
        return "not run"
    if seconds < 60:
        return f"{seconds:.1f} s"
    return _clock(round(seconds))


def _clock(seconds: int) -> str:
    minutes, rest = divmod(seconds, 60)
    if not minutes:
        return f"{rest} s"
    return f"{minutes} min {rest} s" if rest else f"{minutes} min"


def routes_styler(frame: pd.DataFrame, measured: Mapping[str, float] | None = None) -> Styler:
    """The routes of :func:`routes_frame` as a table for people: one row per route, best
    first (in bold), under the headers of :data:`ROUTE_TABLE_COLUMNS`; what you receive and
    at least receive (``toAmountMin``) with the token's symbol, USD values with two
    decimals (gas with the approval, net in the worst case: the ranking key), and the
    route's own duration, labelled as the estimate it is ("Est. duration"). ``measured``
    (route id -> seconds) adds a "Measured" column with the time a run took from sending to
    arrival, beside the estimate, for the routes it ran ("not run" for the others): a bridge
    estimated at 2 s may take 17.

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
            **{
                header: [
                    _amount(float(u), sym)
                    for u, sym in zip(
                        frame[ROUTE_TABLE_COLUMNS[header]], frame["to_token"], strict=True
                    )
                ]
                for header in _AMOUNT_HEADERS
            },
            **{header: frame[ROUTE_TABLE_COLUMNS[header]] for header in _USD_HEADERS},
            "Est. duration": [_duration(float(s)) for s in frame["duration_s"]],
        },
        columns=list(ROUTE_TABLE_COLUMNS),
    )
    if measured:
        table[MEASURED_HEADER] = [_measured(measured.get(str(r))) for r in frame["route_id"]]
    styler = Styler(table, uuid="sw_routes", cell_ids=False)
    return (
        styler.hide(axis="index")
        .format(escape="html", na_rep="n/a")
        .format("{:,.2f}", subset=list(_USD_HEADERS), na_rep="n/a")
        .format_index(escape="html", axis=1)
        .set_table_attributes('class="sw-routes-grid"')
        .set_table_styles(_TABLE_CSS)
    )
