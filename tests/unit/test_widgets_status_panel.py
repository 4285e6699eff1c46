"""ChannelStatusPanel as a widget: props, update, from_channel, and live binding.

The channel provider is written elsewhere; ``bind`` is exercised here against ``Emitter``, a
tiny real event source with the provider's ``on(event, callback)`` shape (not a mock).
"""

from __future__ import annotations

import asyncio
import enum
import threading
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import ipywidgets
import pytest
from html_probe import assert_inert, parse

from settlement_widgets.errors import (
    ChannelNotFoundError,
    SettlementValueError,
    UnknownOptionError,
)
from settlement_widgets.networks import SEPOLIA
from settlement_widgets.widgets import CHANNEL_EVENTS, ChannelStatusPanel
from settlement_widgets.widgets.viewmodels import BLUE, GREEN, RED

CID = "0x" + "ab" * 32
OTHER = "0x" + "ef" * 32
TX = "0x" + "cd" * 32
ADJ = SEPOLIA.contracts.adjudicator


@pytest.fixture(autouse=True)
def _close_widgets() -> Iterator[None]:
    yield
    ipywidgets.Widget.close_all()


class ChannelStatus(enum.Enum):
    ACTIVE = "active"
    DISPUTE = "dispute"
    FINAL = "final"


@dataclass
class Channel:
    id: str
    status: ChannelStatus = ChannelStatus.ACTIVE
    version: int = 1
    intent: str = "OPERATE"
    state_hash: str = "0x" + "12" * 32
    adjudicator: str = ADJ
    challenge_period: int = 3600
    nonce: int = 42
    tx_hashes: dict[str, str] = field(default_factory=dict)


class Emitter:
    """A minimal event source: ``on`` returns an unsubscribe function, ``emit`` calls back."""

    def __init__(self) -> None:
        self.listeners: dict[str, list[Callable[..., Any]]] = defaultdict(list)

    def on(self, event: str, callback: Callable[..., Any]) -> Callable[[], None]:
        self.listeners[event].append(callback)
        return lambda: self.listeners[event].remove(callback)

    def emit(self, event: str, *args: Any) -> None:
        for callback in list(self.listeners[event]):
            callback(*args)

    def count(self) -> int:
        return sum(len(v) for v in self.listeners.values())


class OffEmitter(Emitter):
    """Variant whose ``on`` returns nothing; unsubscribing goes through ``off``."""

    def on(self, event: str, callback: Callable[..., Any]) -> None:  # type: ignore[override]
        self.listeners[event].append(callback)

    def off(self, event: str, callback: Callable[..., Any]) -> None:
        self.listeners[event].remove(callback)


class StoreEmitter(Emitter):
    """Variant that also answers ``get_channel`` (async), like a provider with a store."""

    def __init__(self, channels: dict[str, Channel]) -> None:
        super().__init__()
        self.channels = channels

    async def get_channel(self, channel_id: str) -> Channel:
        await asyncio.sleep(0)
        try:
            return self.channels[channel_id]
        except KeyError:
            raise ChannelNotFoundError(f"no channel {channel_id}") from None


def status_of(panel: ChannelStatusPanel) -> tuple[str, str] | None:
    probe = parse(panel.html)
    rows = [e for e in probe.by_class("sw-row") if e.attrs["data-label"] == "Status"]
    if not rows:
        return None
    i = probe.elements.index(rows[0])
    value = next(e for e in probe.elements[i:] if "sw-value" in e.attrs.get("class", ""))
    return value.text, value.attrs["style"]


# --- props ---------------------------------------------------------------------------------


def test_props_as_traits_render_and_rerender() -> None:
    panel = ChannelStatusPanel(network=SEPOLIA, channel_id=CID, channel_status="active")
    text, style = status_of(panel)
    assert text == "ACTIVE" and f"color:{GREEN}" in style
    panel.channel_status = "final"
    text, style = status_of(panel)
    assert text == "FINAL" and f"color:{BLUE}" in style
    assert panel.children[-1] is panel.errors


def test_empty_panel_is_hidden() -> None:
    panel = ChannelStatusPanel(network=SEPOLIA)
    assert panel.html == "" and panel.children[0].layout.display == "none"
    panel.update(settlement_tx=TX)
    assert panel.children[0].layout.display is None
    assert parse(panel.html).by_class("sw-header")[0].text == "Settlement · Transaction"


def test_from_props_takes_the_spec_camel_case() -> None:
    panel = ChannelStatusPanel.from_props(
        {
            "channelId": CID,
            "channelStatus": "dispute",
            "stateIntent": "OPERATE",
            "stateVersion": 7,
            "stateHash": "0x" + "12" * 32,
            "adjudicator": ADJ,
            "challengePeriod": 3600,
            "settlementTx": TX,
            "provider": "channel",
            "providerMetadata": {"erc7824": {"proofsCount": 2, "nonce": 3}},
        },
        network=SEPOLIA,
    )
    assert panel.channel_id == CID and panel.state_version == 7
    assert status_of(panel)[0] == "DISPUTE" and f"color:{RED}" in status_of(panel)[1]
    probe = assert_inert(panel.html)
    assert [a.attrs["href"] for a in probe.links()] == [
        f"https://sepolia.etherscan.io/address/{ADJ}",
        f"https://sepolia.etherscan.io/tx/{TX}",
    ]
    assert probe.by_class("sw-erc7824")[0].text.endswith("Proofs: 2Nonce: 3")


def test_unknown_props_are_rejected_with_did_you_mean() -> None:
    with pytest.raises(UnknownOptionError, match="did you mean 'channel_status'"):
        ChannelStatusPanel(channelStatus="active")
    with pytest.raises(UnknownOptionError, match="did you mean 'settlement_tx'"):
        ChannelStatusPanel(settlement_txn=TX)
    with pytest.raises(UnknownOptionError, match="did you mean 'stateVersion'"):
        ChannelStatusPanel.from_props({"state_version": 1})
    panel = ChannelStatusPanel(network=SEPOLIA, channel_id=CID)
    with pytest.raises(UnknownOptionError, match="did you mean 'challenge_period'"):
        panel.update(challenge_periode=10)


def test_update_validates_everything_before_changing_anything() -> None:
    panel = ChannelStatusPanel(network=SEPOLIA, channel_id=CID, channel_status="active")
    before = panel.html
    with pytest.raises(SettlementValueError, match="state_version must be a whole number"):
        panel.update(channel_status="dispute", state_version="three")
    assert panel.channel_status == "active" and panel.html == before
    with pytest.raises(SettlementValueError, match="must not be negative"):
        panel.challenge_period = -5
    assert panel.challenge_period is None
    panel.update(channel_status="dispute", state_version=3, challenge_period=3600)
    assert status_of(panel)[0] == "DISPUTE"
    panel.update(channel_status=None)  # None clears a prop
    assert status_of(panel) is None


def test_update_renders_once() -> None:
    panel = ChannelStatusPanel(network=SEPOLIA, channel_id=CID)
    values: list[str] = []
    panel.children[0].observe(lambda ch: values.append(ch["new"]), names="value")
    panel.update(channel_status="active", state_version=1, state_intent="OPERATE")
    assert len(values) == 1


def test_from_channel() -> None:
    ch = Channel(CID, ChannelStatus.DISPUTE, tx_hashes={"close": TX})
    panel = ChannelStatusPanel.from_channel(ch, network=SEPOLIA)
    assert panel.channel_status == "dispute" and panel.provider == "channel"
    assert panel.settlement_tx == TX and dict(panel.provider_metadata) == {"erc7824": {"nonce": 42}}
    assert "Nonce: 42" in parse(panel.html).by_class("sw-erc7824")[0].text


def test_stable_repr() -> None:
    kwargs: dict[str, Any] = {
        "network": SEPOLIA,
        "channel_id": CID,
        "channel_status": "active",
        "provider_metadata": {"a": 1},
    }
    panel = ChannelStatusPanel(**kwargs)
    assert repr(panel) == (
        f"ChannelStatusPanel(channel_id='{CID}', channel_status='active', "
        "provider_metadata={'a': 1}, network='sepolia')"
    )
    assert repr(ChannelStatusPanel(**kwargs)) == repr(panel)
    assert repr(ChannelStatusPanel(network=SEPOLIA)) == "ChannelStatusPanel(network='sepolia')"
    assert panel._repr_mimebundle_()["text/plain"].startswith("ChannelStatusPanel(channel_id=")


# --- live binding ----------------------------------------------------------------------------


def test_bind_turns_the_panel_red_on_a_dispute_event() -> None:
    provider = Emitter()
    panel = ChannelStatusPanel(network=SEPOLIA)
    binding = panel.bind(provider, CID)
    assert provider.count() == len(CHANNEL_EVENTS) + 1  # and the chain watcher's event
    assert panel.channel_id == CID and panel.provider == "channel"

    provider.emit("channel_created", Channel(CID))
    assert status_of(panel)[0] == "ACTIVE" and f"color:{GREEN}" in status_of(panel)[1]
    provider.emit("channel_challenged", Channel(CID, ChannelStatus.DISPUTE, version=4))
    text, style = status_of(panel)
    assert text == "DISPUTE" and f"color:{RED}" in style
    assert panel.state_version == 4

    # another channel's events are ignored
    provider.emit("channel_updated", Channel(OTHER, ChannelStatus.FINAL))
    assert status_of(panel)[0] == "DISPUTE"

    binding()  # the unbind handle
    assert provider.count() == 0 and not binding.active
    provider.emit("channel_closed", Channel(CID, ChannelStatus.FINAL))
    assert status_of(panel)[0] == "DISPUTE"


def test_bind_with_off_and_rebind() -> None:
    first, second = OffEmitter(), Emitter()
    panel = ChannelStatusPanel(network=SEPOLIA)
    panel.bind(first, CID)
    assert first.count() == len(CHANNEL_EVENTS) + 1  # and the chain watcher's event
    panel.bind(second, OTHER)  # replaces the first binding
    assert first.count() == 0 and second.count() == len(CHANNEL_EVENTS) + 1
    first.emit("channel_updated", Channel(CID, ChannelStatus.FINAL))
    assert panel.channel_id == OTHER and panel.channel_status is None
    second.emit("channel_updated", {"id": OTHER, "status": "final"})  # a mapping works too
    assert status_of(panel)[0] == "FINAL"
    panel.unbind()
    assert second.count() == 0 and panel.binding is None


def test_bad_event_payload_is_shown_beside_the_panel_not_raised() -> None:
    provider = Emitter()
    panel = ChannelStatusPanel(network=SEPOLIA)
    panel.bind(provider, CID)
    provider.emit("channel_updated", Channel(CID, ChannelStatus.ACTIVE))
    provider.emit("channel_updated", Channel(CID, status=ChannelStatus.FINAL, version=-1))
    assert panel.errors.messages == (
        "ChannelStatusPanel: the 'channel_updated' event raised SettlementValueError: "
        "state_version must not be negative, got -1",
    )
    assert status_of(panel)[0] == "ACTIVE"  # the bad update changed nothing


def test_bind_needs_an_on_method() -> None:
    panel = ChannelStatusPanel(network=SEPOLIA)
    with pytest.raises(SettlementValueError, match="has no on\\(event, callback\\)"):
        panel.bind(object(), CID)
    with pytest.raises(SettlementValueError, match="channel_id must be a string"):
        panel.bind(Emitter(), 123)


async def test_events_from_the_asyncio_loop_update_the_panel() -> None:
    provider = StoreEmitter({CID: Channel(CID, ChannelStatus.ACTIVE, version=2)})
    panel = ChannelStatusPanel(network=SEPOLIA)
    changed: asyncio.Queue[str] = asyncio.Queue()
    panel.observe(lambda ch: changed.put_nowait(ch["new"]), names="channel_status")

    panel.bind(provider, CID)
    # the provider's answer to get_channel arrives first (async)
    assert await asyncio.wait_for(changed.get(), 5) == "active"
    assert panel.state_version == 2

    loop = asyncio.get_running_loop()
    loop.call_soon(provider.emit, "channel_challenged", Channel(CID, ChannelStatus.DISPUTE))
    assert await asyncio.wait_for(changed.get(), 5) == "dispute"
    assert f"color:{RED}" in status_of(panel)[1]

    # emitted on another thread: the panel updates on the loop's thread, not the emitter's
    threads: list[int] = []
    panel.observe(lambda _ch: threads.append(threading.get_ident()), names="channel_status")
    thread = threading.Thread(
        target=provider.emit, args=("channel_closed", Channel(CID, ChannelStatus.FINAL))
    )
    thread.start()
    thread.join()
    assert await asyncio.wait_for(changed.get(), 5) == "final"
    assert threads == [threading.get_ident()]


async def test_a_missing_channel_on_bind_is_reported() -> None:
    provider = StoreEmitter({})
    panel = ChannelStatusPanel(network=SEPOLIA)
    binding = panel.bind(provider, CID)
    assert binding.fetched is not None
    await asyncio.wait_for(binding.fetched, 5)
    assert panel.errors.messages == (
        f"ChannelStatusPanel: provider.get_channel raised ChannelNotFoundError: no channel {CID}",
    )
    assert panel.channel_id == CID  # still bound and waiting for events
    provider.emit("channel_created", Channel(CID))
    assert status_of(panel)[0] == "ACTIVE"


async def test_an_event_newer_than_the_initial_fetch_wins() -> None:
    provider = StoreEmitter({CID: Channel(CID, ChannelStatus.ACTIVE)})
    panel = ChannelStatusPanel(network=SEPOLIA)
    binding = panel.bind(provider, CID)
    provider.emit("channel_challenged", Channel(CID, ChannelStatus.DISPUTE))  # before the answer
    assert binding.fetched is not None
    await asyncio.wait_for(binding.fetched, 5)
    assert status_of(panel)[0] == "DISPUTE"


def test_a_failing_subscription_leaves_nothing_subscribed() -> None:
    class Picky(Emitter):
        def on(self, event: str, callback: Callable[..., Any]) -> Callable[[], None]:
            if event == "channel_closed":
                raise ChannelNotFoundError("no such event")
            return super().on(event, callback)

    provider = Picky()
    panel = ChannelStatusPanel(network=SEPOLIA)
    with pytest.raises(ChannelNotFoundError):
        panel.bind(provider, CID)
    assert provider.count() == 0 and panel.binding is None
    # choosing the events it supports works
    panel.bind(provider, CID, events=("channel_updated",))
    assert provider.count() == 2  # and the chain watcher's event


def test_a_failing_chain_watcher_is_shown_escaped_and_cleared() -> None:
    from settlement_widgets.channel.models import WatcherStatus

    provider = Emitter()
    panel = ChannelStatusPanel(network=SEPOLIA)
    panel.bind(provider, CID)
    assert panel.notice == ""
    provider.emit("watcher", WatcherStatus(False, "<script>alert(1)</script> refused", 3, 8.0))
    notice = panel.notice
    assert "Chain watcher failing" in notice and "3 in a row; retrying in 8 s" in notice
    assert "<script>" not in notice and "&lt;script&gt;alert(1)&lt;/script&gt;" in notice
    provider.emit("watcher", WatcherStatus(True))
    assert panel.notice == ""


def test_a_provider_without_a_watcher_event_still_binds() -> None:
    from settlement_widgets.errors import UnknownOptionError

    class NoWatcher(Emitter):
        def on(self, event: str, callback: Callable[..., Any]) -> Callable[[], None]:
            if event == "watcher":
                raise UnknownOptionError("unknown provider event 'watcher'")
            return super().on(event, callback)

    provider = NoWatcher()
    panel = ChannelStatusPanel(network=SEPOLIA)
    panel.bind(provider, CID)
    assert provider.count() == len(CHANNEL_EVENTS)
