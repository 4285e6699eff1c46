"""Recorded mode: the same code path answered from shipped data, labelled at every turn;
and the default, argument-less provider of ``settlement_widgets.providers``."""

from __future__ import annotations

import json
from importlib import resources

import pytest

from settlement_widgets.aggregator import RECORDED_NOTE, AggregatorProvider
from settlement_widgets.aggregator.client import DEFAULT_BASE_URL
from settlement_widgets.errors import AggregatorError, NoRouteError, SettlementValueError

SENDER = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"
REQUEST = ("arbitrum", "optimism", "USDC", "USDC", 100_000_000, SENDER)

API_SHAPED = (
    "routes_arb_usdc_to_op_usdc.json",
    "quote_arb_usdc_to_op_usdc.json",
    "status_pending_source.json",
    "status_pending_destination.json",
    "status_done.json",
    "chains.json",
    "tokens.json",
)


async def test_everything_recorded_mode_returns_says_so() -> None:
    provider = AggregatorProvider.recorded()
    assert provider.is_recorded and provider.source == "recorded"
    assert provider.note == RECORDED_NOTE and "not live rates" in repr(provider)
    routes = await provider.routes(*REQUEST)
    assert routes and all(r.recorded for r in routes)
    assert routes[0].from_address == SENDER  # the requesting address, not the recorded one
    frame = await provider.routes_frame(*REQUEST)
    assert frame.attrs["recorded"] is True and frame.attrs["note"] == RECORDED_NOTE
    quote = await provider.quote(*REQUEST)
    assert quote.recorded
    plan = await provider.execute_plan(routes[0])
    assert plan.recorded and not plan.sent
    tx_hash = provider.recorded_requests()["tx_hashes"][0]
    final = await provider.track(tx_hash)
    assert final.done and final.recorded
    await provider.close()


async def test_recorded_mode_answers_only_what_was_recorded() -> None:
    provider = AggregatorProvider.recorded()
    with pytest.raises(NoRouteError, match="recorded mode serves only"):
        await provider.routes("arbitrum", "base", "USDC", "USDC", 100_000_000, SENDER)
    with pytest.raises(NoRouteError, match="recorded mode serves only"):
        await provider.quote("arbitrum", "optimism", "USDC", "USDC", 5_000_000, SENDER)
    with pytest.raises(AggregatorError, match="recorded mode knows") as info:
        await provider.status("0x" + "ab" * 32)
    assert info.value.code == 1003


async def test_recorded_plans_are_never_sent() -> None:
    provider = AggregatorProvider.recorded()
    best = await provider.best_route(*REQUEST)
    with pytest.raises(SettlementValueError, match="recorded data"):
        await provider.execute_plan(best, send=True)


def test_recorded_mode_takes_no_endpoint_or_key() -> None:
    with pytest.raises(SettlementValueError, match="recorded mode"):
        AggregatorProvider.recorded(base_url="http://127.0.0.1:1/v1")
    with pytest.raises(SettlementValueError, match="recorded mode"):
        AggregatorProvider(api_key="k", mode="recorded")
    with pytest.raises(SettlementValueError, match="mode"):
        AggregatorProvider(mode="replay")  # type: ignore[arg-type]


def test_api_shaped_bodies_carry_no_label() -> None:
    files = resources.files("settlement_widgets.aggregator").joinpath("recorded")
    for name in API_SHAPED:
        text = files.joinpath(name).read_text()
        assert "recorded" not in text.lower(), name
        json.loads(text)
    manifest = json.loads(files.joinpath("manifest.json").read_text())
    assert "not live rates" in manifest["note"]


def test_default_provider_needs_no_arguments(monkeypatch: pytest.MonkeyPatch) -> None:
    from settlement_widgets import providers

    monkeypatch.delenv("LIFI_API_URL", raising=False)
    monkeypatch.delenv("LIFI_API_KEY", raising=False)
    monkeypatch.setattr(providers, "_aggregator_provider", None)
    default = providers.get_aggregator_provider()
    assert isinstance(default, AggregatorProvider)
    assert providers.get_aggregator_provider() is default
    assert providers.aggregator_provider is default
    assert default.base_url == DEFAULT_BASE_URL == "https://li.quest/v1"
    assert default.integrator == "settlement_widgets" and not default.is_recorded
    monkeypatch.setenv("LIFI_API_URL", "http://127.0.0.1:9/v1/")
    assert AggregatorProvider().base_url == "http://127.0.0.1:9/v1"


def test_constructor_rejects_bad_settings() -> None:
    with pytest.raises(SettlementValueError, match="http"):
        AggregatorProvider(base_url="li.quest/v1")
    with pytest.raises(SettlementValueError, match="poll_interval"):
        AggregatorProvider(poll_interval=-1)
    with pytest.raises(SettlementValueError, match="timeout"):
        AggregatorProvider(timeout=0)
    with pytest.raises(SettlementValueError, match="integrator"):
        AggregatorProvider(integrator="")
