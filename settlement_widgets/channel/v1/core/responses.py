"""Node responses parsed as tolerantly as the SDK parses them, with the SDK's defaults.

Why this module exists: the network is not uniform. Node builds before v1.4.0 do not send
``confirmation_delay_secs`` or the balances' ``enforced``; future builds will add fields we do
not know. The TS SDK (Nitrolite v1.4.1 ``rpc/types.ts``, ``utils.ts`` ``transform*``) reads
what it needs, defaults what may be absent, and ignores everything else. A client stricter
than that fails against nodes the SDK works with, so ours follows the same rules:
**unknown fields are ignored; a field the SDK treats as optional gets the SDK's default;
a field the SDK requires is still required** (its absence is an :class:`InvalidFrameError`).

Optional response fields and their defaults (:data:`RESPONSE_DEFAULTS` holds the same):

========================================  =======================  ==========================
field                                     default when absent      why
========================================  =======================  ==========================
get_config ``supported_sig_validators``   ``[]``                   SDK ``decodeSigValidators``
                                                                   (absent or ``""``: none)
get_config blockchain ``confirmation_``   ``0``                    builds before v1.4.0; the
``delay_secs``                                                     SDK reads 0 (no gate)
get_config blockchain ``block_step``      ``"0"``                  not sent; SDK ``blockStep``
                                                                   is always ``0n``
get_config blockchain ``locking_``        omitted                  optional in
``contract_address``                                               ``BlockchainInfoV1``
get_balances ``enforced``                 ``"0"``                  builds before v1.4.0; the
                                                                   SDK's ``BalanceEntry.
                                                                   enforced`` is a Decimal
state ``home_channel_id``,                omitted                  optional in ``StateV1``
``escrow_channel_id``, ``escrow_ledger``,
``user_sig``, ``node_sig``
transition ``account_id``                 omitted when empty       ``transformTransition``
channel ``challenge_expires_at``          omitted                  optional in ``ChannelV1``
transaction ``sender_new_state_id``,      omitted                  optional in
``receiver_new_state_id``                                          ``TransactionV1``
app session ``session_data``              ``""``                   ``transformAppSessionInfo``
app session ``allocations``,              ``[]``                   ``transformAppSessionInfo``,
definition ``participants``                                        ``...DefinitionFromRPC``
========================================  =======================  ==========================
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping, Sequence
from typing import Any, Final

from ....errors import InvalidFrameError

__all__ = ["RESPONSE_DEFAULTS", "parse_balances", "parse_node_config"]

RESPONSE_DEFAULTS: Final[Mapping[str, Any]] = {
    "node.v1.get_config.supported_sig_validators": [],
    "node.v1.get_config.blockchains[].confirmation_delay_secs": 0,
    "node.v1.get_config.blockchains[].block_step": "0",
    "node.v1.get_config.blockchains[].locking_contract_address": None,
    "user.v1.get_balances.balances[].enforced": "0",
    "StateV1.home_channel_id": None,
    "StateV1.escrow_channel_id": None,
    "StateV1.escrow_ledger": None,
    "StateV1.user_sig": None,
    "StateV1.node_sig": None,
    "TransitionV1.account_id": None,
    "ChannelV1.challenge_expires_at": None,
    "TransactionV1.sender_new_state_id": None,
    "TransactionV1.receiver_new_state_id": None,
    "AppSessionInfoV1.session_data": "",
    "AppSessionInfoV1.allocations": [],
    "AppDefinitionV1.participants": [],
}
"""Response field -> the value the SDK uses when the node leaves it out (``None``: the
field is simply absent from the parsed object, as an optional TS property is)."""


def _sig_validators(value: Any) -> list[int]:
    """``supported_sig_validators``: Go sends ``[]uint8`` as base64, the SDK also takes
    arrays, and anything absent or empty is no validator at all (SDK ``decodeSigValidators``)."""
    if value is None or value == "":
        return list(RESPONSE_DEFAULTS["node.v1.get_config.supported_sig_validators"])
    if isinstance(value, str):
        try:
            return list(base64.b64decode(value, validate=True))
        except (binascii.Error, ValueError) as exc:
            raise InvalidFrameError(
                f"invalid supported_sig_validators: {value!r} is not base64"
            ) from exc
    if isinstance(value, Sequence) and all(
        isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= 255 for v in value
    ):
        return list(value)
    raise InvalidFrameError(
        "invalid supported_sig_validators: expected base64 text or an array of 0..255"
    )


def _require(obj: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    value = obj.get(key)
    if not isinstance(value, kind) or isinstance(value, bool):
        raise InvalidFrameError(f"invalid {where}: missing or mistyped field {key!r}")
    return value


def _optional(
    obj: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: str, default: Any
) -> Any:
    """``obj[key]`` when present (and not null), else the SDK's default; a present value of
    the wrong type is still refused, since the SDK would misread it."""
    if obj.get(key) is None:
        return default
    return _require(obj, key, kind, where)


def _uint_string(value: Any, key: str) -> str:
    """A uint64 field sent as a decimal string (or, leniently, a JSON integer)."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return str(value)
    if isinstance(value, str) and value.isascii() and value.isdigit():
        return str(int(value))
    raise InvalidFrameError(f"invalid {key}: expected a decimal string, got {value!r}")


def parse_node_config(payload: Mapping[str, Any]) -> dict[str, Any]:
    """The ``node.v1.get_config`` result in the SDK's camelCase shape (``transformNodeConfig``).

    uint64 values are kept as decimal strings (the SDK has bigints). Optional fields get the
    defaults of :data:`RESPONSE_DEFAULTS`; unknown fields are ignored.
    """
    if not isinstance(payload, Mapping):
        raise InvalidFrameError("invalid get_config result: expected object")
    chains = _require(payload, "blockchains", list, "get_config result")
    blockchains = []
    prefix = "node.v1.get_config.blockchains[]."
    for chain in chains:
        if not isinstance(chain, Mapping):
            raise InvalidFrameError("invalid blockchain entry: expected object")
        entry: dict[str, Any] = {
            "name": _require(chain, "name", str, "blockchain entry"),
            "id": _uint_string(chain.get("blockchain_id"), "blockchain_id"),
            "channelHubAddress": _require(chain, "channel_hub_address", str, "blockchain entry"),
        }
        locking = _optional(chain, "locking_contract_address", str, "blockchain entry", None)
        if locking is not None:
            entry["lockingContractAddress"] = locking
        entry["blockStep"] = _uint_string(
            chain.get("block_step", RESPONSE_DEFAULTS[prefix + "block_step"]), "block_step"
        )
        delay = _optional(
            chain,
            "confirmation_delay_secs",
            int,
            "blockchain entry",
            RESPONSE_DEFAULTS[prefix + "confirmation_delay_secs"],
        )
        if delay < 0:
            raise InvalidFrameError(f"invalid confirmation_delay_secs: {delay}")
        entry["confirmationDelaySecs"] = delay
        blockchains.append(entry)
    return {
        "nodeAddress": _require(payload, "node_address", str, "get_config result"),
        "nodeVersion": _require(payload, "node_version", str, "get_config result"),
        "supportedSigValidators": _sig_validators(payload.get("supported_sig_validators")),
        "blockchains": blockchains,
    }


def parse_balances(payload: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``user.v1.get_balances`` entries as ``{asset, amount, enforced}`` wire dicts.

    ``enforced`` (the part already backed on chain) defaults to ``"0"`` when a node does not
    send it, as the SDK's ``BalanceEntry.enforced`` does; other fields are ignored.
    """
    if not isinstance(payload, Mapping):
        raise InvalidFrameError("invalid get_balances result: expected object")
    balances = payload.get("balances")
    if not isinstance(balances, list) or not all(isinstance(b, Mapping) for b in balances):
        raise InvalidFrameError("invalid get_balances result: 'balances' must be an array")
    default = RESPONSE_DEFAULTS["user.v1.get_balances.balances[].enforced"]
    return [
        {
            "asset": _require(entry, "asset", str, "balance entry"),
            "amount": _require(entry, "amount", (str, int), "balance entry"),
            "enforced": _optional(entry, "enforced", str, "balance entry", default),
        }
        for entry in balances
    ]
