"""The SDK's ``RPCClient``: one method per node method, payloads built as the SDK builds them.

Why a layer of its own: a request frame is only right if its payload has the SDK's keys,
value types (uint64 as decimal strings, enums as numbers) and key order, with absent
(``undefined``) fields dropped (Nitrolite v1.4.1 ``sdk/ts/src/rpc/client.ts``,
``rpc/api.ts``, ``utils.ts``). :class:`RpcClient` owns that and the one request path
(:meth:`RpcClient.call`: fresh id and timestamp, one :class:`FrameTransport` exchange, the
reply checked against the request). The SDK ``Client``'s reads
(:class:`~.client_queries.ClientQueries`) and signed calls
(:class:`~.client_calls.V1ClientCore`) are built on it.
"""

from __future__ import annotations

import random
import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, Protocol

from ....errors import InvalidFrameError, RelayError, SettlementValueError
from .decimals import sdk_decimal_string
from .rpc_shapes import wire_state
from .wire import MAX_SAFE_INTEGER, Frame, MessageType

__all__ = [
    "EncodedFrameTransport",
    "FrameTransport",
    "RpcClient",
    "app_definition_to_wire",
    "app_state_update_to_wire",
    "channel_nonce",
    "check_reply",
    "compact",
    "now_ms",
    "pick",
    "random_request_id",
    "sdk_error_message",
    "uint_str",
]


# ---------------------------------------------------------------------------------------------
# sources and transport
# ---------------------------------------------------------------------------------------------


#: request ids only pair a reply with its request on one connection (v1 has no login and
#: no signed envelope; a duplicate pending id is refused by the transport), so they need no
#: CSPRNG: a Mersenne Twister seeded from the OS draws one in ~1 µs where ``secrets`` takes
#: ~8 µs per request. Channel nonces (:func:`channel_nonce`) stay on ``secrets``.
_REQUEST_IDS: Final = random.Random(secrets.randbits(128))


def random_request_id() -> int:
    """A request id like the SDK's (``floor(random * MAX_SAFE_INTEGER)``), never 0 (events)."""
    return 1 + _REQUEST_IDS.randrange(MAX_SAFE_INTEGER - 1)


def now_ms() -> int:
    """Unix time in milliseconds, the frame timestamp."""
    return time.time_ns() // 1_000_000


def channel_nonce(clock_ms: int) -> int:
    """The SDK's ``generateNonce()``: ``ms × 10^6 + random(0..10^6)``, unique per channel."""
    return clock_ms * 1_000_000 + secrets.randbelow(1_000_000)


class FrameTransport(Protocol):
    """Sends one request frame and returns the node's reply to it (any type; checked here).

    The transport owns the wire: it encodes ``request`` (:meth:`Frame.encode`), matches the
    reply by request id, and raises its own errors for a dead connection or a timeout.
    """

    async def exchange(self, request: Frame) -> Frame: ...


class EncodedFrameTransport(FrameTransport, Protocol):
    """A transport that can also take the request's text already encoded: :meth:`RpcClient.call`
    encodes every request to check it before sending, and a transport that re-encoded it
    would do that work (a recursive walk of the payload) twice per request. When a
    transport has ``exchange_encoded``, :meth:`RpcClient.call` sends through it (so that is
    the method to wrap to observe the core's requests), else through ``exchange``."""

    async def exchange_encoded(self, request: Frame, text: str) -> Frame: ...


def check_reply(request: Frame, reply: Frame) -> dict[str, Any]:
    """The payload of ``reply`` if it is the successful answer to ``request``.

    A type-4 frame becomes :class:`RelayError` with the node's text verbatim (``code`` = the
    method); a reply for another request id or method, or of another type, is a protocol
    violation (:class:`InvalidFrameError`), never silently taken as this call's answer.
    """
    if not isinstance(reply, Frame):
        raise InvalidFrameError(f"the transport returned {type(reply).__name__}, not a Frame")
    if reply.request_id != request.request_id:
        raise InvalidFrameError(
            f"reply to {request.method} carries request id {reply.request_id}, "
            f"expected {request.request_id}"
        )
    if reply.type == MessageType.ERROR:
        raise RelayError(reply.error or "", code=reply.method or request.method)
    if reply.type != MessageType.RESPONSE:
        raise InvalidFrameError(
            f"reply to {request.method} is a frame of type {int(reply.type)}, not a response"
        )
    if reply.method != request.method:
        raise InvalidFrameError(
            f"reply to {request.method} (id {request.request_id}) names method {reply.method!r}"
        )
    return dict(reply.payload)


def sdk_error_message(exc: BaseException) -> str:
    """The text the TS SDK would throw for ``exc`` (``RPCClient.call`` prefixes node errors)."""
    if isinstance(exc, RelayError):
        return f"rpc returned error: {exc.message}"
    return str(exc)


# ---------------------------------------------------------------------------------------------
# request shapes
# ---------------------------------------------------------------------------------------------


def pick(mapping: Mapping[str, Any], camel: str, snake: str) -> Any:
    if camel in mapping:
        return mapping[camel]
    if snake in mapping:
        return mapping[snake]
    raise SettlementValueError(f"missing field {snake!r}")


def uint_str(value: object, field: str) -> str:
    if isinstance(value, bool):
        raise SettlementValueError(f"{field} must be an unsigned integer, got {value!r}")
    if isinstance(value, int) and value >= 0:
        return str(value)
    if isinstance(value, str) and value.isascii() and value.isdigit():
        return str(int(value))
    raise SettlementValueError(f"{field} must be an unsigned integer, got {value!r}")


def app_definition_to_wire(definition: Mapping[str, Any]) -> dict[str, Any]:
    """An app definition (camelCase or snake_case) as the SDK sends it."""
    return {
        "application_id": pick(definition, "applicationId", "application_id"),
        "participants": [
            {
                "wallet_address": pick(p, "walletAddress", "wallet_address"),
                "signature_weight": int(pick(p, "signatureWeight", "signature_weight")),
            }
            for p in definition["participants"]
        ],
        "quorum": int(definition["quorum"]),
        "nonce": uint_str(definition["nonce"], "definition.nonce"),
    }


def app_state_update_to_wire(update: Mapping[str, Any]) -> dict[str, Any]:
    """An app state update (camelCase or snake_case) as the SDK sends it (amounts rendered
    by decimal.js, which is also the text the quorum signatures must cover)."""
    return {
        "app_session_id": pick(update, "appSessionId", "app_session_id"),
        "intent": int(update["intent"]),
        "version": uint_str(update["version"], "app_state_update.version"),
        "allocations": [
            {
                "participant": a["participant"],
                "asset": a["asset"],
                "amount": sdk_decimal_string(a["amount"]),
            }
            for a in update["allocations"]
        ],
        "session_data": pick(update, "sessionData", "session_data"),
    }


def _channel_key_state_to_wire(state: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "user_address": state["user_address"],
        "session_key": state["session_key"],
        "version": uint_str(state["version"], "version"),
        "assets": list(state["assets"]),
        "expires_at": uint_str(state["expires_at"], "expires_at"),
    }
    for key in ("user_sig", "session_key_sig"):
        if state.get(key):
            out[key] = state[key]
    return out


def _app_key_state_to_wire(state: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "user_address": state["user_address"],
        "session_key": state["session_key"],
        "version": uint_str(state["version"], "version"),
        "application_ids": list(state.get("application_ids", [])),
        "app_session_ids": list(state.get("app_session_ids", [])),
        "expires_at": uint_str(state["expires_at"], "expires_at"),
    }
    for key in ("user_sig", "session_key_sig"):
        if state.get(key):
            out[key] = state[key]
    return out


def compact(**fields: Any) -> dict[str, Any]:
    """A payload without the absent fields (the SDK drops ``undefined``)."""
    return {key: value for key, value in fields.items() if value is not None}


# ---------------------------------------------------------------------------------------------
# the RPC client
# ---------------------------------------------------------------------------------------------


class RpcClient:
    """Typed node methods over a :class:`FrameTransport` (the SDK's ``RPCClient``).

    ``request_ids`` and ``clock_ms`` are the sources of request ids and frame timestamps
    (random ids and the wall clock by default; the vector driver replays recorded ones).
    Results are returned as the node sent them; the SDK ``Client``'s parsing lives in
    :class:`~.client_queries.ClientQueries`.
    """

    def __init__(
        self,
        transport: FrameTransport,
        *,
        request_ids: Callable[[], int] = random_request_id,
        clock_ms: Callable[[], int] = now_ms,
    ) -> None:
        self._transport = transport
        self._request_ids = request_ids
        self._clock_ms = clock_ms

    # --- the one request path --------------------------------------------------------------

    async def call(self, method: str, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Send ``method`` with ``params`` (wire form) and return the result payload.

        Raises :class:`RelayError` for the node's error replies and
        :class:`InvalidFrameError` for a reply that does not answer this request.
        """
        request = Frame(
            MessageType.REQUEST, self._request_ids(), method, dict(params or {}), self._clock_ms()
        )
        text = request.encode()  # check every field before anything is sent
        exchange_encoded = getattr(self._transport, "exchange_encoded", None)
        if exchange_encoded is not None:  # an EncodedFrameTransport: no second encoding
            reply = await exchange_encoded(request, text)
        else:
            reply = await self._transport.exchange(request)
        return check_reply(request, reply)

    # --- node.v1 -----------------------------------------------------------------------

    async def node_v1_ping(self) -> dict[str, Any]:
        return await self.call("node.v1.ping")

    async def node_v1_get_config(self) -> dict[str, Any]:
        return await self.call("node.v1.get_config")

    async def node_v1_get_assets(self, blockchain_id: int | str | None = None) -> dict[str, Any]:
        params = compact(
            blockchain_id=None if blockchain_id is None else uint_str(blockchain_id, "chain")
        )
        return await self.call("node.v1.get_assets", params)

    # --- user.v1 -----------------------------------------------------------------------

    async def user_v1_get_balances(self, wallet: str) -> dict[str, Any]:
        return await self.call("user.v1.get_balances", {"wallet": wallet})

    async def user_v1_get_transactions(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """Raw: ``params`` are sent as given (the SDK sends ``from_time`` as a string)."""
        return await self.call("user.v1.get_transactions", params)

    # --- channels.v1 -------------------------------------------------------------------

    async def channels_v1_get_home_channel(self, wallet: str, asset: str) -> dict[str, Any]:
        return await self.call("channels.v1.get_home_channel", {"wallet": wallet, "asset": asset})

    async def channels_v1_get_escrow_channel(self, escrow_channel_id: str) -> dict[str, Any]:
        return await self.call(
            "channels.v1.get_escrow_channel", {"escrow_channel_id": escrow_channel_id}
        )

    async def channels_v1_get_channels(self, params: Mapping[str, Any]) -> dict[str, Any]:
        return await self.call("channels.v1.get_channels", params)

    async def channels_v1_get_latest_state(
        self, wallet: str, asset: str, only_signed: bool
    ) -> dict[str, Any]:
        return await self.call(
            "channels.v1.get_latest_state",
            {"wallet": wallet, "asset": asset, "only_signed": bool(only_signed)},
        )

    async def channels_v1_request_creation(
        self, state: Mapping[str, Any], channel_definition: Mapping[str, Any]
    ) -> dict[str, Any]:
        return await self.call(
            "channels.v1.request_creation",
            {"state": wire_state(state), "channel_definition": dict(channel_definition)},
        )

    async def channels_v1_submit_state(self, state: Mapping[str, Any]) -> dict[str, Any]:
        return await self.call("channels.v1.submit_state", {"state": wire_state(state)})

    async def channels_v1_submit_session_key_state(
        self, state: Mapping[str, Any]
    ) -> dict[str, Any]:
        return await self.call(
            "channels.v1.submit_session_key_state", {"state": _channel_key_state_to_wire(state)}
        )

    async def channels_v1_get_last_key_states(self, params: Mapping[str, Any]) -> dict[str, Any]:
        return await self.call("channels.v1.get_last_key_states", params)

    # --- app_sessions.v1 ---------------------------------------------------------------

    async def app_sessions_v1_create_app_session(
        self,
        definition: Mapping[str, Any],
        session_data: str,
        quorum_sigs: Sequence[str],
        owner_sig: str | None = None,
    ) -> dict[str, Any]:
        params = {
            "definition": app_definition_to_wire(definition),
            "session_data": session_data,
            "quorum_sigs": list(quorum_sigs),
        }
        if owner_sig:
            params["owner_sig"] = owner_sig
        return await self.call("app_sessions.v1.create_app_session", params)

    async def app_sessions_v1_submit_deposit_state(
        self,
        app_state_update: Mapping[str, Any],
        quorum_sigs: Sequence[str],
        user_state: Mapping[str, Any],
    ) -> dict[str, Any]:
        return await self.call(
            "app_sessions.v1.submit_deposit_state",
            {
                "app_state_update": app_state_update_to_wire(app_state_update),
                "quorum_sigs": list(quorum_sigs),
                "user_state": wire_state(user_state),
            },
        )

    async def app_sessions_v1_submit_app_state(
        self, app_state_update: Mapping[str, Any], quorum_sigs: Sequence[str]
    ) -> dict[str, Any]:
        return await self.call(
            "app_sessions.v1.submit_app_state",
            {
                "app_state_update": app_state_update_to_wire(app_state_update),
                "quorum_sigs": list(quorum_sigs),
            },
        )

    async def app_sessions_v1_get_app_definition(self, app_session_id: str) -> dict[str, Any]:
        return await self.call(
            "app_sessions.v1.get_app_definition", {"app_session_id": app_session_id}
        )

    async def app_sessions_v1_get_app_sessions(self, params: Mapping[str, Any]) -> dict[str, Any]:
        return await self.call("app_sessions.v1.get_app_sessions", params)

    async def app_sessions_v1_submit_session_key_state(
        self, state: Mapping[str, Any]
    ) -> dict[str, Any]:
        return await self.call(
            "app_sessions.v1.submit_session_key_state", {"state": _app_key_state_to_wire(state)}
        )

    async def app_sessions_v1_get_last_key_states(
        self, params: Mapping[str, Any]
    ) -> dict[str, Any]:
        return await self.call("app_sessions.v1.get_last_key_states", params)
