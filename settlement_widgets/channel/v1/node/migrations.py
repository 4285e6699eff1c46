"""The Nitronode's side of moving a home channel to another chain it serves.

Our protocol, upstream has none: Nitrolite v1.4.1's ChannelHub has ``initiateMigration`` /
``finalizeMigration``, but its cores throw on ``migrate`` and Yellow's Nitronode refuses it
("transition is not supported yet"). The states are :mod:`..core.migration`'s (``migrate``,
then our ``migrate_finalize``); this module is what the node checks before it co-signs them
and what it then does on chain. The node never signs unbacked funds:

1. ``migrate`` (intent INITIATE_MIGRATION) is a spend of the user's whole balance ``U`` (the
   backing rule: nothing deposited and unconfirmed may be in it), to a chain and token the
   node serves and watches, with the same decimals as the home token (the hub compares the
   two allocations unscaled), whose vault holds ``U`` (the hub takes the node's lock from
   there). No escrow may be pending (the core refuses it: the node's home balance must be 0).
   Recorded as a migration (``migrating``) with the escrow records.
2. The user sends ``initiateMigration`` on the new chain: the channel is MIGRATING_IN there,
   with ``U`` from the node's vault.
3. ``migrate_finalize`` (intent FINALIZE_MIGRATION), the direct successor, is co-signed only
   once the new chain shows the channel MIGRATING_IN at the migrate state's version, as of
   its confirmation delay: only then does the node's lock back what the state gives the user.
   The node's ledger then moves the channel to the new chain (``migrated``).
4. After the commit the node sends ``finalizeMigration`` on the old chain: the funds the old
   hub holds for the channel go back to the node's vault and the channel is MIGRATED_OUT
   there. Written ahead with the escrow steps (:meth:`.escrows.EscrowDeposits.settle_escrow`),
   resumed by a restarted node, skipped when the old chain shows it done. (The user sends
   ``finalizeMigration`` on the new chain, which makes the channel OPERATING there; the node
   takes the channel's next state only then, as for any channel not operating on chain.)

Not done here (reported): the node's own recovery of a lock the user abandons (a channel left
MIGRATING_IN on the new chain because the user never asks for ``migrate_finalize``: the node
would challenge there with the migrate state and close once the challenge expires, which pays
its allocation to the node's address); a finalization refused because the user disputed the
old home first leaves the same lock. Both chains' tokens must have equal decimals (checked).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from ....errors import InvalidStateError
from ..core.decimals import parse_decimal
from ..core.migration import finalize_migration_state, migrate_state
from .params import T, _fail

if TYPE_CHECKING:
    from ..chain.hub import HubTx

__all__ = ["MIGRATION_NOT_INITIATED", "Migrations"]

#: the refusal of a migrate_finalize before the new chain shows the node's lock
MIGRATION_NOT_INITIATED: Final = "migration is not initiated on its chain yet"
_MIGRATING_IN: Final = 4
_MIGRATED_OUT: Final = 5
#: the wire fields a migration state must have exactly as the node recomputes them
_LEDGER_FIELDS: Final = ("user_balance", "user_net_flow", "node_balance", "node_net_flow")


def _same_ledger(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> bool:
    if not a or not b:
        return not a and not b
    if str(a["token_address"]).lower() != str(b["token_address"]).lower():
        return False
    if int(a["blockchain_id"]) != int(b["blockchain_id"]):
        return False
    return all(parse_decimal(a[f]) == parse_decimal(b[f]) for f in _LEDGER_FIELDS)


def _mismatch(expected: Mapping[str, Any], proposed: Mapping[str, Any]) -> str | None:
    """The first field of ``proposed`` that differs from the node's own computation."""
    for key in ("version", "epoch", "id", "asset", "home_channel_id", "escrow_channel_id"):
        if str(expected.get(key, "")).lower() != str(proposed.get(key, "")).lower():
            return f"{key} mismatch"
    want, got = expected["transition"], proposed["transition"]
    if int(want["type"]) != int(got["type"]) or want["tx_id"] != got.get("tx_id"):
        return "transition mismatch"
    if str(want["account_id"]).lower() != str(got.get("account_id", "")).lower():
        return "transition account mismatch"
    if parse_decimal(want["amount"]) != parse_decimal(got["amount"]):
        return "transition amount mismatch"
    if not _same_ledger(expected["home_ledger"], proposed["home_ledger"]):
        return "home ledger mismatch"
    if not _same_ledger(expected.get("escrow_ledger"), proposed.get("escrow_ledger")):
        return "escrow ledger mismatch"
    return None


class Migrations:
    """Mixin of the node's state handlers (with :class:`.escrows.EscrowDeposits`): the checks
    of the two migration states, their records and the node's on-chain step."""

    # provided by the handler classes this is mixed into
    config: Any
    ledger: Any
    escrow_work: bool
    _escrow_chain: Any
    _escrow_view: Any
    _check_vault: Any

    def check_migration_advancement(
        self, previous: Mapping[str, Any], proposed: Mapping[str, Any]
    ) -> None:
        """``proposed`` is exactly the migration state the node computes from ``previous``
        (:mod:`..core.migration`); the SDK's advancer has no rules for these transitions."""
        kind = int(proposed["transition"]["type"])
        try:
            if kind == T.MIGRATE:
                escrow = proposed.get("escrow_ledger") or {}
                expected = migrate_state(
                    previous,
                    blockchain_id=int(escrow.get("blockchain_id") or 0),
                    token=str(escrow.get("token_address") or ""),
                )
            else:
                expected = finalize_migration_state(previous)
        except InvalidStateError as exc:
            raise _fail(f"invalid state transition: {exc}") from None
        wrong = _mismatch(expected, proposed)
        if wrong is not None:
            raise _fail(f"invalid state transition: {wrong}")

    async def check_migrate(self, state: Mapping[str, Any]) -> None:
        """The target chain and token are served and watched, its token has the home token's
        decimals, and the node's vault there holds the user's balance."""
        chain_id, _token, decimals = self._escrow_chain(state)
        asset = self.config.asset(state["asset"])
        home = asset.token_on(int(state["home_ledger"]["blockchain_id"]))
        if home is None or home.decimals != decimals:
            raise _fail(
                f"cannot migrate {state['asset']} to blockchain {chain_id}: its token has "
                f"{decimals} decimals, the home token {home.decimals if home else '?'}"
            )
        await self._check_vault(state, chain_id)

    async def check_migrate_finalize(self, state: Mapping[str, Any]) -> None:
        """The new home chain shows the channel MIGRATING_IN at the migrate state's version
        (the node's lock of the user's balance there), as of its confirmation delay."""
        chain_id = int(state["home_ledger"]["blockchain_id"])
        view = self._escrow_view(chain_id)
        if view is None:
            raise _fail(f"the node does not watch blockchain {chain_id}")
        chain = self.config.chain(chain_id)
        delay = int(chain.confirmation_delay_secs) if chain is not None else 0
        record = await view.confirmed_channel(str(state["home_channel_id"]), delay)
        if record.status_code != _MIGRATING_IN or record.version != int(state["version"]) - 1:
            raise _fail(MIGRATION_NOT_INITIATED)

    def record_migration(self, state: Mapping[str, Any], channel: dict[str, Any]) -> None:
        """The migration's record once its state is co-signed (same commit as the state);
        on ``migrate_finalize`` the channel moves to the new chain in the node's ledger, and
        the node's on-chain step is due (the caller sets ``escrow_work``)."""
        escrow_id = str(state["escrow_channel_id"])
        if int(state["transition"]["type"]) == T.MIGRATE:
            escrow = state["escrow_ledger"]
            self.ledger.put_escrow(
                {
                    "escrow_id": escrow_id,
                    "kind": "migration",
                    "channel_id": state["home_channel_id"],
                    "user_wallet": state["user_wallet"],
                    "asset": state["asset"],
                    "blockchain_id": str(escrow["blockchain_id"]),
                    "token_address": escrow["token_address"],
                    "from_blockchain_id": str(state["home_ledger"]["blockchain_id"]),
                    "amount": state["transition"]["amount"],
                    "lock_version": state["version"],
                    "lock_state": dict(state),
                    "status": "migrating",
                }
            )
            return
        record = dict(self.ledger.escrows[escrow_id])
        record |= {"status": "migrated", "second_state": dict(state)}
        self.ledger.put_escrow(record)
        home = state["home_ledger"]
        channel["blockchain_id"] = str(home["blockchain_id"])
        channel["token_address"] = home["token_address"]

    async def migration_action(self, migration: Mapping[str, Any], action: str) -> HubTx | None:
        """``old_release``: ``finalizeMigration`` on the old home chain with the co-signed
        ``migrate_finalize`` (the old hub's funds go to the node's vault), skipped when that
        chain shows the channel MIGRATED_OUT already."""
        from ..core.calldata import contract_state_from_wire

        assert action == "old_release"
        chain_id = int(migration["from_blockchain_id"])
        view = self._escrow_view(chain_id)
        if view is None:
            raise _fail(f"the node does not watch blockchain {chain_id}")
        data = await view.hub.get_channel_data(migration["channel_id"])
        if data.status_code == _MIGRATED_OUT:
            return None
        state = contract_state_from_wire(migration["second_state"], self.config.token_decimals())
        tx: HubTx = await view.hub.finalize_migration(migration["channel_id"], state)
        return tx
