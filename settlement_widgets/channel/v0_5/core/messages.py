"""Request builders for the v0.5 methods the channel flow uses (ClearNode v0.5 RPC).

Each mirrors the SDK's ``create*Message`` (``@erc7824/nitrolite`` 0.5.3 ``dist/rpc/api.js``):
same params, same key order, same value types, so the frame text is byte-identical to the
SDK's for the same id, timestamp and key (tests/unit/test_erc7824_vectors.py,
tests/interop/). Builders validate what the relay would reject later: EIP-55 addresses,
decimal-string amounts, 32-byte channel ids. Public methods are sent unsigned (``sig: []``)
as the SDK does; private ones are signed by ``key`` (the wallet or its session key).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ....errors import InvalidAmountError, SettlementValueError
from ._address_cache import checksummed
from .amounts import is_decimal_amount
from .ids import as_channel_id_bytes
from .rpc import Request, make_request, new_request_id, now_ms, signed_request
from .signing import KeyLike

__all__ = [
    "auth_request_message",
    "auth_verify_jwt_message",
    "auth_verify_message",
    "close_channel_message",
    "create_channel_message",
    "get_assets_message",
    "get_channels_message",
    "get_config_message",
    "get_ledger_balances_message",
    "get_session_keys_message",
    "get_user_tag_message",
    "ping_message",
    "resize_channel_message",
    "revoke_session_key_message",
    "transfer_message",
]


def _channel_id_text(channel_id: str | bytes) -> str:
    return "0x" + as_channel_id_bytes(channel_id).hex()


def _asset_amounts(
    allocations: Sequence[Mapping[str, Any] | tuple[str, str]], what: str
) -> list[dict[str, str]]:
    out = []
    for i, item in enumerate(allocations):
        if isinstance(item, Mapping):
            asset, amount = item.get("asset"), item.get("amount")
        elif isinstance(item, tuple | list) and len(item) == 2:
            asset, amount = item
        else:
            raise SettlementValueError(
                f"{what}[{i}] must be {{'asset', 'amount'}} or (asset, amount)"
            )
        if not isinstance(asset, str) or not asset:
            raise SettlementValueError(f"{what}[{i}].asset must be a non-empty asset symbol")
        if not is_decimal_amount(amount):
            raise InvalidAmountError(
                f"{what}[{i}].amount must be a decimal string in asset units such as '1.5' "
                f"(see to_decimal_string), got {amount!r}"
            )
        out.append({"asset": asset, "amount": str(amount)})
    return out


def ping_message(*, request_id: int | None = None, timestamp: int | None = None) -> Request:
    """``ping`` (public, unsigned): the relay answers ``pong``."""
    return make_request("ping", {}, request_id=request_id, timestamp=timestamp)


def get_config_message(*, request_id: int | None = None, timestamp: int | None = None) -> Request:
    """``get_config`` (public): broker address and networks."""
    return make_request("get_config", {}, request_id=request_id, timestamp=timestamp)


def get_assets_message(
    chain_id: int | None = None, *, request_id: int | None = None, timestamp: int | None = None
) -> Request:
    params = {"chain_id": chain_id} if chain_id else {}
    return make_request("get_assets", params, request_id=request_id, timestamp=timestamp)


def get_channels_message(
    participant: str | None = None,
    status: str | None = None,
    *,
    request_id: int | None = None,
    timestamp: int | None = None,
) -> Request:
    params: dict[str, Any] = {}
    if participant:
        params["participant"] = checksummed(participant, "participant")
    if status:
        params["status"] = status
    return make_request("get_channels", params, request_id=request_id, timestamp=timestamp)


def get_ledger_balances_message(
    key: KeyLike,
    account_id: str | None = None,
    *,
    request_id: int | None = None,
    timestamp: int | None = None,
) -> Request:
    """``get_ledger_balances`` (private): unified balances as decimal strings."""
    params = {"account_id": account_id} if account_id else {}
    return make_request(
        "get_ledger_balances", params, request_id=request_id, timestamp=timestamp, key=key
    )


def get_user_tag_message(
    key: KeyLike, *, request_id: int | None = None, timestamp: int | None = None
) -> Request:
    return make_request("get_user_tag", {}, request_id=request_id, timestamp=timestamp, key=key)


def get_session_keys_message(
    key: KeyLike, *, request_id: int | None = None, timestamp: int | None = None
) -> Request:
    return make_request("get_session_keys", {}, request_id=request_id, timestamp=timestamp, key=key)


def revoke_session_key_message(
    key: KeyLike,
    session_key: str,
    *,
    request_id: int | None = None,
    timestamp: int | None = None,
) -> Request:
    params = {"session_key": checksummed(session_key, "session_key")}
    return make_request(
        "revoke_session_key", params, request_id=request_id, timestamp=timestamp, key=key
    )


def create_channel_message(
    key: KeyLike,
    chain_id: int,
    token: str,
    *,
    request_id: int | None = None,
    timestamp: int | None = None,
) -> Request:
    """``create_channel {chain_id, token}`` (private)."""
    if isinstance(chain_id, bool) or not isinstance(chain_id, int) or chain_id <= 0:
        raise SettlementValueError(f"chain_id must be a positive integer, got {chain_id!r}")
    params = {"chain_id": chain_id, "token": checksummed(token, "token")}
    return make_request(
        "create_channel", params, request_id=request_id, timestamp=timestamp, key=key
    )


def _raw_units(value: int | None, name: str) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidAmountError(
            f"{name} must be an integer number of smallest units, got {value!r}"
        )
    return str(value)  # the SDK serialises bigint as a JSON string


def resize_channel_message(
    key: KeyLike,
    channel_id: str | bytes,
    funds_destination: str,
    *,
    resize_amount: int | None = None,
    allocate_amount: int | None = None,
    request_id: int | None = None,
    timestamp: int | None = None,
) -> Request:
    """``resize_channel`` (private). Amounts are signed raw integer units, sent as strings;
    at least one must be given and non-zero."""
    resize = _raw_units(resize_amount, "resize_amount")
    allocate = _raw_units(allocate_amount, "allocate_amount")
    if not resize_amount and not allocate_amount:
        raise InvalidAmountError("resize needs a non-zero resize_amount or allocate_amount")
    params: dict[str, Any] = {"channel_id": _channel_id_text(channel_id)}
    if resize is not None:
        params["resize_amount"] = resize
    if allocate is not None:
        params["allocate_amount"] = allocate
    params["funds_destination"] = checksummed(funds_destination, "funds_destination")
    return make_request(
        "resize_channel", params, request_id=request_id, timestamp=timestamp, key=key
    )


def close_channel_message(
    key: KeyLike,
    channel_id: str | bytes,
    funds_destination: str,
    *,
    request_id: int | None = None,
    timestamp: int | None = None,
) -> Request:
    """``close_channel {channel_id, funds_destination}`` (private)."""
    params = {
        "channel_id": _channel_id_text(channel_id),
        "funds_destination": checksummed(funds_destination, "funds_destination"),
    }
    return make_request(
        "close_channel", params, request_id=request_id, timestamp=timestamp, key=key
    )


def transfer_message(
    key: KeyLike,
    allocations: Sequence[Mapping[str, Any] | tuple[str, str]],
    *,
    destination: str | None = None,
    destination_user_tag: str | None = None,
    request_id: int | None = None,
    timestamp: int | None = None,
) -> Request:
    """``transfer`` (private): exactly one of ``destination`` / ``destination_user_tag``;
    ``allocations`` as ``[(asset, "1.5"), ...]`` in human decimal strings."""
    if bool(destination) == bool(destination_user_tag):
        raise SettlementValueError(
            "transfer needs exactly one of destination or destination_user_tag"
        )
    params: dict[str, Any] = (
        {"destination": checksummed(destination, "destination")}
        if destination
        else {"destination_user_tag": destination_user_tag}
    )
    params["allocations"] = _asset_amounts(allocations, "allocations")
    return signed_request(
        "transfer",
        params,
        new_request_id() if request_id is None else request_id,
        now_ms() if timestamp is None else timestamp,
        key,
    )


def auth_request_message(
    address: str,
    session_key: str,
    application: str,
    allowances: Sequence[Mapping[str, Any] | tuple[str, str]],
    expires_at: int,
    scope: str,
    *,
    request_id: int | None = None,
    timestamp: int | None = None,
) -> Request:
    """``auth_request`` (public, unsigned). ``expires_at`` in Unix *seconds*."""
    if isinstance(expires_at, bool) or not isinstance(expires_at, int) or expires_at < 0:
        raise SettlementValueError(f"expires_at must be Unix seconds, got {expires_at!r}")
    if not isinstance(application, str) or not isinstance(scope, str):
        raise SettlementValueError("application and scope must be strings")
    params = {
        "address": checksummed(address, "address"),
        "session_key": checksummed(session_key, "session_key"),
        "application": application,
        "allowances": _asset_amounts(allowances, "allowances"),
        "expires_at": expires_at,
        "scope": scope,
    }
    return make_request("auth_request", params, request_id=request_id, timestamp=timestamp)


def auth_verify_message(
    challenge: str,
    signature: str,
    *,
    request_id: int | None = None,
    timestamp: int | None = None,
) -> Request:
    """``auth_verify {challenge}`` carrying the wallet's EIP-712 ``Policy`` signature
    (:func:`.auth.sign_auth`) as ``sig[0]``."""
    if not isinstance(challenge, str) or not challenge:
        raise SettlementValueError("challenge must be the challenge_message string")
    req = make_request(
        "auth_verify", {"challenge": challenge}, request_id=request_id, timestamp=timestamp
    )
    return Request(req.request_id, req.method, req.params, req.timestamp, (signature,), req.raw)


def auth_verify_jwt_message(
    jwt: str, *, request_id: int | None = None, timestamp: int | None = None
) -> Request:
    """``auth_verify {jwt}``: re-login with the token from a previous verify, unsigned."""
    if not isinstance(jwt, str) or not jwt:
        raise SettlementValueError("jwt must be the jwt_token string")
    return make_request("auth_verify", {"jwt": jwt}, request_id=request_id, timestamp=timestamp)
