"""ChannelHub calldata for the Nitrolite v1 channel lifecycle (v1.4.1 ``ChannelHub.sol``).

Why: a user must be able to put a co-signed state on chain without the node (that is the
point of a state channel), so we build ``createChannel`` / ``depositToChannel`` /
``checkpointChannel`` / ``withdrawFromChannel`` / ``closeChannel`` / ``challengeChannel``
calldata ourselves, pure and offline; a wallet or RPC layer only has to send it.

Inputs are the contract-side structs in the SDK's JSON form (``evm.coreDefToContractDef`` /
``evm.coreStateToContractState``: camelCase keys, integers as decimal strings, hex signatures),
or can be derived from a wire state with :func:`contract_state_from_wire`. The on-chain intent
is the **signing** intent (core/Go table): the TS SDK's EVM client uses another table for
escrow transitions, which would fail the contract's signature check (vector
``contract_calldata-006``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from ...._keccak import keccak256
from ....errors import InvalidSignatureError, SettlementValueError, UnknownOptionError
from .abi import abi_encode
from .state import LEDGER_TYPE, TokenDecimals, ledger_tuple, transition_metadata_hash
from .transitions import SDK_TRANSITION_NAMES, transition_to_intent

__all__ = [
    "CHANNEL_DEFINITION_TYPE",
    "CONTRACT_STATE_TYPE",
    "FUNCTION_SIGNATURES",
    "SDK_EVM_CLIENT_INTENT",
    "VECTORS",
    "challenge_channel_calldata",
    "channel_state_calldata",
    "contract_state_from_wire",
    "create_channel_calldata",
    "encode_call",
    "hex_bytes",
    "intent_comparison_table",
    "selector",
]

CONTRACT_STATE_TYPE: Final = f"(uint64,uint8,bytes32,{LEDGER_TYPE},{LEDGER_TYPE},bytes,bytes)"
"""ChannelHub ``State``: version, intent, metadata, homeLedger, nonHomeLedger, userSig, nodeSig."""
CHANNEL_DEFINITION_TYPE: Final = "(uint32,address,address,uint64,uint256,bytes32)"
"""ChannelHub ``ChannelDefinition``: challengeDuration, user, node, nonce, validators, metadata."""

#: function name -> canonical parameter types (from the v1.4.1 ChannelHub ABI)
FUNCTION_SIGNATURES: Final[Mapping[str, tuple[str, ...]]] = {
    "createChannel": (CHANNEL_DEFINITION_TYPE, CONTRACT_STATE_TYPE),
    "depositToChannel": ("bytes32", CONTRACT_STATE_TYPE),
    "checkpointChannel": ("bytes32", CONTRACT_STATE_TYPE),
    "withdrawFromChannel": ("bytes32", CONTRACT_STATE_TYPE),
    "closeChannel": ("bytes32", CONTRACT_STATE_TYPE),
    "challengeChannel": ("bytes32", CONTRACT_STATE_TYPE, "bytes", "uint8"),
    # cross-chain escrow (escrow id = keccak256(abi.encode(homeChannelId, uint64 version)))
    "initiateEscrowDeposit": (CHANNEL_DEFINITION_TYPE, CONTRACT_STATE_TYPE),
    "challengeEscrowDeposit": ("bytes32", "bytes", "uint8"),
    "finalizeEscrowDeposit": ("bytes32", "bytes32", CONTRACT_STATE_TYPE),
    "initiateEscrowWithdrawal": (CHANNEL_DEFINITION_TYPE, CONTRACT_STATE_TYPE),
    "challengeEscrowWithdrawal": ("bytes32", "bytes", "uint8"),
    "finalizeEscrowWithdrawal": ("bytes32", "bytes32", CONTRACT_STATE_TYPE),
    # migration of a home channel (states from our protocol: core/migration.py)
    "initiateMigration": (CHANNEL_DEFINITION_TYPE, CONTRACT_STATE_TYPE),
    "finalizeMigration": ("bytes32", CONTRACT_STATE_TYPE),
}

#: transition type -> on-chain intent used when SIGNING (``core.transitionToIntent``)
_SIGNED_INTENT: Final[Mapping[int, int]] = {
    int(kind): int(transition_to_intent(kind)) for kind in SDK_TRANSITION_NAMES
}

#: the intent the TS SDK's EVM client writes into the contract State (documented, not used)
SDK_EVM_CLIENT_INTENT: Final[Mapping[int, int]] = {
    **_SIGNED_INTENT,
    20: 4,
    21: 6,
    110: 0,
    120: 0,
}


def selector(function: str) -> bytes:
    """The 4-byte selector of a ChannelHub function we encode."""
    types = _types(function)
    return keccak256(f"{function}({','.join(types)})".encode())[:4]


def _types(function: str) -> tuple[str, ...]:
    try:
        return FUNCTION_SIGNATURES[function]
    except KeyError:
        known = ", ".join(sorted(FUNCTION_SIGNATURES))
        raise UnknownOptionError(
            f"unknown ChannelHub function {function!r}; known: {known}"
        ) from None


def _int(value: object, field: str) -> int:
    if isinstance(value, bool):
        raise SettlementValueError(f"{field} must be an integer, got {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            return int(value, 0) if value.startswith(("0x", "-0x")) else int(value)
        except ValueError:
            pass
    raise SettlementValueError(f"{field} must be an integer or decimal string, got {value!r}")


def hex_bytes(value: object, field: str, size: int | None = None) -> bytes:
    """``value`` (0x-hex or bytes) as bytes, ``size`` long if given; our error otherwise."""
    if isinstance(value, bytes | bytearray):
        raw = bytes(value)
    elif isinstance(value, str) and value.startswith(("0x", "0X")):
        try:
            raw = bytes.fromhex(value[2:])
        except ValueError:
            raise SettlementValueError(f"{field} is not valid hex: {value!r}") from None
    else:
        raise SettlementValueError(f"{field} must be 0x-hex or bytes, got {value!r}")
    if size is not None and len(raw) != size:
        raise SettlementValueError(f"{field} must be {size} bytes, got {len(raw)}")
    return raw


def _ledger(ledger: Mapping[str, Any], field: str) -> tuple[Any, ...]:
    return (
        _int(ledger["chainId"], f"{field}.chainId"),
        ledger["token"],
        _int(ledger["decimals"], f"{field}.decimals"),
        _int(ledger["userAllocation"], f"{field}.userAllocation"),
        _int(ledger["userNetFlow"], f"{field}.userNetFlow"),
        _int(ledger["nodeAllocation"], f"{field}.nodeAllocation"),
        _int(ledger["nodeNetFlow"], f"{field}.nodeNetFlow"),
    )


def _state(state: Mapping[str, Any]) -> tuple[Any, ...]:
    for name in ("userSig", "nodeSig"):
        if not hex_bytes(state.get(name, b""), f"state.{name}"):
            raise InvalidSignatureError(
                f"state.{name} is empty: the contract needs both signatures (with the "
                "validator-id prefix byte) to accept a state"
            )
    return (
        _int(state["version"], "state.version"),
        _int(state["intent"], "state.intent"),
        hex_bytes(state["metadata"], "state.metadata", 32),
        _ledger(state["homeLedger"], "state.homeLedger"),
        _ledger(state["nonHomeLedger"], "state.nonHomeLedger"),
        hex_bytes(state["userSig"], "state.userSig"),
        hex_bytes(state["nodeSig"], "state.nodeSig"),
    )


def _definition(definition: Mapping[str, Any]) -> tuple[Any, ...]:
    return (
        _int(definition["challengeDuration"], "def.challengeDuration"),
        definition["user"],
        definition["node"],
        _int(definition["nonce"], "def.nonce"),
        _int(definition["approvedSignatureValidators"], "def.approvedSignatureValidators"),
        hex_bytes(definition["metadata"], "def.metadata", 32),
    )


def encode_call(function: str, args: Sequence[Any]) -> bytes:
    """Selector + ABI-encoded arguments for one of :data:`FUNCTION_SIGNATURES`.

    ``args`` are in the SDK's contract JSON form (see the module docstring).
    """
    types = _types(function)
    if len(args) != len(types):
        raise SettlementValueError(f"{function} takes {len(types)} arguments, got {len(args)}")
    values: list[Any] = []
    for abi_type, arg in zip(types, args, strict=True):
        if abi_type == CONTRACT_STATE_TYPE:
            values.append(_state(arg))
        elif abi_type == CHANNEL_DEFINITION_TYPE:
            values.append(_definition(arg))
        elif abi_type == "bytes32":
            values.append(hex_bytes(arg, "channelId / escrowId", 32))
        elif abi_type == "bytes":
            values.append(hex_bytes(arg, "challengerSig"))
        else:
            values.append(_int(arg, "challengerIdx"))
    return selector(function) + abi_encode(types, values)


def create_channel_calldata(definition: Mapping[str, Any], state: Mapping[str, Any]) -> bytes:
    """``createChannel(def, initState)`` (first state; intent DEPOSIT/WITHDRAW/OPERATE)."""
    return encode_call("createChannel", [definition, state])


def channel_state_calldata(function: str, channel_id: str, state: Mapping[str, Any]) -> bytes:
    """``depositToChannel`` / ``checkpointChannel`` / ``withdrawFromChannel`` / ``closeChannel``."""
    if function not in (
        "depositToChannel",
        "checkpointChannel",
        "withdrawFromChannel",
        "closeChannel",
    ):
        raise UnknownOptionError(f"{function!r} is not a (channelId, state) ChannelHub function")
    return encode_call(function, [channel_id, state])


def challenge_channel_calldata(
    channel_id: str, state: Mapping[str, Any], challenger_sig: str | bytes, challenger_idx: int
) -> bytes:
    """``challengeChannel(id, candidate, challengerSig, challengerIdx)`` (0 user, 1 node)."""
    if challenger_idx not in (0, 1):
        raise SettlementValueError(
            f"challenger_idx must be 0 (user) or 1 (node), got {challenger_idx}"
        )
    return encode_call("challengeChannel", [channel_id, state, challenger_sig, challenger_idx])


def contract_state_from_wire(state: Mapping[str, Any], decimals: TokenDecimals) -> dict[str, Any]:
    """The contract ``State`` JSON of a signed wire state, with the signing intent."""
    home = ledger_tuple(state["home_ledger"], decimals)
    escrow = ledger_tuple(state.get("escrow_ledger"), decimals)
    keys = (
        "chainId",
        "token",
        "decimals",
        "userAllocation",
        "userNetFlow",
        "nodeAllocation",
        "nodeNetFlow",
    )

    def as_json(ledger: tuple[Any, ...]) -> dict[str, Any]:
        return {
            key: value if key in ("token", "decimals") else str(value)
            for key, value in zip(keys, ledger, strict=True)
        }

    return {
        "version": str(state["version"]),
        "intent": int(transition_to_intent(state["transition"]["type"])),
        "metadata": "0x" + transition_metadata_hash(state["transition"]).hex(),
        "homeLedger": as_json(home),
        "nonHomeLedger": as_json(escrow),
        "userSig": state.get("user_sig") or "0x",
        "nodeSig": state.get("node_sig") or "0x",
    }


def intent_comparison_table() -> list[dict[str, Any]]:
    """Signing intent vs the TS SDK EVM client's contract intent, per transition type."""
    return [
        {
            "transition": name,
            "type": int(kind),
            "signed_intent_core": _SIGNED_INTENT[kind],
            "contract_state_intent_evm_client": SDK_EVM_CLIENT_INTENT[kind],
            "equal": _SIGNED_INTENT[kind] == SDK_EVM_CLIENT_INTENT[kind],
        }
        for kind, name in SDK_TRANSITION_NAMES.items()
    ]


def _vector_contract_calldata(inputs: Mapping[str, Any], meta: Mapping[str, Any]) -> dict[str, Any]:
    if not inputs:  # contract_calldata-006: the intent table comparison
        return {"table": intent_comparison_table()}
    function = inputs["function"]
    return {
        "selector": "0x" + selector(function).hex(),
        "calldata": "0x" + encode_call(function, inputs["args"]).hex(),
    }


VECTORS: dict[str, Callable[[Mapping[str, Any], Mapping[str, Any]], dict[str, Any]]] = {
    "contract_calldata": _vector_contract_calldata,
}
"""Vector group -> ``(inputs, meta) -> outputs`` (see :mod:`.vectors`)."""
