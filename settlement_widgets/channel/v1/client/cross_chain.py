"""The v1 provider's operations across the node's chains: deposits from another chain and
withdrawals to one (escrows), the escrow deposit's challenge and reclaim, and the migration
of the home channel to another chain. Each is a pair of node-signed states and on-chain steps,
written ahead so :meth:`~.provider.ChannelProviderV1.recover` finishes one cut short.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ....errors import ChannelStateError, InvalidAmountError, SettlementValueError
from ...models import Tx
from ..chain.hub import HubTx
from ..core.state import pack_challenge_state
from .base import _MUTUAL_LOCK
from .onchain import OnChainOps

__all__ = ["CrossChainOps"]


class CrossChainOps(OnChainOps):
    """Escrow deposits and withdrawals on the node's other chains, and migration."""

    async def deposit_from(
        self, chain_id: int, amount: int, *, channel_id: str | None = None
    ) -> Tx:
        """Move ``amount`` from the wallet on another chain the node serves into the home
        channel (a Nitrolite v1 escrow deposit): a ``mutual_lock`` state both sign, then
        ``initiateEscrowDeposit`` on ``chain_id`` locks the tokens there, then an
        ``escrow_deposit`` state credits them to the home balance (the node co-signs it only
        once that chain holds them, and finalizes the escrow to its vault). Returns the
        ``chain_id`` transaction. Yellow's node v1.4.1 refuses the transition ("transition is
        not supported yet"); the sandbox's node implements it (``node/escrows.py``)."""
        await self.connect()
        if not amount:
            raise InvalidAmountError("a deposit must be positive")
        if chain_id == self._home_chain_id():
            raise SettlementValueError(
                f"chain {chain_id} holds the home channel: use deposit() for it"
            )
        there = self.network.on_chain(chain_id)
        display = self._display(amount)
        async with self._op_lock:
            cid = self._open_channel_id(channel_id)
            hub = self._hub_on(chain_id)
            token = await self._client.assets.token_address(self._asset, chain_id)
            await self._ensure_allowance(amount, hub=hub, token=token)
            async with self._node_may_refuse():
                lock = await self._client.mutual_lock(self._asset, chain_id, display)
            tx = await self._store_and_run(cid, "escrow_deposit", lock)
            await self._credit_escrow(lock)
        return self._tx(tx, "escrow_deposit", cid, network=there)

    async def withdraw_to(self, chain_id: int, amount: int, *, channel_id: str | None = None) -> Tx:
        """Take ``amount`` out of the home channel to the wallet on another chain the node
        serves (a Nitrolite v1 escrow withdrawal): an ``escrow_lock`` state both sign (the
        node's lock of ``amount`` on ``chain_id``), ``initiateEscrowWithdrawal`` there moves
        it from the node's vault into an escrow, an ``escrow_withdraw`` state debits it at
        home (the node co-signs it only once that chain holds the lock), and
        ``finalizeEscrowWithdrawal`` pays the wallet there. Returns that payout. Yellow's node
        v1.4.1 refuses the transitions; the sandbox's node implements them."""
        await self.connect()
        if not amount:
            raise InvalidAmountError("a withdrawal must be positive")
        if chain_id == self._home_chain_id():
            raise SettlementValueError(
                f"chain {chain_id} holds the home channel: use withdraw() for it"
            )
        there = self.network.on_chain(chain_id)
        display = self._display(amount)
        async with self._op_lock:
            cid = self._open_channel_id(channel_id)
            self._hub_on(chain_id)  # a wallet that can act there, before anything is signed
            async with self._node_may_refuse():
                lock = await self._client.escrow_lock(self._asset, chain_id, display)
            await self._store_and_run(cid, "escrow_withdrawal", lock)
            tx = await self._pay_out_escrow(cid, lock)
        return self._tx(tx, "escrow_payout", cid, network=there)

    async def _pay_out_escrow(self, channel_id: str, lock: Mapping[str, Any]) -> HubTx:
        """The withdrawal's second state on the co-signed ``lock`` (whose escrow the chain
        holds), then its payout on that chain."""
        async with self._node_may_refuse():
            state = await self._client.escrow_withdraw(lock, lock["transition"]["amount"])
        return await self._store_and_run(channel_id, "escrow_payout", state)

    def _pending_deposit_lock(self) -> dict[str, Any]:
        """The co-signed mutual lock the node has not credited (the latest state)."""
        latest = self.store.latest_state(self._asset)
        if (
            latest is None
            or not latest.get("node_sig")
            or int(latest["transition"]["type"]) != _MUTUAL_LOCK
        ):
            raise ChannelStateError(
                "no escrow deposit is waiting for its credit (the latest co-signed state is "
                "not a mutual lock)"
            )
        return latest

    async def challenge_escrow_deposit(self) -> Tx:
        """Dispute an escrow deposit the node has not credited: ``challengeEscrowDeposit`` on
        the escrow's chain with this wallet's challenge signature over the mutual lock. It
        must come before the escrow unlocks (three hours after it was initiated; unchallenged,
        the deposit then goes to the node's vault, as the hub's rules say); a day later
        :meth:`reclaim_escrow_deposit` takes it back."""
        await self.connect()
        async with self._op_lock:
            lock = self._pending_deposit_lock()
            chain_id = int(lock["escrow_ledger"]["blockchain_id"])
            hub = self._hub_on(chain_id)
            signature = await self.wallet.sign_message(
                pack_challenge_state(lock, self._client.assets.cached_token_decimals)
            )
            tx = await hub.challenge_escrow_deposit(
                str(lock["escrow_channel_id"]), "0x00" + signature.removeprefix("0x"), 0
            )
            cid = str(lock["home_channel_id"]).lower()
            self.store.put_tx(tx.tx_hash, step="escrow_challenge", channel_id=cid, status="mined")
            return self._tx(tx, "escrow_challenge", cid, network=self.network.on_chain(chain_id))

    async def reclaim_escrow_deposit(self) -> Tx:
        """Take back a disputed escrow deposit once its dispute has expired
        (``finalizeEscrowDeposit`` on its chain returns it to the wallet there)."""
        await self.connect()
        async with self._op_lock:
            lock = self._pending_deposit_lock()
            chain_id = int(lock["escrow_ledger"]["blockchain_id"])
            hub = self._hub_on(chain_id)
            escrow_id = str(lock["escrow_channel_id"])
            record = await hub.get_escrow_deposit_data(escrow_id)
            from ....chain_clock import chain_time

            now = await chain_time(hub.signer.w3)
            if record.status != "DISPUTED" or record.challenge_expiry >= now:
                raise ChannelStateError(
                    f"the escrow deposit is {record.status}"
                    + (
                        f", its dispute ends at {record.challenge_expiry} (chain time {now})"
                        if record.status == "DISPUTED"
                        else ": only a disputed deposit whose dispute has ended goes back"
                    )
                )
            cid = str(lock["home_channel_id"]).lower()
            tx = await hub.finalize_escrow_deposit(cid, escrow_id, self._contract_state(lock))
            self.store.put_tx(tx.tx_hash, step="escrow_reclaim", channel_id=cid, status="mined")
            return self._tx(tx, "escrow_reclaim", cid, network=self.network.on_chain(chain_id))

    async def _credit_escrow(self, lock: Mapping[str, Any]) -> dict[str, Any]:
        """The escrow deposit's second state, on the co-signed ``lock`` (whose escrow the
        chain holds): written ahead, co-signed, stored."""
        async with self._node_may_refuse():
            state = await self._client.escrow_deposit(lock, lock["transition"]["amount"])
        self.store.put_state(state)
        return state

    async def migrate(self, to_chain: int, *, channel_id: str | None = None) -> Tx:
        """Move the home channel to ``to_chain``, another chain the node serves (Nitrolite
        v1 migration; the off-chain steps are our protocol, ``core/migration.py``: upstream
        has none). A ``migrate`` state both sign (the node locks the whole balance on
        ``to_chain``), ``initiateMigration`` there opens the channel MIGRATING_IN with the
        node's lock, a ``migrate_finalize`` state both sign (the node co-signs once that chain
        shows the lock) and ``finalizeMigration`` there makes it the home channel, holding the
        balance for the wallet; the node returns what the old chain held to its vault there.
        Each state and step is written ahead, so :meth:`recover` finishes a migration cut
        short. Returns the ``finalizeMigration`` transaction; deposits, withdrawals, transfers
        and the close then run on ``to_chain``."""
        await self.connect()
        if to_chain == self._home_chain_id():
            raise SettlementValueError(f"the home channel is on chain {to_chain} already")
        there = self.network.on_chain(to_chain)
        async with self._op_lock:
            cid = self._open_channel_id(channel_id)
            self._hub_on(to_chain)  # a wallet that can act there, before anything is signed
            async with self._node_may_refuse():
                state = await self._client.migrate(self._asset, to_chain)
            await self._store_and_run(cid, "migrate_in", state)
            tx = await self._finish_migration(cid, state)
        return self._tx(tx, "migrate", cid, network=there)

    async def _finish_migration(self, channel_id: str, migrate: Mapping[str, Any]) -> HubTx:
        """The migration's second state on the co-signed ``migrate`` (whose lock the new
        chain holds), the store's channel moved there, then ``finalizeMigration`` there."""
        async with self._node_may_refuse():
            state = await self._client.finalize_migration(migrate)
        return await self._store_and_run_finalize(channel_id, state)

    async def _store_and_run_finalize(self, channel_id: str, state: Mapping[str, Any]) -> HubTx:
        home = state["home_ledger"]
        with self.store.transaction():
            self.store.put_state(state)
            self.store.move_channel(
                channel_id, chain_id=int(home["blockchain_id"]), token=home["token_address"]
            )
            self.store.put_onchain(channel_id, "migrate_finalize", state)
        return await self._run_onchain(channel_id, "migrate_finalize", state)
