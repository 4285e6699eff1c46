"""The two widgets (spec §1, §2.6, §2.7): view models, pure HTML renderers, composites.

``SettlementSelector`` picks a settlement method; ``ChannelStatusPanel`` shows a channel's
status and can follow a provider live. Both are composites of core ipywidgets over pure view
models (``viewmodels``) and renderers (``render``) that escape every dynamic string and link
only to the network's explorer.
"""

from __future__ import annotations

from .error_output import ErrorOutput
from .render import render_selector_html, render_status_html
from .selector import SettlementSelector
from .status_panel import CHANNEL_EVENTS, Binding, ChannelStatusPanel
from .viewmodels import (
    AddressLine,
    CardViewModel,
    MetadataBox,
    SelectorViewModel,
    StatusProps,
    StatusRow,
    StatusViewModel,
    TxLink,
)

__all__ = [
    "CHANNEL_EVENTS",
    "AddressLine",
    "Binding",
    "CardViewModel",
    "ChannelStatusPanel",
    "ErrorOutput",
    "MetadataBox",
    "SelectorViewModel",
    "SettlementSelector",
    "StatusProps",
    "StatusRow",
    "StatusViewModel",
    "TxLink",
    "render_selector_html",
    "render_status_html",
]
