"""Nitrolite v1 state lifecycle: the next state, channel creation, transitions, advancement.

Why this module exists: a v1 client never edits balances freely; it builds the state that
follows the last signed one (SDK ``nextState``), binds it to a new home channel when one is
opened (``applyChannelCreation``), applies exactly one transition (``apply*Transition``,
Nitrolite v1.4.1 ``core/state.ts``), and the node accepts it only if recomputing that
state from the previous one gives the same result (``StateAdvancerV1.validateAdvancement``).
Reproducing those rules is what lets our states pass the node's check; the vector group
``state_lifecycle`` pins them down, including the packing and signatures of the result
(done by :mod:`.state`).

Everything here is pure: states are wire-form dicts (see :mod:`.state`), ids come from
:mod:`.ids` and amounts are rendered as the SDK renders them (:mod:`.decimals`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any, Final

from ....errors import InvalidStateError, SettlementValueError
from ....keys import PrivateKey
from .decimals import decimal_places, exact_add, exact_neg, parse_decimal, sdk_decimal_string
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
    "check_advancement",
    "next_state",
    "validate_advancement",
    "validate_ledger",
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
        # after a signed escrow_deposit / escrow_withdraw (SDK) or our migrate_finalize (101,
        # see .migration) the escrow ledger has done its work and is dropped
        if escrow and not (signed and int(transition["type"]) in (20, 21, 101)):
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
    """``ledger[field] += delta`` exactly (never a context-limited ``Decimal`` addition)."""
    ledger[field] = sdk_decimal_string(exact_add(ledger[field], delta))


def _is_zero_address(token: object) -> bool:
    """The SDK's ``!tokenAddress || tokenAddress === '0x0'``."""
    return not token or token == "0x0"


def _is_zero_chain(chain: object) -> bool:
    """The SDK's ``blockchainId === 0n`` (absent counts as zero)."""
    return chain is None or str(chain) in ("", "0")


def apply_transition(state: dict[str, Any], spec: Mapping[str, Any]) -> None:
    """Apply one transition (SDK ``apply*Transition``) to an unsigned next-state skeleton.

    The preconditions and their messages are the SDK's (``core/state.ts``): e.g. a deposit
    without a home channel raises ``missing home channel ID``. Amounts are added exactly.
    """
    kind = int(spec["type"])
    home = state["home_ledger"]
    amount = parse_decimal(spec.get("amount", "0"))
    account: str
    tx: str
    if kind == 100:
        raise InvalidStateError("migrate transition not implemented yet")
    if kind == 1:
        current = int(state["transition"]["type"])
        if current != 0:
            raise InvalidStateError(f"state already has a transition: {current}")
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
            raise InvalidStateError("missing home channel ID")
    elif kind in (120, 110):
        if not state.get("home_channel_id"):
            raise InvalidStateError("missing home channel ID")
        if _is_zero_chain(spec.get("blockchain_id")):
            raise InvalidStateError("invalid blockchain ID")
        if _is_zero_address(spec.get("token_address")):
            raise InvalidStateError("invalid token address")
        account = escrow_channel_id(state["home_channel_id"], state["version"])
        state["escrow_channel_id"] = account
    elif kind in (20, 21):
        account = state.get("escrow_channel_id") or ""
        if not account:
            raise InvalidStateError("internal error: escrow channel ID is nil")
        if not state.get("escrow_ledger"):
            raise InvalidStateError("escrow ledger is nil")
    elif kind in (30, 31, 40, 41):
        account = spec.get("account_id") or ""
        if kind in (31, 41) and not account:
            name = "transfer receive" if kind == 31 else "release"
            raise InvalidStateError(f"missing account ID for {name} transition")
    else:
        raise InvalidStateError(f"unsupported type for new transition: {kind}")
    tx = spec["tx_id"] if kind == 31 else transaction_id(account, state["id"])
    escrow = state.get("escrow_ledger")
    negative = exact_neg(amount)
    if kind == 10:
        _add(home, "user_balance", amount)
        _add(home, "user_net_flow", amount)
    elif kind == 11:
        _add(home, "user_balance", negative)
        _add(home, "user_net_flow", negative)
    elif kind in (30, 40):
        _add(home, "user_balance", negative)
        _add(home, "node_net_flow", negative)
    elif kind in (31, 41):
        _add(home, "user_balance", amount)
        _add(home, "node_net_flow", amount)
    elif kind == 200:
        _add(home, "user_net_flow", negative)
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
        _add(escrow, "user_balance", negative)
        _add(escrow, "node_net_flow", negative)
    elif kind == 21:
        assert escrow is not None
        _add(home, "user_balance", negative)
        _add(home, "node_net_flow", negative)
        _add(escrow, "user_net_flow", negative)
        _add(escrow, "node_balance", negative)
    state["transition"] = {
        "type": kind,
        "tx_id": tx,
        "account_id": account,
        "amount": sdk_decimal_string(amount),
    }


def _text(value: object) -> str:
    """How a template literal renders a value: ``undefined`` for a missing one."""
    return "undefined" if value is None else str(value)


def _amount(value: object) -> Decimal:
    return parse_decimal(value if isinstance(value, str | int | Decimal) else str(value))


def _transition_mismatch(expected: Mapping[str, Any], proposed: Mapping[str, Any]) -> str | None:
    """The SDK's ``transitionsEqual``: the first differing field, or None."""
    if int(expected["type"]) != int(proposed["type"]):
        return f"type mismatch: expected={expected['type']}, proposed={proposed['type']}"
    if expected.get("tx_id") != proposed.get("tx_id"):
        return f"tx ID mismatch: expected={expected.get('tx_id')}, proposed={proposed.get('tx_id')}"
    expected_account = expected.get("account_id") or None
    proposed_account = proposed.get("account_id") or None
    if expected_account != proposed_account:
        return (
            f"account ID mismatch: expected={_text(expected_account)}, "
            f"proposed={_text(proposed_account)}"
        )
    if _amount(expected["amount"]) != _amount(proposed["amount"]):
        return (
            f"amount mismatch: expected={sdk_decimal_string(expected['amount'])}, "
            f"proposed={sdk_decimal_string(proposed['amount'])}"
        )
    return None


_LEDGER_AMOUNTS: Final = (
    ("user_balance", "user balance"),
    ("user_net_flow", "user net flow"),
    ("node_balance", "node balance"),
    ("node_net_flow", "node net flow"),
)


def _ledger_mismatch(expected: Mapping[str, Any], proposed: Mapping[str, Any]) -> str | None:
    """The SDK's ``ledgerEqual``: the first differing field, or None (amounts by value)."""
    if str(expected["token_address"]).lower() != str(proposed["token_address"]).lower():
        return (
            f"token address mismatch: expected={expected['token_address']}, "
            f"proposed={proposed['token_address']}"
        )
    if int(expected["blockchain_id"]) != int(proposed["blockchain_id"]):
        return (
            f"blockchain ID mismatch: expected={int(expected['blockchain_id'])}, "
            f"proposed={int(proposed['blockchain_id'])}"
        )
    for field, label in _LEDGER_AMOUNTS:
        if _amount(expected[field]) != _amount(proposed[field]):
            return (
                f"{label} mismatch: expected={sdk_decimal_string(expected[field])}, "
                f"proposed={sdk_decimal_string(proposed[field])}"
            )
    return None


def validate_ledger(ledger: Mapping[str, Any]) -> None:
    """The SDK's ``validateLedger``: a real token and chain, no negative balance, and
    balances that add up to the net flows. Raises :class:`InvalidStateError`."""
    if _is_zero_address(ledger.get("token_address")):
        raise InvalidStateError("invalid token address")
    if _is_zero_chain(ledger.get("blockchain_id")):
        raise InvalidStateError("invalid blockchain ID")
    if _amount(ledger["user_balance"]) < 0:
        raise InvalidStateError("user balance cannot be negative")
    if _amount(ledger["node_balance"]) < 0:
        raise InvalidStateError("node balance cannot be negative")
    balances = exact_add(ledger["user_balance"], ledger["node_balance"])
    flows = exact_add(ledger["user_net_flow"], ledger["node_net_flow"])
    if balances != flows:
        raise InvalidStateError(
            "ledger balances do not match net flows: "
            f"balances={sdk_decimal_string(balances)}, net_flows={sdk_decimal_string(flows)}"
        )


def _check_amount(kind: int, amount: Decimal) -> None:
    """The SDK's per-type sign rule on the proposed transition amount."""
    text = sdk_decimal_string(amount)
    if kind == 1:
        if not amount.is_zero():
            raise InvalidStateError(f"transition amount must be zero, got {text}")
    elif kind == 200:
        if amount < 0:
            raise InvalidStateError(f"transition amount must not be negative, got {text}")
    elif amount <= 0:
        raise InvalidStateError(f"transition amount must be positive, got {text}")


def _apply_proposed(
    expected: dict[str, Any],
    current: Mapping[str, Any],
    proposed: Mapping[str, Any],
    transition: Mapping[str, Any],
) -> None:
    """The SDK advancer's switch: type-specific preconditions, then the transition."""
    kind = int(transition["type"])
    last = current["transition"]
    spec: dict[str, Any] = {"type": kind, "amount": transition["amount"]}
    if kind == 0:
        raise InvalidStateError("cannot apply void transition as new transition")
    if kind == 1 and current.get("user_sig"):
        raise InvalidStateError("current state is already acknowledged")
    if kind in (30, 40):
        if not transition.get("account_id"):
            name = "transfer send" if kind == 30 else "commit"
            raise InvalidStateError(f"missing account ID for {name} transition")
        spec["account_id"] = transition["account_id"]
    elif kind in (110, 120):
        escrow = proposed.get("escrow_ledger")
        if not escrow:
            raise InvalidStateError("proposed state escrow ledger is nil")
        spec["blockchain_id"] = escrow.get("blockchain_id")
        spec["token_address"] = escrow.get("token_address")
    elif kind in (20, 21):
        opener, name, lock = (
            (120, "deposit", "mutual lock") if kind == 20 else (110, "withdraw", "escrow lock")
        )
        if int(last["type"]) != opener:
            raise InvalidStateError(f"escrow {name} transition must follow a {lock} transition")
        if _amount(last["amount"]) != _amount(transition["amount"]):
            raise InvalidStateError(f"escrow {name} amount must be the same as {lock} amount")
    elif kind not in (1, 10, 11, 100, 200):
        raise InvalidStateError(f"unsupported type for new transition: {kind}")
    apply_transition(expected, spec)


def check_advancement(
    current: Mapping[str, Any], proposed: Mapping[str, Any], *, asset_decimals: int | None = None
) -> None:
    """Raise :class:`InvalidStateError` with the SDK's message unless ``proposed`` is a valid
    advancement of ``current`` (Nitrolite v1.4.1 ``StateAdvancerV1.validateAdvancement``).

    Same checks in the same order as the SDK, so the first problem reported is the one the
    SDK (and the node, which runs the Go twin of it) would report: identity fields, the
    amount's precision (when ``asset_decimals`` is given) and sign, the type-specific
    preconditions, the recomputed transition and ledgers, then ``validateLedger`` on the
    proposal, which is where a transfer of more than the balance is refused
    (``user balance cannot be negative``) before anything is packed or signed.
    """
    expected = next_state(current)
    if not proposed.get("home_channel_id"):
        raise InvalidStateError("home channel ID cannot be nil")
    if not expected.get("home_channel_id"):
        expected["home_channel_id"] = proposed["home_channel_id"]
        for field in ("blockchain_id", "token_address"):
            expected["home_ledger"][field] = proposed["home_ledger"][field]
    for field, label in (("home_channel_id", "home channel ID"), ("version", "version")):
        if str(proposed.get(field)) != str(expected.get(field)):
            raise InvalidStateError(
                f"{label} mismatch: expected={expected.get(field)}, proposed={proposed.get(field)}"
            )
    if str(proposed["user_wallet"]).lower() != str(expected["user_wallet"]).lower():
        raise InvalidStateError(
            f"user wallet mismatch: expected={expected['user_wallet']}, "
            f"proposed={proposed['user_wallet']}"
        )
    for field, label in (("asset", "asset"), ("epoch", "epoch"), ("id", "state ID")):
        if str(proposed.get(field)) != str(expected.get(field)):
            raise InvalidStateError(
                f"{label} mismatch: expected={expected.get(field)}, proposed={proposed.get(field)}"
            )
    transition = proposed["transition"]
    amount = _amount(transition["amount"])
    if asset_decimals is not None and decimal_places(amount) > asset_decimals:
        raise InvalidStateError(
            f"amount exceeds maximum decimal precision: max {asset_decimals} decimals "
            f"allowed, got {decimal_places(amount)}"
        )
    kind = int(transition["type"])
    _check_amount(kind, amount)
    _apply_proposed(expected, current, proposed, transition)
    mismatch = _transition_mismatch(expected["transition"], transition)
    if mismatch:
        raise InvalidStateError(f"new transition does not match expected: {mismatch}")
    mismatch = _ledger_mismatch(expected["home_ledger"], proposed["home_ledger"])
    if mismatch:
        raise InvalidStateError(f"home ledger mismatch: {mismatch}")
    validate_ledger(proposed["home_ledger"])
    _check_escrow(expected, proposed)


def _check_escrow(expected: Mapping[str, Any], proposed: Mapping[str, Any]) -> None:
    """The SDK advancer's escrow tail: id and ledger presence, equality, validity."""
    expected_id, proposed_id = expected.get("escrow_channel_id"), proposed.get("escrow_channel_id")
    if bool(expected_id) != bool(proposed_id):
        raise InvalidStateError("escrow channel ID presence mismatch")
    if expected_id and expected_id != proposed_id:
        raise InvalidStateError(
            f"escrow channel ID mismatch: expected={expected_id}, proposed={proposed_id}"
        )
    mine, theirs = expected.get("escrow_ledger"), proposed.get("escrow_ledger")
    if bool(mine) != bool(theirs):
        raise InvalidStateError("escrow ledger presence mismatch")
    if mine and theirs:
        mismatch = _ledger_mismatch(mine, theirs)
        if mismatch:
            raise InvalidStateError(
                f"escrow ledger mismatch: expected={json.dumps(dict(mine))}, "
                f"proposed={json.dumps(dict(theirs))}: {mismatch}"
            )
        validate_ledger(theirs)
        if int(theirs["blockchain_id"]) == int(proposed["home_ledger"]["blockchain_id"]):
            raise InvalidStateError(
                "escrow ledger blockchain ID cannot match home ledger blockchain ID"
            )


def validate_advancement(
    previous: Mapping[str, Any], proposed: Mapping[str, Any], *, asset_decimals: int | None = None
) -> str:
    """``"ok"`` or ``"rejected: <the SDK's message>"`` (``StateAdvancerV1.validateAdvancement``).

    The checks, their order and their messages are :func:`check_advancement`'s.
    """
    try:
        check_advancement(previous, proposed, asset_decimals=asset_decimals)
    except SettlementValueError as exc:
        return f"rejected: {exc}"
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
        asset_decimals = inputs["asset_store"].get("asset_decimals", {}).get(current["asset"])
        verdict = validate_advancement(
            previous,
            current,
            asset_decimals=None if asset_decimals is None else int(asset_decimals),
        )
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
