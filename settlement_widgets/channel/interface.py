"""``ChannelClient``: what every channel provider offers, whatever its protocol version.

Callers that do not care which Nitrolite version the network speaks (the dashboard, the
provider singletons, the notebooks' helpers) type a provider as :class:`ChannelClient` and
get one from :mod:`.factory`. Both :class:`~.v0_5.client.provider.ChannelProvider` (v0.5)
and :class:`~.v1.client.provider.ChannelProviderV1` (v1) satisfy it structurally; what only
one version has (v0.5's ``history``, v1's app sessions) stays on the concrete class. The
factory assigns each to a ``ChannelClient`` variable, so mypy checks both signatures.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, Self

from .models import Channel, Transfer, Tx

__all__ = ["ChannelClient"]


class ChannelClient(Protocol):
    """A connected (or connectable) channel provider for one wallet on one network.

    Amounts are integers in the asset's smallest units; ``channel_id`` is the 0x-hex id.
    """

    @property
    def address(self) -> str:
        """The wallet's address."""
        ...

    @property
    def asset(self) -> str:
        """The symbol of the asset this provider moves (``ytest.usd``)."""
        ...

    @property
    def broker_address(self) -> str | None:
        """The node's (broker's) address once connected, the counterparty of a channel."""
        ...

    async def connect(self) -> Self:
        """Connect to the node and the chain, finishing any operation left unfinished."""
        ...

    async def __aenter__(self) -> Self:
        """``async with provider:`` connects, and closes on the way out."""
        ...

    async def __aexit__(self, *exc: object) -> None: ...

    async def close(self) -> None:
        """Close the connections (the store keeps everything)."""
        ...

    def on(self, event: str, callback: Callable[..., Any]) -> Callable[[], None]:
        """Call ``callback`` on ``event`` (``channel_updated``, ...); returns the unsubscriber."""
        ...

    def off(self, event: str, callback: Callable[..., Any]) -> None:
        """Stop calling ``callback`` on ``event``."""
        ...

    def channels(self) -> list[Channel]:
        """Every channel of this wallet, as the store knows it."""
        ...

    def get_channel(self, channel_id: str) -> Channel:
        """One channel by id."""
        ...

    async def balances(self) -> dict[str, int]:
        """The node's off-chain (ledger) balances of this wallet, by asset."""
        ...

    async def create_channel(self, counterparty: str, asset: str, initial_amount: int) -> Channel:
        """Open a channel with ``counterparty`` (the broker) for ``asset``."""
        ...

    async def transfer(self, channel_id: str, amount: int, recipient: str) -> Transfer:
        """Send ``amount`` to ``recipient`` off-chain."""
        ...

    async def resize(self, channel_id: str, amount: int) -> Tx:
        """Move ``amount`` between the channel and the off-chain balance (negative: out)."""
        ...

    async def challenge(self, channel_id: str) -> Tx:
        """Start a dispute on chain with the latest signed state."""
        ...

    async def checkpoint(self, channel_id: str) -> Tx:
        """Record the latest signed state on chain."""
        ...

    async def close_channel(self, channel_id: str) -> Tx:
        """Close the channel cooperatively on chain and withdraw what it paid out."""
        ...

    async def withdraw(self, amount: int | None = None, *, channel_id: str | None = None) -> Tx:
        """Withdraw from the contract to the wallet."""
        ...

    async def adopt_open_channels(self) -> list[Channel]:
        """Store the wallet's channels the node reports open and this store does not know
        (a lost store, a key used elsewhere), so they can be closed; the adopted ones."""
        ...
