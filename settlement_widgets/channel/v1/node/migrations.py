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

An abandoned migration (the user had ``migrate`` co-signed and never asks for
``migrate_finalize``) leaves the node's lock of ``U`` in a MIGRATING_IN channel on the new
chain for ever. The node takes it back as the hub allows (``ChannelHub.sol`` v1.4.1
``challengeChannel`` takes a MIGRATING_IN channel, with the last on-chain state itself, signed
by either party over it ‖ "challenge"; ``closeChannel`` after the expiry pays that state's
allocations: the new-chain ledger of the migrate state gives the user 0 and the node ``U``,
pushed to the NODE's address, not its vault). The duty is the escrows' one
(:meth:`.escrows.EscrowDeposits.reclaim_lock`, :meth:`Migrations.migration_reclaim_step`):
the deadline in the new chain's time (``abandoned_lock_secs`` after the node's first look),
then status ``reclaiming`` (``migrate_finalize`` refused from then on: co-signed during the
dispute, the user could finalize on the new chain while the node closes, or the old chain
release both), then on the new chain ``initiateMigration`` if the user never sent it (so the
channel id is spent there: a CLOSED channel takes no new migration, ``_initiateMigration``
needs VOID or MIGRATED_OUT), ``challengeChannel`` by the node, and after the channel's own
challenge duration ``closeChannel``: status ``reclaimed``. The node's vault there is then
``U`` lower and its address ``U`` higher (an operator's ``depositToNode`` moves it back; the
node does not, since a resent deposit could not be told from the chain).

Why it is safe: the user holds no newer state for the new chain (``migrate_finalize`` is
never co-signed once ``reclaiming``), so nobody answers the dispute; the user's funds never
left the old chain (``initiateMigration`` there is an operate-like checkpoint), so the user
loses nothing; the old chain is never released by the node (that needs ``migrate_finalize``).
The home channel then goes on on the old chain: the next state follows the migrate state
without its escrow ledger (its home ledger is the old home's, unchanged), and a new migration
to a chain where the channel is CLOSED is refused before signing (the hub would refuse it).
A finalization refused because the user disputed the old home first is not recovered here.
Both chains' tokens must have equal decimals (checked).
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

__all__ = ["MIGRATION_NOT_INITIATED", "MIGRATION_RECLAIMED", "Migrations"]

#: the refusal of a migrate_finalize before the new chain shows the node's lock
MIGRATION_NOT_INITIATED: Final = "migration is not initiated on its chain yet"
#: the refusal of a migrate_finalize (for good) once the node took its lock back
MIGRATION_RECLAIMED: Final = (
    "migration was abandoned past its deadline and the node took its lock back"
)
_VOID: Final = 0
_DISPUTED: Final = 2
_CLOSED: Final = 3
_MIGRATING_IN: Final = 4
_MIGRATED_OUT: Final = 5
#: the node's challenger index on the hub (``ParticipantIndex.NODE``)
_NODE: Final = 1
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
    _definition: Any
    _contract_lock: Any

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
        # the hub starts a migration in only where the channel is VOID or MIGRATED_OUT (a
        # migration abandoned there and closed by the node leaves it CLOSED)
        view = self._escrow_view(chain_id)
        there = await view.hub.get_channel_data(str(state["home_channel_id"]))
        if there.status_code not in (_VOID, _MIGRATED_OUT):
            raise _fail(
                f"cannot migrate to blockchain {chain_id}: the channel there is {there.status}"
            )

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
        # checked after the chain read, with no await before the state is stored: the duty
        # marks ``reclaiming`` before its challenge, so the two never both proceed
        migration = self.ledger.escrows.get(str(state["escrow_channel_id"]))
        if migration is not None and migration["status"] != "migrating":
            raise _fail(f"invalid state transition: {MIGRATION_RECLAIMED}")

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

    async def migration_reclaim_step(
        self, hub: Any, migration: Mapping[str, Any], now: int
    ) -> tuple[HubTx | None, str] | None:
        """The next step taking back an abandoned migration's lock, from the channel on the
        new chain (``hub``): ``initiateMigration`` when VOID, the node's ``challengeChannel``
        with the migrate state when MIGRATING_IN, ``closeChannel`` once the dispute expired
        (``None`` while it runs), ``reclaimed`` when CLOSED. Anything else there (OPERATING,
        MIGRATED_OUT) needs the co-signed ``migrate_finalize``, which the node never gave:
        raised, so the failure is logged and nothing is sent."""
        from ..core.state import sign_challenge

        channel_id = str(migration["channel_id"])
        data = await hub.get_channel_data(channel_id)
        state = self._contract_lock(migration)
        if data.status_code == _VOID:
            tx = await hub.initiate_migration(self._definition(channel_id), state)
            return tx, "reclaim_initiate"
        if data.status_code == _MIGRATING_IN:
            signature = sign_challenge(
                migration["lock_state"], self.config.node_key, self.config.token_decimals()
            )
            tx = await hub.challenge_channel(channel_id, state, signature, _NODE)
            return tx, "reclaim_challenge"
        if data.status_code == _DISPUTED:
            if data.challenge_expiry >= now:
                return None
            return await hub.close_channel(channel_id, state), "reclaim_close"
        if data.status_code == _CLOSED:
            return None, "reclaimed"
        raise _fail(
            f"migration {migration['escrow_id']} is {data.status} on blockchain "
            f"{migration['blockchain_id']} without the node's migrate_finalize"
        )
