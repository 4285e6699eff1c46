"""One WebSocket to a channel node, opened the same way by both versions' clients.

The v0.5 :class:`~.v0_5.client.relay_connection.RelayConnection` and the v1
:class:`~.v1.client.rpc_client.V1RpcClient` open their socket with the same settings (no
compression, 4 MiB frames, keepalive pings) and map the same failures the same way: an
unreachable host or a timeout, and a refused handshake (an HTTP answer, a bad URI), are a
:class:`~settlement_widgets.errors.RelayUnavailableError` naming the node and its URL.
"""

from __future__ import annotations

from typing import Any

from ..errors import RelayUnavailableError

__all__ = ["open_node_socket"]


async def open_node_socket(
    url: str, *, timeout: float, what: str, create_connection: type[Any] | None = None
) -> Any:
    """The connected socket to ``url``; ``what`` names the node in errors ("the relay").
    ``create_connection``: a ``ClientConnection`` subclass to use instead of websockets'."""
    from websockets.asyncio.client import connect

    extra: dict[str, Any] = {}
    if create_connection is not None:
        extra["create_connection"] = create_connection
    try:
        return await connect(
            url,
            **extra,
            compression=None,
            open_timeout=timeout,
            max_size=1 << 22,
            ping_interval=20,
            ping_timeout=20,
            close_timeout=2,
        )
    except (OSError, TimeoutError) as exc:
        raise RelayUnavailableError(
            f"cannot reach {what} at {url}: {exc or type(exc).__name__}"
        ) from exc
    except Exception as exc:  # websockets' InvalidHandshake, InvalidURI, ...
        raise RelayUnavailableError(
            f"{what} at {url} refused the WebSocket handshake: {exc}"
        ) from exc
