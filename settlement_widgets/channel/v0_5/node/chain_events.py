"""What custody events do to the ledger (clearnode/custody.go): the effects the chain watcher
(:mod:`.watcher`) applies, one ``on_*`` method per watched event.

Each returns the notifications to push once the batch holding its changes has committed. An
event the relay cannot relate to one of its channels (another broker, an unknown token) is
ignored, as the ClearNode does.
"""

from __future__ import annotations

from ..core.types import Channel, State, StateIntent
from .base import Note, ServiceBase
from .clock import now_ms
from .ledger import ChannelRecord

__all__ = ["ChainEventEffects"]


class ChainEventEffects(ServiceBase):
    """``on_created``, ``on_challenged``, ``on_checkpointed``, ``on_resized``, ``on_closed``."""

    def on_created(
        self, channel_id: str, wallet: str, channel: Channel, initial: State, chain_id: int
    ) -> list[Note]:
        """Index a channel opened with the broker; credit any initial deposit."""
        if len(initial.allocations) != 2 or initial.allocations[1].amount != 0:
            return []
        if channel.challenge < 3600 or channel.participants[1] != self.broker_address:
            return []
        network = self.config.network(chain_id)
        if network is None or channel.adjudicator != network.adjudicator:
            return []
        token = initial.allocations[0].token
        asset = self.config.asset_for_token(token, chain_id)
        if asset is None or channel_id in self.ledger.channels:
            return []
        for ch in self.ledger.channels_of(wallet):
            if not ch.is_closed and ch.chain_id == chain_id and ch.token == token:
                return []  # an open channel with the broker already exists
        now = now_ms(self._clock)
        amount = initial.allocations[0].amount
        record = ChannelRecord(
            channel_id=channel_id,
            chain_id=chain_id,
            token=token,
            wallet=wallet,
            participant=channel.participants[0],
            status="open",
            amount=amount,
            adjudicator=channel.adjudicator,
            challenge=channel.challenge,
            nonce=channel.nonce,
            version=initial.version,
            intent=int(initial.intent),
            state_data="0x" + initial.data.hex(),
            allocations=[(a.destination, a.token, a.amount) for a in initial.allocations],
            created_at=now,
            updated_at=now,
        )
        self.ledger.put_channel(record)
        if amount:
            self.ledger.add(wallet, asset.symbol, amount)
            self.ledger.record_tx("deposit", channel_id, wallet, asset.symbol, amount)
        return [
            Note(wallet, "cu", self.channel_json(record, wallet=False)),
            self.balance_note(wallet),
        ]

    def _adopt_state(self, record: ChannelRecord, state: State) -> None:
        """Make ``record`` carry the state the custody now stores for the channel.

        ``Challenged`` and ``Checkpointed`` put a state on chain that the relay may never have
        seen (a challenge may use any newer state both parties signed), so the record's
        version, intent, data and allocations are taken from the event, not derived from the
        record: the relay's view stays the chain's. ``amount`` is left alone: neither event
        moves funds in or out of the channel, so what it locks is unchanged.
        """
        record.version = state.version
        record.intent = int(state.intent)
        record.state_data = "0x" + state.data.hex()
        record.allocations = [(a.destination, a.token, a.amount) for a in state.allocations]

    def on_challenged(self, channel_id: str, state: State) -> list[Note]:
        """A dispute was opened with ``state``: the wallet is frozen until it is resolved."""
        record = self.ledger.channels.get(channel_id)
        if record is None:
            return []
        self._adopt_state(record, state)
        record.status = "challenged"
        record.updated_at = now_ms(self._clock)
        self.ledger.put_channel(record)
        return [Note(record.wallet, "cu", self.channel_json(record, wallet=False))]

    def on_checkpointed(self, channel_id: str, state: State) -> list[Note]:
        """A newer state both parties signed was stored on chain; it clears a dispute.

        The custody sets the channel ACTIVE again whatever its status was, so the record goes
        back to ``open`` (which also lifts the freeze a challenge put on the wallet). No
        balance note: a checkpoint moves nothing between the channel and the unified ledger.
        """
        record = self.ledger.channels.get(channel_id)
        if record is None or record.is_closed:
            return []
        self._adopt_state(record, state)
        record.status = "open"
        record.updated_at = now_ms(self._clock)
        self.ledger.put_channel(record)
        return [Note(record.wallet, "cu", self.channel_json(record, wallet=False))]

    def on_resized(self, channel_id: str, deltas: tuple[int, ...]) -> list[Note]:
        record = self.ledger.channels.get(channel_id)
        if record is None or len(deltas) != 2:
            return []
        new_amount = record.amount + sum(deltas)
        if new_amount < 0:
            return []
        asset = self.config.asset_for_token(record.token, record.chain_id)
        if len(record.allocations) == 2:
            (d0, t0, a0), (d1, t1, a1) = record.allocations
            record.allocations = [(d0, t0, a0 + deltas[0]), (d1, t1, a1 + deltas[1])]
        record.amount = new_amount
        record.version += 1
        record.status = "open"
        record.updated_at = now_ms(self._clock)
        record.intent = int(StateIntent.RESIZE)
        self.ledger.put_channel(record)
        change = deltas[0]
        if change and asset is not None:
            if change > 0:  # deposit: the user's custody funds now back the unified balance
                self.ledger.add(record.wallet, asset.symbol, change)
                self.ledger.record_tx("deposit", channel_id, record.wallet, asset.symbol, change)
            else:  # withdrawal: what was locked in escrow has left
                self.ledger.add(channel_id, asset.symbol, change)
                self.ledger.record_tx(
                    "withdrawal", record.wallet, channel_id, asset.symbol, -change
                )
        return [
            self.balance_note(record.wallet),
            Note(record.wallet, "cu", self.channel_json(record, wallet=False)),
        ]

    def on_closed(self, channel_id: str, final: State) -> list[Note]:
        record = self.ledger.channels.get(channel_id)
        if record is None or record.is_closed:
            return []
        asset = self.config.asset_for_token(record.token, record.chain_id)
        if asset is not None and final.allocations:
            amount = final.allocations[0].amount
            escrow = self.ledger.balance(channel_id, asset.symbol)
            if escrow:
                self.ledger.add(channel_id, asset.symbol, -escrow)
                self.ledger.add(record.wallet, asset.symbol, escrow)
                self.ledger.record_tx(
                    "escrow_unlock", channel_id, record.wallet, asset.symbol, escrow
                )
            if amount:
                self.ledger.add(record.wallet, asset.symbol, -amount)
                self.ledger.record_tx("withdrawal", record.wallet, channel_id, asset.symbol, amount)
        if len(final.allocations) == 2:
            record.allocations = [(a.destination, a.token, a.amount) for a in final.allocations]
        record.version = final.version
        record.intent = int(final.intent)
        record.state_data = "0x" + final.data.hex()
        record.status = "closed"
        record.amount = 0
        record.updated_at = now_ms(self._clock)
        self.ledger.put_channel(record)
        return [
            self.balance_note(record.wallet),
            Note(record.wallet, "cu", self.channel_json(record, wallet=False)),
        ]
