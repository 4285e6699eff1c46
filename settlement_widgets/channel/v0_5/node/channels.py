"""The channel RPCs: ``get_channels``, ``create_channel``, ``resize_channel`` and
``close_channel`` (as the v0.5 ClearNode serves them).

The node only *signs* states here; a channel is indexed and its amounts change when the
custody event arrives (:mod:`.chain_events`), so a state the client never submits changes
nothing but a ``resizing`` status (and the escrow lock of a withdrawal).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ....addresses import validate_address
from ....errors import InvalidAddressError
from ..core.ids import channel_id as compute_channel_id
from ..core.resize import resize_data
from ..core.signing import sign_state
from ..core.types import Allocation, Channel, State, StateIntent
from .base import Note, Outcome, ServiceBase, Session, _fail
from .clock import now_ms
from .config import AssetConfig
from .ledger import CHANNEL_STATUSES, ChannelRecord
from .wire import Incoming

__all__ = ["ChannelHandlers"]


class ChannelHandlers(ServiceBase):
    """``get_channels`` and the channel state requests the broker signs."""

    def _get_channels(self, session: Session, req: Incoming) -> Outcome:
        params = req.params
        participant = params.get("participant")
        status = params.get("status")
        offset, limit, descending = self._list_options(params)
        if participant:
            try:
                participant = validate_address(participant, field="participant")
            except InvalidAddressError as exc:
                raise _fail(f"failed to parse parameters: {exc}") from None
            channels = self.ledger.channels_of(participant)
        else:
            channels = list(self.ledger.channels.values())
        if status:
            if status not in CHANNEL_STATUSES:
                allowed = ", ".join(CHANNEL_STATUSES)
                raise _fail(f"failed to parse parameters: status must be one of {allowed}")
            channels = [c for c in channels if c.status == status]
        # by created_at (ms); ties (channels indexed within one millisecond) keep the order
        # the node learned them in, as a database's insertion order would
        channels.sort(key=lambda c: c.created_at)
        if descending:
            channels.reverse()
        page = channels[offset : offset + limit]
        return Outcome("get_channels", {"channels": [self.channel_json(c) for c in page]})

    def _state_reply(
        self, channel_id: str, state: State, channel: Channel | None = None
    ) -> dict[str, Any]:
        signature = sign_state(channel_id, state, self.broker, "raw")
        out: dict[str, Any] = {"channel_id": channel_id}
        if channel is not None:
            out["channel"] = channel.to_rpc()
        out["state"] = state.to_rpc()
        out["server_signature"] = signature
        return out

    def _channel_nonce(self) -> int:
        if self.config.deterministic:
            return self.ledger.next_counter("channel_nonce", 1)
        nonce = now_ms(self._clock)
        last = int(self.ledger.meta.get("last_channel_nonce", "0"))
        nonce = max(nonce, last + 1)  # unique even for two requests in one millisecond
        self.ledger.set_meta("last_channel_nonce", str(nonce))
        return nonce

    def _create_channel(self, session: Session, req: Incoming) -> Outcome:
        params = req.params
        chain_id = params.get("chain_id")
        token = params.get("token")
        if type(chain_id) is not int or chain_id <= 0 or not isinstance(token, str) or not token:
            raise _fail("failed to parse parameters: chain_id and token are required")
        wallet = session.wallet
        assert wallet is not None
        if wallet not in self._signing_wallets(req):
            raise _fail("invalid signature")
        for ch in self.ledger.channels_of(wallet):
            if not ch.is_closed and ch.chain_id == chain_id and ch.token.lower() == token.lower():
                raise _fail(f"an open channel with broker already exists: {ch.channel_id}")
        asset = self.config.asset_for_token(token, chain_id)
        if asset is None:
            raise _fail(f"token not supported: {token}")
        network = self.config.network(chain_id)
        if network is None:
            raise _fail(f"unsupported chain ID: {chain_id}")
        channel = Channel(
            (wallet, self.broker_address),
            network.adjudicator,
            self.config.challenge_period,
            self._channel_nonce(),
        )
        cid = compute_channel_id(channel, chain_id)
        state = State(
            StateIntent.INITIALIZE,
            0,
            b"",
            (Allocation(wallet, asset.token, 0), Allocation(self.broker_address, asset.token, 0)),
        )
        # nothing is stored until the Created event (as in the ClearNode)
        return Outcome("create_channel", self._state_reply(cid, state, channel))

    def _channel_param(self, params: Mapping[str, Any]) -> tuple[ChannelRecord, str]:
        channel_id = params.get("channel_id")
        destination = params.get("funds_destination")
        if not isinstance(channel_id, str) or not channel_id:
            raise _fail("failed to parse parameters: channel_id is required")
        if not isinstance(destination, str) or not destination:
            raise _fail("failed to parse parameters: funds_destination is required")
        try:
            destination = validate_address(destination, field="funds_destination")
        except InvalidAddressError as exc:
            raise _fail(f"failed to parse parameters: {exc}") from None
        channel = self.ledger.channels.get(channel_id.lower())
        if channel is None:
            raise _fail(f"channel {channel_id} not found")
        return channel, destination

    def _check_not_challenged(self, wallet: str) -> None:
        if any(c.status == "challenged" for c in self.ledger.channels_of(wallet)):
            raise _fail(f"participant {wallet} has challenged channels, cannot execute operation")

    @staticmethod
    def _signed_units(params: Mapping[str, Any], name: str) -> int:
        value = params.get(name)
        if value is None:
            return 0
        if type(value) is int:
            return value
        if isinstance(value, str):
            text = value.strip()
            body = text[1:] if text[:1] in "+-" else text
            if body.isdigit():
                return int(text)
        raise _fail(f"failed to parse parameters: {name} must be an integer number of units")

    def _channel_asset(self, channel: ChannelRecord) -> AssetConfig:
        """The configured asset of ``channel``'s token (the ClearNode's error when none)."""
        asset = self.config.asset_for_token(channel.token, channel.chain_id)
        if asset is None:
            raise _fail(
                f"failed to find asset for token {channel.token} on chain {channel.chain_id}"
            )
        return asset

    def _resize_channel(self, session: Session, req: Incoming) -> Outcome:
        params = req.params
        channel, destination = self._channel_param(params)
        resize = self._signed_units(params, "resize_amount")
        allocate = self._signed_units(params, "allocate_amount")
        self._check_not_challenged(channel.wallet)
        if channel.status == "resizing":
            raise _fail(
                "operation denied: resize already ongoing. Please complete the resize or close "
                f"the channel {channel.channel_id}"
            )
        if channel.status != "open":
            raise _fail(
                f"operation denied: channel {channel.channel_id} is not open: {channel.status}"
            )
        if channel.wallet not in self._signing_wallets(req):
            raise _fail("invalid signature")
        asset = self._channel_asset(channel)
        if resize == 0 and allocate == 0:
            raise _fail("resize operation requires non-zero ResizeAmount or AllocateAmount")
        balance = self.ledger.balance(channel.wallet, asset.symbol)
        new_amount = channel.amount + allocate
        if balance < new_amount:
            raise _fail(
                f"insufficient unified balance for channel {channel.channel_id}: "
                f"required {new_amount}, available {balance}"
            )
        new_amount += resize
        if new_amount < 0:
            raise _fail(f"new channel amount must be positive: {new_amount}")
        state = State(
            StateIntent.RESIZE,
            channel.version + 1,
            resize_data([resize, allocate]),
            (
                Allocation(destination, channel.token, new_amount),
                Allocation(self.broker_address, channel.token, 0),
            ),
        )
        reply = self._state_reply(channel.channel_id, state)
        channel.status = "resizing"
        channel.updated_at = now_ms(self._clock)
        self.ledger.put_channel(channel)
        notes: list[Note] = []
        if resize < 0:  # lock what leaves the unified balance in the channel's escrow
            self.ledger.add(channel.wallet, asset.symbol, resize)
            self.ledger.add(channel.channel_id, asset.symbol, -resize)
            self.ledger.record_tx(
                "escrow_lock", channel.wallet, channel.channel_id, asset.symbol, -resize
            )
            notes.append(self.balance_note(channel.wallet))
        return Outcome("resize_channel", reply, notes)

    def _close_channel(self, session: Session, req: Incoming) -> Outcome:
        channel, destination = self._channel_param(req.params)
        self._check_not_challenged(channel.wallet)
        if channel.status not in ("open", "resizing"):
            raise _fail(f"channel {channel.channel_id} is not open or resizing: {channel.status}")
        if channel.wallet not in self._signing_wallets(req):
            raise _fail("invalid signature")
        asset = self._channel_asset(channel)
        balance = self.ledger.balance(channel.wallet, asset.symbol)
        if balance < 0:
            raise _fail("negative balance")
        balance += self.ledger.balance(channel.channel_id, asset.symbol)
        user = min(balance, channel.amount)
        state = State(
            StateIntent.FINALIZE,
            channel.version + 1,
            b"",
            (
                Allocation(destination, channel.token, user),
                Allocation(self.broker_address, channel.token, channel.amount - user),
            ),
        )
        return Outcome("close_channel", self._state_reply(channel.channel_id, state))
