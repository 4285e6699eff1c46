"""Nitrolite v1 state lifecycle: the next state, channel creation, transitions, advancement.

Why this module exists: a v1 client never edits balances freely; it builds the state that
follows the last signed one (SDK ``nextState``), binds it to a new home channel when one is
opened (``applyChannelCreation``), applies exactly one transition (``apply*Transition``,
nitrolite-v1.md §6.2-§6.4, §7.4, §7.5), and the node accepts it only if recomputing that
state from the previous one gives the same result (``StateAdvancerV1.validateAdvancement``).
Reproducing those rules is what lets our states pass the node's check; the vector group
``state_lifecycle`` pins them down, including the packing and signatures of the result
(done by :mod:`.state`).

Everything here is pure: states are wire-form dicts (see :mod:`.state`), ids come from
:mod:`.ids` and amounts are rendered as the SDK renders them (:mod:`.decimals`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any, Final

from ..errors import InvalidStateError, SettlementValueError
from ..keys import PrivateKey
from .decimals import parse_decimal, sdk_decimal_string
from .ids import escrow_channel_id, home_channel_id, state_id, transaction_id
from .state import (
    decimals_from_map,
    eip191_digest,
    pack_challenge_state,
    pack_state,
    sign_challenge,
    sign_state,
    state_signing_data,
    transition_metadata_hash,
)
from .transitions import transition_to_intent

__all__ = [
    "VECTORS",
    "apply_channel_creation",
    "apply_transition",
    "next_state",
    "validate_advancement",
]


_ZERO32_HEX: Final = "0x" + "00" * 32
_EMPTY_LEDGER: Final[Mapping[str, str]] = {
    "token_address": "0x0",
    "blockchain_id": "0",
    "user_balance": "0",
    "user_net_flow": "0",
    "node_balance": "0",
    "node_net_flow": "0",
}
#: transitions the SDK's StateAdvancerV1 accepts from a user (31, 41 are node-issued only)
_ADVANCEABLE: Final = frozenset({1, 10, 11, 20, 21, 30, 40, 110, 120, 200})


def next_state(current: Mapping[str, Any]) -> dict[str, Any]:
    """The unsigned skeleton following ``current`` (SDK ``nextState``), void transition."""
    transition = current["transition"]
    if int(transition["type"]) == 200:  # finalize: a new epoch starts from scratch
        state: dict[str, Any] = {
            "transition": {"type": 0, "tx_id": "", "account_id": "", "amount": "0"},
            "asset": current["asset"],
            "user_wallet": current["user_wallet"],
            "epoch": str(int(current["epoch"]) + 1),
            "version": "1",
            "home_ledger": dict(_EMPTY_LEDGER),
        }
    else:
        state = {
            "transition": {"type": 0, "tx_id": "", "account_id": "", "amount": "0"},
            "asset": current["asset"],
            "user_wallet": current["user_wallet"],
            "epoch": str(current["epoch"]),
            "version": str(int(current["version"]) + 1),
            "home_ledger": dict(current["home_ledger"]),
        }
        if current.get("home_channel_id"):
            state["home_channel_id"] = current["home_channel_id"]
        escrow = current.get("escrow_ledger")
        signed = bool(current.get("user_sig"))
        if escrow and not (signed and int(transition["type"]) in (20, 21)):
            state["escrow_ledger"] = dict(escrow)
            if current.get("escrow_channel_id"):
                state["escrow_channel_id"] = current["escrow_channel_id"]
            if not signed:
                state["transition"] = dict(transition)
    state["id"] = state_id(state["user_wallet"], state["asset"], state["epoch"], state["version"])
    return state


def apply_channel_creation(
    state: dict[str, Any], definition: Mapping[str, Any], blockchain_id: str, token: str, node: str
) -> None:
    """Bind a fresh state to a new home channel (SDK ``applyChannelCreation``)."""
    state["home_ledger"] = {
        **state["home_ledger"],
        "blockchain_id": str(blockchain_id),
        "token_address": token,
    }
    state["home_channel_id"] = home_channel_id(
        node=node,
        user=state["user_wallet"],
        asset=state["asset"],
        nonce=definition["nonce"],
        challenge_duration=int(definition["challenge"]),
        approved_sig_validators=definition["approvedSigValidators"],
    )


def _add(ledger: dict[str, Any], field: str, delta: Decimal) -> None:
    ledger[field] = sdk_decimal_string(parse_decimal(ledger[field]) + delta)


def apply_transition(state: dict[str, Any], spec: Mapping[str, Any]) -> None:
    """Apply one transition (SDK ``apply*Transition``) to an unsigned next-state skeleton."""
    kind = int(spec["type"])
    home = state["home_ledger"]
    amount = parse_decimal(spec.get("amount", "0"))
    account: str
    tx: str
    if kind == 100:
        raise InvalidStateError("migrate transition not implemented yet")
    if kind == 1:
        state["transition"] = {
            "type": 1,
            "tx_id": _ZERO32_HEX,
            "account_id": _ZERO32_HEX,
            "amount": "0",
        }
        return
    if kind == 200:
        amount = parse_decimal(home["user_balance"])
    if kind in (10, 11, 200):
        account = state.get("home_channel_id") or ""
        if not account:
            raise InvalidStateError("this transition needs a home channel")
    elif kind in (120, 110):
        account = escrow_channel_id(state["home_channel_id"], state["version"])
        state["escrow_channel_id"] = account
    elif kind in (20, 21):
        account = state.get("escrow_channel_id") or ""
        if not account or not state.get("escrow_ledger"):
            raise InvalidStateError("escrow transition without an escrow ledger")
    elif kind in (30, 31, 40, 41):
        account = spec["account_id"]
    else:
        raise InvalidStateError(f"unsupported transition type {kind}")
    tx = spec["tx_id"] if kind == 31 else transaction_id(account, state["id"])
    escrow = state.get("escrow_ledger")
    if kind == 10:
        _add(home, "user_balance", amount)
        _add(home, "user_net_flow", amount)
    elif kind == 11:
        _add(home, "user_balance", -amount)
        _add(home, "user_net_flow", -amount)
    elif kind in (30, 40):
        _add(home, "user_balance", -amount)
        _add(home, "node_net_flow", -amount)
    elif kind in (31, 41):
        _add(home, "user_balance", amount)
        _add(home, "node_net_flow", amount)
    elif kind == 200:
        _add(home, "user_net_flow", -amount)
        home["user_balance"] = "0"
    elif kind == 120:
        _add(home, "node_balance", amount)
        _add(home, "node_net_flow", amount)
        state["escrow_ledger"] = {
            "token_address": spec["token_address"],
            "blockchain_id": str(spec["blockchain_id"]),
            "user_balance": sdk_decimal_string(amount),
            "user_net_flow": sdk_decimal_string(amount),
            "node_balance": "0",
            "node_net_flow": "0",
        }
    elif kind == 110:
        state["escrow_ledger"] = {
            "token_address": spec["token_address"],
            "blockchain_id": str(spec["blockchain_id"]),
            "user_balance": "0",
            "user_net_flow": "0",
            "node_balance": sdk_decimal_string(amount),
            "node_net_flow": sdk_decimal_string(amount),
        }
    elif kind == 20:
        assert escrow is not None
        _add(home, "user_balance", amount)
        home["node_balance"] = "0"
        _add(escrow, "user_balance", -amount)
        _add(escrow, "node_net_flow", -amount)
    elif kind == 21:
        assert escrow is not None
        _add(home, "user_balance", -amount)
        _add(home, "node_net_flow", -amount)
        _add(escrow, "user_net_flow", -amount)
        _add(escrow, "node_balance", -amount)
    state["transition"] = {
        "type": kind,
        "tx_id": tx,
        "account_id": account,
        "amount": sdk_decimal_string(amount),
    }


def validate_advancement(previous: Mapping[str, Any], proposed: Mapping[str, Any]) -> str:
    """``"ok"`` or ``"rejected: <reason>"`` (SDK ``StateAdvancerV1.validateAdvancement``).

    Recomputes the expected state from ``previous`` plus the proposed transition and compares;
    receiver transitions (31, 41) are node-issued only and always rejected.
    """
    kind = int(proposed["transition"]["type"])
    if kind not in _ADVANCEABLE:
        return f"rejected: unsupported type for new transition: {kind}"
    expected = next_state(previous)
    if not expected.get("home_channel_id") and proposed.get("home_channel_id"):
        # a (re-)opened channel: adopt the proposed channel id and its home token/chain
        expected["home_channel_id"] = proposed["home_channel_id"]
        for field in ("token_address", "blockchain_id"):
            expected["home_ledger"][field] = proposed["home_ledger"][field]
    for field in ("home_channel_id", "version", "asset", "epoch", "id"):
        if str(expected.get(field)) != str(proposed.get(field)):
            return f"rejected: {field} mismatch"
    if str(expected["user_wallet"]).lower() != str(proposed["user_wallet"]).lower():
        return "rejected: user wallet mismatch"
    spec = dict(proposed["transition"])
    if kind in (110, 120):  # the new escrow ledger's chain and token come from the proposal
        escrow = proposed.get("escrow_ledger") or {}
        spec["blockchain_id"] = escrow.get("blockchain_id")
        spec["token_address"] = escrow.get("token_address")
    try:
        apply_transition(expected, spec)
    except SettlementValueError as exc:
        return f"rejected: {exc}"
    for field in ("transition", "home_ledger", "escrow_ledger"):
        if expected.get(field) != proposed.get(field):
            return f"rejected: {field} mismatch"
    return "ok"


_NO_ADVANCER: Final = (
    "n/a (first state of channel; node-side validation happens in request_creation)"
)


def _vector_state_lifecycle(inputs: Mapping[str, Any], meta: Mapping[str, Any]) -> dict[str, Any]:
    keys = {k["address"].lower(): PrivateKey(k["private_key"]) for k in meta["keys"].values()}
    previous = inputs["previous_state"]
    spec = inputs["transition"]
    current = next_state(previous)
    creation = inputs.get("channel_creation")
    if creation:
        apply_channel_creation(
            current,
            creation["channel_definition"],
            creation["blockchain_id"],
            creation["token_address"],
            creation["node_address"],
        )
    try:
        apply_transition(current, spec)
    except InvalidStateError as exc:
        return {"error": str(exc)}
    lookup = decimals_from_map(inputs["asset_store"]["token_decimals"])
    signers = inputs["signers"]

    def sign_with(role: str, challenge: bool = False) -> str | None:
        address = signers.get(role)
        if address is None:
            return None
        key = keys[address.lower()]
        signer = sign_challenge if challenge else sign_state
        return _hex(signer(current, key, lookup))

    user_sig, node_sig = sign_with("user_sig"), sign_with("node_sig")
    if inputs["state_advancer"]["validate_advancement"]:
        verdict = validate_advancement(previous, current)
    else:
        verdict = _NO_ADVANCER
    packed = pack_state(current, lookup)
    challenge = pack_challenge_state(current, lookup)
    signed = dict(current)
    if user_sig is not None:
        signed["user_sig"] = user_sig
    if node_sig is not None:
        signed["node_sig"] = node_sig
    return {
        "state": signed,
        "state_id": current["id"],
        "tx_id": current["transition"]["tx_id"],
        "intent": int(transition_to_intent(current["transition"]["type"])),
        "metadata_transition_hash": _hex(transition_metadata_hash(current["transition"])),
        "signing_data": _hex(state_signing_data(current, lookup)),
        "packed_state": _hex(packed),
        "eip191_digest": _hex(eip191_digest(packed)),
        "challenge_packed_state": _hex(challenge),
        "challenge_eip191_digest": _hex(eip191_digest(challenge)),
        "user_sig": user_sig,
        "node_sig": node_sig,
        "user_challenge_sig": sign_with("user_challenge_sig", challenge=True),
        "sdk_state_advancer": verdict,
    }


def _hex(raw: bytes) -> str:
    return "0x" + raw.hex()


VECTORS: dict[str, Callable[[Mapping[str, Any], Mapping[str, Any]], dict[str, Any]]] = {
    "state_lifecycle": _vector_state_lifecycle,
}
"""Vector group -> ``(inputs, meta) -> outputs`` (see :mod:`.vectors`)."""
