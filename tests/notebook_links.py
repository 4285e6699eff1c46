"""The links a reader of a notebook's outputs can click, as JupyterLab shows them.

Per output, JupyterLab draws the richest form it has: our widgets' and pandas' ``text/html``
(every ``<a href>`` in it is a link), else ``text/markdown``, else the text (``text/plain``, a
stream), where it turns each ``http(s)://`` URL into a link. A widget view with no model to
draw (a committed notebook keeps none) falls back the same way. The committed-notebook test
and the browser test both use :func:`output_links`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from html.parser import HTMLParser
from typing import Any

__all__ = ["anchors", "output_links"]

#: what JupyterLab's text renderer turns into a link (scheme and host, up to a space or quote)
_TEXT_URL = re.compile(r"https?://[^\s\"'<>]+")


class _Anchors(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self.hrefs += [value for name, value in attrs if name == "href" and value]


def anchors(fragment: str) -> list[str]:
    """The ``href`` of every anchor in an HTML fragment."""
    parser = _Anchors()
    parser.feed(fragment)
    parser.close()
    return parser.hrefs


def _text(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def output_links(nb: dict[str, Any]) -> Iterator[tuple[int, str]]:
    """``(cell index, link)`` for every link the outputs of ``nb`` (nbformat JSON) show."""
    for index, cell in enumerate(nb.get("cells", ())):
        for output in cell.get("outputs", ()):
            if output.get("output_type") == "stream":
                shown = [("text", _text(output.get("text", "")))]
            else:
                data = output.get("data") or {}
                if "text/html" in data:
                    shown = [("html", _text(data["text/html"]))]
                elif "text/markdown" in data:
                    shown = [("text", _text(data["text/markdown"]))]
                elif "text/plain" in data:
                    shown = [("text", _text(data["text/plain"]))]
                else:
                    shown = []
            for kind, text in shown:
                found = anchors(text) if kind == "html" else _TEXT_URL.findall(text)
                for link in found:
                    yield index, link
