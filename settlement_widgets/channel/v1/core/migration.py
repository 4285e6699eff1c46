"""Migration of a home channel to another chain: our off-chain protocol (upstream has none).

Why this module exists: the Nitrolite v1.4.1 ChannelHub can move a home channel from one
chain to another (``initiateMigration`` / ``finalizeMigration``, intents INITIATE_MIGRATION
and FINALIZE_MIGRATION, statuses MIGRATING_IN and MIGRATED_OUT), but no upstream core
produces those states: the TS and Go cores throw "migrate transition not implemented yet" and
Yellow's Nitronode refuses ``migrate``. This is the smallest protocol consistent with the
hub's rules (``ChannelEngine._calculate{Initiate,Finalize}MigrationEffects`` and the ledger
swap of ``ChannelHub.{initiate,finalize}Migration``), in two co-signed states, both on the
same channel id (a channel id does not depend on the chain):

1. ``migrate`` (transition 100, upstream's number and intent 8): the home ledger is still the
   old home (unchanged: the user's balance ``U`` > 0, the node's balance 0, so no escrow lock
   may be pending); the escrow ledger is the new home chain's, where the node locks ``U``
   (``node_balance = node_net_flow = U``, the user's side empty). Account id: the escrow
   channel id of this version (as ``mutual_lock``/``escrow_lock``); amount ``U``. On the new
   chain the hub creates the channel as MIGRATING_IN, taking ``U`` from the node's vault; on
   the old chain (optional) it is an operate-like checkpoint.
2. ``migrate_finalize`` (transition 101, **ours**; intent 9), the direct successor: the
   ledgers trade places. The home ledger is now the new chain's, holding ``U`` for the user
   (``user_balance = U``, ``node_net_flow = U``, ``user_net_flow = 0``, node balance 0);
   the escrow ledger is the old home emptied (both balances 0, ``node_net_flow =
   -user_net_flow``, so the old hub returns everything it holds to the node's vault and marks
   the channel MIGRATED_OUT). Account id: the same escrow channel id; amount ``U``.

After it the escrow ledger is dropped (as after ``escrow_deposit``/``escrow_withdraw``) and the
channel runs on the new chain with the ordinary transitions. Amounts are asset-level decimal
strings, so both ledgers carry the same ``U``; the hub compares the finalize allocation with
the initiate one without rescaling, so both chains' tokens must have the same decimals
(:func:`migrate_state` does not know decimals: the node checks that).
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any, Final

from ....errors import InvalidStateError
from .decimals import exact_neg, parse_decimal, sdk_decimal_string
from .ids import escrow_channel_id, transaction_id
from .lifecycle import next_state
from .transitions import TransitionType

__all__ = ["MIGRATE", "MIGRATE_FINALIZE", "finalize_migration_state", "migrate_state"]

MIGRATE: Final = int(TransitionType.MIGRATE)
MIGRATE_FINALIZE: Final = int(TransitionType.MIGRATE_FINALIZE)


def _zero(value: object) -> bool:
    return parse_decimal(str(value)) == 0


def migrate_state(
    current: Mapping[str, Any], *, blockchain_id: int | str, token: str
) -> dict[str, Any]:
    """The unsigned ``migrate`` state following the signed ``current``: the home channel is
    to move to ``blockchain_id`` (its ``token`` there). Refused (``InvalidStateError``) when
    there is nothing to move, when an escrow is pending (the node's balance or an escrow
    ledger in the home state) or when the target is the home chain itself."""
    # the node's signature is what makes ``current`` a state of its chain; the user's may be
    # missing: a node-issued credit (a receive, a release) stays node-signed only until the
    # user's next state acknowledges it, and the migrate state is that next state, as any
    # other transition would be (requiring both refused every migration after a receive)
    if not current.get("node_sig"):
        raise InvalidStateError("migrate needs the last state signed by the node")
    state = next_state(current)
    home = state["home_ledger"]
    channel = state.get("home_channel_id") or ""
    if not channel or str(home.get("blockchain_id", "0")) in ("", "0"):
        raise InvalidStateError("missing home channel ID")
    target = str(int(blockchain_id))
    if target == "0":
        raise InvalidStateError("invalid blockchain ID")
    if target == str(home["blockchain_id"]):
        raise InvalidStateError("the channel's home is already on that chain")
    if not token or token == "0x0":
        raise InvalidStateError("invalid token address")
    if state.get("escrow_ledger") or not _zero(home["node_balance"]):
        raise InvalidStateError("an escrow operation is pending: finish it before migrating")
    amount: Decimal = parse_decimal(home["user_balance"])
    if amount <= 0:
        raise InvalidStateError("nothing to migrate: the user's balance is zero")
    account = escrow_channel_id(channel, state["version"])
    state["escrow_channel_id"] = account
    text = sdk_decimal_string(amount)
    state["escrow_ledger"] = {
        "token_address": token,
        "blockchain_id": target,
        "user_balance": "0",
        "user_net_flow": "0",
        "node_balance": text,
        "node_net_flow": text,
    }
    state["transition"] = {
        "type": MIGRATE,
        "tx_id": transaction_id(account, state["id"]),
        "account_id": account,
        "amount": text,
    }
    return state


def finalize_migration_state(current: Mapping[str, Any]) -> dict[str, Any]:
    """The unsigned ``migrate_finalize`` state directly following the signed ``migrate``
    state ``current``: the ledgers trade places (see the module docstring)."""
    if int(current["transition"]["type"]) != MIGRATE:
        raise InvalidStateError("migrate_finalize must directly follow a migrate state")
    if not current.get("user_sig") or not current.get("node_sig"):
        raise InvalidStateError("the migrate state is not co-signed")
    state = next_state(current)
    old_home = state["home_ledger"]
    new_home = state.get("escrow_ledger")
    account = state.get("escrow_channel_id") or ""
    if not new_home or not account:
        raise InvalidStateError("the migrate state has no escrow ledger")
    amount = parse_decimal(current["transition"]["amount"])
    text = sdk_decimal_string(amount)
    state["home_ledger"] = {
        "token_address": new_home["token_address"],
        "blockchain_id": str(new_home["blockchain_id"]),
        "user_balance": text,
        "user_net_flow": "0",
        "node_balance": "0",
        "node_net_flow": text,
    }
    state["escrow_ledger"] = {
        "token_address": old_home["token_address"],
        "blockchain_id": str(old_home["blockchain_id"]),
        "user_balance": "0",
        "user_net_flow": old_home["user_net_flow"],
        "node_balance": "0",
        "node_net_flow": sdk_decimal_string(exact_neg(parse_decimal(old_home["user_net_flow"]))),
    }
    state["transition"] = {
        "type": MIGRATE_FINALIZE,
        "tx_id": transaction_id(account, state["id"]),
        "account_id": account,
        "amount": text,
    }
    return state
