"""The Nitronode's cross-chain escrows: a deposit from another chain into the home channel
(``mutual_lock`` then ``escrow_deposit``) and a withdrawal to another chain (``escrow_lock``
then ``escrow_withdraw``).

Yellow's Nitronode v1.4.1 refuses these transitions ("transition is not supported yet"); the
upstream handler keeps its intended flow commented out (``submit_state.go``: an escrow
channel record on ``mutual_lock``/``escrow_lock``, the finalizing state after it). We
implement that flow on our ChannelHub, which has the reference hub's escrow rules.

Deposit:

1. ``mutual_lock`` (intent INITIATE_ESCROW_DEPOSIT): the user proposes to lock ``a`` on the
   escrow chain; the home ledger shows the node's matching lock. The node co-signs when the
   home channel operates on chain and it serves the asset's token on the escrow chain, and
   records the escrow (``locked``).
2. The user sends ``initiateEscrowDeposit`` on the escrow chain: the hub pulls ``a`` into an
   escrow record (INITIALIZED, unlocking to the node's vault after three hours).
3. ``escrow_deposit`` (intent FINALIZE_ESCROW_DEPOSIT) credits ``a`` to the user's home
   balance. The node co-signs it only once the escrow chain shows the record INITIALIZED
   with exactly ``a`` locked, as of its confirmation delay (never unbacked funds), and the
   escrow becomes ``credited``.
4. After the state is committed the node puts both states on the home hub
   (``initiateEscrowDeposit`` / ``finalizeEscrowDeposit`` there: the user's latest state is
   then what the home hub holds, so a challenge with it is accepted), then sends
   ``finalizeEscrowDeposit`` on the escrow chain (the deposit to its vault), and the escrow
   becomes ``settled`` (:meth:`EscrowDeposits.settle_escrow`). A record the
   user disputed (``challengeEscrowDeposit``) can still be finalized until its dispute
   expires; the node does it at once, so a user credited off chain cannot also take the
   deposit back. A restarted node settles what is still ``credited``.

A deposit nobody finalizes goes to the node's vault three hours after it was initiated (the
hub's purge), and from then on nobody can dispute it. The node's ledger agrees: the lock stays
``locked`` and uncredited until the user asks, and the ``escrow_deposit`` is then co-signed
against the record as it stood just before its unlock time (INITIALIZED then: the funds can
only have gone to the vault), so the user is credited with the node's home lock as if the
node had finalized it, and the release step finds the record finalized. A record the user
disputed in time was DISPUTED then, and its credit is refused (the user took it back).

Withdrawal:

1. ``escrow_lock`` (intent INITIATE_ESCROW_WITHDRAWAL): the escrow ledger shows the node's
   lock of ``a`` on the escrow chain. The node co-signs when ``a`` is backed at home (the
   backing rule counts it as a spend) and its vault on the escrow chain holds ``a``.
2. The user sends ``initiateEscrowWithdrawal`` on the escrow chain: the hub moves ``a`` from
   the node's vault into an escrow record (INITIALIZED).
3. ``escrow_withdraw`` (intent FINALIZE_ESCROW_WITHDRAWAL) debits ``a`` at home; the node
   co-signs it only once the escrow chain shows its lock, and the escrow becomes ``debited``.
4. The user sends ``finalizeEscrowWithdrawal`` there with that state and is paid; the node
   puts the lock and the debit on the home hub, as for a deposit.

An abandoned withdrawal lock (the user had ``escrow_lock`` co-signed, maybe initiated it on the
escrow chain, and never asks for ``escrow_withdraw``) would keep the node's vault there locked
for ever. The node takes it back as the v1.4.1 hub allows (``ChannelHub.sol``
``challengeEscrowWithdrawal`` / ``finalizeEscrowWithdrawal``, ``EscrowWithdrawalEngine.sol``
``validateChallenge``): either party may challenge an INITIALIZED record with its signature
over the initiating state ‖ "challenge"; the record is then DISPUTED for a day, and once the
dispute has expired (expiry < block time) ``finalizeEscrowWithdrawal`` with any state returns
the lock to the node's vault (the user was never debited at home). The node's duty
(:meth:`EscrowDeposits.reclaim_lock`), each step written ahead and skipped when the chain
shows it done:

- ``reclaim_deadline``: on its first look after the lock is co-signed, the node writes down
  the escrow chain's time plus ``NitronodeConfig.abandoned_lock_secs`` (3 h by default, the
  hub's own deadline for an escrow deposit nobody finalizes). Chain time, so the sandbox's
  time travel and a public chain's clock decide, not the node's wall clock.
- past it, status ``reclaiming`` (from then on ``escrow_withdraw`` is refused: co-signing it
  during the dispute could debit the user at home for a lock that then goes back to the
  vault), then on the escrow chain: ``initiateEscrowWithdrawal`` with the co-signed lock when
  the user never sent it (so the escrow id is spent for good: nobody can lock the vault with
  it later), ``challengeEscrowWithdrawal`` signed by the node, and after the day's dispute
  ``finalizeEscrowWithdrawal``: status ``reclaimed``.

The home channel: after a lock the node takes only its second state (the upstream advancer's
strict ordering). Once the lock is ``reclaimed`` the escrow chain shows it FINALIZED with
nothing paid, so that second state is refused for good (:data:`ESCROW_WITHDRAWAL_RECLAIMED`)
and the user's next state follows the lock without its escrow ledger (the lock never changed
the home ledger, and the home hub's engine takes an ordinary state after an
INITIATE_ESCROW_WITHDRAWAL: it has no previous-intent rule for it); while ``reclaiming`` every
state is refused, the dispute deciding nothing at home yet. Upstream has no such rule (its
node refuses escrows): this is ours, following what the hub allows.

How the node notices: it reads the chain on demand, with no events to wait for (an abandoned
lock sends nothing, and the node subscribes to nothing). It looks on start, after each escrow
state it co-signs, and every ``NitronodeConfig.abandoned_check_interval_secs`` (60 s) on its
own loop, in the one settlement task (:meth:`.server.NitronodeNode.check_abandoned` looks at
once and returns when what is due is done, for tests that move a chain's clock).

Not done here (reported): a transfer received while a lock is pending (or its reclaim's
dispute runs) still follows the lock with its escrow ledger. The read of a purged deposit as
it stood before its unlock time needs the chain's state of that block (a pruned public RPC
keeps about 128 blocks: the credit is then refused until asked of an archive node).
Migrations (:mod:`.migrations`) share these records and their write-ahead steps.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from ..core.decimals import to_units
from .chain_view import ChainViews, ConfirmedHubView
from .params import T, _fail

if TYPE_CHECKING:
    from ..chain.hub import HubTx
    from .config import NitronodeConfig
    from .ledger import NitronodeLedger

__all__ = [
    "ESCROW_NOT_LOCKED",
    "ESCROW_WITHDRAWAL_NOT_LOCKED",
    "ESCROW_WITHDRAWAL_RECLAIMED",
    "EscrowDeposits",
]

_log = logging.getLogger(__name__)

#: the refusal of an escrow_deposit whose funds the escrow chain does not hold (yet)
ESCROW_NOT_LOCKED: Final = "escrow deposit is not locked on its chain yet"
#: the refusal of an escrow_withdraw before the node's lock is on the escrow chain
ESCROW_WITHDRAWAL_NOT_LOCKED: Final = "escrow withdrawal is not locked on its chain yet"
#: the refusal of an escrow_withdraw (for good) once the node took its lock back
ESCROW_WITHDRAWAL_RECLAIMED: Final = (
    "escrow withdrawal was abandoned past its deadline and the node took its lock back"
)
_VOID: Final = 0
_INITIALIZED: Final = 1
_DISPUTED: Final = 2
_FINALIZED: Final = 3
#: the node's challenger index on the hub (``ParticipantIndex.NODE``)
_NODE: Final = 1
#: (kind, status) of a record whose lock the node may have to take back
_RECLAIMABLE: Final = frozenset(
    {
        ("withdrawal", "locked"),
        ("withdrawal", "reclaiming"),
        ("migration", "migrating"),
        ("migration", "reclaiming"),
    }
)


class EscrowDeposits:
    """Mixin of the node's state handlers: the escrow-deposit checks, records and their
    settlement on the escrow chain."""

    config: NitronodeConfig
    ledger: NitronodeLedger
    chain_view: Any
    #: set when a handler credited an escrow deposit: the server settles it once committed
    escrow_work: bool = False

    def _escrow_view(self, chain_id: int) -> ConfirmedHubView | None:
        """The node's view (and hub client) of ``chain_id``, if it watches that chain."""
        view = self.chain_view
        if isinstance(view, ChainViews):
            view = view.on(chain_id)
        elif self.config.chains and self.config.chains[0].blockchain_id != chain_id:
            view = None
        return view if isinstance(view, ConfirmedHubView) else None

    def _escrow_chain(self, state: Mapping[str, Any]) -> tuple[int, str, int]:
        """(chain id, token, token decimals) of the state's escrow ledger, checked against
        what the node serves."""
        escrow = state.get("escrow_ledger") or {}
        chain_id = int(escrow.get("blockchain_id") or 0)
        asset = self.config.asset(state["asset"])
        token = asset.token_on(chain_id) if asset is not None else None
        if (
            self.config.chain(chain_id) is None
            or token is None
            or token.address.lower() != str(escrow.get("token_address", "")).lower()
        ):
            raise _fail(
                f"asset {state['asset']} is not supported on blockchain {chain_id} with token "
                f"address {escrow.get('token_address')}"
            )
        if self._escrow_view(chain_id) is None:
            raise _fail(f"the node does not watch blockchain {chain_id}")
        return chain_id, token.address, token.decimals

    async def check_mutual_lock(self, state: Mapping[str, Any]) -> None:
        """A mutual lock names an escrow chain and token the node serves, and the node's
        vault on the home chain holds its side of the lock (the hub takes it from there
        when the node puts the lock on chain); the home channel operating on chain is
        checked for every submitted state."""
        self._escrow_chain(state)
        await self._check_vault(state, int(state["home_ledger"]["blockchain_id"]))

    async def check_escrow_deposit(self, state: Mapping[str, Any]) -> None:
        """The escrow chain holds the deposit (see :meth:`_check_escrow_held`)."""
        await self._check_escrow_held(state, deposit=True)

    async def _check_escrow_held(self, state: Mapping[str, Any], *, deposit: bool) -> None:
        """The escrow chain holds the escrow of ``state`` (its second state): the record is
        INITIALIZED for the home channel with exactly the amount locked, as of the chain's
        confirmation delay; the user's deposit is credited, or the user debited, only
        against it."""
        chain_id, _token, decimals = self._escrow_chain(state)
        view = self._escrow_view(chain_id)
        assert view is not None
        chain = self.config.chain(chain_id)
        delay = int(chain.confirmation_delay_secs) if chain is not None else 0
        read = view.escrow_deposit if deposit else view.escrow_withdrawal
        record = await read(str(state["escrow_channel_id"]), delay)
        if deposit and record is not None and record.status_code == _FINALIZED:
            record = await self._unlocked_deposit(view, record)
        amount = to_units(state["transition"]["amount"], decimals)
        if (
            record is None
            or record.status_code != _INITIALIZED
            or record.channel_id.lower() != str(state["home_channel_id"]).lower()
            or record.locked_amount != amount
        ):
            raise _fail(ESCROW_NOT_LOCKED if deposit else ESCROW_WITHDRAWAL_NOT_LOCKED)

    async def _unlocked_deposit(self, view: ConfirmedHubView, record: Any) -> Any:
        """A FINALIZED deposit record as it stood in the last block before its unlock time.

        The hub's rules (v1.4.1 ``EscrowDepositEngine.validateChallenge``: no challenge once
        ``block.timestamp >= unlockAt``; ``_purgeEscrowDeposits``: an INITIALIZED record past
        it goes to the node's vault) make a record still INITIALIZED then the node's for
        good: nobody can dispute it any more, so it ends in the node's vault (purged by any
        later hub call, or finalized by the node). A user who abandons the deposit is then
        credited when asking, as if the node had finalized it: the funds are in its vault.
        A record the user disputed in time was DISPUTED then (and went back to the user):
        never credited. One finalized before its unlock time (by the node, with a credit)
        reads FINALIZED there too."""
        block = await view.block_before(int(record.unlock_at)) if record.unlock_at else None
        if block is None:
            return record
        return await view.hub.get_escrow_deposit_data(record.escrow_id, block=block)

    async def _check_vault(self, state: Mapping[str, Any], chain_id: int) -> None:
        """The node's vault on ``chain_id`` holds the state's amount (the hub takes the node's
        side of an escrow from there)."""
        view = self._escrow_view(chain_id)
        asset = self.config.asset(state["asset"])
        token = asset.token_on(chain_id) if asset is not None else None
        if view is None or token is None:
            return
        amount = to_units(state["transition"]["amount"], token.decimals)
        if await view.hub.get_node_balance(token.address) < amount:
            amount_text = state["transition"]["amount"]
            raise _fail(f"the node cannot lock {amount_text} on blockchain {chain_id}")

    async def check_escrow_lock(self, state: Mapping[str, Any]) -> None:
        """An escrow lock (the start of a withdrawal to another chain) names a chain and
        token the node serves, and the node's vault there holds the amount (the hub takes
        it from there when the escrow is initiated). The amount being backed at home is the
        backing rule's (:data:`.backing._SPENDS`)."""
        chain_id, _token, _decimals = self._escrow_chain(state)
        await self._check_vault(state, chain_id)

    async def check_escrow_withdraw(self, state: Mapping[str, Any]) -> None:
        """The escrow chain holds the node's lock for this withdrawal (see
        :meth:`_check_escrow_held`), and the node has not started taking it back: checked
        again after the chain read, with no await before the state is stored, so the duty
        (:meth:`reclaim_lock`, which marks ``reclaiming`` before its challenge) and this
        debit never both proceed."""
        await self._check_escrow_held(state, deposit=False)
        record = self.ledger.escrows.get(str(state["escrow_channel_id"]))
        if record is not None and record["status"] != "locked":
            raise _fail(f"invalid state transition: {ESCROW_WITHDRAWAL_RECLAIMED}")

    def reclaimed_lock(self, previous: Mapping[str, Any]) -> Mapping[str, Any] | None:
        """The node's record of the withdrawal lock or migration ``previous`` opened, if the
        node has started taking its lock back (status ``reclaiming`` or ``reclaimed``), else
        ``None``."""
        if int(previous["transition"]["type"]) not in (T.ESCROW_LOCK, T.MIGRATE):
            return None
        record = self.ledger.escrows.get(str(previous.get("escrow_channel_id", "")))
        if record is None or record["status"] not in ("reclaiming", "reclaimed"):
            return None
        return record  # type: ignore[no-any-return]

    def record_escrow(self, state: Mapping[str, Any]) -> None:
        """The escrow's record after its state is co-signed (same commit as the state)."""
        kind = int(state["transition"]["type"])
        escrow_id = str(state["escrow_channel_id"])
        if kind in (T.MUTUAL_LOCK, T.ESCROW_LOCK):
            escrow = state["escrow_ledger"]
            self.ledger.put_escrow(
                {
                    "escrow_id": escrow_id,
                    "kind": "deposit" if kind == T.MUTUAL_LOCK else "withdrawal",
                    "channel_id": state["home_channel_id"],
                    "user_wallet": state["user_wallet"],
                    "asset": state["asset"],
                    "blockchain_id": str(escrow["blockchain_id"]),
                    "token_address": escrow["token_address"],
                    "amount": state["transition"]["amount"],
                    "lock_version": state["version"],
                    "lock_state": dict(state),
                    "status": "locked",
                }
            )
        elif kind == T.ESCROW_DEPOSIT:
            record = dict(self.ledger.escrows[escrow_id])
            record |= {"status": "credited", "second_state": dict(state)}
            self.ledger.put_escrow(record)
        elif kind == T.ESCROW_WITHDRAW:
            # the user takes the lock on its chain with this state (finalizeEscrowWithdrawal)
            record = dict(self.ledger.escrows[escrow_id])
            record |= {"status": "debited", "second_state": dict(state)}
            self.ledger.put_escrow(record)

    def escrows_to_settle(self) -> list[dict[str, Any]]:
        """Escrows with on-chain steps the node still owes (see :meth:`settle_escrow`)."""
        return [e for e in self.ledger.escrows.values() if _pending(e)]

    async def settle_escrow(self, escrow: Mapping[str, Any]) -> None:
        """The node's on-chain steps for ``escrow``, in order, each skipped when the chain
        shows it done (a restart after the transaction), each recorded as it lands:

        - ``home_lock``: the lock state on the home chain (``initiateEscrowDeposit`` /
          ``initiateEscrowWithdrawal``; only the node may send a deposit's there), so the
          home channel's last on-chain state is the lock;
        - ``home_credit`` / ``home_debit``: the second state there (``finalizeEscrow*``),
          so the user's latest co-signed state is what the home hub holds: a challenge with
          it is accepted (the hub refuses a finalizing intent whose lock it never saw);
        - ``escrow_release`` (deposits): ``finalizeEscrowDeposit`` on the escrow chain, the
          deposit to the node's vault there (status ``settled``).

        The record is read afresh before each step and after its transaction: the user's
        second state may be committed while a step is on its way (a lock's ``home_lock``
        mined while the ``escrow_deposit`` is credited), and writing back the copy taken
        before it would undo the credit's record, so its steps would never be taken (the
        reliability model found such a deposit left on the escrow chain). The caller
        commits."""
        escrow_id = str(escrow["escrow_id"])
        while pending := _pending(self.ledger.escrows[escrow_id]):
            action = pending[0]
            tx = await self._escrow_action(self.ledger.escrows[escrow_id], action)
            latest = dict(self.ledger.escrows[escrow_id])
            latest["done"] = [*latest.get("done", ()), action]
            if tx is not None:
                latest["txs"] = {**latest.get("txs", {}), action: tx.tx_hash}
            if action in ("escrow_release", "old_release"):
                latest["status"] = "settled"
            self.ledger.put_escrow(latest)

    async def _escrow_action(self, escrow: Mapping[str, Any], action: str) -> HubTx | None:
        from ..core.calldata import contract_state_from_wire

        if escrow["kind"] == "migration":
            return await self.migration_action(escrow, action)  # type: ignore[attr-defined,no-any-return]
        decimals = self.config.token_decimals()
        deposit = escrow["kind"] == "deposit"
        if action == "escrow_release":
            view = self._escrow_view(int(escrow["blockchain_id"]))
            if view is None:
                raise _fail(f"the node does not watch blockchain {escrow['blockchain_id']}")
            record = await view.hub.get_escrow_deposit_data(escrow["escrow_id"])
            if record.status_code == _FINALIZED:
                return None
            state = contract_state_from_wire(escrow["second_state"], decimals)
            return await view.hub.finalize_escrow_deposit(
                escrow["channel_id"], escrow["escrow_id"], state
            )
        channel = self.ledger.channels[escrow["channel_id"]]
        view = self._escrow_view(int(channel["blockchain_id"]))
        if view is None:
            raise _fail(f"the node does not watch blockchain {channel['blockchain_id']}")
        hub = view.hub
        state = escrow["lock_state"] if action == "home_lock" else escrow["second_state"]
        on_chain = await hub.get_channel_data(escrow["channel_id"])
        if int(on_chain.last_state.get("version", 0)) >= int(state["version"]):
            return None  # on chain already (this step, or a later state of the channel)
        contract = contract_state_from_wire(state, decimals)
        if action == "home_lock":
            definition = self._definition(escrow["channel_id"])
            initiate = hub.initiate_escrow_deposit if deposit else hub.initiate_escrow_withdrawal
            return await initiate(definition, contract)
        finalize = hub.finalize_escrow_deposit if deposit else hub.finalize_escrow_withdrawal
        return await finalize(escrow["channel_id"], escrow["escrow_id"], contract)

    # --- abandoned locks (withdrawals and migrations) ---------------------------------------

    def locks_to_reclaim(self) -> list[dict[str, Any]]:
        """Withdrawal locks and migrations whose lock the node may have to take back (see
        :meth:`reclaim_lock`): still waiting for their second state (the deadline is read
        against the chain there) or ``reclaiming``."""
        return [e for e in self.ledger.escrows.values() if (e["kind"], e["status"]) in _RECLAIMABLE]

    async def reclaim_lock(self, escrow: Mapping[str, Any]) -> bool:
        """One step of the node's duty for an abandoned lock (see the module docstring, and
        :mod:`.migrations` for a migration's), as of the lock's chain's time, read from the
        chain first and recorded as it lands; returns whether another step may be due now.
        The caller commits between two calls, so each record is written before the step it
        leads to (``reclaiming`` before the challenge). Nothing before the deadline; nothing
        once the user's second state is co-signed (the status moves on)."""
        from ....chain_clock import chain_time

        escrow_id = str(escrow["escrow_id"])
        view = self._escrow_view(int(escrow["blockchain_id"]))
        if view is None:
            raise _fail(f"the node does not watch blockchain {escrow['blockchain_id']}")
        hub = view.hub
        now = await chain_time(hub.signer.w3)
        latest = dict(self.ledger.escrows[escrow_id])
        if (latest["kind"], latest["status"]) not in _RECLAIMABLE:
            return False
        deadline = latest.get("reclaim_deadline")
        if deadline is None:
            latest["reclaim_deadline"] = now + int(self.config.abandoned_lock_secs)
            self.ledger.put_escrow(latest)
            return True
        if latest["status"] != "reclaiming":
            if now < int(deadline):
                return False
            # from here the second state is refused (no await between the check and this)
            latest["status"] = "reclaiming"
            self.ledger.put_escrow(latest)
            return True
        if latest["kind"] == "migration":
            step = await self.migration_reclaim_step(hub, latest, now)  # type: ignore[attr-defined]
        else:
            step = await self._withdrawal_reclaim_step(hub, latest, now)
        if step is None:
            return False  # a dispute runs: a later look goes on
        tx, action = step
        latest = dict(self.ledger.escrows[escrow_id])
        latest["done"] = [*latest.get("done", ()), action]
        if tx is not None:
            latest["txs"] = {**latest.get("txs", {}), action: tx.tx_hash}
        if action == "reclaimed":
            latest["status"] = "reclaimed"
        self.ledger.put_escrow(latest)
        return action != "reclaimed"

    async def _withdrawal_reclaim_step(
        self, hub: Any, escrow: Mapping[str, Any], now: int
    ) -> tuple[HubTx | None, str] | None:
        """The next step for a withdrawal lock, from its record on the escrow chain."""
        escrow_id = str(escrow["escrow_id"])
        record = await hub.get_escrow_withdrawal_data(escrow_id)
        if record.status_code == _VOID:
            return await self._reclaim_initiate(hub, escrow), "reclaim_initiate"
        if record.status_code == _INITIALIZED:
            return await self._reclaim_challenge(hub, escrow), "reclaim_challenge"
        if record.status_code == _DISPUTED:
            if record.challenge_expiry >= now:
                return None  # the day's dispute runs: the next look finalizes
            return await self._reclaim_finalize(hub, escrow), "reclaim_finalize"
        # FINALIZED: nothing was debited, so the lock went back to the vault
        return None, "reclaimed"

    def _contract_lock(self, escrow: Mapping[str, Any]) -> dict[str, Any]:
        from ..core.calldata import contract_state_from_wire

        return contract_state_from_wire(escrow["lock_state"], self.config.token_decimals())  # type: ignore[no-any-return]

    def _definition(self, channel_id: str) -> dict[str, Any]:
        from ..chain.hub_types import contract_definition

        channel = self.ledger.channels[channel_id]
        return contract_definition(  # type: ignore[no-any-return]
            user=channel["user_wallet"],
            node=self.config.node_key.address,
            asset=channel["asset"],
            nonce=int(channel["nonce"]),
            challenge_duration=int(channel["challenge_duration"]),
            approved_sig_validators=channel["approved_sig_validators"],
        )

    async def _reclaim_initiate(self, hub: Any, escrow: Mapping[str, Any]) -> HubTx:
        """The user never put the lock on the escrow chain: the node does (it is co-signed),
        so the escrow id is spent there and the dispute below settles it for good."""
        definition = self._definition(str(escrow["channel_id"]))
        return await hub.initiate_escrow_withdrawal(definition, self._contract_lock(escrow))  # type: ignore[no-any-return]

    async def _reclaim_challenge(self, hub: Any, escrow: Mapping[str, Any]) -> HubTx:
        """``challengeEscrowWithdrawal`` with the node's signature over the lock ‖ "challenge"."""
        from ..core.state import sign_challenge

        signature = sign_challenge(
            escrow["lock_state"], self.config.node_key, self.config.token_decimals()
        )
        return await hub.challenge_escrow_withdrawal(  # type: ignore[no-any-return]
            str(escrow["escrow_id"]), signature, _NODE
        )

    async def _reclaim_finalize(self, hub: Any, escrow: Mapping[str, Any]) -> HubTx:
        """``finalizeEscrowWithdrawal`` after the dispute expired: the hub ignores the state
        and returns the lock to the node's vault."""
        return await hub.finalize_escrow_withdrawal(  # type: ignore[no-any-return]
            str(escrow["channel_id"]), str(escrow["escrow_id"]), self._contract_lock(escrow)
        )


def _pending(escrow: Mapping[str, Any]) -> list[str]:
    """The node's on-chain steps for ``escrow`` that are due and not done, in order."""
    if escrow["kind"] == "migration":
        # the old home's release, once the node co-signed the state that completes it
        due = ["old_release"] if escrow["status"] == "migrated" else []
    elif escrow["status"] == "locked":
        due = ["home_lock"]
    elif escrow["status"] == "credited":
        due = ["home_lock", "home_credit", "escrow_release"]
    elif escrow["status"] == "debited":
        due = ["home_lock", "home_debit"]
    else:
        due = []
    done = set(escrow.get("done", ()))
    return [a for a in due if a not in done]
