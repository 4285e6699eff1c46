"""The relay's chain watcher decides about every custody event: a new event in
``custody_events`` must be either applied or left out on purpose, never silently missed."""

from __future__ import annotations

from settlement_widgets.channel.v0_5.chain.custody_events import EVENT_NAMES
from settlement_widgets.channel.v0_5.node.service import RelayService
from settlement_widgets.channel.v0_5.node.watcher import UNWATCHED_EVENTS, WATCHED_EVENTS


def test_every_custody_event_is_watched_or_left_out_on_purpose() -> None:
    assert set(WATCHED_EVENTS).isdisjoint(UNWATCHED_EVENTS)
    assert sorted((*WATCHED_EVENTS, *UNWATCHED_EVENTS)) == sorted(EVENT_NAMES)


def test_every_watched_event_has_an_effect_on_the_service() -> None:
    for name in WATCHED_EVENTS:
        assert callable(getattr(RelayService, f"on_{name.lower()}", None)), name
