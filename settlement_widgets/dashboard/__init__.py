"""``SettlementDashboard``: the selector, the status panel and real actions, as one app.

Modules: ``widget`` (:class:`SettlementDashboard`: construction, clicks, the log, closing),
its action layers ``channel_actions`` (faucet, Open channel, transfer, close),
``v4_actions`` (settle an intent) and ``route_actions`` (rank and run routes), and ``view``
(the pure parts: which actions are enabled, the log's lines and HTML).
"""

from __future__ import annotations

from .view import ACTIONS, ActionState, LogLine, enabled_actions, render_log_html
from .widget import SettlementDashboard

__all__ = [
    "ACTIONS",
    "ActionState",
    "LogLine",
    "SettlementDashboard",
    "enabled_actions",
    "render_log_html",
]
