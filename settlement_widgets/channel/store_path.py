"""Where a channel client keeps its store by default, for either protocol version.

One SQLite file per network, chain instance and wallet under ``$SETTLEMENT_HOME/channel/``:
the v0.5 :class:`~.v0_5.client.store.ChannelStore` and the v1
:class:`~.v1.client.store.V1Store` (network name suffixed ``-v1``) both live there.
"""

from __future__ import annotations

from pathlib import Path

from ..addresses import validate_address
from ..errors import ConfigurationError

__all__ = ["default_store_path"]


def default_store_path(network_name: str, wallet: str, instance: str | None = None) -> Path:
    """``$SETTLEMENT_HOME/channel/<network>[-<chain instance>]-<wallet address>.sqlite``:
    one file per chain, so a new local sandbox (same chain id, new chain) starts empty."""
    from ..networks import settlement_home

    address = validate_address(wallet, field="wallet")
    if instance is not None and not instance.replace("-", "").isalnum():
        raise ConfigurationError(f"chain instance {instance!r} is not a plain identifier")
    middle = f"-{instance}" if instance else ""
    return settlement_home() / "channel" / f"{network_name}{middle}-{address}.sqlite"
