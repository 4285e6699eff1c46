"""The v1 provider's channel operations: open, deposit, withdraw, close, challenge,
checkpoint, each a node-signed state run on the ``ChannelHub`` and counted by the node
(the escrows to and from the node's other chains and the migration are
:mod:`.cross_chain`'s; after a migration the home channel's steps run on the new chain's hub).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ....addresses import validate_address
from ....errors import (
    ChannelNotFoundError,
    ChannelStateError,
    ConfigurationError,
    InsufficientBalanceError,
    InvalidAmountError,
    InvalidStateError,
    SettlementValueError,
    TransactionFailedError,
)
from ...models import Channel, Tx
from ..chain.hub import ChannelHubClient, HubTx, contract_definition
from ..core.calldata import contract_state_from_wire
from ..core.state import pack_challenge_state
from .base import (
    _FINALIZE,
    ProviderV1Base,
)
from .nonces import free_channel_nonce

if TYPE_CHECKING:
    from ....networks import Network

__all__ = ["OnChainOps"]

#: on-chain steps sent on the escrow's chain, not the home chain
_ESCROW_STEPS = ("escrow_deposit", "escrow_withdrawal", "escrow_payout")
#: a migration's steps, both on the new home chain (the one its states' escrow ledger, then
#: home ledger, names): initiateMigration with the migrate state, finalizeMigration with the
#: migrate_finalize state (the node finalizes the old home itself: node/migrations.py)
_MIGRATION_STEPS = ("migrate_in", "migrate_finalize")


class OnChainOps(ProviderV1Base):
    """The channel's on-chain steps (see the module docstring)."""

    # --- channels -----------------------------------------------------------------------

    async def create_channel(self, counterparty: str, asset: str, initial_amount: int) -> Channel:
        """Open a home channel with the node (``counterparty``) for ``asset`` (the token
        address or the asset symbol), funded with ``initial_amount`` from the wallet (0: an
        empty channel, opened with an acknowledgement). Returns when ``createChannel`` is
        mined and the store shows the channel open."""
        await self.connect()
        counterparty = validate_address(counterparty, field="counterparty")
        if counterparty != self.node_address:
            raise ChannelStateError(
                f"a v1 home channel is always opened with the node {self.node_address}, "
                f"not {counterparty}"
            )
        self._check_asset(asset)
        amount = self._display(initial_amount, "initial_amount")
        async with self._op_lock:
            if initial_amount:
                await self._ensure_allowance(initial_amount)
            else:
                await self._check_empty_open()
            nonce = await self._channel_nonce()
            try:
                async with self._node_may_refuse():
                    state = await self._client.open_home_channel(
                        self.network.chain_id, self._asset, amount, nonce=nonce
                    )
            except InvalidStateError as exc:
                if "is open already" not in str(exc):
                    raise
                known = any(c["status"] != "final" for c in self.store.channels())
                raise ChannelStateError(
                    f"the node already has an open {self._asset} home channel for this "
                    "wallet; close it first"
                    + (
                        ""
                        if known
                        else " (a channel this store does not know: `await "
                        "provider.adopt_open_channels()` takes it over, then close it)"
                    )
                ) from exc
            channel_id = str(state["home_channel_id"])
            with self.store.transaction():
                self.store.put_state(state)
                self.store.put_onchain(channel_id, "create", state)
            await self._run_onchain(channel_id, "create", state)
        channel = self.get_channel(channel_id)
        self._emit("channel_created", channel)
        return channel

    async def adopt_open_channels(self) -> list[Channel]:
        """Take over the wallet's open home channel that the node reports but this store
        does not know (the store was lost, or another process opened it with the same key):
        its definition comes from the node's channel record, its states from the node's
        latest (co-signed) ones, so :meth:`close_channel` works on it. Without this,
        ``create_channel`` would be refused with nothing here to close. Returns the adopted
        channel (or none)."""
        await self.connect()
        async with self._op_lock:
            home = await self._client.get_home_channel(self.address, self._asset)
            if home is None or str(home.get("status")) not in ("open", "challenged"):
                return []
            cid = str(home["channel_id"]).lower()
            if self.store.channel(cid) is not None:
                return []
            signed = await self._client.get_latest_state(self.address, self._asset, True)
            latest = await self._client.get_latest_state(self.address, self._asset, False)
            with self.store.transaction():
                self.store.put_channel(
                    cid,
                    asset=self._asset,
                    definition={
                        "nonce": str(home["nonce"]),
                        "challenge": int(home["challenge_duration"]),
                        "approved_sig_validators": home["approved_sig_validators"],
                    },
                    token=str(home["token_address"]),
                    chain_id=int(home["blockchain_id"]),
                    status="active" if home.get("status") == "open" else "dispute",
                )
                for state in (signed, latest):
                    if state is not None:
                        self.store.put_state(state)
        channel = self.get_channel(cid)
        self._emit("channel_updated", channel)
        return [channel]

    async def can_open_empty(self) -> bool:
        """Whether a channel can open with 0 now. An empty channel opens with an
        acknowledgement, which v1 allows only over a state the wallet has not signed: a
        transfer or release received off chain, which the new channel then carries (or no
        state at all). After a closed channel with nothing received since, the wallet's latest
        state is its signed finalize and no v1 state can open an empty channel on top of it
        (the node and the SDK both refuse an acknowledgement of a signed state): open with a
        deposit then. True too while a channel is open (any open is refused then, for that
        reason: close it, or adopt it first). Asks the node; signs nothing."""
        await self.connect()
        return await self._empty_open_allowed()

    async def _empty_open_allowed(self) -> bool:
        latest = await self._client.get_latest_state(self.address, self._asset, False)
        if latest is None or not latest.get("user_sig"):
            return True
        # a channel still open: the create itself says so
        return bool(latest.get("home_channel_id")) and (
            int(latest["transition"]["type"]) != _FINALIZE
        )

    async def _check_empty_open(self) -> None:
        """Say what works before signing anything (see :meth:`can_open_empty`)."""
        if await self._empty_open_allowed():
            return
        raise InvalidAmountError(
            f"cannot open an empty {self._asset} channel: on Nitrolite v1 a channel opened "
            "with 0 carries funds received off chain, and none were received since the last "
            "channel closed; open it with a deposit (initial_amount > 0) or receive a "
            "transfer first (the faucet pays by one)"
        )

    async def _channel_nonce(self) -> int:
        """The new channel's nonce (:func:`~.nonces.free_channel_nonce`): the SDK's rule,
        or on a deterministic sandbox one derived from the hub's history; never one whose
        channel id the chain, the node or this store knows."""
        return await free_channel_nonce(
            self.hub,
            self._client,
            node=self.node_address,
            user=self.address,
            asset=self._asset,
            deterministic=bool(self.network.extra.get("deterministic")),
            taken={str(c["channel_id"]).lower() for c in self.store.channels()},
        )

    def _check_asset(self, asset: str) -> None:
        if not isinstance(asset, str):
            raise SettlementValueError(f"asset must be a string, got {type(asset).__name__}")
        if asset.lower() == self._asset.lower():
            return
        if validate_address(asset, field="asset") != self.token:
            raise SettlementValueError(
                f"this provider settles {self._asset} (token {self.token}), not {asset}"
            )

    async def _ensure_allowance(
        self, units: int, *, hub: ChannelHubClient | None = None, token: str | None = None
    ) -> None:
        """The wallet holds ``units`` of ``token`` (default: the home token) and ``hub``
        (default: the home hub) may pull them."""
        hub = hub or self.hub
        token = token or self.token
        if int(token, 16) == 0:
            return  # the native token is sent as the value
        balance = await hub.token_balance(token)
        if balance < units:
            raise InsufficientBalanceError(
                f"the wallet holds {self._amount(balance)}, {self._amount(units)} are needed"
            )
        if await hub.allowance(token) < units:
            await hub.approve(token, units)

    def _hub_on(self, chain_id: int) -> ChannelHubClient:
        """Our ChannelHub client on another chain the node serves, signing with this
        wallet's key there (one client per chain: it keeps the wallet's nonces)."""
        if chain_id == self.network.chain_id:
            return self.hub  # a channel migrating back: one client per chain (its nonces)
        hub = self._hubs_elsewhere.get(chain_id)
        if hub is None:
            from ....wallet import WalletClient

            there = self.network.on_chain(chain_id)
            key = getattr(self.wallet, "key", None)
            if key is None or there.contracts.channel_hub is None:
                raise ConfigurationError(
                    f"acting on chain {chain_id} needs a WalletClient (its key signs there too)"
                )
            hub = ChannelHubClient(
                WalletClient(key, rpc_url=there.rpc_url), there.contracts.channel_hub
            )
            self._hubs_elsewhere[chain_id] = hub
        return hub

    def _home_hub(self, state: Mapping[str, Any] | None = None) -> ChannelHubClient:
        """Our hub on the chain the home channel lives on: the network's, unless the channel
        migrated (then the chain ``state``'s home ledger names, or the store's channel)."""
        return self._hub_on(self._home_chain_id(state))

    def _home_chain_id(self, state: Mapping[str, Any] | None = None) -> int:
        if state is not None and int(state["home_ledger"].get("blockchain_id") or 0):
            return int(state["home_ledger"]["blockchain_id"])
        open_channels = [c for c in self.store.channels() if c["status"] != "final"]
        return int(open_channels[-1]["chain_id"]) if open_channels else self.network.chain_id

    def _home_network(self, state: Mapping[str, Any] | None = None) -> Network:
        chain_id = self._home_chain_id(state)
        if chain_id == self.network.chain_id:
            return self.network
        return self.network.on_chain(chain_id)

    def _definition(self, channel_id: str) -> dict[str, Any]:
        record = self.store.channel(channel_id)
        if record is None:
            raise ChannelNotFoundError(f"no channel {channel_id} in this provider's store")
        d = record["definition"]
        return contract_definition(
            user=self.address,
            node=self.node_address,
            asset=record["asset"],
            nonce=int(d["nonce"]),
            challenge_duration=int(d["challenge"]),
            approved_sig_validators=d["approved_sig_validators"],
        )

    def _contract_state(self, state: Mapping[str, Any]) -> dict[str, Any]:
        return contract_state_from_wire(state, self._client.assets.cached_token_decimals)

    async def _run_onchain(self, channel_id: str, step: str, state: Mapping[str, Any]) -> HubTx:
        """Send the on-chain ``step`` for the co-signed ``state`` and record it done (the
        ``pending`` row was written by the caller, in the transaction that stored
        ``state``)."""
        contract_state = self._contract_state(state)
        # the chain each step runs on: the escrow's (its ledger), else the home channel's
        if step in _ESCROW_STEPS or step == "migrate_in":
            hub = self._hub_on(int(state["escrow_ledger"]["blockchain_id"]))
        else:
            hub = self._home_hub(state)
        try:
            if step == "create":
                tx = await hub.create_channel(self._definition(channel_id), contract_state)
            elif step == "deposit":
                tx = await hub.deposit_to_channel(channel_id, contract_state)
            elif step == "withdraw":
                tx = await hub.withdraw_from_channel(channel_id, contract_state)
            elif step == "close":
                tx = await hub.close_channel(channel_id, contract_state)
            elif step == "checkpoint":
                tx = await hub.checkpoint_channel(channel_id, contract_state)
            elif step == "migrate_in":
                tx = await hub.initiate_migration(self._definition(channel_id), contract_state)
            elif step == "migrate_finalize":
                tx = await hub.finalize_migration(channel_id, contract_state)
            elif step in _ESCROW_STEPS:
                if step == "escrow_deposit":
                    tx = await hub.initiate_escrow_deposit(
                        self._definition(channel_id), contract_state
                    )
                elif step == "escrow_withdrawal":
                    tx = await hub.initiate_escrow_withdrawal(
                        self._definition(channel_id), contract_state
                    )
                else:  # the withdrawal's payout, with the co-signed escrow_withdraw
                    tx = await hub.finalize_escrow_withdrawal(
                        channel_id, str(state["escrow_channel_id"]), contract_state
                    )
            elif step == "challenge":
                sig = await self.wallet.sign_message(
                    pack_challenge_state(state, self._client.assets.cached_token_decimals)
                )
                challenger_sig = "0x00" + sig.removeprefix("0x")
                tx = await hub.challenge_channel(channel_id, contract_state, challenger_sig, 0)
            else:  # pragma: no cover - the steps are ours
                raise SettlementValueError(f"unknown on-chain step {step!r}")
        except TransactionFailedError:
            # the chain refused the step (a revert, seen by the estimate or in the receipt,
            # e.g. closeChannel before a challenge expires): no longer pending, so recover()
            # does not send it again on every connect
            self.store.put_onchain(channel_id, step, state, status="failed")
            raise
        status = {
            "create": "active",
            "deposit": "active",
            "withdraw": "active",
            "checkpoint": "active",
            "escrow_deposit": "active",
            "escrow_withdrawal": "active",
            "escrow_payout": "active",
            "migrate_in": "active",
            "migrate_finalize": "active",
            "close": "final",
            "challenge": "dispute",
        }[step]
        with self.store.transaction():
            self.store.put_onchain(channel_id, step, state, status="done", tx_hash=tx.tx_hash)
            self.store.put_tx(tx.tx_hash, step=step, channel_id=channel_id, status="mined")
            self.store.set_channel_status(channel_id, status)
        await self._until_node_confirms(tx, hub.signer.w3)
        channel = self.get_channel(channel_id)
        event = {"final": "channel_closed", "dispute": "channel_challenged"}.get(
            status, "channel_updated"
        )
        self._emit(event, channel)
        return tx

    async def _until_node_confirms(self, tx: HubTx, w3: Any = None) -> None:
        """Wait until the chain's clock is ``confirmation_delay_secs`` past ``tx``'s block:
        the node counts an on-chain step only then (Nitronode v1.4.1's confirmation gate)
        and refuses the next state before ("home deposit is still ongoing"), so returning
        earlier would hand the caller a channel the node does not take states on yet."""
        if self._confirmation_delay <= 0 or not self._wait_for_confirmation:
            return
        from ....chain_clock import wait_for_chain_time

        w3 = w3 or self.wallet.w3
        block = await w3.eth.get_block(tx.block_number)
        target = int(block["timestamp"]) + self._confirmation_delay
        await wait_for_chain_time(w3, target, poll_interval=1.0)

    def _open_channel_id(self, channel_id: str | None) -> str:
        channels = self.store.channels()
        open_ids = [c["channel_id"] for c in channels if c["status"] != "final"]
        if channel_id is None:
            if not open_ids:
                raise ChannelNotFoundError(f"no open {self._asset} channel: create one first")
            return open_ids[-1]
        key = channel_id.lower()
        if all(c["channel_id"] != key for c in channels):
            raise ChannelNotFoundError(f"no channel {channel_id} in this provider's store")
        if key not in open_ids:
            raise ChannelStateError(f"channel {channel_id} is closed")
        return key

    async def deposit(self, amount: int, *, channel_id: str | None = None) -> Tx:
        """Move ``amount`` from the wallet into the home channel (``depositToChannel``)."""
        await self.connect()
        if not amount:
            raise InvalidAmountError("a deposit must be positive")
        display = self._display(amount)
        async with self._op_lock:
            cid = self._open_channel_id(channel_id)
            chain_id = self._home_chain_id()
            hub = self._home_hub()
            token = await self._client.assets.token_address(self._asset, chain_id)
            await self._ensure_allowance(amount, hub=hub, token=token)
            async with self._node_may_refuse():
                state = await self._client.deposit(chain_id, self._asset, display)
            tx = await self._store_and_run(cid, "deposit", state)
            return self._tx(tx, "deposit", cid, network=self._home_network(state))

    async def resize(self, channel_id: str, amount: int) -> Tx:
        """v0.5's name for funding a channel: a deposit (positive) or withdrawal (negative)."""
        if isinstance(amount, int) and not isinstance(amount, bool) and amount < 0:
            return await self.withdraw(-amount, channel_id=channel_id)
        return await self.deposit(amount, channel_id=channel_id)

    async def withdraw(self, amount: int | None = None, *, channel_id: str | None = None) -> Tx:
        """Take ``amount`` (default: all the channel holds for the wallet) out of the home
        channel to the wallet (``withdrawFromChannel``); the channel stays open."""
        await self.connect()
        async with self._op_lock:
            cid = self._open_channel_id(channel_id)
            latest = await self._latest_state()
            held = self._units(latest["home_ledger"]["user_balance"]) if latest else 0
            amount = held if amount is None else amount
            display = self._display(amount)
            if not amount:
                raise InvalidAmountError("nothing to withdraw: the channel holds 0")
            if amount > held:
                raise InsufficientBalanceError(
                    f"the channel holds {self._amount(held)}, {self._amount(amount)} were asked"
                )
            async with self._node_may_refuse():
                state = await self._client.withdraw(self._home_chain_id(), self._asset, display)
            tx = await self._store_and_run(cid, "withdraw", state)
            return self._tx(tx, "withdraw", cid, network=self._home_network(state))

    async def _store_and_run(self, channel_id: str, step: str, state: Mapping[str, Any]) -> HubTx:
        with self.store.transaction():
            self.store.put_state(state)
            self.store.put_onchain(channel_id, step, state)
        return await self._run_onchain(channel_id, step, state)

    async def _latest_state(self) -> dict[str, Any] | None:
        """The node's latest state of our chain (it may hold node-issued states we have not
        seen: a received transfer, a release); stored as it comes."""
        state = await self._client.get_latest_state(self.address, self._asset, False)
        if state is not None:
            self.store.put_state(state)
        return state

    async def close_channel(self, channel_id: str | None = None) -> Tx:
        """Close cooperatively: a finalize state the node co-signs, then ``closeChannel``
        pays the wallet everything the channel holds for it. After a challenge whose period
        has passed, ``closeChannel`` with the challenged state instead."""
        await self.connect()
        async with self._op_lock:
            cid = self._open_channel_id(channel_id)
            data = await self._home_hub().get_channel_data(cid)
            if data.status == "DISPUTED":
                latest = self.store.latest_state(self._asset, signed=True)
                if latest is None:  # pragma: no cover - a challenge needs a signed state
                    raise ChannelStateError(f"channel {cid} has no co-signed state to close with")
                return self._tx(await self._store_and_run(cid, "close", latest), "close", cid)
            async with self._node_may_refuse():
                state = await self._client.close_home_channel(self._asset)
            tx = await self._store_and_run(cid, "close", state)
            return self._tx(tx, "close", cid, network=self._home_network(state))

    async def challenge(self, channel_id: str | None = None) -> Tx:
        """Dispute on chain with the latest state both sides signed (``challengeChannel``,
        the wallet's challenge signature); the channel can be closed with it once the
        challenge period has passed, unless a newer state is checkpointed."""
        await self.connect()
        async with self._op_lock:
            cid = self._open_channel_id(channel_id)
            state = self.store.latest_state(self._asset, signed=True)
            if state is None:
                raise ChannelStateError(f"channel {cid} has no co-signed state to challenge with")
            return self._tx(await self._store_and_run(cid, "challenge", state), "challenge", cid)

    async def checkpoint(self, channel_id: str | None = None) -> Tx:
        """Put the latest co-signed state on chain (``checkpointChannel``): it answers a
        challenge with an older state."""
        await self.connect()
        async with self._op_lock:
            cid = self._open_channel_id(channel_id)
            state = self.store.latest_state(self._asset, signed=True)
            if state is None:
                raise ChannelStateError(f"channel {cid} has no co-signed state to checkpoint")
            return self._tx(await self._store_and_run(cid, "checkpoint", state), "checkpoint", cid)

    def _tx(self, tx: HubTx, step: str, channel_id: str, *, network: Network | None = None) -> Tx:
        return Tx(
            hash=tx.tx_hash,
            explorer_url=(network or self.network).explorer.tx_url(tx.tx_hash),
            step=step,
            channel_id=channel_id,
            block_number=tx.block_number,
            gas_used=tx.gas_used,
            status=1,
        )
