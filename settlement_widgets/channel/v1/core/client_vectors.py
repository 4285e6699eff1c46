"""The ``rpc_client_frames`` vectors: SDK calls replayed through the client core.

Why: the published vectors record, per SDK call, the request frames the TS SDK sent and the
scripted node's replies. :func:`call_by_sdk_name` runs the call named in a vector
(``"Client.getAppSessions"``, ``"RPCClient.channelsV1GetChannels"`` ...) on a
:class:`~.client_calls.V1ClientCore` and returns the result in the SDK's shape;
:func:`rpc_client_frames` drives a fresh core with the recorded ids, timestamps, nonces and
replies (a scripted transport), so the frames it produces can be compared byte for byte.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ....errors import (
    InvalidAmountError,
    InvalidFrameError,
    InvalidStateError,
    RelayError,
    SettlementError,
    SettlementValueError,
)
from .client_calls import V1ClientCore, run_without_suspending
from .client_queries import (
    sdk_app_definition,
    sdk_app_session_info,
    sdk_channels_page,
    sdk_pagination_metadata,
    sdk_transaction,
)
from .client_rpc import sdk_error_message
from .client_signers import vector_state_signer
from .rpc_shapes import sdk_assets, sdk_balances, sdk_channel, sdk_state
from .wire import Frame, decode_frame

__all__ = ["call_by_sdk_name", "rpc_client_frames"]


class _ScriptedTransport:
    """Answers the k-th request with the k-th recorded reply, keeping each request's text."""

    def __init__(self, exchanges: Sequence[Mapping[str, Any]]) -> None:
        self._exchanges = list(exchanges)
        self.frames: list[dict[str, str]] = []

    async def exchange(self, request: Frame) -> Frame:
        k = len(self.frames)
        if k >= len(self._exchanges):
            raise SettlementError(f"request {k + 1} ({request.method}) was not scripted")
        script = self._exchanges[k]
        if script["method"] != request.method:
            raise SettlementError(
                f"request {k + 1} is {request.method}, the script expects {script['method']}"
            )
        text = script["scripted_response_frame"]
        self.frames.append({"request_frame": request.encode(), "response_frame": text})
        return decode_frame(text)


def _sequence(values: Sequence[Any], what: str) -> Callable[[], int]:
    queue = [int(v) for v in values]

    def take() -> int:
        if not queue:
            raise SettlementError(f"more {what} were drawn than recorded")
        return queue.pop(0)

    return take


def _optional_sdk_state(state: Mapping[str, Any] | None) -> dict[str, Any] | None:
    return None if state is None else sdk_state(state)


async def call_by_sdk_name(core: V1ClientCore, api: str, args: Mapping[str, Any]) -> Any:
    """Run the SDK call named ``api`` (``"Client.deposit"``, ``"RPCClient.channelsV1GetChannels"``
    ...) with a vector's structured ``args`` on ``core``; the result in the SDK's shape.

    Public so that any transport (the scripted one below, a loopback WebSocket in the tests)
    can replay a recorded session through the same dispatch.
    """
    if api == "Client.ping":
        return await core.ping()
    if api == "Client.getConfig":
        return await core.get_config()
    if api == "Client.getAssets":
        return sdk_assets(await core.get_assets(args.get("blockchain_id")))
    if api == "Client.getBalances":
        return sdk_balances(await core.get_balances(args["wallet"]))
    if api == "Client.getLatestState":
        state = await core.get_latest_state(args["wallet"], args["asset"], args["only_signed"])
        return _optional_sdk_state(state)
    if api == "Client.getHomeChannel":
        channel = await core.get_home_channel(args["wallet"], args["asset"])
        return None if channel is None else sdk_channel(channel)
    if api == "Client.deposit":
        return sdk_state(await core.deposit(args["blockchain_id"], args["asset"], args["amount"]))
    if api == "Client.withdraw":
        return sdk_state(await core.withdraw(args["blockchain_id"], args["asset"], args["amount"]))
    if api == "Client.transfer":
        return sdk_state(
            await core.transfer(args["recipient_wallet"], args["asset"], args["amount"])
        )
    if api == "Client.acknowledge":
        return sdk_state(await core.acknowledge(args["asset"]))
    if api == "Client.closeHomeChannel":
        return sdk_state(await core.close_home_channel(args["asset"]))
    if api == "Client.createAppSession":
        created = await core.create_app_session(
            args["definition"], args["session_data"], args["quorum_sigs"]
        )
        return {
            "appSessionId": created["app_session_id"],
            "version": created["version"],
            "status": created["status"],
        }
    if api == "Client.submitAppSessionDeposit":
        return await core.submit_app_session_deposit(
            args["app_state_update"], args["quorum_sigs"], args["asset"], args["deposit_amount"]
        )
    if api == "Client.submitAppState":
        return await core.submit_app_state(args["app_state_update"], args["quorum_sigs"])
    if api == "Client.submitChannelSessionKeyState":
        return await core.submit_channel_session_key_state(args["state"])
    if api == "Client.submitSessionKeyState":
        return await core.submit_app_session_key_state(args["state"])
    if api.startswith("RPCClient."):
        return await core.call(rpc_method_name(api), args.get("req") or {})
    query = _QUERIES.get(api)
    if query is None:
        raise SettlementValueError(f"unknown client call {api!r}")
    return await query(core, args)


_RPC_GROUPS = {
    "node": "node",
    "user": "user",
    "channels": "channels",
    "appSessions": "app_sessions",
}


def rpc_method_name(api: str) -> str:
    """``"RPCClient.channelsV1GetEscrowChannel"`` -> ``"channels.v1.get_escrow_channel"``:
    the SDK's ``RPCClient`` methods are named after the node methods they send."""
    name = api.removeprefix("RPCClient.")
    group, sep, rest = name.partition("V1")
    if not sep or group not in _RPC_GROUPS or not rest[:1].isupper():
        raise SettlementValueError(f"unknown client call {api!r}")
    snake = "".join("_" + c.lower() if c.isupper() else c for c in rest).lstrip("_")
    return f"{_RPC_GROUPS[group]}.v1.{snake}"


async def _get_blockchains(core: V1ClientCore, args: Mapping[str, Any]) -> Any:
    return await core.get_blockchains()


async def _get_escrow_channel(core: V1ClientCore, args: Mapping[str, Any]) -> Any:
    channel = await core.get_escrow_channel(args["escrow_channel_id"])
    return None if channel is None else sdk_channel(channel)


async def _get_channels(core: V1ClientCore, args: Mapping[str, Any]) -> Any:
    options = args.get("options") or {}
    page = await core.get_channels(
        args["wallet"],
        status=options.get("status"),
        asset=options.get("asset"),
        channel_type=options.get("channelType"),
        pagination=options.get("pagination"),
    )
    return sdk_channels_page(page)


async def _get_transactions(core: V1ClientCore, args: Mapping[str, Any]) -> Any:
    options = args.get("options") or {}
    page = await core.get_transactions(
        args["wallet"],
        asset=options.get("asset"),
        tx_type=options.get("txType"),
        from_time=options.get("fromTime"),
        to_time=options.get("toTime"),
        page=options.get("page"),
        page_size=options.get("pageSize"),
        times_as="string",  # the SDK's bigints go out as strings
    )
    return {
        "transactions": [sdk_transaction(tx) for tx in page.get("transactions") or []],
        "metadata": sdk_pagination_metadata(page.get("metadata") or {}),
    }


async def _get_app_sessions(core: V1ClientCore, args: Mapping[str, Any]) -> Any:
    options = args.get("options") or {}
    page = await core.get_app_sessions(
        app_session_id=options.get("appSessionId"),
        wallet=options.get("wallet"),
        status=options.get("status"),
        page=options.get("page"),
        page_size=options.get("pageSize"),
    )
    return {
        "sessions": [sdk_app_session_info(s) for s in page["app_sessions"]],
        "metadata": sdk_pagination_metadata(page["metadata"]),
    }


async def _get_app_definition(core: V1ClientCore, args: Mapping[str, Any]) -> Any:
    return sdk_app_definition(await core.get_app_definition(args["app_session_id"]))


async def _get_last_channel_key_states(core: V1ClientCore, args: Mapping[str, Any]) -> Any:
    return await core.get_last_channel_key_states(args["user_address"], args.get("session_key"))


async def _get_last_key_states(core: V1ClientCore, args: Mapping[str, Any]) -> Any:
    return await core.get_last_key_states(args["user_address"], args.get("session_key"))


async def _set_home_blockchain(core: V1ClientCore, args: Mapping[str, Any]) -> Any:
    await core.set_home_blockchain(args["asset"], args["blockchain_id"])


_QUERIES: dict[str, Callable[[V1ClientCore, Mapping[str, Any]], Any]] = {
    "Client.getBlockchains": _get_blockchains,
    "Client.getEscrowChannel": _get_escrow_channel,
    "Client.getChannels": _get_channels,
    "Client.getTransactions": _get_transactions,
    "Client.getAppSessions": _get_app_sessions,
    "Client.getAppDefinition": _get_app_definition,
    "Client.getLastChannelKeyStates": _get_last_channel_key_states,
    "Client.getLastKeyStates": _get_last_key_states,
    "Client.setHomeBlockchain": _set_home_blockchain,
}


def rpc_client_frames(inputs: Mapping[str, Any], meta: Mapping[str, Any]) -> dict[str, Any]:
    """A fresh client from ``inputs.client``, driven by the recorded replies, ids and nonces.

    ``error`` is the SDK's error text for the errors the SDK itself raises (a node error,
    a refused state or amount, a malformed reply the SDK's transforms reject)."""
    exchanges = inputs["exchanges"]
    client = inputs["client"]
    transport = _ScriptedTransport(exchanges)
    signer_spec = client.get("state_signer")
    core = V1ClientCore(
        transport,
        state_signer=None if signer_spec is None else vector_state_signer(signer_spec, meta),
        asset_cache=client.get("asset_store_cache") or (),
        home_blockchains={k: int(v) for k, v in (client.get("home_blockchains") or {}).items()},
        request_ids=_sequence([e["request_id"] for e in exchanges], "request ids"),
        clock_ms=_sequence([e["timestamp_ms"] for e in exchanges], "timestamps"),
        nonces=_sequence(inputs.get("generated_channel_nonces") or [], "channel nonces"),
    )
    call = inputs["call"]
    result: Any = None
    error: str | None = None
    try:
        result = run_without_suspending(call_by_sdk_name(core, call["api"], call["args"]))
    except (RelayError, InvalidStateError, InvalidAmountError, InvalidFrameError) as exc:
        error = sdk_error_message(exc)
    return {"frames": transport.frames, "result": result, "error": error}
