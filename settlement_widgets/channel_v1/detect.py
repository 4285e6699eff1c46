"""Deprecated path, kept for one release: warns, then gives the same objects as
:mod:`settlement_widgets.channel.detect` (and ``open_channel_provider``, now in
:mod:`settlement_widgets.channel.factory`).
"""

from settlement_widgets._moved import moved
from settlement_widgets.channel.detect import detect_node_protocol
from settlement_widgets.channel.factory import open_channel_provider

__all__ = ["detect_node_protocol", "open_channel_provider"]

__getattr__ = moved(__name__, "settlement_widgets.channel.detect")
