"""The provider ships no data of its own: it says where its answers come from (``local`` for
a loopback route server, ``live`` otherwise), and the default, argument-less provider of
``settlement_widgets.providers`` is the live API."""

from __future__ import annotations

import pytest

from settlement_widgets.aggregator import AggregatorProvider, data_source
from settlement_widgets.aggregator.client.lifi import DEFAULT_BASE_URL
from settlement_widgets.errors import SettlementValueError
from tests.lifi_synthetic import SyntheticTransport

SENDER = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"
REQUEST = ("arbitrum", "optimism", "USDC", "USDC", 100_000_000, SENDER)


@pytest.mark.parametrize(
    ("base_url", "source"),
    [
        ("http://127.0.0.1:8545/lifi/v1", "local"),
        ("http://127.0.0.2:1/v1", "local"),  # all of 127/8 is loopback
        ("http://localhost:9/v1", "local"),
        ("http://[::1]:9/v1", "local"),
        ("https://li.quest/v1", "live"),
        ("https://lifi.example.org/v1", "live"),
        ("http://10.0.0.5:9/v1", "live"),  # another machine, whatever it serves
        ("http://127.0.0.1.example.org/v1", "live"),
        (None, "live"),
    ],
)
def test_source_follows_the_host(base_url: str | None, source: str) -> None:
    assert data_source(base_url) == source
    if base_url is not None:
        provider = AggregatorProvider(base_url=base_url)
        assert provider.source == source and repr(provider).startswith(
            f"AggregatorProvider({source}"
        )


async def test_frames_carry_the_source_and_nothing_is_labelled_in_the_values() -> None:
    provider = AggregatorProvider(
        base_url="http://127.0.0.1:1/v1", transport=SyntheticTransport(), poll_interval=0
    )
    frame = await provider.routes_frame(*REQUEST)
    assert frame.attrs == {"source": "local"} and len(frame) == 4
    routes = await provider.routes(*REQUEST)
    assert routes[0].from_address == SENDER  # the requesting address, not the fixtures' one
    assert not hasattr(routes[0], "recorded")
    assert not hasattr(provider, "recorded") and not hasattr(provider, "recorded_requests")
    plan = await provider.execute_plan(routes[0])
    assert not plan.sent and not hasattr(plan, "recorded")
    await provider.close()


def test_the_recorded_mode_is_gone() -> None:
    import settlement_widgets.aggregator as aggregator

    assert not hasattr(aggregator, "RECORDED_NOTE")
    with pytest.raises(TypeError):
        AggregatorProvider(mode="recorded")  # type: ignore[call-arg]
    for module in ("replay", "testserver"):
        with pytest.raises(ModuleNotFoundError):
            __import__(f"settlement_widgets.aggregator.{module}")


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
    assert default.integrator == "settlement_widgets" and default.source == "live"
    monkeypatch.setenv("LIFI_API_URL", "http://127.0.0.1:9/v1/")
    from_env = AggregatorProvider()
    assert from_env.base_url == "http://127.0.0.1:9/v1" and from_env.source == "local"


def test_constructor_rejects_bad_settings() -> None:
    with pytest.raises(SettlementValueError, match="http"):
        AggregatorProvider(base_url="li.quest/v1")
    with pytest.raises(SettlementValueError, match="poll_interval"):
        AggregatorProvider(poll_interval=-1)
    with pytest.raises(SettlementValueError, match="timeout"):
        AggregatorProvider(timeout=0)
    with pytest.raises(SettlementValueError, match="integrator"):
        AggregatorProvider(integrator="")
