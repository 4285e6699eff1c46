"""The two JSON shapes of v1 objects: the wire's snake_case and the SDK's camelCase.

Our client and node speak the wire form (``pkg/rpc/types.go``): snake_case keys, uint64 as
decimal strings, amounts as display-unit decimal strings. Its key *order* is not
significant to the Go node, but the TS SDK emits keys in construction order, and a frame
that must be byte-identical to the SDK's (the ``rpc_client_frames`` vectors) needs that
order: :func:`wire_state` and :func:`wire_ledger` rebuild it.

The camelCase forms (:func:`sdk_state`, :func:`sdk_assets`, :func:`sdk_channel`) are what the
SDK's ``Client`` methods return; only the vectors need them, to compare our results with the
SDK's, so they live here beside the wire forms they are derived from.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from ....errors import InvalidFrameError, SettlementValueError
from .decimals import sdk_decimal_string
from .responses import RESPONSE_DEFAULTS

__all__ = [
    "CHANNEL_STATUS",
    "CHANNEL_TYPE",
    "sdk_assets",
    "sdk_balances",
    "sdk_channel",
    "sdk_state",
    "wire_ledger",
    "wire_state",
]

#: ``channel.status`` strings on the wire and the SDK's enum numbers (``ChannelStatus``)
CHANNEL_STATUS: Final[Mapping[str, int]] = {"void": 0, "open": 1, "challenged": 2, "closed": 3}
#: ``channel.type`` strings on the wire and the SDK's enum numbers (``ChannelType``)
CHANNEL_TYPE: Final[Mapping[str, int]] = {"home": 1, "escrow": 2}

_LEDGER_KEYS: Final = (
    "token_address",
    "blockchain_id",
    "user_balance",
    "user_net_flow",
    "node_balance",
    "node_net_flow",
)


def _require_mapping(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise InvalidFrameError(f"invalid {where}: expected an object, got {value!r}")
    return value


def wire_ledger(ledger: object) -> dict[str, Any]:
    """A ledger in the SDK's key order, every value a string.

    Amounts go through decimal.js ``toString`` and the chain id through ``BigInt`` as in the
    SDK's ``transformLedger`` / ``transformStateToRPC`` round trip, so a state the node sent
    as ``"10.50"`` is sent back (and signed) as ``"10.5"``, like the SDK does.
    """
    ledger = _require_mapping(ledger, "ledger")
    missing = [key for key in _LEDGER_KEYS if key not in ledger]
    if missing:
        raise InvalidFrameError(f"invalid ledger: missing {missing[0]}")
    token = ledger["token_address"]
    if not isinstance(token, str):
        raise InvalidFrameError(f"invalid ledger: token_address must be a string, got {token!r}")
    out: dict[str, Any] = {
        "token_address": token,
        "blockchain_id": _uint_text(ledger["blockchain_id"], "ledger.blockchain_id"),
    }
    for key in _LEDGER_KEYS[2:]:
        out[key] = _amount_text(ledger[key], f"ledger.{key}")
    return out


def _uint_text(value: Any, where: str) -> str:
    """A uint64 field (decimal string or int) as its canonical decimal string."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return str(value)
    if isinstance(value, str) and value.isascii() and value.isdigit():
        return str(int(value))
    raise InvalidFrameError(f"invalid {where}: expected a decimal string, got {value!r}")


def _amount_text(value: Any, where: str) -> str:
    """An amount as decimal.js renders it; a malformed one is a malformed frame."""
    try:
        return sdk_decimal_string(value)
    except SettlementValueError as exc:
        raise InvalidFrameError(f"invalid {where}: {exc}") from None


def wire_state(state: Mapping[str, Any]) -> dict[str, Any]:
    """A state in the SDK's key order (``transformStateToRPC``), absent fields omitted."""
    state = _require_mapping(state, "state")
    transition = _require_mapping(state.get("transition"), "state.transition")
    for key in ("id", "asset", "user_wallet"):
        if not isinstance(state.get(key), str):
            raise InvalidFrameError(f"invalid state: {key} must be a string")
    kind = transition.get("type")
    if not isinstance(kind, int) or isinstance(kind, bool) or not 0 <= kind <= 255:
        raise InvalidFrameError(f"invalid state.transition.type: {kind!r}")
    for key in ("tx_id", "account_id"):
        if not isinstance(transition.get(key, ""), str):
            raise InvalidFrameError(f"invalid state.transition.{key}: expected a string")
    out: dict[str, Any] = {
        "id": state["id"],
        "transition": {
            "type": kind,
            "tx_id": transition.get("tx_id", ""),
            "account_id": transition.get("account_id") or "",
            "amount": _amount_text(transition.get("amount"), "state.transition.amount"),
        },
        "asset": state["asset"],
        "user_wallet": state["user_wallet"],
        "epoch": _uint_text(state.get("epoch"), "state.epoch"),
        "version": _uint_text(state.get("version"), "state.version"),
    }
    for key in ("home_channel_id", "escrow_channel_id"):
        if state.get(key):
            out[key] = state[key]
    out["home_ledger"] = wire_ledger(state.get("home_ledger"))
    if state.get("escrow_ledger"):
        out["escrow_ledger"] = wire_ledger(state["escrow_ledger"])
    for key in ("user_sig", "node_sig"):
        if state.get(key):
            out[key] = state[key]
    return out


def _sdk_ledger(ledger: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "tokenAddress": ledger["token_address"],
        "blockchainId": str(ledger["blockchain_id"]),
        "userBalance": sdk_decimal_string(ledger["user_balance"]),
        "userNetFlow": sdk_decimal_string(ledger["user_net_flow"]),
        "nodeBalance": sdk_decimal_string(ledger["node_balance"]),
        "nodeNetFlow": sdk_decimal_string(ledger["node_net_flow"]),
    }


def sdk_state(state: Mapping[str, Any]) -> dict[str, Any]:
    """A wire state as the SDK's ``State`` object (camelCase, Decimal amounts as strings)."""
    state = _require_mapping(state, "state")
    transition = state["transition"]
    out: dict[str, Any] = {
        "id": state["id"],
        "transition": {
            "type": int(transition["type"]),
            "txId": transition["tx_id"],
            "accountId": transition["account_id"],
            "amount": sdk_decimal_string(transition["amount"]),
        },
        "asset": state["asset"],
        "userWallet": state["user_wallet"],
        "epoch": str(state["epoch"]),
        "version": str(state["version"]),
    }
    if state.get("home_channel_id"):
        out["homeChannelId"] = state["home_channel_id"]
    if state.get("escrow_channel_id"):
        out["escrowChannelId"] = state["escrow_channel_id"]
    out["homeLedger"] = _sdk_ledger(state["home_ledger"])
    if state.get("escrow_ledger"):
        out["escrowLedger"] = _sdk_ledger(state["escrow_ledger"])
    if state.get("user_sig"):
        out["userSig"] = state["user_sig"]
    if state.get("node_sig"):
        out["nodeSig"] = state["node_sig"]
    return out


def sdk_assets(assets: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``node.v1.get_assets`` assets as the SDK's ``Asset[]``."""
    return [
        {
            "name": asset["name"],
            "symbol": asset["symbol"],
            "decimals": int(asset["decimals"]),
            "suggestedBlockchainId": str(asset["suggested_blockchain_id"]),
            "tokens": [
                {
                    "name": token["name"],
                    "symbol": token["symbol"],
                    "address": token["address"],
                    "blockchainId": str(token["blockchain_id"]),
                    "decimals": int(token["decimals"]),
                }
                for token in asset.get("tokens", ())
            ],
        }
        for asset in assets
    ]


def sdk_channel(channel: Mapping[str, Any]) -> dict[str, Any]:
    """A wire ``Channel`` as the SDK's (enums as numbers, absent expiry omitted)."""
    channel = _require_mapping(channel, "channel")
    kind_text, status_text = channel.get("type"), channel.get("status")
    if not isinstance(kind_text, str) or not isinstance(status_text, str):
        raise InvalidFrameError("invalid channel: type and status must be strings")
    # the SDK's parseChannelType / parseChannelStatus: case-insensitive, and a value it does
    # not know (a newer node's status) reads as home / void instead of failing the call
    kind = CHANNEL_TYPE.get(kind_text.lower(), CHANNEL_TYPE["home"])
    status = CHANNEL_STATUS.get(status_text.lower(), CHANNEL_STATUS["void"])
    out: dict[str, Any] = {
        "channelId": channel["channel_id"],
        "userWallet": channel["user_wallet"],
        "asset": channel["asset"],
        "type": kind,
        "blockchainId": str(channel["blockchain_id"]),
        "tokenAddress": channel["token_address"],
        "challengeDuration": int(channel["challenge_duration"]),
    }
    if channel.get("challenge_expires_at") is not None:
        out["challengeExpiresAt"] = channel["challenge_expires_at"]
    out.update(
        {
            "nonce": str(channel["nonce"]),
            "approvedSigValidators": channel["approved_sig_validators"],
            "status": status,
            "stateVersion": str(channel["state_version"]),
        }
    )
    return out


def sdk_balances(balances: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``user.v1.get_balances`` entries as the SDK's ``BalanceEntry[]`` (amount as
    ``balance``; ``enforced`` defaults to 0 when the node leaves it out, see
    :mod:`.responses`)."""
    default = RESPONSE_DEFAULTS["user.v1.get_balances.balances[].enforced"]
    return [
        {
            "asset": entry["asset"],
            "balance": sdk_decimal_string(entry["amount"]),
            "enforced": sdk_decimal_string(
                default if entry.get("enforced") is None else entry["enforced"]
            ),
        }
        for entry in balances
    ]
