"""Which protocol a channel node speaks, asked on the wire (reference/nitrolite-v1 §10).

A URL says little: Yellow moved its sandbox from ClearNode (v0.5) to Nitronode (v1), a local
Nitronode listens on ``/ws`` like a v0.5 relay, and a proxy can answer with anything. So we
ask: connect and wait a moment without sending (a v0.5 ClearNode greets every connection
with its ``assets``; a v1 node says nothing), then send a v1 ``node.v1.ping``, which a v1
node answers in kind and a v0.5 node refuses in its own envelope. The first frame is
classified by :func:`~settlement_widgets.channel.frames.identify_frame`.

:func:`open_channel_provider` uses this to build the provider the *profile* names, and to
say plainly when the node at its URL speaks the other protocol.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from typing import TYPE_CHECKING, Any

from ..errors import RelayProtocolError, RelayUnavailableError, SettlementTimeoutError
from .frames import V05, V1, RelayProtocol, identify_frame

if TYPE_CHECKING:
    from ..networks import Network
    from ..signer import Signer

__all__ = ["detect_node_protocol", "open_channel_provider"]


async def detect_node_protocol(
    url: str, *, greeting_wait: float = 1.0, timeout: float = 10.0
) -> RelayProtocol:
    """What the node at ``url`` speaks: ``kind`` is ``"nitrolite-v0.5"``,
    ``"nitrolite-v1"`` or what else was seen (``json``, ``text``, ``binary``).

    Raises :class:`RelayUnavailableError` if nothing accepts the connection and
    :class:`SettlementTimeoutError` if the node answers neither the silence nor the ping.
    """
    from websockets.asyncio.client import connect
    from websockets.exceptions import ConnectionClosed

    try:
        ws = await asyncio.wait_for(connect(url, open_timeout=timeout, compression=None), timeout)
    except (OSError, TimeoutError) as exc:
        raise RelayUnavailableError(f"cannot connect to the node at {url}: {exc}") from exc
    except Exception as exc:  # an HTTP refusal of the upgrade, a bad URL
        raise RelayUnavailableError(f"the node at {url} refused the connection: {exc}") from exc
    try:
        try:
            first: Any = await asyncio.wait_for(ws.recv(), greeting_wait)
        except TimeoutError:
            ping = [
                1,
                secrets.randbelow(2**53 - 1) + 1,
                "node.v1.ping",
                {},
                int(time.time() * 1000),
            ]
            await ws.send(json.dumps(ping, separators=(",", ":")))
            try:
                first = await asyncio.wait_for(ws.recv(), timeout)
            except TimeoutError:
                raise SettlementTimeoutError(
                    f"the node at {url} sent nothing and did not answer a v1 ping within "
                    f"{timeout:g} s"
                ) from None
        return identify_frame(first)
    except SettlementTimeoutError:
        raise  # a TimeoutError, hence an OSError: not a lost connection
    except (OSError, ConnectionError, ConnectionClosed) as exc:
        raise RelayUnavailableError(f"lost the node at {url} while probing it: {exc}") from exc
    finally:
        await ws.close()


_PROFILES = {
    V05: "a v0.5 profile (SETTLEMENT_NETWORK=sepolia, LocalSandbox())",
    V1: "a v1 profile (SETTLEMENT_NETWORK=sepolia-v1, LocalSandbox(protocol='v1'))",
}


async def open_channel_provider(network: Network, wallet: Signer, *, probe: bool = True) -> Any:
    """The connected channel provider for ``network``: :class:`~settlement_widgets.channel.
    ChannelProvider` on a v0.5 profile, :class:`~.provider.ChannelProviderV1` on a v1 one.

    With ``probe`` (the default) the node is asked first (:func:`detect_node_protocol`); a
    node that speaks the other protocol, or neither, is a :class:`RelayProtocolError` that
    names what it speaks and which profile fits it, instead of a handshake that times out.
    """
    from ..networks import PROTOCOL_V1

    if probe:
        seen = await detect_node_protocol(network.node_url)
        if seen.kind != network.protocol:
            fits = _PROFILES.get(seen.kind)
            advice = (
                f"use {fits}, or point this profile at a {network.protocol} node"
                if fits
                else "check the node URL (SETTLEMENT_RELAY_URL or the network profile)"
            )
            raise RelayProtocolError(
                f"the network profile {network.name!r} says {network.protocol}, but the node "
                f"at {network.node_url} answered with {seen.found}: {seen.sample!r}; {advice}",
                found=seen.kind,
            )
    if network.protocol == PROTOCOL_V1:
        from .v1.client.provider import ChannelProviderV1

        return await ChannelProviderV1(network, wallet).connect()
    from . import ChannelConfig, ChannelProvider

    return await ChannelProvider(ChannelConfig.from_network(network), wallet).connect()
