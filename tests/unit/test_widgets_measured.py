"""The measured figures on the selector's cards (settlement_widgets.widgets.measured): pure
view model and renderer, then the selector and the dashboard showing them. Every text from
the data is escaped; the cheapest and the fastest are marked; a method the comparison did not
measure shows nothing, and one it could not run says why."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import ipywidgets
import pytest
from html_probe import assert_inert, parse

from settlement_widgets.compare import parse_comparison
from settlement_widgets.dashboard import SettlementDashboard
from settlement_widgets.errors import SettlementValueError
from settlement_widgets.keys import PrivateKey
from settlement_widgets.networks import SEPOLIA
from settlement_widgets.wallet import WalletClient
from settlement_widgets.widgets import SettlementSelector
from settlement_widgets.widgets.measured import (
    comparison_caption,
    format_native,
    format_prompts,
    format_usd,
    measured_cards,
    render_comparison_caption_html,
    render_measured_html,
)
from settlement_widgets.widgets.render import render_card_html, render_selector_html
from tests.comparison_sample import sample_comparison, sample_run
from tests.fake_networks import fake_local

LOCAL = fake_local(port=9, explorer_base="http://127.0.0.1:9/explorer")
HOSTILE = '<script>alert(1)</script>"onmouseover="x'


@pytest.fixture(autouse=True)
def _close_widgets() -> Iterator[None]:
    yield
    ipywidgets.Widget.close_all()


def measured_runs(html: str) -> dict[str, dict[str, Any]]:
    """label -> what its line shows: cost, usd, time, prompts, marks."""
    probe = assert_inert(html, LOCAL.explorer_base)
    runs = {}
    for line in probe.by_class("sw-measured-run"):
        inner = parse_line(html, line.attrs["data-label"])
        runs[line.attrs["data-label"]] = {
            "cheapest": line.attrs["data-cheapest"] == "true",
            "fastest": line.attrs["data-fastest"] == "true",
            **inner,
        }
    return runs


def parse_line(html: str, label: str) -> dict[str, Any]:
    probe = parse(html)
    lines = [e for e in probe.by_class("sw-measured-run") if e.attrs["data-label"] == label]
    assert len(lines) == 1
    start = html.index(f'data-label="{label}"')
    sub = parse(html[html.rindex("<div", 0, start) :])
    first = lambda cls: sub.by_class(cls)[0].text if sub.by_class(cls) else None  # noqa: E731
    return {
        "cost": first("sw-measured-cost"),
        "usd": first("sw-measured-usd"),
        "time": first("sw-measured-time"),
        "prompts": first("sw-measured-prompts"),
        "marks": [e.attrs["data-mark"] for e in sub.by_class("sw-mark")][:2],
    }


def test_formats() -> None:
    assert format_native(0) == "0 ETH"
    assert format_native(270_000 * 10**9) == "0.00027 ETH"
    assert format_native(123_456_789 * 10**9) == "0.1235 ETH"
    assert format_native(12_345 * 10**18) == "12345 ETH"
    assert format_native(1) == "0.000000000000000001 ETH"
    assert "e" not in format_native(7 * 10**40)
    assert format_usd(None) is None and format_usd(0.004) == "< $0.01"
    assert format_usd(1234.5) == "$1,234.50" and format_usd(0) == "$0.00"
    assert format_prompts(0, 0) == "no wallet prompts"
    assert format_prompts(1, 1) == "1 signature, 1 transaction"
    assert format_prompts(0, 3) == "3 transactions"


def test_each_card_shows_its_measured_runs_and_marks_cheapest_and_fastest() -> None:
    raw = sample_comparison(fastest="channel v0.5")
    cards = measured_cards(parse_comparison(raw))
    assert set(cards) == {"channel", "v4", "aggregator"}
    channel = measured_runs(render_measured_html(cards["channel"]))
    assert channel == {
        "channel v0.5": {
            "cheapest": False,
            "fastest": True,
            "cost": "0.00027 ETH",
            "usd": None,  # no price known: no USD shown, none invented
            "time": "4.2 s · 3 blocks",
            "prompts": "1 signature, 3 transactions",
            "marks": ["fastest"],
        }
    }
    v4 = measured_runs(render_measured_html(cards["v4"]))
    assert v4["v4 hook"]["cheapest"] and not v4["v4 hook"]["fastest"]
    assert v4["v4 hook"]["usd"] == "($0.42)" and v4["v4 hook"]["marks"] == ["cheapest"]
    assert v4["v4 hook"]["time"] == "2.5 s · 1 block"
    # the exact figures behind the rounded cost, in its title
    cost = parse(render_measured_html(cards["v4"])).by_class("sw-measured-cost")[0]
    assert cost.attrs["title"] == "150,000,000,000,000 wei for 150,000 gas in 1 transaction"
    # the aggregator could not be run: it says why, and shows no figure
    html = render_measured_html(cards["aggregator"])
    probe = parse(html)
    assert probe.by_class("sw-measured-run") == []
    assert probe.by_class("sw-measured-unavailable")[0].text == (
        "not measured: no route between the two chains"
    )


def test_a_method_the_comparison_does_not_mention_shows_nothing() -> None:
    raw = sample_comparison(unavailable={})
    cards = measured_cards(parse_comparison(raw))
    assert "aggregator" not in cards
    assert render_measured_html(None) == ""
    vm = SettlementSelector(network=LOCAL, comparison=raw).view_model
    aggregator = next(c for c in vm.cards if c.id == "aggregator")
    assert aggregator.measured is None
    assert "sw-measured" not in render_card_html(aggregator)


def test_several_runs_of_one_method_each_get_a_line() -> None:
    raw = sample_comparison()
    raw["runs"].append(sample_run("channel", "channel v1", [80_000], 1.0))
    raw["fastest"] = "channel v1"
    lines = measured_runs(render_measured_html(measured_cards(parse_comparison(raw))["channel"]))
    assert list(lines) == ["channel v0.5", "channel v1"]
    assert [label for label, line in lines.items() if line["fastest"]] == ["channel v1"]


def test_every_text_from_the_data_is_escaped() -> None:
    raw = sample_comparison(
        unavailable={"aggregator": HOSTILE},
        intent={**sample_comparison()["intent"], "asset": HOSTILE, "counterparty": HOSTILE},
    )
    raw["runs"][1]["label"] = HOSTILE
    raw["cheapest"] = raw["fastest"] = HOSTILE
    selector = SettlementSelector(network=LOCAL, comparison=raw)
    html = render_selector_html(selector.view_model)
    probe = assert_inert(html, LOCAL.explorer_base)
    assert "<script" not in html and "onmouseover" not in {
        k for e in probe.elements for k in e.attrs
    }
    assert HOSTILE in probe.text  # shown as text, verbatim
    assert [e.attrs["data-label"] for e in probe.by_class("sw-measured-run")][-1] == HOSTILE
    caption = probe.by_class("sw-comparison")[0]
    assert caption.attrs["title"] == f"counterparty {HOSTILE}"
    # and what the live widget holds is the same escaped HTML
    for widget in (
        selector.children[0],
        *(box.children[0] for box in selector.children[1].children),
    ):
        assert_inert(widget.value, LOCAL.explorer_base)


def test_the_caption_names_the_intent_network_and_time() -> None:
    view = parse_comparison(sample_comparison())
    caption = comparison_caption(view)
    assert caption.intent == "100 USDC, chain 31337 → 31338, 20 payments"
    html = render_comparison_caption_html(caption)
    assert parse(html).text == (
        "Measured on local, 2026-11-29 00:40 UTC: 100 USDC, chain 31337 → 31338, 20 payments"
    )
    assert render_comparison_caption_html(None) == ""


def test_the_selector_takes_shows_and_clears_a_comparison() -> None:
    selector = SettlementSelector(network=LOCAL)
    assert selector.comparison is None
    assert "sw-measured" not in selector.children[1].children[0].children[0].value
    shown = selector.show_comparison(sample_comparison())
    assert shown is selector.comparison and shown is not None and shown.network == "local"
    cards = {
        parse(box.children[0].value).by_class("sw-card-body")[0].attrs["data-method"]: box
        for box in selector.children[1].children
    }
    v4 = measured_runs(cards["v4"].children[0].value)
    assert v4["v4 hook"]["cheapest"] and v4["v4 hook"]["fastest"]
    assert "Measured on local" in selector.children[0].value
    # the figures stay when the selection changes
    selector.set_selected("v4")
    assert "sw-measured-run" in cards["channel"].children[0].value
    selector.show_comparison(None)
    assert "sw-measured" not in cards["v4"].children[0].value
    assert "Measured on" not in selector.children[0].value


def test_a_bad_or_foreign_comparison_is_refused_and_changes_nothing() -> None:
    selector = SettlementSelector(network=LOCAL, comparison=sample_comparison())
    before = selector.comparison
    with pytest.raises(SettlementValueError, match=r"runs\[0\]\.gasUsed"):
        bad = sample_comparison()
        bad["runs"][0]["gasUsed"] = 5
        selector.show_comparison(bad)
    with pytest.raises(SettlementValueError, match="measured on 'local'; the selector shows"):
        SettlementSelector(network=SEPOLIA, comparison=sample_comparison())
    with pytest.raises(SettlementValueError, match="measured on 'sepolia'"):
        selector.comparison = sample_comparison(network="sepolia")
    assert selector.comparison is before


def test_the_dashboard_shows_a_comparison_on_its_selector() -> None:
    user = WalletClient(PrivateKey(b"\x11" * 32), rpc_url="http://127.0.0.1:9")
    board = SettlementDashboard(LOCAL, user, comparison=sample_comparison())
    assert board.comparison is board.selector.comparison is not None
    board.show_comparison(None)
    assert board.comparison is None
    view = board.show_comparison(sample_comparison())
    assert view is not None and board.comparison == view
    assert "sw-measured-run" in board.selector.children[1].children[2].children[0].value


def test_the_saved_snapshot_keeps_the_figures() -> None:
    """A notebook saved without widget state shows the cards as they were, figures included."""
    from settlement_widgets.widgets.snapshot import static_html

    selector = SettlementSelector(network=LOCAL, comparison=sample_comparison())
    probe = parse(static_html(selector))
    assert [e.attrs["data-label"] for e in probe.by_class("sw-measured-run")] == [
        "channel v0.5",
        "v4 hook",
    ]
    assert "Measured on local" in probe.text
