"""SettlementSelector as a widget, driven from Python the way a click drives it."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import ipywidgets
import pytest
from html_probe import assert_inert, parse

from settlement_widgets.errors import SettlementValueError, UnknownOptionError
from settlement_widgets.networks import SEPOLIA
from settlement_widgets.widgets import SettlementSelector
from tests.fake_networks import fake_local

C = SEPOLIA.contracts


@pytest.fixture(autouse=True)
def _close_widgets() -> Iterator[None]:
    yield
    ipywidgets.Widget.close_all()


def shown_addresses(sel: SettlementSelector) -> list[tuple[str, str]]:
    html = sel.children[2].value  # the inline address box
    probe = assert_inert(html, sel.network.explorer_base)
    return [(e.attrs["data-label"], e.text.split(": ", 1)[1]) for e in probe.by_class("sw-address")]


def selected_cards(sel: SettlementSelector) -> list[str]:
    grid = sel.children[1]
    out = []
    for card in grid.children:
        body = parse(card.children[0].value).by_class("sw-card-body")[0]
        if body.attrs["data-selected"] == "true":
            out.append(body.attrs["data-method"])
    return out


def test_default_is_aggregator_with_no_addresses() -> None:
    sel = SettlementSelector(network=SEPOLIA)
    assert sel.selected == "aggregator"
    assert shown_addresses(sel) == [] and sel.children[2].value == ""
    assert selected_cards(sel) == ["aggregator"]
    grid = sel.children[1]
    order = [
        parse(c.children[0].value).by_class("sw-card-body")[0].attrs["data-method"]
        for c in grid.children
    ]
    assert order == ["aggregator", "channel", "v4"]


def test_click_selects_calls_on_change_and_shows_exact_addresses() -> None:
    calls: list[str] = []
    seen: list[tuple[str, str]] = []
    sel = SettlementSelector(on_change=calls.append, network=SEPOLIA)
    sel.observe(lambda ch: seen.append((ch["old"], ch["new"])), names="selected")

    sel.card_button("channel").click()
    assert sel.selected == "channel" and calls == ["channel"]
    assert shown_addresses(sel) == [("Custody", C.custody), ("Adjudicator", C.adjudicator)]
    assert selected_cards(sel) == ["channel"]

    sel.card_button("v4").click()
    assert shown_addresses(sel) == [
        ("PolicyHook", C.policy_hook),
        ("Adapter", C.settlement_adapter),
        ("PoolManager", C.pool_manager),
    ]
    sel.card_button("aggregator").click()
    assert shown_addresses(sel) == []
    assert calls == ["channel", "v4", "aggregator"]
    assert seen == [("aggregator", "channel"), ("channel", "v4"), ("v4", "aggregator")]


def test_reclicking_the_selected_card_calls_on_change_again() -> None:
    calls: list[str] = []
    seen: list[object] = []
    sel = SettlementSelector(selected="channel", on_change=calls.append, network=SEPOLIA)
    sel.observe(seen.append, names="selected")
    sel.card_button("channel").click()
    sel.card_button("channel").click()
    assert calls == ["channel", "channel"]
    assert seen == []  # the trait did not change


def test_set_selected_from_python_does_not_call_on_change() -> None:
    calls: list[str] = []
    seen: list[str] = []
    sel = SettlementSelector(on_change=calls.append, network=SEPOLIA)
    sel.observe(lambda ch: seen.append(ch["new"]), names="selected")
    sel.set_selected("v4")
    assert sel.selected == "v4" and seen == ["v4"] and calls == []
    assert [label for label, _ in shown_addresses(sel)] == ["PolicyHook", "Adapter", "PoolManager"]


def test_bad_selection_is_rejected_and_changes_nothing() -> None:
    sel = SettlementSelector(selected="v4", network=SEPOLIA)
    before = sel.children[2].value
    with pytest.raises(UnknownOptionError, match="did you mean 'channel'"):
        sel.set_selected("chanel")
    with pytest.raises(UnknownOptionError, match="valid methods: aggregator, channel, v4"):
        sel.selected = "lifi"
    assert sel.selected == "v4" and sel.children[2].value == before
    with pytest.raises(UnknownOptionError, match="did you mean 'aggregator'"):
        SettlementSelector(selected="agregator", network=SEPOLIA)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"selcted": "channel"}, "did you mean 'selected'"),
        ({"onChange": print}, "did you mean 'on_change'"),
        ({"netwrok": "sepolia"}, "did you mean 'network'"),
        ({"colour": "red"}, "unknown keyword argument 'colour' for SettlementSelector"),
    ],
)
def test_unknown_kwargs_are_rejected_with_did_you_mean(kwargs: dict, match: str) -> None:
    with pytest.raises(UnknownOptionError, match=match):
        SettlementSelector(**kwargs)
    assert isinstance(UnknownOptionError("x"), TypeError)


def test_on_change_must_be_callable() -> None:
    with pytest.raises(SettlementValueError, match="on_change must be a function"):
        SettlementSelector(on_change="print", network=SEPOLIA)


def test_on_change_errors_are_shown_beside_the_widget() -> None:
    def boom(method: str) -> None:
        raise RuntimeError(f"cannot settle with {method}")

    sel = SettlementSelector(on_change=boom, network=SEPOLIA)
    assert sel.children[-1] is sel.errors  # the error output is part of the widget
    sel.card_button("channel").click()
    assert sel.selected == "channel"  # the selection itself happened
    assert sel.errors.messages == (
        "SettlementSelector: on_change raised RuntimeError: cannot settle with channel",
    )
    (out,) = sel.errors.outputs
    assert out["name"] == "stderr" and "Traceback" in out["text"]
    assert "cannot settle with channel" in out["text"]
    sel.errors.clear()
    assert sel.errors.outputs == () and sel.errors.messages == ()


async def test_async_on_change_runs_on_the_loop_and_reports_errors() -> None:
    done = asyncio.Event()
    got: list[str] = []

    async def ok(method: str) -> None:
        await asyncio.sleep(0)
        got.append(method)
        done.set()

    sel = SettlementSelector(on_change=ok, network=SEPOLIA)
    sel.card_button("v4").click()
    await asyncio.wait_for(done.wait(), 5)
    assert got == ["v4"] and sel.errors.messages == ()

    failed = asyncio.Event()

    async def bad(method: str) -> None:
        try:
            raise RuntimeError("relay down")
        finally:
            asyncio.get_running_loop().call_soon(failed.set)

    sel.on_change = bad
    sel.card_button("channel").click()
    await asyncio.wait_for(failed.wait(), 5)
    assert sel.errors.messages == ("SettlementSelector: on_change raised RuntimeError: relay down",)


def test_observer_errors_on_click_are_shown_not_lost() -> None:
    sel = SettlementSelector(network=SEPOLIA)

    def broken(_change: object) -> None:
        raise RuntimeError("observer broke")

    sel.observe(broken, names="selected")
    sel.card_button("v4").click()
    assert sel.errors.messages == (
        "SettlementSelector: an observer of 'selected' raised RuntimeError: observer broke",
    )


def test_stable_repr() -> None:
    sel = SettlementSelector(selected="channel", network=SEPOLIA)
    assert repr(sel) == "SettlementSelector(selected='channel', network='sepolia')"
    assert sel._repr_mimebundle_()["text/plain"] == repr(sel)
    assert repr(SettlementSelector(selected="channel", network=SEPOLIA)) == repr(sel)


def test_cards_are_real_buttons_with_names() -> None:
    sel = SettlementSelector(network=SEPOLIA)
    b = sel.card_button("channel")
    assert isinstance(b, ipywidgets.Button)
    assert "sw-card-channel" in b._dom_classes and b.tooltip == "Select Yellow Network (channel)"


def test_network_none_falls_back_to_sepolia_without_a_sandbox(
    monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    monkeypatch.delenv("SETTLEMENT_NETWORK", raising=False)
    monkeypatch.delenv("SETTLEMENT_PROFILE", raising=False)
    monkeypatch.setenv("SETTLEMENT_HOME", str(tmp_path))
    assert SettlementSelector().network == SEPOLIA


def test_network_none_uses_the_sandbox_profile_when_present(
    monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    net = fake_local()
    profile = tmp_path / "profile.json"
    profile.write_text(json.dumps(net.to_json()))
    monkeypatch.delenv("SETTLEMENT_NETWORK", raising=False)
    monkeypatch.setenv("SETTLEMENT_PROFILE", str(profile))
    sel = SettlementSelector(selected="channel")
    assert sel.network.name == "local"
    assert shown_addresses(sel) == [
        ("Custody", "0x" + "11" * 20),
        ("Adjudicator", "0x" + "22" * 20),
    ]
    monkeypatch.setenv("SETTLEMENT_NETWORK", "sepolia")
    assert SettlementSelector().network.name == "sepolia"


async def test_a_click_on_another_thread_runs_on_change_on_the_selectors_loop() -> None:
    """ipykernel 7 delivers a click on a subshell thread with a loop of its own: the selector
    hands it to the loop it was built on, so ``on_change`` may use what lives there."""
    import threading

    home = threading.get_ident()
    seen: list[tuple[str, int]] = []
    done = asyncio.Event()

    async def on_change(method: str) -> None:
        seen.append((method, threading.get_ident()))
        done.set()

    selector = SettlementSelector(network=SEPOLIA, on_change=on_change)

    def subshell() -> None:
        async def clicked() -> None:
            selector.card_button("channel").click()

        asyncio.run(clicked())

    thread = threading.Thread(target=subshell)
    thread.start()
    await asyncio.to_thread(thread.join)
    await asyncio.wait_for(done.wait(), 10)
    assert seen == [("channel", home)] and selector.selected == "channel"


def pills(sel: SettlementSelector) -> list[str]:
    grid = sel.children[1]
    return [parse(card.children[0].value).by_class("sw-pill")[0].text for card in grid.children]


def test_the_aggregator_pill_follows_the_data_source_across_re_renders() -> None:
    assert pills(SettlementSelector()) == ["live", "testnet", "testnet"]
    sel = SettlementSelector(aggregator_source="local")
    assert pills(sel) == ["local", "testnet", "testnet"]
    sel.click("v4")  # a re-render keeps what the pill says
    assert pills(sel) == ["local", "testnet", "testnet"]
    assert sel.view_model.cards[0].pill == "local"
    with pytest.raises(SettlementValueError, match="aggregator must be"):
        SettlementSelector(aggregator_source="fake")  # type: ignore[arg-type]
