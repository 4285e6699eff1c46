"""Ask the network's faucet for test tokens (``erc7824/faucet-app``).

The faucet contract: ``POST <faucet_url>`` with ``{"userAddress": "0x…"}``; a 2xx answer is a
JSON object (``success``, ``message``, ``txId``, ``amount``, ``asset``, ``destination``), an
error is a non-2xx status with ``{"error": "…"}``. The credit lands in the off-chain unified
balance of the relay, not on chain.

Where the request goes is decided by the :class:`~settlement_widgets.networks.Network` (or an
explicit ``faucet_url`` from trusted code), never by request data: the ``/api/settlement``
endpoint forwards only the validated address, so it cannot be turned into an open proxy.

The original dashboard ignored the upstream status and had no timeout; here every failure is
a distinct error: :class:`~settlement_widgets.errors.FaucetUnavailableError` when the faucet
cannot be reached, does not answer within ``timeout`` seconds, or answers something that is
not a JSON object; :class:`~settlement_widgets.errors.FaucetError` (with ``status`` and the
upstream ``error`` text as ``message``) when it answers with a non-2xx status.
"""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Any

from ..addresses import validate_address
from ..errors import (
    ConfigurationError,
    FaucetError,
    FaucetUnavailableError,
    SettlementValueError,
)
from ..json_depth import check_nesting

if TYPE_CHECKING:
    import httpx

    from ..networks import Network

__all__ = ["MAX_FAUCET_RESPONSE_BYTES", "request_faucet_tokens"]

#: a faucet answer is a few hundred bytes; anything past this is not a faucet answer
MAX_FAUCET_RESPONSE_BYTES = 1 << 20


def _faucet_url(network: Network | str | None, faucet_url: str | None) -> str:
    if faucet_url is None:
        if network is None or isinstance(network, str):
            from ..networks import get_network

            network = get_network(network)
        faucet_url = getattr(network, "faucet_url", None)
    if not isinstance(faucet_url, str) or not faucet_url.startswith(("http://", "https://")):
        raise ConfigurationError(
            f"the faucet URL must be an http(s) URL, got {faucet_url!r}: check the network profile"
        )
    return faucet_url


def _upstream_error_text(body: bytes, reason: str) -> str:
    """The ``error`` (or ``message``) field of a faucet error body, else the reason phrase."""
    try:
        check_nesting(body)
        data = json.loads(body)
    except (ValueError, RecursionError):
        data = None
    if isinstance(data, dict):
        for key in ("error", "message"):
            value = data.get(key)
            if isinstance(value, str) and value:
                return value[:500]
    return reason or "no error message"


async def _post(
    client: httpx.AsyncClient, url: str, payload: dict[str, str]
) -> tuple[int, str, bytes]:
    async with client.stream(
        "POST", url, json=payload, headers={"Accept": "application/json"}
    ) as response:
        chunks: list[bytes] = []
        size = 0
        async for chunk in response.aiter_bytes():
            size += len(chunk)
            if size > MAX_FAUCET_RESPONSE_BYTES:
                raise FaucetUnavailableError(
                    f"the faucet at {url} answered HTTP {response.status_code} with more than "
                    f"{MAX_FAUCET_RESPONSE_BYTES} bytes, which is not a faucet answer"
                )
            chunks.append(chunk)
        return response.status_code, response.reason_phrase, b"".join(chunks)


async def request_faucet_tokens(
    address: str,
    network: Network | str | None = None,
    *,
    faucet_url: str | None = None,
    timeout: float = 10.0,
    client: httpx.AsyncClient | None = None,
) -> dict[str, Any]:
    """Request test tokens for ``address`` from the faucet of ``network``.

    ``network`` is a :class:`~settlement_widgets.networks.Network` (or anything with a
    ``faucet_url``, such as a ``ChannelConfig``), a network name, or None for
    :func:`~settlement_widgets.networks.get_network`'s choice; ``faucet_url`` overrides it
    (for trusted callers only). ``timeout`` bounds the whole exchange in seconds. ``client``
    lets a caller reuse an ``httpx.AsyncClient``; it is not closed here.

    Returns the faucet's JSON object unchanged. Raises
    :class:`~settlement_widgets.errors.InvalidAddressError` before sending anything when the
    address is not a 20-byte hex address (lowercase, or EIP-55 when mixed-case).
    """
    import httpx

    user = validate_address(address, field="userAddress")
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0:
        raise SettlementValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
    url = _faucet_url(network, faucet_url)
    payload = {"userAddress": user}

    own_client = client is None
    http = client if client is not None else httpx.AsyncClient(timeout=timeout)
    try:
        async with asyncio.timeout(timeout):
            status, reason, body = await _post(http, url, payload)
    except (TimeoutError, httpx.TimeoutException):
        raise FaucetUnavailableError(
            f"the faucet at {url} timed out: no answer within {timeout:g} s"
        ) from None
    except httpx.ConnectError as exc:
        raise FaucetUnavailableError(
            f"the faucet at {url} is unreachable: cannot connect ({exc or 'connection failed'})"
        ) from exc
    except httpx.HTTPError as exc:
        raise FaucetUnavailableError(
            f"the faucet at {url} is unreachable: the connection failed mid-request "
            f"({type(exc).__name__}: {exc})"
        ) from exc
    finally:
        if own_client:
            await http.aclose()

    if not 200 <= status < 300:
        raise FaucetError(_upstream_error_text(body, reason), status=status)
    try:
        check_nesting(body)
        data = json.loads(body)
    except (ValueError, RecursionError):
        raise FaucetUnavailableError(
            f"the faucet at {url} answered HTTP {status} with a body that is not JSON"
        ) from None
    if not isinstance(data, dict):
        raise FaucetUnavailableError(
            f"the faucet at {url} answered HTTP {status} with JSON that is not an object"
        )
    return data
