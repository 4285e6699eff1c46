"""Check every link of the built site (``make docs`` runs it after ``mkdocs build``).

A relative link must name a file of the site and, with a ``#fragment``, an element with that
id in it; an absolute link must not point at a loopback host (a sandbox that ran when a
notebook was executed is gone for every reader). Other absolute links are listed, not
fetched: the check runs offline, and reaches no host.

    python docs/check_links.py [site]
"""

from __future__ import annotations

import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

LOOPBACK = ("127.0.0.1", "localhost", "0.0.0.0", "[::1]", "::1")


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.links: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if value is None:
                continue
            if name in ("id", "name"):
                self.ids.add(value)
            elif name in ("href", "src") and tag in ("a", "img", "link", "script", "iframe"):
                self.links.append(value)


def _parse(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8", errors="replace"))
    return page


def check(site: Path) -> tuple[list[str], set[str]]:
    """``(problems, external links)`` of every HTML page under ``site``."""
    pages = {p: _parse(p) for p in sorted(site.rglob("*.html"))}
    problems: list[str] = []
    external: set[str] = set()
    for path, page in pages.items():
        where = path.relative_to(site)
        for link in page.links:
            parts = urlsplit(link)
            if parts.scheme in ("mailto", "data", "javascript"):
                continue
            if parts.scheme or link.startswith("//"):
                if (parts.hostname or "") in LOOPBACK:
                    problems.append(f"{where}: a link to a loopback host: {link}")
                else:
                    external.add(link)
                continue
            if not parts.path:
                target = path
            elif parts.path.startswith("/"):  # from the site's root (the 404 page's links)
                target = (site / unquote(parts.path).lstrip("/")).resolve()
            else:
                target = (path.parent / unquote(parts.path)).resolve()
            if target.is_dir():
                target = target / "index.html"
            if not target.is_file():
                problems.append(f"{where}: {link} names no file of the site")
                continue
            if parts.fragment and target.suffix == ".html":
                ids = pages[target].ids if target in pages else _parse(target).ids
                if unquote(parts.fragment) not in ids:
                    problems.append(f"{where}: {link}: no #{parts.fragment} in {target.name}")
    return problems, external


def main(argv: list[str]) -> int:
    site = Path(argv[1] if len(argv) > 1 else "site").resolve()
    problems, external = check(site)
    for line in problems:
        print(line, file=sys.stderr)
    print(f"{len(problems)} broken link(s) in {site}; {len(external)} external link(s) not fetched")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
