"""Which URLs may become a link target: the one rule the proof log, the widgets and the
dashboard's activity log share.

An explorer link is either absolute ``http(s)://host/...`` (a public explorer, or a sandbox's
own explorer on loopback) or, under a Jupyter server that owns the sandbox, a path on that
server (``{base_url}settlement/explorer/tx/<hash>``), which a browser resolves against the page
it is on, so it works behind any proxy (Binder) and needs no host name. Everything else
(``javascript:``, ``data:``, a protocol-relative ``//host``, a relative path) is refused.
"""

from __future__ import annotations

from urllib.parse import urlsplit

__all__ = ["is_link_target"]


def is_link_target(url: object) -> bool:
    """Whether ``url`` is an ``http(s)://host...`` URL or a path starting with one ``/``."""
    if not isinstance(url, str) or not url or any(c.isspace() for c in url):
        return False
    if url.startswith("/"):
        return not url.startswith("//") and "\\" not in url
    parts = urlsplit(url)
    return parts.scheme in ("http", "https") and bool(parts.netloc)
