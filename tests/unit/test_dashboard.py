"""The dashboard's pure parts (which actions a click may start, the escaped activity log) and
its widget behaviour that needs no chain: the action bar follows the selector, clicks that are
not allowed (or come without an event loop) change nothing and say why."""

from __future__ import annotations

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

KEY = PrivateKey(b"\x11" * 32)


def _dashboard(**kwargs: object) -> SettlementDashboard:
    return SettlementDashboard(SEPOLIA, WalletClient(KEY), **kwargs)  # type: ignore[arg-type]


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


def test_the_log_escapes_text_and_links_only_http() -> None:
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
    assert board.buttons["show_routes"].description == "Show best routes (recorded)"


def test_a_click_that_is_not_allowed_changes_nothing_and_says_so() -> None:
    board = _dashboard()
    assert board.click("transfer") is None
    assert board.activity == (LogLine("info", "Transfer 1 ytest.usd is not available right now"),)
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
