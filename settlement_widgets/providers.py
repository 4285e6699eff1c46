"""Provider singletons, one per method, as the dashboard held them.

``init_*`` creates and stores the provider, ``get_*`` returns it (or None), ``reset_*``
clears it and closes its connections. The aggregator has no init function: a module-level
default instance, :data:`aggregator_provider`, makes direct API calls.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from .channel.v0_5.client.config import ChannelConfig

if TYPE_CHECKING:
    from .aggregator import AggregatorProvider
    from .channel.interface import ChannelClient
    from .networks import Network
    from .signer import Signer
    from .v4 import V4Provider

__all__ = [
    "aggregator_provider",
    "create_local_channel_config",
    "create_sepolia_channel_config",
    "get_aggregator_provider",
    "get_channel_provider",
    "get_v4_provider",
    "init_channel_provider",
    "init_v4_provider",
    "reset_channel_provider",
    "reset_v4_provider",
]

_channel_provider: ChannelClient | None = None
_v4_provider: V4Provider | None = None
_aggregator_provider: AggregatorProvider | None = None
_pending_closes: set[asyncio.Task[Any]] = set()  # keeps close() tasks alive until they finish


def create_sepolia_channel_config() -> ChannelConfig:
    """Sepolia custody and adjudicator, chain 11155111, challenge period 3600 s, public relay."""
    return ChannelConfig.sepolia()


def create_local_channel_config(sandbox: Any) -> ChannelConfig:
    """The same for a local sandbox (a ``LocalSandbox`` or its ``Network`` profile)."""
    network: Network = getattr(sandbox, "network", sandbox)
    return ChannelConfig.from_network(network)


def _close_later(provider: Any) -> None:
    close = getattr(provider, "close", None)
    if close is None:
        return
    result = close()
    if asyncio.iscoroutine(result):
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            asyncio.run(result)
        else:
            task = loop.create_task(result)
            _pending_closes.add(task)
            task.add_done_callback(_pending_closes.discard)


def init_channel_provider(config: ChannelConfig, wallet: Signer) -> ChannelClient:
    """Create the channel provider singleton (replacing and closing any previous one).

    Built by the channel factory (:func:`~settlement_widgets.channel.factory.
    channel_provider_for_config`); for a network profile of either protocol version,
    :func:`~settlement_widgets.channel.factory.channel_provider` is the way.
    """
    global _channel_provider
    from .channel.factory import channel_provider_for_config

    if _channel_provider is not None:
        _close_later(_channel_provider)
    _channel_provider = channel_provider_for_config(config, wallet)
    return _channel_provider


def get_channel_provider() -> ChannelClient | None:
    return _channel_provider


def reset_channel_provider() -> None:
    """Clear the singleton and close its relay connection."""
    global _channel_provider
    provider, _channel_provider = _channel_provider, None
    if provider is not None:
        _close_later(provider)


def init_v4_provider(
    wallet: Signer, chain_id: int | None = None, *, network: Network | None = None
) -> V4Provider:
    """Create the v4 provider singleton for ``network`` (default: the configured one)."""
    global _v4_provider
    from .v4 import V4Provider

    if _v4_provider is not None:
        _close_later(_v4_provider)
    _v4_provider = V4Provider(wallet, chain_id=chain_id, network=network)
    return _v4_provider


def get_v4_provider() -> V4Provider | None:
    return _v4_provider


def reset_v4_provider() -> None:
    global _v4_provider
    provider, _v4_provider = _v4_provider, None
    if provider is not None:
        _close_later(provider)


def get_aggregator_provider() -> AggregatorProvider:
    """The module-level default :class:`AggregatorProvider` (created on first use)."""
    global _aggregator_provider
    if _aggregator_provider is None:
        from .aggregator import AggregatorProvider

        _aggregator_provider = AggregatorProvider()
    return _aggregator_provider


def __getattr__(name: str) -> Any:
    # `aggregator_provider` is the module-level default instance, created on first access
    if name == "aggregator_provider":
        return get_aggregator_provider()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if TYPE_CHECKING:
    aggregator_provider: AggregatorProvider
