"""Deprecated path, kept for one release: warns, then gives the same objects as
:mod:`settlement_widgets.channel.v0_5.node.jwt`.
"""

from settlement_widgets._moved import moved
from settlement_widgets.channel.v0_5.node.jwt import *  # noqa: F403
from settlement_widgets.channel.v0_5.node.jwt import __all__ as __all__

__getattr__ = moved(__name__, "settlement_widgets.channel.v0_5.node.jwt")
