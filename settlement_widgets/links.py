"""Which URLs may become a link target, and how a notebook shows links its reader can open.

An explorer link is either absolute ``http(s)://host/...`` (a public explorer, or a sandbox's
own explorer on loopback) or, under a Jupyter server that owns the sandbox, a path on that
server (``{base_url}settlement/explorer/tx/<hash>``), which a browser resolves against the page
it is on, so it works behind any proxy (Binder) and needs no host name. Everything else
(``javascript:``, ``data:``, a protocol-relative ``//host``, a relative path) is refused.

A notebook's output outlives the kernel that wrote it: it is saved, committed and opened by
readers on other machines. A link to a loopback port (a private sandbox's explorer, faucet or
endpoint) opens nothing there, and nothing anywhere once that sandbox stops, so what a reader
sees never links to one (:func:`reader_link`): it says where the page was instead. Links under
the Jupyter server and public ones stay links. :func:`link_html` and :func:`links_table` build
the anchors (``pandas``' ``render_links`` links absolute URLs only, and a server path is not).
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Final
from urllib.parse import urlsplit

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "LinksTable",
    "delink_loopback",
    "is_link_target",
    "is_loopback_url",
    "link_html",
    "links_table",
    "reader_link",
    "short_text",
]

_LOOPBACK_HOSTS: Final = frozenset({"127.0.0.1", "localhost", "::1", "0.0.0.0"})
#: an anchor as our renderers write it (double-quoted ``href``, no nested anchors)
_ANCHOR: Final = re.compile(r"<a\b[^>]*?\bhref=\"([^\"]*)\"[^>]*>(.*?)</a>", re.DOTALL)


def is_link_target(url: object) -> bool:
    """Whether ``url`` is an ``http(s)://host...`` URL or a path starting with one ``/``."""
    if not isinstance(url, str) or not url or any(c.isspace() for c in url):
        return False
    if url.startswith("/"):
        return not url.startswith("//") and "\\" not in url
    parts = urlsplit(url)
    return parts.scheme in ("http", "https") and bool(parts.netloc)


def is_loopback_url(url: object) -> bool:
    """Whether ``url`` is an absolute URL on this machine's loopback (a private sandbox's
    port): it opens nothing for a reader elsewhere, or once the process behind it ends."""
    if not isinstance(url, str):
        return False
    try:
        host = urlsplit(html.unescape(url)).hostname
    except ValueError:
        return False
    return host is not None and host.lower() in _LOOPBACK_HOSTS


def reader_link(url: object) -> str | None:
    """``url`` if a reader of the saved output can open it (a link target not on loopback),
    else None."""
    if not is_link_target(url) or is_loopback_url(url):
        return None
    return str(url)


def _where(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.netloc}{parts.path}"


def short_text(text: str, keep: int = 10) -> str:
    """A hash or address cut to ``0x12345678…abcd`` (a table stays narrow; the title
    attribute keeps the whole value)."""
    return text if len(text) <= keep + 6 else f"{text[:keep]}…{text[-4:]}"


def link_html(url: str | None, text: str | None = None) -> str:
    """An escaped anchor to ``url`` showing ``text`` (default: the URL); a URL no reader can
    open (see :func:`reader_link`) is shown as ``text`` with where the page was in its title,
    and no URL at all as the text alone."""
    shown = html.escape(text if text is not None else (url or ""))
    if not url:
        return shown
    target = reader_link(url)
    if target is None:
        where = html.escape(
            f"was at {_where(url)} (this kernel's own sandbox, not reachable once it stops)",
            quote=True,
        )
        return f'<span title="{where}">{shown}</span>'
    return (
        f'<a href="{html.escape(target, quote=True)}" target="_blank" '
        f'rel="noopener noreferrer" title="{html.escape(target, quote=True)}">{shown}</a>'
    )


def delink_loopback(fragment: str) -> str:
    """``fragment`` (HTML our renderers wrote) with each anchor to a loopback URL turned into
    its text, titled with where it pointed: for a static snapshot that outlives the sandbox."""

    def replace(match: re.Match[str]) -> str:
        href = html.unescape(match.group(1))
        if not is_loopback_url(href):
            return match.group(0)
        where = html.escape(f"was at {_where(href)} (a sandbox that has stopped)", quote=True)
        return f'<span title="{where}">{match.group(2)}</span>'

    return _ANCHOR.sub(replace, fragment)


class LinksTable:
    """A table whose link columns are anchors (:func:`links_table`); displays as HTML, with a
    short, stable text form (a notebook's test compares it run to run)."""

    def __init__(self, html_text: str, rows: int) -> None:
        self.html = html_text
        self.rows = rows

    def _repr_html_(self) -> str:
        return self.html

    def __repr__(self) -> str:
        return f"LinksTable({self.rows} rows)"


def links_table(frame: pd.DataFrame, links: Mapping[str, str]) -> LinksTable:
    """``frame`` as an HTML table where each column ``shown`` of ``links`` (``{shown: url
    column}``) links its value, cut short, to the URL in its row's ``url column`` (which is
    left out). Cells are escaped; links no reader could open stay text (:func:`link_html`)."""
    urls = set(links.values())
    columns = [c for c in frame.columns if c not in urls or c in links]
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in columns)
    body = []
    for _, row in frame.iterrows():
        cells = []
        for column in columns:
            value = row[column]
            if column in links:
                url = row[links[column]]
                text = str(value)
                cell = link_html(url if isinstance(url, str) else None, short_text(text))
                cell = f'<code title="{html.escape(text, quote=True)}">{cell}</code>'
            else:
                cell = html.escape("" if value is None else str(value))
            cells.append(f"<td>{cell}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    table = (
        '<table class="dataframe sw-links-table"><thead><tr>'
        + head
        + "</tr></thead><tbody>"
        + "".join(body)
        + "</tbody></table>"
    )
    return LinksTable(table, len(frame))
