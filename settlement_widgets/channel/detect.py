"""Which protocol a channel node speaks, asked on the wire.

A URL says little: Yellow moved its sandbox from ClearNode (v0.5) to Nitronode (v1), a local
Nitronode listens on ``/ws`` like a v0.5 relay, and a proxy can answer with anything. So we
ask: connect and wait a moment without sending (a v0.5 ClearNode greets every connection
with its ``assets``; a v1 node says nothing), then send a v1 ``node.v1.ping``, which a v1
node answers in kind and a v0.5 node refuses in its own envelope. The first frame is
classified by :func:`~settlement_widgets.channel.frames.identify_frame`.

:func:`~.factory.open_channel_provider` uses this to build the provider the *profile*
names, and to say plainly when the node at its URL speaks the other protocol.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from typing import Any

from ..errors import RelayUnavailableError, SettlementTimeoutError
from .frames import RelayProtocol, identify_frame

__all__ = ["detect_node_protocol"]


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
