"""The one rule for link targets: absolute http(s) URLs, or paths on the Jupyter server."""

from __future__ import annotations

import pytest

from settlement_widgets.links import is_link_target


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
