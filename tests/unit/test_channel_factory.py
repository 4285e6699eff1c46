"""The channel factory picks the provider by the network's protocol, and both satisfy
``ChannelClient`` (mypy checks the signatures; this checks the members at run time)."""

from __future__ import annotations

from pathlib import Path

import pytest

from settlement_widgets.channel import ChannelClient, ChannelConfig, channel_provider
from settlement_widgets.channel.factory import channel_provider_for_config
from settlement_widgets.channel.frames import V05, V1
from settlement_widgets.channel.v0_5.client.provider import ChannelProvider
from settlement_widgets.channel.v1.client.provider import ChannelProviderV1
from settlement_widgets.networks import PROTOCOL_V05, PROTOCOL_V1, get_network
from settlement_widgets.wallet import WalletClient

KEY = "0x" + "11" * 32


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SETTLEMENT_HOME", str(tmp_path))


@pytest.mark.parametrize(
    ("name", "expected"), [("sepolia", ChannelProvider), ("sepolia-v1", ChannelProviderV1)]
)
def test_channel_provider_follows_the_network_protocol(name: str, expected: type) -> None:
    provider = channel_provider(get_network(name), WalletClient(KEY))
    assert type(provider) is expected
    members = [name for name in vars(ChannelClient) if not name.startswith("_")]
    assert len(members) == 18
    assert all(hasattr(expected, name) for name in members)


def test_an_explicit_v05_config_gives_the_v05_provider() -> None:
    config = ChannelConfig.from_network(get_network("sepolia"), session_expiry=600)
    provider = channel_provider_for_config(config, WalletClient(KEY))
    assert isinstance(provider, ChannelProvider) and provider.config is config


def test_one_spelling_of_the_protocol_value() -> None:
    assert (V05, V1) == (PROTOCOL_V05, PROTOCOL_V1) == ("nitrolite-v0.5", "nitrolite-v1")
