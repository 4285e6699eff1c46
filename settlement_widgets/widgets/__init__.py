"""The two widgets: view models, pure HTML renderers, composites.

``SettlementSelector`` picks a settlement method; ``ChannelStatusPanel`` shows a channel's
status and can follow a provider live. Both are composites of core ipywidgets over pure view
models (``viewmodels``) and renderers (``render``) that escape every dynamic string and link
only to the network's explorer. ``BrowserWallet`` (an anywidget, imported on first use) is the
page's EIP-1193 wallet as a :class:`~settlement_widgets.signer.Signer`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

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

if TYPE_CHECKING:
    from .browser_wallet import BrowserWallet

__all__ = [
    "CHANNEL_EVENTS",
    "AddressLine",
    "Binding",
    "BrowserWallet",
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


def __getattr__(name: str) -> Any:
    # anywidget is imported only by code that uses the browser wallet
    if name == "BrowserWallet":
        from .browser_wallet import BrowserWallet

        return BrowserWallet
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
