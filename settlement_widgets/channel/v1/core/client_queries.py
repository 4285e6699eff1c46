"""The SDK ``Client``'s read methods: the request each one sends, and how it reads the answer.

Why a module of its own: every read of the Nitrolite v1.4.1 TS ``Client`` (``sdk/ts/src/
client.ts``) builds its request in a fixed way (optional filters dropped when absent, page
numbers turned into ``{offset, limit}``, key order as the SDK writes it) and parses the reply
with the SDK's transforms (``sdk/ts/src/utils.ts``, ``session_key_state_transforms.ts``),
which refuse some malformed answers with a fixed text. :class:`ClientQueries` does both; the
results are wire-form (snake_case) dicts, and the ``sdk_*`` functions below render them in
the SDK's camelCase shapes (bigints and decimals as strings), which is what the vector
driver reports.

The reads of v1.4.1, each checked against ours: ``ping``, ``getConfig``, ``getBlockchains``,
``getAssets``, ``getBalances``, ``getTransactions``, ``getChannels``, ``getHomeChannel``,
``getEscrowChannel``, ``getLatestState``, ``getAppSessions``, ``getAppDefinition``,
``getLastChannelKeyStates``, ``getLastKeyStates``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Literal

from ....errors import InvalidFrameError, SettlementValueError
from .client_assets import AssetStore, parse_assets
from .client_rpc import FrameTransport, RpcClient, compact, now_ms, random_request_id, uint_str
from .decimals import sdk_decimal_string
from .responses import parse_balances
from .rpc_shapes import sdk_channel, wire_state
from .wire import parse_node_config

__all__ = [
    "ClientQueries",
    "page_to_pagination",
    "sdk_app_definition",
    "sdk_app_session_info",
    "sdk_pagination_metadata",
    "sdk_transaction",
]


def page_to_pagination(page: int | None, page_size: int | None) -> dict[str, int] | None:
    """The SDK's ``page``/``pageSize`` options as the wire ``pagination`` object.

    Sent only when both are given and non-zero (the SDK tests ``page && pageSize``);
    ``offset = (page - 1) * pageSize``.
    """
    if not page or not page_size:
        return None
    return {"offset": (int(page) - 1) * int(page_size), "limit": int(page_size)}


def _channel_or_none(payload: Mapping[str, Any], method: str) -> dict[str, Any] | None:
    channel = payload.get("channel")
    if channel is None:
        return None
    if not isinstance(channel, Mapping):
        raise InvalidFrameError(f"invalid {method} result: 'channel' not an object")
    return dict(channel)


def _list_field(payload: Mapping[str, Any], key: str, method: str) -> list[Any]:
    value = payload.get(key)
    if not isinstance(value, list):
        raise InvalidFrameError(f"invalid {method} result: {key!r} must be an array")
    return value


def _app_definition(raw: object) -> dict[str, Any]:
    """An ``AppDefinitionV1`` checked as ``transformAppDefinitionFromRPC`` checks it."""
    if not isinstance(raw, Mapping) or not raw.get("application_id") or raw.get("nonce") is None:
        raise InvalidFrameError(
            "Invalid app definition: missing required fields (application_id, nonce)"
        )
    try:
        return {
            "application_id": raw["application_id"],
            "participants": [
                {"wallet_address": p["wallet_address"], "signature_weight": p["signature_weight"]}
                for p in raw.get("participants") or []
            ],
            "quorum": raw.get("quorum"),
            "nonce": uint_str(raw["nonce"], "nonce"),
        }
    except (KeyError, TypeError, SettlementValueError) as exc:
        raise InvalidFrameError(f"invalid app definition: {exc}") from None


def _app_session(raw: object) -> dict[str, Any]:
    """An ``AppSessionInfoV1`` entry checked as ``transformAppSessionInfo`` reads it."""
    if not isinstance(raw, Mapping):
        raise InvalidFrameError("invalid app session entry: expected an object")
    try:
        return {
            "app_session_id": raw["app_session_id"],
            "status": raw.get("status"),
            "app_definition": _app_definition(raw.get("app_definition")),
            "session_data": raw.get("session_data") or "",
            "version": uint_str(raw["version"], "version"),
            "allocations": [
                {
                    "participant": a["participant"],
                    "asset": a["asset"],
                    "amount": sdk_decimal_string(a["amount"]),
                }
                for a in raw.get("allocations") or []
            ],
        }
    except (KeyError, TypeError, SettlementValueError) as exc:
        raise InvalidFrameError(f"invalid app session entry: {exc}") from None


_KEY_STATE_FIELDS: dict[str, tuple[tuple[str, type], ...]] = {
    "channel session key state": (
        ("user_address", str),
        ("session_key", str),
        ("version", str),
        ("assets", list),
        ("expires_at", str),
        ("user_sig", str),
    ),
    "app session key state": (
        ("user_address", str),
        ("session_key", str),
        ("version", str),
        ("application_ids", list),
        ("app_session_ids", list),
        ("expires_at", str),
        ("user_sig", str),
    ),
}


def _key_states(payload: Mapping[str, Any], kind: str, what: str) -> list[dict[str, Any]]:
    """Key states as ``transformChannelSessionKeyState`` / ``transformAppSessionKeyState``
    read them: exactly those fields (``session_key_sig`` is not kept), with their texts."""
    states = payload.get("states")
    if not isinstance(states, list):
        raise InvalidFrameError(
            f"Invalid {what} key states response: expected states to be an array"
        )
    out = []
    for index, raw in enumerate(states):
        context = f"{kind}[{index}]"
        if not isinstance(raw, Mapping):
            raise InvalidFrameError(f"Invalid {context}: expected object")
        entry: dict[str, Any] = {}
        for field, kind_type in _KEY_STATE_FIELDS[kind]:
            value = raw.get(field)
            if kind_type is str and not isinstance(value, str):
                raise InvalidFrameError(f"Invalid {context}: missing required string field {field}")
            if kind_type is list and (
                not isinstance(value, list) or not all(isinstance(v, str) for v in value)
            ):
                raise InvalidFrameError(f"Invalid {context}: expected {field} to be string[]")
            entry[field] = list(value) if isinstance(value, list) else value
        out.append(entry)
    return out


class ClientQueries(RpcClient):
    """The SDK ``Client``'s reads over a :class:`FrameTransport`, with its asset cache.

    ``asset_cache`` pre-fills :attr:`assets` (``get_assets`` wire entries), which decides
    whether a later call sends ``get_assets`` first.
    """

    def __init__(
        self,
        transport: FrameTransport,
        *,
        asset_cache: Sequence[Mapping[str, Any]] = (),
        request_ids: Callable[[], int] = random_request_id,
        clock_ms: Callable[[], int] = now_ms,
    ) -> None:
        super().__init__(transport, request_ids=request_ids, clock_ms=clock_ms)
        self.assets = AssetStore(self.get_assets, asset_cache)

    # --- node ----------------------------------------------------------------------------

    async def ping(self) -> None:
        await self.node_v1_ping()

    async def get_config(self) -> dict[str, Any]:
        """Node config in the SDK shape (``nodeAddress``, ``supportedSigValidators`` ...)."""
        return parse_node_config(await self.node_v1_get_config())

    async def get_blockchains(self) -> list[dict[str, Any]]:
        """The node's chains (SDK ``getBlockchains``: ``getConfig().blockchains``, so it
        sends ``node.v1.get_config``), in the SDK's ``Blockchain`` shape."""
        return list((await self.get_config())["blockchains"])

    async def get_assets(self, blockchain_id: int | str | None = None) -> list[dict[str, Any]]:
        """Supported assets, wire form (checked, decimals as ints)."""
        payload = await self.node_v1_get_assets(blockchain_id)
        return parse_assets(payload.get("assets"))

    # --- user ----------------------------------------------------------------------------

    async def get_balances(self, wallet: str) -> list[dict[str, Any]]:
        """``[{asset, amount, enforced}]``; ``enforced`` defaults to ``"0"`` as in the SDK."""
        return parse_balances(await self.user_v1_get_balances(wallet))

    async def get_transactions(
        self,
        wallet: str,
        *,
        asset: str | None = None,
        tx_type: int | None = None,
        from_time: int | None = None,
        to_time: int | None = None,
        page: int | None = None,
        page_size: int | None = None,
        pagination: Mapping[str, Any] | None = None,
        times_as: Literal["number", "string"] = "number",
    ) -> dict[str, Any]:
        """Transaction history (``{transactions, metadata}`` as the node sent it).

        Keys in the SDK's order (``wallet, asset, tx_type, from_time, to_time,
        pagination``); ``page``/``page_size`` become ``pagination`` as in the SDK, or pass
        ``pagination`` itself (e.g. with ``sort``, which the SDK cannot send). Times go as
        JSON **numbers** by default, which is what the Go node parses (its fields are
        ``uint64``); the SDK sends its bigints as strings (``times_as="string"``), which a
        real node refuses.
        """
        if times_as not in ("number", "string"):
            raise SettlementValueError(f"times_as must be 'number' or 'string', not {times_as!r}")

        def time_value(value: int | None, field: str) -> int | str | None:
            if value is None:
                return None
            text = uint_str(value, field)
            return text if times_as == "string" else int(text)

        if pagination is None:
            pagination = page_to_pagination(page, page_size)
        params = compact(
            wallet=wallet,
            asset=asset,
            tx_type=tx_type,
            from_time=time_value(from_time, "from_time"),
            to_time=time_value(to_time, "to_time"),
            pagination=None if pagination is None else dict(pagination),
        )
        return await self.user_v1_get_transactions(params)

    # --- channels ------------------------------------------------------------------------

    async def get_channels(
        self,
        wallet: str,
        *,
        status: str | None = None,
        asset: str | None = None,
        channel_type: str | None = None,
        pagination: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """``{channels, metadata}`` as the node sent them. As in the SDK, only ``offset``
        and ``limit`` of ``pagination`` are sent."""
        page = None
        if pagination is not None:
            page = compact(offset=pagination.get("offset"), limit=pagination.get("limit"))
        params = compact(
            wallet=wallet, status=status, asset=asset, channel_type=channel_type, pagination=page
        )
        return await self.channels_v1_get_channels(params)

    async def get_home_channel(self, wallet: str, asset: str) -> dict[str, Any] | None:
        """The wallet's home channel for ``asset`` (wire form), or None."""
        payload = await self.channels_v1_get_home_channel(wallet, asset)
        return _channel_or_none(payload, "get_home_channel")

    async def get_escrow_channel(self, escrow_channel_id: str) -> dict[str, Any] | None:
        """The escrow channel ``escrow_channel_id`` (wire form), or None when the node has
        none (the SDK would fail reading the absent channel)."""
        payload = await self.channels_v1_get_escrow_channel(escrow_channel_id)
        return _channel_or_none(payload, "get_escrow_channel")

    async def get_latest_state(
        self, wallet: str, asset: str, only_signed: bool = False
    ) -> dict[str, Any] | None:
        """The wallet's latest state for ``asset`` (wire form), or None when it has none."""
        payload = await self.channels_v1_get_latest_state(wallet, asset, only_signed)
        value = payload.get("state")
        return None if value is None else wire_state(value)

    # --- app sessions --------------------------------------------------------------------

    async def get_app_sessions(
        self,
        *,
        app_session_id: str | None = None,
        wallet: str | None = None,
        status: str | None = None,
        page: int | None = None,
        page_size: int | None = None,
    ) -> dict[str, Any]:
        """``{app_sessions, metadata}``: sessions by id or by participant ``wallet``
        (the SDK's ``getAppSessions`` options), each entry checked as the SDK reads it."""
        params = compact(
            app_session_id=app_session_id,
            participant=wallet,
            status=status,
            pagination=page_to_pagination(page, page_size),
        )
        payload = await self.app_sessions_v1_get_app_sessions(params)
        sessions = _list_field(payload, "app_sessions", "get_app_sessions")
        return {
            "app_sessions": [_app_session(s) for s in sessions],
            "metadata": dict(payload.get("metadata") or {}),
        }

    async def get_app_definition(self, app_session_id: str) -> dict[str, Any]:
        """The definition of app session ``app_session_id`` (wire form)."""
        payload = await self.app_sessions_v1_get_app_definition(app_session_id)
        return _app_definition(payload.get("definition"))

    # --- session keys --------------------------------------------------------------------

    async def get_last_channel_key_states(
        self, user_address: str, session_key: str | None = None
    ) -> list[dict[str, Any]]:
        """The wallet's active channel session-key registrations (SDK
        ``getLastChannelKeyStates``)."""
        params = compact(user_address=user_address, session_key=session_key)
        payload = await self.channels_v1_get_last_key_states(params)
        return _key_states(payload, "channel session key state", "channel")

    async def get_last_key_states(
        self, user_address: str, session_key: str | None = None
    ) -> list[dict[str, Any]]:
        """The wallet's active app-session key registrations (SDK ``getLastKeyStates``)."""
        params = compact(user_address=user_address, session_key=session_key)
        payload = await self.app_sessions_v1_get_last_key_states(params)
        return _key_states(payload, "app session key state", "app")


# ---------------------------------------------------------------------------------------------
# SDK shapes (what the SDK's transforms return, bigints and decimals as strings)
# ---------------------------------------------------------------------------------------------


def sdk_pagination_metadata(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """``transformPaginationMetadata``: camelCase, absent fields dropped (``undefined``)."""
    return compact(
        page=metadata.get("page"),
        perPage=metadata.get("per_page"),
        totalCount=metadata.get("total_count"),
        pageCount=metadata.get("page_count"),
    )


def sdk_app_definition(definition: Mapping[str, Any]) -> dict[str, Any]:
    """``transformAppDefinitionFromRPC`` of a checked wire definition."""
    return compact(
        applicationId=definition["application_id"],
        participants=[
            compact(walletAddress=p["wallet_address"], signatureWeight=p["signature_weight"])
            for p in definition["participants"]
        ],
        quorum=definition.get("quorum"),
        nonce=definition["nonce"],
    )


def sdk_app_session_info(session: Mapping[str, Any]) -> dict[str, Any]:
    """``transformAppSessionInfo`` of a checked wire entry (``isClosed`` from ``status``)."""
    return {
        "appSessionId": session["app_session_id"],
        "appDefinition": sdk_app_definition(session["app_definition"]),
        "isClosed": session.get("status") == "closed",
        "sessionData": session["session_data"],
        "version": session["version"],
        "allocations": [
            {"participant": a["participant"], "asset": a["asset"], "amount": a["amount"]}
            for a in session["allocations"]
        ],
    }


def _js_date_json(value: object) -> str | None:
    """``JSON.stringify(new Date(value))`` for an RFC 3339 text: ISO in UTC with
    milliseconds, or ``null`` for a date JavaScript cannot read."""
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is None:
        return None
    moment = parsed.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def sdk_transaction(tx: Mapping[str, Any]) -> dict[str, Any]:
    """``transformTransaction``: camelCase, amount as decimal.js prints it, the optional
    state ids only when non-empty."""
    out: dict[str, Any] = {
        "id": tx["id"],
        "asset": tx["asset"],
        "txType": tx["tx_type"],
        "fromAccount": tx["from_account"],
        "toAccount": tx["to_account"],
        "amount": sdk_decimal_string(tx["amount"]),
        "createdAt": _js_date_json(tx.get("created_at")),
    }
    if tx.get("sender_new_state_id"):
        out["senderNewStateId"] = tx["sender_new_state_id"]
    if tx.get("receiver_new_state_id"):
        out["receiverNewStateId"] = tx["receiver_new_state_id"]
    return out


def sdk_channels_page(payload: Mapping[str, Any]) -> dict[str, Any]:
    """``getChannels``' result: ``{channels, metadata}`` in the SDK's shapes."""
    return {
        "channels": [sdk_channel(c) for c in _list_field(payload, "channels", "get_channels")],
        "metadata": sdk_pagination_metadata(payload.get("metadata") or {}),
    }


__all__ += ["sdk_channels_page"]
