"""Labels say what is true on the network and protocol in use (issue 34): the options table,
the selector's cards, pills and contracts, the status panel's contract row, the dashboard's
counterparty and the server's start line, on Sepolia, the sandbox and Nitrolite v1."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import ipywidgets
import pytest
from html_probe import parse

from settlement_widgets import SETTLEMENT_OPTIONS, settlement_options
from settlement_widgets.api.extension import serving_message, startup_protocol
from settlement_widgets.dashboard import SettlementDashboard
from settlement_widgets.dashboard.view import action_tooltip, counterparty
from settlement_widgets.errors import SettlementValueError
from settlement_widgets.keys import PrivateKey
from settlement_widgets.methods import network_label
from settlement_widgets.networks import PROTOCOL_V1, SEPOLIA, SEPOLIA_V1
from settlement_widgets.wallet import WalletClient
from settlement_widgets.widgets import (
    SelectorViewModel,
    SettlementSelector,
    StatusProps,
    StatusViewModel,
    render_status_html,
)
from settlement_widgets.widgets.viewmodels import network_aggregator_source
from tests.fake_networks import fake_local

HUB = "0x" + "66" * 20
LOCAL = fake_local()
LOCAL_V1 = replace(LOCAL, contracts=replace(LOCAL.contracts, channel_hub=HUB), protocol=PROTOCOL_V1)
#: the sandbox with the aggregator's second chain and its route server (as ``--aggregator``)
LOCAL_AGG = replace(
    LOCAL,
    extra={
        "lifiUrl": "http://127.0.0.1:8555/lifi/v1",
        "aggregator": {
            "chains": [
                {"chainId": 31337, "usdc": "0x" + "77" * 20},
                {"chainId": 31338, "usdc": "0x" + "88" * 20},
            ]
        },
    },
)


@pytest.fixture(autouse=True)
def _close_widgets(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("LIFI_API_URL", raising=False)
    yield
    ipywidgets.Widget.close_all()


# --- the options table --------------------------------------------------------------------


def test_options_on_sepolia_are_the_jack_table() -> None:
    assert settlement_options(SEPOLIA) == SETTLEMENT_OPTIONS
    assert [o.network for o in SETTLEMENT_OPTIONS] == ["Multi-chain", "Sepolia", "Sepolia"]


@pytest.mark.parametrize("network", [LOCAL, LOCAL_V1, LOCAL_AGG])
def test_options_on_the_sandbox_never_say_sepolia(network) -> None:
    options = settlement_options(network)
    assert [o.id for o in options] == ["aggregator", "channel", "v4"]
    assert all("Sepolia" not in str(o.to_json()) for o in options)
    by_id = {o.id: o for o in options}
    assert by_id["v4"].network == "Local sandbox · chain 31337"
    assert by_id["channel"].network.startswith("Local sandbox · chain 31337")


def test_options_name_the_protocol_and_the_aggregator_chains() -> None:
    v05 = {o.id: o for o in settlement_options(LOCAL)}
    v1 = {o.id: o for o in settlement_options(LOCAL_V1)}
    assert "Nitrolite v1" not in v05["channel"].network + v05["channel"].desc
    assert v1["channel"].network == "Local sandbox · chain 31337 · Nitrolite v1"
    assert "ChannelHub" in v1["channel"].desc and "Nitronode" in v1["channel"].desc
    sepolia_v1 = {o.id: o for o in settlement_options(SEPOLIA_V1)}
    assert sepolia_v1["channel"].network == "Sepolia · Nitrolite v1"
    assert sepolia_v1["v4"].network == "Sepolia"  # v4 does not depend on the channel protocol
    # the sandbox's aggregator bridges between its two chains, for real
    agg = {o.id: o for o in settlement_options(LOCAL_AGG)}["aggregator"]
    assert agg.network == "Local sandbox · chains 31337, 31338"
    assert "bridged for real" in agg.desc
    assert {o.id: o for o in settlement_options(LOCAL)}["aggregator"].network == "Multi-chain"
    with pytest.raises(SettlementValueError):
        settlement_options("local")  # type: ignore[arg-type]


def test_network_label() -> None:
    assert network_label(SEPOLIA) == "Sepolia"
    assert network_label(SEPOLIA, protocol=True) == "Sepolia · Nitrolite v0.5"
    assert network_label(LOCAL_V1, protocol=True) == "Local sandbox · chain 31337 · Nitrolite v1"


# --- the selector -------------------------------------------------------------------------


def test_selector_cards_show_the_options_of_the_network() -> None:
    for network in (SEPOLIA, LOCAL, LOCAL_V1, LOCAL_AGG):
        vm = SelectorViewModel.build("channel", network)
        assert [(c.network, c.desc) for c in vm.cards] == [
            (o.network, o.desc) for o in settlement_options(network)
        ]


def test_the_v1_selector_lists_the_channelhub_not_the_v05_contracts() -> None:
    vm = SelectorViewModel.build("channel", LOCAL_V1)
    assert [(a.label, a.address) for a in vm.addresses] == [("ChannelHub", HUB)]
    assert vm.addresses[0].href == f"http://127.0.0.1:8899/explorer/address/{HUB}"
    v05 = SelectorViewModel.build("channel", LOCAL)
    assert [a.label for a in v05.addresses] == ["Custody", "Adjudicator"]
    # on Sepolia's v1 profile too
    (line,) = SelectorViewModel.build("channel", SEPOLIA_V1).addresses
    assert line.label == "ChannelHub" and line.address.lower() == HUB_SEPOLIA


HUB_SEPOLIA = "0x5dba8515af063db0c243c15ece7b99f91459c7c3"


def _pill(selector: SettlementSelector) -> str:
    grid = selector.children[1]
    return parse(grid.children[0].children[0].value).by_class("sw-pill")[0].text


def test_the_aggregator_pill_has_one_rule_for_notebook_and_dashboard() -> None:
    """The selector a notebook builds (no source given) and the dashboard's agree: LOCAL on
    a sandbox whose profile names its route server, LIVE where the default provider would
    call the LI.FI API."""
    assert network_aggregator_source(LOCAL_AGG) == "local"
    assert network_aggregator_source(LOCAL) == "live"
    for network in (LOCAL_AGG, LOCAL, SEPOLIA):
        notebook = SettlementSelector(network=network)
        board = SettlementDashboard(network, WalletClient(PrivateKey(b"\x11" * 32)))
        assert _pill(notebook) == _pill(board.selector) == board.routes_source
        assert _pill(notebook) == network_aggregator_source(network)
    # an explicit source still wins
    assert _pill(SettlementSelector(network=LOCAL_AGG, aggregator_source="live")) == "live"


def test_the_pill_follows_lifi_api_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LIFI_API_URL", "http://127.0.0.1:9/v1")
    assert network_aggregator_source(SEPOLIA) == "local"
    board = SettlementDashboard(SEPOLIA, WalletClient(PrivateKey(b"\x11" * 32)))
    assert board.routes_source == "local" == _pill(SettlementSelector(network=SEPOLIA))


# --- the status panel ---------------------------------------------------------------------


def _row_labels(network, **props) -> list[str]:
    html = render_status_html(StatusViewModel.build(StatusProps.from_kwargs(**props), network))
    return [e.attrs["data-label"] for e in parse(html).by_class("sw-row")]


def test_the_v1_panel_calls_the_channelhub_by_its_name() -> None:
    props = {"channel_id": "0x" + "ab" * 32, "channel_status": "active", "adjudicator": HUB}
    assert "ChannelHub" in _row_labels(LOCAL_V1, **props)
    assert "Adjudicator" not in _row_labels(LOCAL_V1, **props)
    assert "Adjudicator" in _row_labels(LOCAL, **props)
    assert "ChannelHub" not in _row_labels(LOCAL, **props)


# --- the dashboard and the server ---------------------------------------------------------


def test_the_dashboard_names_the_protocol_counterparty() -> None:
    assert counterparty("nitrolite-v0.5") == "the broker"
    assert counterparty("nitrolite-v1") == "the node"
    assert "ChannelHub" in action_tooltip("open_channel", "nitrolite-v1")
    assert "broker" not in action_tooltip("open_channel", "nitrolite-v1")
    assert "Custody" in action_tooltip("open_channel", "nitrolite-v0.5")
    board = SettlementDashboard(LOCAL_V1, WalletClient(PrivateKey(b"\x11" * 32)))
    tooltip = board.buttons["open_channel"].tooltip
    assert "the node" in tooltip and "broker" not in tooltip


def test_the_server_start_line_names_the_protocol(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SETTLEMENT_PROTOCOL", "v1")
    assert startup_protocol("local", True) == "nitrolite-v1"
    monkeypatch.setenv("SETTLEMENT_PROTOCOL", "v0.5")
    assert startup_protocol("local", True) == "nitrolite-v0.5"
    assert startup_protocol("sepolia-v1", False) == "nitrolite-v1"
    assert startup_protocol("sepolia", False) == "nitrolite-v0.5"
    line = serving_message("local", "nitrolite-v1")
    assert "local network" in line and "Nitrolite v1" in line and "ChannelHub" in line
    assert "Nitrolite v0.5" in serving_message("sepolia", "nitrolite-v0.5")
    assert "later" in serving_message("local", None)


# --- amounts in token units with the symbol ----------------------------------------------


@pytest.mark.parametrize(
    ("units", "decimals", "text"),
    [
        (10_000_000, 6, "10 ytest.usd"),
        (14_000_001, 6, "14.000001 ytest.usd"),
        (10**24, 6, "1000000000000000000 ytest.usd"),
        (1, 18, "0.000000000000000001 ytest.usd"),
        (0, 6, "0 ytest.usd"),
        (-1_500_000, 6, "-1.5 ytest.usd"),
    ],
)
def test_format_amount_is_exact(units: int, decimals: int, text: str) -> None:
    from settlement_widgets.channel.v0_5.core.amounts import format_amount

    assert format_amount(units, decimals, "ytest.usd") == text


def test_the_transfer_button_reads_token_units_exactly() -> None:
    """Not "Transfer 1e+18 ytest.usd": the exact amount, at any size."""
    wallet = WalletClient(PrivateKey(b"\x11" * 32))
    board = SettlementDashboard(LOCAL, wallet, transfer_amount=10**24)
    assert board.buttons["transfer"].description == "Transfer 1000000000000000000 ytest.usd"
    board = SettlementDashboard(LOCAL, wallet, transfer_amount=1_234_567)
    assert board.buttons["transfer"].description == "Transfer 1.234567 ytest.usd"
    assert "e+" not in SettlementDashboard(LOCAL, wallet, transfer_amount=10**30)._label("transfer")
