"""The dashboard's pure parts: its actions, which are enabled, the activity log's lines
and HTML, the buttons' labels and the routes table's heading.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Final, Literal

from ..links import is_link_target
from ..progress import format_seconds
from ..widgets.render import BODY, BORDER, DASHBOARD_STYLESHEET, FG, LINK, MONO, SANS, SURFACE
from ..widgets.viewmodels import (
    CYAN,
    GREEN,
    MUTED,
    RED,
    AggregatorSource,
)

if TYPE_CHECKING:
    import pandas as pd

    from ..widgets.viewmodels import AggregatorSource


__all__ = [
    "ACTIONS",
    "Action",
    "ActionState",
    "LogLine",
    "action_tooltip",
    "counterparty",
    "enabled_actions",
    "render_log_html",
]

Action = Literal[
    "faucet", "open_channel", "transfer", "close_channel", "settle_intent", "show_routes"
]
#: the actions of each method, in the order their buttons appear
ACTIONS: Final[dict[str, tuple[Action, ...]]] = {
    "channel": ("faucet", "open_channel", "transfer", "close_channel"),
    "v4": ("settle_intent",),
    "aggregator": ("show_routes",),
}
_EXPECTED_SECONDS: Final[dict[Action, float]] = {
    "faucet": 2,
    "open_channel": 4,
    "transfer": 1,
    "close_channel": 5,
    "settle_intent": 6,
    "show_routes": 4,
}
_MAX_LOG_LINES: Final = 50
#: the route the aggregator action ranks on the live API: 100 USDC Arbitrum -> Optimism (no
#: funds needed, nothing sent); on the sandbox it is 100 test USDC between its two chains,
#: executed for real
ROUTE_REQUEST: Final = (42161, 10, "USDC", "USDC", 100 * 10**6)
ROUTE_AMOUNT: Final = 100 * 10**6
ONE_V4_TOKEN: Final = 10**18


# --- pure parts ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ActionState:
    """What decides which buttons are enabled: an action running, an active channel."""

    busy: bool = False
    channel_status: str | None = None


def enabled_actions(state: ActionState) -> frozenset[Action]:
    """The actions a click may start in ``state`` (none while another one runs).

    A channel is opened only when none is open (the relay allows one per asset), transfers
    need an active channel, and a channel in dispute can still be closed (after its
    challenge period; the provider says when).
    """
    if state.busy:
        return frozenset()
    allowed: set[Action] = {"faucet", "settle_intent", "show_routes"}
    status = state.channel_status
    if status in (None, "final"):
        allowed.add("open_channel")
    if status == "active":
        allowed.add("transfer")
    if status in ("active", "dispute"):
        allowed.add("close_channel")
    return frozenset(allowed)


@dataclass(frozen=True)
class LogLine:
    """One entry of the activity log.

    ``at`` is when it was written (shown as ``HH:MM:SS``) and ``elapsed`` how long the
    action that wrote it took, in seconds: both are given here, never read by the renderer,
    so :func:`render_log_html` stays pure. ``href`` is linked only when it is a link target
    (:func:`~settlement_widgets.links.is_link_target`: ``http(s)://host...`` or a path on the
    Jupyter server, such as the shared sandbox's ``{base_url}settlement/explorer/tx/<hash>``).
    """

    level: Literal["info", "ok", "error"]
    text: str
    href: str | None = None
    link_text: str | None = None
    at: datetime | None = None
    elapsed: float | None = None


#: the log's text colour per level (theme colours, AA contrast in Light and Dark)
_LEVEL_COLOURS: Final = {"info": FG, "ok": GREEN, "error": RED}


def render_log_html(lines: tuple[LogLine, ...] | list[LogLine]) -> str:
    """The activity log, newest last: ``HH:MM:SS  text link (1.2 s)`` per line, in the
    theme's colours; every text escaped, links only to link targets."""
    if not lines:
        return '<div class="sw-log" data-empty="true"></div>'
    rows = []
    for line in lines:
        stamp = ""
        if line.at is not None:
            stamp = (
                f'<span class="sw-log-time" style="color:{MUTED}">'
                f"{line.at.strftime('%H:%M:%S')}</span>  "
            )
        text = html.escape(line.text)
        link = ""
        if line.href and is_link_target(line.href):
            shown = html.escape(line.link_text or line.href)
            link = (
                f' <a href="{html.escape(line.href, quote=True)}" target="_blank" '
                f'rel="noopener noreferrer" style="color:{LINK}">{shown}</a>'
            )
        took = ""
        if line.elapsed is not None:
            took = (
                f' <span class="sw-log-elapsed" style="color:{MUTED}">'
                f"({html.escape(format_seconds(line.elapsed))})</span>"
            )
        rows.append(
            f'<div class="sw-log-line" data-level="{line.level}" '
            f'style="color:{_LEVEL_COLOURS[line.level]};white-space:pre-wrap;word-break:break-word">'
            f"{stamp}{text}{link}{took}</div>"
        )
    return (
        f'<div class="sw-log" style="font:{BODY}/1.5 {MONO};padding:8px 12px;'
        f"border:1px solid {BORDER};border-radius:12px;background:{SURFACE};"
        f'box-sizing:border-box">' + "".join(rows) + "</div>"
    )


def _status_html(working: str | None) -> str:
    """The dashboard's stylesheet, plus ``working: <action>…`` while an action runs."""
    if working is None:
        return DASHBOARD_STYLESHEET
    return (
        f'{DASHBOARD_STYLESHEET}<span style="font:{BODY} {SANS};color:{MUTED}">'
        f"working: {html.escape(working)}…</span>"
    )


def _short(value: str) -> str:
    return value if len(value) <= 20 else f"{value[:10]}...{value[-8:]}"


# --- the app ---------------------------------------------------------------------------------


_LABELS: Final[dict[Action, str]] = {
    "faucet": "Faucet",
    "open_channel": "Open channel",
    "transfer": "Transfer",
    "close_channel": "Close channel",
    "settle_intent": "Settle an intent",
    "show_routes": "Show best routes",
}
#: what each button does, as its tooltip (the label stays short and is never cut off)
_TOOLTIPS: Final[dict[Action, str]] = {
    "faucet": "Ask the network's faucet for test tokens (an off-chain credit)",
    "open_channel": "Open a state channel with the relay's broker (Custody.create)",
    "transfer": "Send the transfer amount off-chain through the channel: instant, no gas",
    "close_channel": "Close the channel on chain and withdraw what it paid out",
    "settle_intent": "Sign an intent and settle it through the Uniswap v4 policy hook",
    "show_routes": "Rank the routes of 100 USDC by what you keep in the worst case (on the "
    "sandbox, then execute the best and follow it to the other chain)",
}


#: the channel's counterparty and its on-chain open, per channel protocol: Nitrolite v0.5's
#: relay (ClearNode) opens channels with its broker through the Custody contract, v1's
#: Nitronode is itself the counterparty, through the ChannelHub
_COUNTERPARTY: Final[dict[str, tuple[str, str]]] = {
    "nitrolite-v0.5": ("the broker", "Custody.create"),
    "nitrolite-v1": ("the node", "ChannelHub.createChannel"),
}


def counterparty(protocol: str) -> str:
    """Who a channel is opened with on ``protocol``, as the log says it (``the broker`` on
    Nitrolite v0.5, ``the node`` on v1)."""
    return _COUNTERPARTY.get(protocol, _COUNTERPARTY["nitrolite-v0.5"])[0]


def action_tooltip(action: Action, protocol: str) -> str:
    """The tooltip of ``action``'s button on a network whose channel speaks ``protocol``."""
    if action == "open_channel":
        who, call = _COUNTERPARTY.get(protocol, _COUNTERPARTY["nitrolite-v0.5"])
        return f"Open a state channel with {who} ({call})"
    return _TOOLTIPS[action]


#: the routes table's heading per data source: (text, colour)
_ROUTE_HEADINGS: Final[dict[str, tuple[str, str]]] = {
    "local": (
        "LOCAL route server on this machine, not live rates",
        CYAN,
    ),
    "live": ("LIVE rates from the LI.FI API", GREEN),
}


def _routes_html(
    frame: pd.DataFrame,
    *,
    source: AggregatorSource,
    title: str = "100 USDC Arbitrum → Optimism",
    measured: Mapping[str, float] | None = None,
) -> str:
    """The routes as :func:`~settlement_widgets.aggregator.routes_styler` draws them (each
    route's estimate, and the measured time of the routes a run executed: ``measured``, route
    id -> seconds), under a heading that says where the data came from (escaped, in the
    theme's colours)."""
    from ..aggregator.core.frame import routes_styler

    table = routes_styler(frame, measured).to_html()
    label, colour = _ROUTE_HEADINGS[source]
    return (
        f'<div class="sw-routes-table" style="padding:8px 12px;border:1px solid {BORDER};'
        f'border-radius:12px;background:{SURFACE};overflow-x:auto">'
        f'<div style="font:600 {BODY} {SANS};color:{colour}">'
        f"{html.escape(label)}: {html.escape(title)}</div>{table}</div>"
    )
