"""Pure view models and HTML renderers of the widgets: no kernel, no browser."""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field, replace

import pytest
from html_probe import assert_inert, parse

from settlement_widgets.errors import SettlementValueError, UnknownOptionError
from settlement_widgets.methods import SETTLEMENT_OPTIONS
from settlement_widgets.networks import SEPOLIA
from settlement_widgets.widgets import (
    SelectorViewModel,
    StatusProps,
    StatusViewModel,
    render_selector_html,
    render_status_html,
)
from settlement_widgets.widgets.render import RING
from settlement_widgets.widgets.viewmodels import (
    BLUE,
    CYAN,
    GREEN,
    MUTED,
    PURPLE,
    RED,
    YELLOW,
    aggregator_source,
    card_pill,
)
from tests.fake_networks import fake_local

CHANNEL_ID = "0x" + "ab" * 32
STATE_HASH = "0x" + "12" * 32
TX = "0x" + "cd" * 32
ADJ = SEPOLIA.contracts.adjudicator
ETHERSCAN = "https://sepolia.etherscan.io"

PAYLOADS = [
    "<script>alert(1)</script>",
    '"><img src=x onerror=alert(1)>',
    "' onmouseover='alert(1)' x='",
    "javascript:alert(1)",
    '</span></div><a href="javascript:alert(1)">click</a>',
]
STRING_PROPS = [
    "channel_id",
    "channel_status",
    "state_intent",
    "state_hash",
    "adjudicator",
    "settlement_tx",
]

LOCAL = fake_local()


def status_html(network=SEPOLIA, **props) -> str:
    return render_status_html(StatusViewModel.build(StatusProps.from_kwargs(**props), network))


def value_of(html: str, label: str):
    """The value element (span) of the row labelled ``label``."""
    probe = parse(html)
    rows = [e for e in probe.by_class("sw-row") if e.attrs["data-label"] == label]
    assert len(rows) == 1, f"{label}: {len(rows)} rows"
    idx = probe.elements.index(rows[0])
    return next(e for e in probe.elements[idx:] if "sw-value" in e.attrs.get("class", ""))


# --- selector view model -------------------------------------------------------------------


def test_cards_follow_settlement_options_order_with_pills() -> None:
    vm = SelectorViewModel.build("aggregator", SEPOLIA)
    assert [c.id for c in vm.cards] == [o.id for o in SETTLEMENT_OPTIONS]
    assert [c.id for c in vm.cards] == ["aggregator", "channel", "v4"]
    probe = assert_inert(render_selector_html(vm))
    bodies = probe.by_class("sw-card-body")
    assert [b.attrs["data-method"] for b in bodies] == ["aggregator", "channel", "v4"]
    assert [b.attrs["data-selected"] for b in bodies] == ["true", "false", "false"]
    for body, option in zip(bodies, SETTLEMENT_OPTIONS, strict=True):
        assert option.label in body.text and option.desc in body.text
    # the pills say what each card runs on: the default aggregator is the live API, the
    # other two run on Sepolia, a testnet
    pills = probe.by_class("sw-pill")
    assert [p.attrs["data-pill"] for p in pills] == ["live", "testnet", "testnet"]
    assert [p.text for p in pills] == ["live", "testnet", "testnet"]
    assert f"color:{GREEN}" in pills[0].attrs["style"]
    assert f"color:{BLUE}" in pills[1].attrs["style"]
    # the selected card, and only it, is ringed in the theme's brand colour
    ringed = [b.attrs["data-method"] for b in bodies if RING in b.attrs["style"]]
    assert ringed == ["aggregator"]


@pytest.mark.parametrize(
    ("method", "expected"),
    [
        ("aggregator", []),
        (
            "channel",
            [
                ("Custody", SEPOLIA.contracts.custody),
                ("Adjudicator", SEPOLIA.contracts.adjudicator),
            ],
        ),
        (
            "v4",
            [
                ("PolicyHook", SEPOLIA.contracts.policy_hook),
                ("Adapter", SEPOLIA.contracts.settlement_adapter),
                ("PoolManager", SEPOLIA.contracts.pool_manager),
            ],
        ),
    ],
)
def test_address_box_per_method(method: str, expected: list[tuple[str, str]]) -> None:
    vm = SelectorViewModel.build(method, SEPOLIA)
    assert [(a.label, a.address) for a in vm.addresses] == expected
    probe = assert_inert(render_selector_html(vm))
    lines = probe.by_class("sw-address")
    assert [(e.attrs["data-label"], e.text.split(": ", 1)[1]) for e in lines] == expected
    # shown in full and linked to the explorer's address page
    assert [a.attrs["href"] for a in probe.links()] == [
        f"{ETHERSCAN}/address/{addr}" for _, addr in expected
    ]
    if not expected:
        assert probe.by_class("sw-address-box") == []


def test_selector_on_a_local_network_names_it_and_links_its_explorer() -> None:
    vm = SelectorViewModel.build("channel", LOCAL)
    assert [c.network for c in vm.cards] == [
        "Multi-chain",
        "Local sandbox · chain 31337",
        "Local sandbox · chain 31337",
    ]
    probe = assert_inert(render_selector_html(vm), LOCAL.explorer_base)
    assert [a.attrs["href"] for a in probe.links()] == [
        "http://127.0.0.1:8899/explorer/address/0x" + "11" * 20,
        "http://127.0.0.1:8899/explorer/address/0x" + "22" * 20,
    ]
    assert [c.network for c in SelectorViewModel.build("v4", SEPOLIA).cards][1:] == [
        "Sepolia",
        "Sepolia",
    ]


def test_selector_rejects_unknown_method_with_suggestion() -> None:
    with pytest.raises(UnknownOptionError, match="did you mean 'channel'"):
        SelectorViewModel.build("chanel", SEPOLIA)


@pytest.mark.parametrize(
    "base",
    [
        "javascript:alert(1)//",
        'https://evil.test/"><script>',
        "ftp://x.test",
        "//evil.test/explorer",
        "relative/explorer",
        "data:text/html,x",
        "/settlement explorer",
    ],
)
def test_no_links_when_the_explorer_base_is_not_a_link_target(base: str) -> None:
    network = replace(SEPOLIA, explorer_base=base)
    sel = render_selector_html(SelectorViewModel.build("v4", network))
    panel = status_html(network, channel_id=CHANNEL_ID, adjudicator=ADJ, settlement_tx=TX)
    for html in (sel, panel):
        probe = parse(html)
        assert probe.links() == []
        assert "script" not in probe.tags()
    # the addresses are still shown, as text
    assert SEPOLIA.contracts.pool_manager in parse(sel).text


def test_an_explorer_on_the_jupyter_server_is_linked_by_path() -> None:
    """Under a Jupyter server the shared sandbox's explorer is ``{base_url}settlement/explorer``:
    a path the browser resolves against the page, so it works behind any proxy."""
    network = replace(LOCAL, explorer_base="/user/me/settlement/explorer")
    sel = render_selector_html(SelectorViewModel.build("channel", network))
    probe = assert_inert(sel, network.explorer_base)
    assert [a.attrs["href"] for a in probe.links()] == [
        "/user/me/settlement/explorer/address/0x" + "11" * 20,
        "/user/me/settlement/explorer/address/0x" + "22" * 20,
    ]
    panel = status_html(
        network, channel_id=CHANNEL_ID, adjudicator=LOCAL.contracts.adjudicator, settlement_tx=TX
    )
    hrefs = [a.attrs["href"] for a in assert_inert(panel, network.explorer_base).links()]
    assert hrefs == [
        "/user/me/settlement/explorer/address/" + LOCAL.contracts.adjudicator,
        f"/user/me/settlement/explorer/tx/{TX}",
    ]


# --- the pills: what each card runs on ---------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "network", "source", "pill"),
    [
        ("aggregator", "sepolia", "live", "live"),
        ("aggregator", "local", "live", "live"),  # the aggregator is multi-chain
        ("aggregator", "local", "local", "local"),
        ("aggregator", "sepolia", "local", "local"),
        ("channel", "local", "live", "local"),
        ("v4", "local", "local", "local"),
        ("channel", "sepolia", "local", "testnet"),
        ("v4", "sepolia", "live", "testnet"),
        ("channel", "holesky", "live", "holesky"),  # another network: named, never "live"
    ],
)
def test_card_pill_tells_where_the_data_comes_from(
    method: str, network: str, source: str, pill: str
) -> None:
    assert card_pill(method, network, source) == pill  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("base_url", "source"),
    [
        (None, "live"),
        ("https://li.quest/v1", "live"),
        ("http://127.0.0.1:8123/v1", "local"),
        ("http://127.0.0.1:8123/lifi/v1", "local"),  # the sandbox's route server
        ("http://localhost:8123", "local"),
        ("http://[::1]:8123/v1", "local"),
        ("https://lifi.example.org/v1", "live"),
    ],
)
def test_aggregator_source_of_a_provider(base_url: str | None, source: str) -> None:
    assert aggregator_source(base_url) == source


def test_selector_pills_on_the_local_sandbox_with_its_route_server() -> None:
    vm = SelectorViewModel.build("channel", LOCAL, "local")
    assert [(c.id, c.status, c.pill) for c in vm.cards] == [
        ("aggregator", "live", "local"),  # the spec's status is kept for the API
        ("channel", "demo", "local"),
        ("v4", "demo", "local"),
    ]
    pills = assert_inert(render_selector_html(vm), LOCAL.explorer_base).by_class("sw-pill")
    assert [p.text for p in pills] == ["local", "local", "local"]
    assert f"color:{CYAN}" in pills[0].attrs["style"]
    for retired in ("recorded", "fake"):
        with pytest.raises(SettlementValueError, match="aggregator must be 'live' or 'local'"):
            SelectorViewModel.build("channel", LOCAL, retired)  # type: ignore[arg-type]


# --- theme and legibility --------------------------------------------------------------------

FONT_SIZE = re.compile(r"font(?:-size)?:[^;\"]*?(\d+(?:\.\d+)?)px")
HARD_CODED = re.compile(r"#[0-9a-fA-F]{3,8}\b|rgba?\(")
JP_VAR = re.compile(r"var\(--[\w-]+, [^()]*\)")


def _every_rendering() -> list[str]:
    full = {
        "channel_id": CHANNEL_ID,
        "channel_status": "dispute",
        "state_intent": "OPERATE",
        "state_version": 3,
        "state_hash": STATE_HASH,
        "adjudicator": ADJ,
        "challenge_period": 3600,
        "settlement_tx": TX,
        "provider": "channel",
        "provider_metadata": {"erc7824": {"proofsCount": 2, "nonce": 7}},
    }
    return [
        *(render_selector_html(SelectorViewModel.build(m, SEPOLIA)) for m in ("channel", "v4")),
        render_selector_html(SelectorViewModel.build("aggregator", LOCAL, "local")),
        status_html(**full),
        status_html(provider="v4", settlement_tx=TX),
        status_html(settlement_tx="pending"),
    ]


@pytest.mark.parametrize("html", _every_rendering())
def test_no_text_below_12px(html: str) -> None:
    sizes = [float(m) for m in FONT_SIZE.findall(html)]
    assert sizes, "no font size found: the pattern is wrong"
    assert min(sizes) >= 12, sorted(sizes)


@pytest.mark.parametrize("html", _every_rendering())
def test_colours_come_from_the_notebook_theme(html: str) -> None:
    """Every colour is a ``--jp-*`` variable (a fallback inside var() is fine); no dark
    palette is hard-coded into a light notebook. Shadows are the only literal colours."""
    for el in parse(html).elements:
        for declaration in el.attrs.get("style", "").split(";"):
            prop, _, value = declaration.partition(":")
            if prop.strip() == "box-shadow" or not value:
                continue
            assert not HARD_CODED.search(JP_VAR.sub("", value)), declaration
    assert "--jp-layout-color" in html and "--jp-ui-font-color" in html
    for dark in ("#0F1A2E", "#131D33", "#ffffff;", "#F2B94B"):
        assert dark not in html


# --- status view model ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "colour"),
    [
        ("active", GREEN),
        ("open", GREEN),
        ("ACTIVE", GREEN),
        ("final", BLUE),
        ("closed", BLUE),
        ("dispute", RED),
        ("Dispute", RED),
        ("resizing", YELLOW),
        ("challenged", YELLOW),
    ],
)
def test_status_row_colour_and_case(status: str, colour: str) -> None:
    html = status_html(channel_id=CHANNEL_ID, channel_status=status)
    value = value_of(html, "Status")
    assert value.text == status.upper()
    assert f"color:{colour}" in value.attrs["style"]


def test_status_row_absent_without_status_and_muted_colour_for_blank() -> None:
    html = status_html(channel_id=CHANNEL_ID)
    assert [e.attrs["data-label"] for e in parse(html).by_class("sw-row")] == ["Channel ID"]
    from settlement_widgets.widgets.viewmodels import status_colour

    assert status_colour("") == status_colour("  ") == status_colour(None) == MUTED


def test_channel_rows_truncation_titles_and_links() -> None:
    html = status_html(
        channel_id=CHANNEL_ID,
        channel_status="active",
        state_intent="OPERATE",
        state_version=0,
        state_hash=STATE_HASH,
        adjudicator=ADJ,
        challenge_period=3600,
        settlement_tx=TX,
        provider="channel",
    )
    probe = assert_inert(html)
    labels = [e.attrs["data-label"] for e in probe.by_class("sw-row")]
    assert labels == [
        "Channel ID",
        "Status",
        "State Intent",
        "State Version",
        "State Hash",
        "Adjudicator",
        "Challenge Period",
    ]
    cid = value_of(html, "Channel ID")
    assert cid.text == "0xabababab...abababab" and cid.attrs["title"] == CHANNEL_ID
    assert "monospace" in cid.attrs["style"]
    sh = value_of(html, "State Hash")
    assert sh.text == STATE_HASH[:10] + "..." + STATE_HASH[-8:] and sh.attrs["title"] == STATE_HASH
    assert value_of(html, "State Version").text == "0"  # defined, so shown
    assert value_of(html, "State Intent").text == "OPERATE"
    assert value_of(html, "Challenge Period").text == "3600s"
    links = {a.attrs["href"]: a for a in probe.links()}
    adj = links[f"{ETHERSCAN}/address/{ADJ}"]
    assert adj.text == ADJ[:10] + "..." + ADJ[-8:] and adj.attrs["title"] == ADJ
    tx = links[f"{ETHERSCAN}/tx/{TX}"]
    assert tx.attrs["title"] == TX and "Settlement Tx" in tx.text
    assert TX[:10] + "..." + TX[-8:] in tx.text
    assert len(links) == 2  # channel id and state hash are not linked (as in the original)
    header = probe.by_class("sw-header")[0]
    assert header.text == "Yellow Network · State Channel"
    assert f"color:{YELLOW}" in html


def test_short_values_are_not_truncated_and_have_no_title() -> None:
    html = status_html(channel_id="chan-1", state_hash="0x1234")
    assert value_of(html, "Channel ID").text == "chan-1"
    assert "title" not in value_of(html, "Channel ID").attrs
    exactly_20 = "0x" + "a" * 18
    assert value_of(status_html(channel_id=exactly_20), "Channel ID").text == exactly_20
    assert value_of(status_html(channel_id=exactly_20 + "b"), "Channel ID").text == (
        exactly_20[:10] + "..." + (exactly_20 + "b")[-8:]
    )


def test_non_address_adjudicator_and_non_hash_tx_are_plain_text() -> None:
    html = status_html(channel_id=CHANNEL_ID, adjudicator="not-an-address", settlement_tx="pending")
    probe = assert_inert(html)
    assert probe.links() == []
    assert value_of(html, "Adjudicator").text == "not-an-address"
    assert probe.by_class("sw-tx")[0].attrs["title"] == "pending"


def test_erc7824_metadata_box() -> None:
    html = status_html(channel_id=CHANNEL_ID, provider_metadata={"erc7824": {"proofsCount": 2}})
    box = parse(html).by_class("sw-erc7824")[0]
    assert box.text == "ERC-7824 MetadataProofs: 2"  # the nonce is not defined, so not shown
    html = status_html(
        channel_id=CHANNEL_ID, provider_metadata={"erc7824": {"proofsCount": 2, "nonce": 7}}
    )
    assert parse(html).by_class("sw-erc7824")[0].text.endswith("Proofs: 2Nonce: 7")
    assert (
        parse(status_html(channel_id=CHANNEL_ID, provider_metadata={"x": 1})).by_class("sw-erc7824")
        == []
    )


def test_v4_mode_without_channel_shows_hook_and_adapter_only() -> None:
    html = status_html(provider="v4")
    probe = assert_inert(html)
    assert probe.by_class("sw-header")[0].text == "Uniswap v4 · Hook Settlement"
    assert f"color:{PURPLE}" in html
    assert [e.attrs["data-label"] for e in probe.by_class("sw-row")] == ["PolicyHook", "Adapter"]
    assert [a.attrs["href"] for a in probe.links()] == [
        f"{ETHERSCAN}/address/{SEPOLIA.contracts.policy_hook}",
        f"{ETHERSCAN}/address/{SEPOLIA.contracts.settlement_adapter}",
    ]
    assert SEPOLIA.contracts.pool_manager not in html


def test_provider_substring_detection_like_the_original() -> None:
    assert StatusViewModel.build(StatusProps(provider="Yellow Network"), SEPOLIA).mode == "channel"
    assert StatusViewModel.build(StatusProps(provider="Uniswap v4 Hook"), SEPOLIA).mode == "v4"
    # a channel id wins, even with a v4 provider (original: Yellow mode if channelId is set)
    vm = StatusViewModel.build(StatusProps(provider="v4", channel_id="c"), SEPOLIA)
    assert vm.mode == "channel" and [r.label for r in vm.rows] == ["Channel ID"]


def test_nothing_to_show_renders_nothing() -> None:
    assert status_html() == ""
    assert status_html(provider="aggregator", channel_status="active") == ""


def test_settlement_tx_only_gets_a_neutral_header_not_v4() -> None:
    """The original's quirk (v4 header for e.g. a LI.FI tx) is fixed."""
    html = status_html(settlement_tx=TX, provider="aggregator")
    probe = assert_inert(html)
    assert probe.by_class("sw-header")[0].text == "Settlement · Transaction"
    assert "Uniswap" not in html and PURPLE not in html
    assert probe.by_class("sw-row") == []
    assert [a.attrs["href"] for a in probe.links()] == [f"{ETHERSCAN}/tx/{TX}"]


# --- hostile strings -----------------------------------------------------------------------


@pytest.mark.parametrize("payload", PAYLOADS)
@pytest.mark.parametrize("prop", [*STRING_PROPS, "provider"])
def test_every_string_prop_is_rendered_inert(prop: str, payload: str) -> None:
    props = {"channel_id": CHANNEL_ID, "provider": "channel", prop: payload}
    if prop == "provider":
        props["provider"] = "channel " + payload
    html = status_html(**props)
    probe = assert_inert(html)
    assert "script" not in probe.tags() and "img" not in probe.tags()
    if prop != "provider":
        shown = probe.text + " ".join(e.attrs.get("title", "") for e in probe.elements)
        expected = payload.upper() if prop == "channel_status" else payload
        assert expected in shown  # visible as text (in full in a title when truncated)


@pytest.mark.parametrize("payload", PAYLOADS)
def test_provider_metadata_is_rendered_inert(payload: str) -> None:
    meta = {
        "erc7824": {"proofsCount": payload, "nonce": {"k": payload}},
        payload: payload,
    }
    html = status_html(channel_id=CHANNEL_ID, provider_metadata=meta)
    probe = assert_inert(html)
    box = probe.by_class("sw-erc7824")[0]
    assert f"Proofs: {payload}" in box.text
    assert f"Nonce: {{'k': {payload!r}}}" in box.text


# --- props validation --------------------------------------------------------------------------


def test_camel_props_map_to_snake() -> None:
    props = StatusProps.from_camel(
        {
            "channelId": CHANNEL_ID,
            "channelStatus": "active",
            "stateIntent": "OPERATE",
            "stateVersion": 4.0,
            "stateHash": STATE_HASH,
            "adjudicator": ADJ,
            "challengePeriod": 3600,
            "settlementTx": TX,
            "provider": "channel",
            "providerMetadata": {"erc7824": {"nonce": 1}},
        }
    )
    assert props.state_version == 4 and props.challenge_period == 3600
    assert props.channel_id == CHANNEL_ID and dict(props.provider_metadata or {}) == {
        "erc7824": {"nonce": 1}
    }


@pytest.mark.parametrize(
    ("mapping", "match"),
    [
        ({"channelID": "x"}, "did you mean 'channelId'"),
        ({"channel_status": "x"}, "did you mean 'channelStatus'"),
        ({"stateVersion": "3"}, "state_version must be a whole number"),
        ({"stateVersion": True}, "state_version must be a whole number"),
        ({"challengePeriod": -1}, "must not be negative"),
        ({"channelId": 5}, "channel_id must be a string"),
        ({"providerMetadata": [1]}, "provider_metadata must be a mapping"),
        ({"providerMetadata": {1: 2}}, "keys must be strings"),
    ],
)
def test_bad_props_raise_tree_errors(mapping: dict, match: str) -> None:
    with pytest.raises(SettlementValueError, match=match):
        StatusProps.from_camel(mapping)


class Status(enum.IntEnum):
    VOID = 0
    ACTIVE = 2
    DISPUTE = 3


class Intent(enum.IntEnum):
    OPERATE = 0
    RESIZE = 2


@dataclass
class ChannelRecord:
    id: str
    status: object
    version: int
    intent: object
    state_hash: bytes
    adjudicator: str
    challenge_period: int
    nonce: int
    tx_hashes: dict[str, str] = field(default_factory=dict)


def test_props_from_a_channel_object_and_mapping() -> None:
    ch = ChannelRecord(CHANNEL_ID, Status.DISPUTE, 5, Intent.RESIZE, bytes(32), ADJ, 3600, 9)
    props = StatusProps.from_channel(ch)
    assert props.channel_status == "dispute" and props.state_intent == "RESIZE"
    assert props.state_hash == "0x" + "00" * 32 and props.settlement_tx is None
    assert dict(props.provider_metadata or {}) == {"erc7824": {"nonce": 9}}
    ch.tx_hashes = {"create": "0x" + "01" * 32, "close": TX}
    assert StatusProps.from_channel(ch).settlement_tx == TX
    from_map = StatusProps.from_channel(
        {"id": CHANNEL_ID, "status": 2, "version": 1, "intent": 0, "challengePeriod": 3600}
    )
    assert from_map.channel_status == "active" and from_map.state_intent == "OPERATE"
    assert from_map.challenge_period == 3600
