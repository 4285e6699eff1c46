"""Parse widget HTML with the standard library and expose what a browser would see.

Shared by the widget tests: tags, attributes, links and the visible text, so tests can assert
that hostile strings stay inert (no script element, no javascript: link, no attribute that the
renderer did not write) instead of grepping strings.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser

ALLOWED_TAGS = {"div", "span", "a", "style"}
ALLOWED_ATTRS = {
    "class",
    "style",
    "title",
    "href",
    "target",
    "rel",
    "data-method",
    "data-selected",
    "data-label",
    "data-mode",
    "data-pill",
    # the measured figures of a comparison (widgets/measured.py)
    "data-cheapest",
    "data-fastest",
    "data-mark",
    "data-network",
}


@dataclass
class Element:
    tag: str
    attrs: dict[str, str]
    text: str = ""


@dataclass
class Probe(HTMLParser):
    elements: list[Element] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    _stack: list[Element] = field(default_factory=list)

    def __post_init__(self) -> None:
        HTMLParser.__init__(self, convert_charrefs=True)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        el = Element(tag, {k: v or "" for k, v in attrs})
        self.elements.append(el)
        self._stack.append(el)

    def handle_endtag(self, tag: str) -> None:
        while self._stack:
            if self._stack.pop().tag == tag:
                break

    def handle_data(self, data: str) -> None:
        self.texts.append(data)
        for el in self._stack:
            el.text += data

    @property
    def text(self) -> str:
        return "".join(t for t in self.texts)

    def by_class(self, cls: str) -> list[Element]:
        return [e for e in self.elements if cls in e.attrs.get("class", "").split()]

    def links(self) -> list[Element]:
        return [e for e in self.elements if e.tag == "a"]

    def tags(self) -> set[str]:
        return {e.tag for e in self.elements}


def parse(html: str) -> Probe:
    probe = Probe()
    probe.feed(html)
    probe.close()
    return probe


def assert_inert(html: str, explorer_base: str = "https://sepolia.etherscan.io") -> Probe:
    """No script, only the renderer's tags and attributes, links only to the explorer."""
    probe = parse(html)
    assert probe.tags() <= ALLOWED_TAGS, probe.tags()
    for el in probe.elements:
        assert set(el.attrs) <= ALLOWED_ATTRS, (el.tag, el.attrs)
        for name, value in el.attrs.items():
            assert "javascript:" not in value.lower() or name == "title", (
                name,
                value,
            )
    for a in probe.links():
        assert a.attrs["href"].startswith(explorer_base.rstrip("/") + "/"), a.attrs
        assert a.attrs["target"] == "_blank"
        assert "noopener" in a.attrs["rel"].split()
    # <style> only ever holds our static stylesheet
    for el in probe.elements:
        if el.tag == "style":
            assert "<" not in el.text and "javascript" not in el.text.lower()
    return probe
