"""The dashboard's pure parts (which actions a click may start, the escaped activity log) and
its widget behaviour that needs no chain: the action bar follows the selector, clicks that are
not allowed (or come without an event loop) change nothing and say why, an action's log line
carries its time and how long it took, the routes table and the aggregator's pill."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime

import pytest

from settlement_widgets.dashboard import (
    ACTIONS,
    ActionState,
    LogLine,
    SettlementDashboard,
    enabled_actions,
    render_log_html,
)
from settlement_widgets.errors import InvalidAddressError, SettlementValueError, UnknownOptionError
from settlement_widgets.keys import PrivateKey
from settlement_widgets.networks import SEPOLIA
from settlement_widgets.wallet import WalletClient
from tests.lifi_synthetic import LifiTestServer

KEY = PrivateKey(b"\x11" * 32)


def _dashboard(**kwargs: object) -> SettlementDashboard:
    return SettlementDashboard(SEPOLIA, WalletClient(KEY), **kwargs)  # type: ignore[arg-type]


@pytest.fixture
def lifi() -> Iterator[LifiTestServer]:
    """A loopback LI.FI serving the synthetic fixtures (the dashboard's route among them)."""
    with LifiTestServer() as server:
        yield server


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (None, {"faucet", "open_channel", "settle_intent", "show_routes"}),
        ("opening", {"faucet", "settle_intent", "show_routes"}),
        ("active", {"faucet", "transfer", "close_channel", "settle_intent", "show_routes"}),
        ("resizing", {"faucet", "settle_intent", "show_routes"}),
        ("dispute", {"faucet", "close_channel", "settle_intent", "show_routes"}),
        ("final", {"faucet", "open_channel", "settle_intent", "show_routes"}),
    ],
)
def test_enabled_actions_follow_the_channel(status: str | None, expected: set[str]) -> None:
    assert enabled_actions(ActionState(channel_status=status)) == expected


@pytest.mark.parametrize("status", [None, "active", "dispute", "final"])
def test_nothing_starts_while_an_action_runs(status: str | None) -> None:
    assert enabled_actions(ActionState(busy=True, channel_status=status)) == frozenset()


def test_every_action_has_a_button() -> None:
    board = _dashboard()
    assert set(board.buttons) == {a for actions in ACTIONS.values() for a in actions}


def test_the_log_escapes_text_and_links_only_link_targets() -> None:
    html = render_log_html(
        [
            LogLine("error", "<script>alert(1)</script> & more"),
            LogLine("ok", "tx", 'https://sepolia.etherscan.io/tx/0x01?a=1&b="2"', "0x01"),
            LogLine("ok", "bad link", "javascript:alert(1)", "click"),
        ]
    )
    assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt; &amp; more" in html
    assert 'href="https://sepolia.etherscan.io/tx/0x01?a=1&amp;b=&quot;2&quot;"' in html
    assert "javascript:" not in html and "click" not in html
    assert html.count('class="sw-log-line"') == 3
    assert 'data-level="error"' in html
    assert render_log_html([]) == '<div class="sw-log" data-empty="true"></div>'


def test_the_action_bar_follows_the_selected_method() -> None:
    board = _dashboard(selected="aggregator")
    shown = {m for m, bar in board._bars.items() if bar.layout.display != "none"}
    assert shown == {"aggregator"}
    board.selector.card_button("v4").click()  # what a click on the card does
    shown = {m for m, bar in board._bars.items() if bar.layout.display != "none"}
    assert shown == {"v4"}
    assert board.panel.provider == "v4" and board.panel.settlement_tx is None
    assert "PolicyHook" in board.panel.html  # the v4 panel shows the hook and the adapter
    board.selector.set_selected("channel")
    assert board.panel.html == ""  # no channel yet: the panel shows nothing
    assert repr(board) == "SettlementDashboard(selected='channel', network='sepolia', channel=None)"


def test_buttons_reflect_what_is_allowed() -> None:
    board = _dashboard()
    disabled = {a for a, b in board.buttons.items() if b.disabled}
    assert disabled == {"transfer", "close_channel"}
    assert board.buttons["transfer"].description == "Transfer 1 ytest.usd"
    assert board.buttons["show_routes"].description == "Show best routes"


def test_a_click_that_is_not_allowed_changes_nothing_and_says_so() -> None:
    board = _dashboard()
    before = datetime.now().astimezone()
    assert board.click("transfer") is None
    (line,) = board.activity
    assert (line.level, line.text) == ("info", "Transfer 1 ytest.usd is not available right now")
    assert line.at is not None and before <= line.at <= datetime.now().astimezone()
    assert line.elapsed is None  # nothing ran
    assert not board.busy


def test_a_click_without_a_running_loop_is_reported_not_lost() -> None:
    board = _dashboard()
    board.buttons["show_routes"].click()  # no event loop runs in a plain test
    assert not board.busy
    assert board.errors.messages == (
        "SettlementDashboard: show_routes raised SettlementError: no event loop is running: "
        "the dashboard needs a Jupyter kernel",
    )


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(UnknownOptionError, match="unknown dashboard action"):
        _dashboard().click("withdraw")
    with pytest.raises(InvalidAddressError):
        _dashboard(recipient="0x1234")
    with pytest.raises(SettlementValueError, match="transfer_amount"):
        _dashboard(transfer_amount=0)
    with pytest.raises(SettlementValueError, match="network must be a Network"):
        SettlementDashboard("sepolia", WalletClient(KEY))  # type: ignore[arg-type]
    with pytest.raises(SettlementValueError):
        _dashboard(selected="lightning")


# --- the log: time, elapsed, links -------------------------------------------------------------

AT = datetime(2026, 11, 24, 12, 3, 4)


def test_a_log_line_shows_its_time_text_and_elapsed_time() -> None:
    html = render_log_html(
        [
            LogLine(
                "ok", "faucet: +10 ytest.usd off-chain; balance 10 ytest.usd", at=AT, elapsed=1.24
            )
        ]
    )
    text = re.sub(r"<[^>]+>", "", html)
    assert text == "12:03:04  faucet: +10 ytest.usd off-chain; balance 10 ytest.usd (1.2 s)"
    # a line without time or elapsed time shows neither
    assert re.sub(r"<[^>]+>", "", render_log_html([LogLine("info", "x")])) == "x"
    # the renderer is pure: the same lines, the same HTML
    assert html == render_log_html(
        [
            LogLine(
                "ok", "faucet: +10 ytest.usd off-chain; balance 10 ytest.usd", at=AT, elapsed=1.24
            )
        ]
    )


@pytest.mark.parametrize(
    "href",
    [
        "http://127.0.0.1:8545/explorer/tx/0x01",
        "https://sepolia.etherscan.io/tx/0x01",
        "/settlement/explorer/tx/0x01",
        "/user/me/settlement/explorer/tx/0x01",
    ],
)
def test_the_log_links_http_https_and_server_paths(href: str) -> None:
    html = render_log_html([LogLine("ok", "closed:", href, "0x01")])
    assert re.findall(r'<a href="([^"]*)"', html) == [href]
    assert ">0x01</a>" in html


@pytest.mark.parametrize(
    "href",
    [
        "javascript:alert(1)",
        "JavaScript:alert(1)",
        "//evil.test/tx/0x01",
        "data:text/html,<script>alert(1)</script>",
        "settlement/explorer/tx/0x01",
        "ftp://x.test/tx",
        "/path with space",
    ],
)
def test_the_log_does_not_link_anything_else(href: str) -> None:
    html = render_log_html([LogLine("ok", "closed:", href, "0x01")])
    assert "<a " not in html and "0x01" not in html
    assert "javascript" not in html.lower() and "<script>" not in html


def test_the_log_uses_the_theme_and_legible_sizes() -> None:
    html = render_log_html([LogLine(level, "x", at=AT) for level in ("info", "ok", "error")])
    assert "var(--jp-layout-color1" in html and "var(--jp-ui-font-color1" in html
    assert "var(--jp-success-color1" in html and "var(--jp-error-color1" in html
    sizes = [int(px) for px in re.findall(r"font(?:-size)?:[^;\"]*?(\d+)px", html)]
    assert sizes and min(sizes) >= 12


# --- buttons, pills, actions on a loop ----------------------------------------------------------


def test_buttons_fit_their_labels_and_explain_themselves() -> None:
    board = _dashboard()
    for action, button in board.buttons.items():
        assert button.layout.width == "auto", action  # never cut to "Transfer 1 ytest.u…"
        assert len(button.tooltip) > len(action) and button.tooltip != action
    # the dashboard's stylesheet styles the buttons like the cards, in the theme's colours
    assert ".sw-dashboard .sw-action{" in board._status.value
    assert "text-overflow:clip" in board._status.value


def test_the_aggregator_pill_says_where_the_routes_come_from(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from settlement_widgets.aggregator import DEFAULT_BASE_URL, AggregatorProvider

    monkeypatch.delenv("LIFI_API_URL", raising=False)

    def pill(board: SettlementDashboard) -> str:
        (card,) = [c for c in board.selector.view_model.cards if c.id == "aggregator"]
        return card.pill

    # no provider and no route server in the network profile: the live LI.FI API
    board = _dashboard()
    assert board.routes_source == "live" and pill(board) == "live"
    assert board._aggregator_provider().base_url == DEFAULT_BASE_URL
    # the sandbox's profile names its LI.FI-schema route server: the default uses it
    url = "http://127.0.0.1:8555/lifi/v1"
    sandboxed = replace(SEPOLIA, extra={"lifiUrl": url})
    board = SettlementDashboard(sandboxed, WalletClient(KEY))
    assert board._aggregator_provider().base_url == url
    assert board.routes_source == "local" and pill(board) == "local"
    # a provider given wins, and its host decides
    local = AggregatorProvider(base_url="http://127.0.0.1:9/v1")
    assert pill(_dashboard(aggregator=local)) == "local"
    assert pill(_dashboard(aggregator=AggregatorProvider())) == "live"
    assert pill(
        SettlementDashboard(sandboxed, WalletClient(KEY), aggregator=AggregatorProvider())
    ) == ("live")
    # the channel and v4 cards on Sepolia: a testnet
    assert {c.pill for c in board.selector.view_model.cards if c.id != "aggregator"} == {"testnet"}


async def test_an_action_logs_its_result_with_time_and_elapsed_and_the_bar_collapses(
    lifi: LifiTestServer,
) -> None:
    from settlement_widgets.aggregator import AggregatorProvider

    provider = AggregatorProvider(base_url=lifi.url)
    board = _dashboard(selected="aggregator", aggregator=provider)
    task = board.click("show_routes")  # a loopback LI.FI: no network needed
    assert task is not None and board.busy
    await board.wait_idle(timeout=60)
    assert not board.busy and board.errors.messages == ()
    assert lifi.count("POST", "/advanced/routes") == 1
    (line,) = board.activity
    assert line.level == "ok"
    assert line.text.startswith("4 routes ranked (local route server); best: relay")
    assert line.at is not None and line.elapsed is not None and line.elapsed >= 0
    # the progress line collapsed to one line saying how long it took
    (shown,) = board._progress.children
    (label,) = shown.children
    assert "Show best routes: done in " in label.value
    # the routes as a table for people, under an honest heading
    html = board.routes_html
    assert "LOCAL route server on this machine, not live rates" in html
    for header in ("Tool", "You receive", "Fees (USD)", "Gas (USD)", "Est. duration"):
        assert f">{header}</th>" in html
    assert "to_amount_units" not in html and html.count("</tr>") == 5
    await board.aclose()


async def test_the_default_provider_asks_the_route_server_of_the_network_profile(
    lifi: LifiTestServer,
) -> None:
    network = replace(SEPOLIA, extra={"lifiUrl": lifi.url})
    board = SettlementDashboard(network, WalletClient(KEY), selected="aggregator")
    board.click("show_routes")
    await board.wait_idle(timeout=60)
    assert board.errors.messages == () and lifi.count("POST", "/advanced/routes") == 1
    (line,) = board.activity
    assert line.level == "ok" and "(local route server)" in line.text
    assert "LOCAL route server on this machine" in board.routes_html
    await board.aclose()


async def test_a_failing_action_logs_the_error_with_its_elapsed_time() -> None:
    from settlement_widgets.errors import SettlementError

    board = _dashboard()

    async def refused() -> None:
        raise SettlementError("the faucet at http://127.0.0.1:9 is unreachable")

    board.faucet = refused  # type: ignore[method-assign]
    board.click("faucet")
    await board.wait_idle(timeout=60)
    (line,) = board.activity
    assert line.level == "error" and line.text == (
        "Faucet failed: the faucet at http://127.0.0.1:9 is unreachable"
    )
    assert line.at is not None and line.elapsed is not None
    (shown,) = board._progress.children
    assert "Faucet: failed after " in shown.children[0].value
    assert not board.buttons["faucet"].disabled


async def test_an_action_that_logs_nothing_still_says_it_is_done_and_how_long_it_took() -> None:
    board = _dashboard()

    async def quiet() -> None:
        return None

    board.faucet = quiet  # type: ignore[method-assign]
    board.click("faucet")
    await board.wait_idle(timeout=60)
    (line,) = board.activity
    assert (line.level, line.text) == ("ok", "Faucet: done")
    assert line.elapsed is not None
