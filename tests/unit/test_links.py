"""The one rule for link targets: absolute http(s) URLs, or paths on the Jupyter server."""

from __future__ import annotations

import pandas as pd
import pytest

from settlement_widgets.links import (
    delink_loopback,
    is_link_target,
    is_loopback_url,
    link_html,
    links_table,
    reader_link,
)


@pytest.mark.parametrize(
    "url",
    [
        "https://sepolia.etherscan.io/tx/0xab",
        "http://127.0.0.1:8545/explorer/tx/0xab",
        "/settlement/explorer/tx/0xab",
        "/user/ada/settlement/explorer/address/0x00",
    ],
)
def test_explorer_links_are_link_targets(url: str) -> None:
    assert is_link_target(url)


@pytest.mark.parametrize(
    "url",
    [
        "javascript:alert(1)",
        "data:text/html,<script>alert(1)</script>",
        "//evil.example/tx",  # protocol-relative: another host
        "/\\evil.example",  # browsers read a backslash as a slash
        "settlement/explorer/tx/0xab",  # relative: depends on the page
        "https://",  # no host
        "http://host/ spaced",
        "",
        None,
        42,
    ],
)
def test_everything_else_is_refused(url: object) -> None:
    assert not is_link_target(url)


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:38493/explorer/tx/0x1",
        "http://localhost:8888/x",
        "http://[::1]:80/",
        "https://127.0.0.1/",
    ],
)
def test_loopback_urls_are_no_reader_link(url: str) -> None:
    """A private sandbox's port opens nothing for a reader elsewhere, or after it stops."""
    assert is_loopback_url(url) and reader_link(url) is None


@pytest.mark.parametrize(
    "url",
    [
        "/settlement/explorer/tx/0x1",
        "/user/a/settlement/explorer",
        "https://sepolia.etherscan.io/tx/0x1",
    ],
)
def test_server_paths_and_public_urls_are_reader_links(url: str) -> None:
    assert not is_loopback_url(url) and reader_link(url) == url


def test_link_html_escapes_and_keeps_loopback_as_text() -> None:
    linked = link_html("/settlement/explorer/tx/0x1?a=1&b=2", "<tx>")
    assert linked.startswith('<a href="/settlement/explorer/tx/0x1?a=1&amp;b=2"')
    assert ">&lt;tx&gt;</a>" in linked
    text = link_html("http://127.0.0.1:9/explorer/tx/0x1", "0x1")
    assert "<a" not in text and "href" not in text and ">0x1</span>" in text
    assert "was at 127.0.0.1:9/explorer/tx/0x1" in text
    assert link_html(None, "x") == "x"
    assert "<a" not in link_html("javascript:alert(1)", "x")


def test_links_table_links_server_paths_and_stays_narrow() -> None:
    """pandas' render_links links absolute URLs only: a server path must still be an anchor;
    the URL column is left out and the hash cut short (the table is not cut off)."""
    tx = "0x" + "ab" * 32
    frame = pd.DataFrame(
        [
            {"step": "close", "tx": tx, "url": f"/base/settlement/explorer/tx/{tx}"},
            {"step": "open", "tx": tx, "url": f"http://127.0.0.1:9/explorer/tx/{tx}"},
            {"step": "<b>", "tx": "not sent", "url": None},
        ]
    )
    table = links_table(frame, {"tx": "url"})
    assert repr(table) == "LinksTable(3 rows)"
    page = table._repr_html_()
    assert page.count("<a ") == 1 and f'href="/base/settlement/explorer/tx/{tx}"' in page
    assert 'href="http://127.0.0.1' not in page and "was at 127.0.0.1:9" in page  # text
    assert "<th>url</th>" not in page and f">{tx[:10]}…{tx[-4:]}<" in page
    assert "&lt;b&gt;" in page and ">not sent<" in page


def test_delink_loopback_keeps_other_anchors() -> None:
    fragment = (
        '<a href="http://127.0.0.1:5/explorer/tx/0x1" target="_blank">0x1...</a>'
        '<a href="/settlement/explorer/tx/0x2">0x2</a>'
    )
    out = delink_loopback(fragment)
    assert '<a href="/settlement/explorer/tx/0x2">0x2</a>' in out
    assert "127.0.0.1:5/explorer/tx/0x1" in out and 'href="http://127.0.0.1' not in out
    assert ">0x1...</span>" in out
