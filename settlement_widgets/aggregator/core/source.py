"""Where an aggregator provider's answers come from, from its base URL alone.

The provider, its frames and the widgets' pill all need to say whether routes are live
LI.FI rates or come from a route server on this machine (the local sandbox's LI.FI-schema
server, or a test server). The host of ``base_url`` is the one fact that decides it, so the
rule lives here once: a loopback host is ``"local"``, anything else is ``"live"``.
"""

from __future__ import annotations

import ipaddress
from typing import Literal
from urllib.parse import urlsplit

__all__ = ["DataSource", "data_source", "is_loopback_host"]

#: ``"local"``: an API on this machine; ``"live"``: the LI.FI API (or any remote host).
DataSource = Literal["local", "live"]


def is_loopback_host(host: str | None) -> bool:
    """``localhost`` or a loopback IP (``127.0.0.1`` and the rest of 127/8, ``::1``)."""
    if not host:
        return False
    name = host.strip("[]").rstrip(".").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def data_source(base_url: str | None) -> DataSource:
    """``"local"`` when ``base_url``'s host is loopback, else ``"live"``."""
    try:
        host = urlsplit(base_url or "").hostname
    except ValueError:
        host = None
    return "local" if is_loopback_host(host) else "live"
