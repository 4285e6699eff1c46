"""The Nitronode's channel state handlers: ``request_creation`` and ``submit_state``.

Each proposed state is checked against the previous one with the core's rules, its user
signature verified (wallet or channel session key), then co-signed, recorded and counted.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ....addresses import validate_address
from ....errors import InvalidAddressError, SettlementValueError
from ..core.decimals import (
    decimal_places,
    parse_decimal,
    plain_decimal_string,
)
from ..core.ids import home_channel_id
from ..core.lifecycle import apply_transition, next_state, validate_advancement
from ..core.rpc_shapes import wire_state
from ..core.state import (
    SIG_VALIDATOR_SESSION_KEY,
    channel_session_key_metadata_hash,
    pack_state,
    sign_packed_state,
)
from ..core.transitions import sig_validators_from_bitmap
from .chain_view import VOID_CHANNEL
from .escrows import ESCROW_WITHDRAWAL_RECLAIMED, EscrowDeposits
from .migrations import MIGRATION_RECLAIMED, Migrations
from .params import (
    _CREATION_TYPES,
    _NOT_YET,
    _ON_CHAIN,
    _SUBMIT_TYPES,
    FAILED_TO_PARSE,
    NOT_SUPPORTED_YET,
    T,
    _check_ledger,
    _fail,
    _iso,
    _mapping,
    _parse_state,
    _uint,
    _void_state,
)
from .reads import NodeReads
from .signatures import SessionKeyAuth, decode_hex, recover_eip191, split_channel_signature

__all__ = ["ChannelStates"]

#: lock transition -> (the only transition allowed after it, the upstream refusal's text)
_ESCROW_SECOND = {
    int(T.MUTUAL_LOCK): (T.ESCROW_DEPOSIT, "after mutual lock, only escrow deposit is allowed"),
    int(T.ESCROW_LOCK): (T.ESCROW_WITHDRAW, "after escrow lock, only escrow withdraw is allowed"),
    # ours (see .migrations): the hub finalizes a migration only with its direct successor
    int(T.MIGRATE): (T.MIGRATE_FINALIZE, "after migrate, only migrate finalize is allowed"),
}


class ChannelStates(EscrowDeposits, Migrations, NodeReads):
    """Channel creation and state submission (and the checks they share)."""

    # --- channels: state submission -------------------------------------------------------

    def _previous(self, state: Mapping[str, Any]) -> dict[str, Any]:
        previous = self.ledger.latest_state(state["user_wallet"], state["asset"])
        return (
            dict(previous)
            if previous is not None
            else _void_state(state["user_wallet"], state["asset"])
        )

    def _check_advancement(self, previous: Mapping[str, Any], proposed: dict[str, Any]) -> None:
        """The core's advancement check plus the node's own: amount precision and sign, ack
        only over a state the user has not signed, sound ledgers."""
        kind = proposed["transition"]["type"]
        asset = self.config.asset(proposed["asset"])
        if asset is None:
            raise _fail(f"asset {proposed['asset']} is not supported")
        reclaimed = self.reclaimed_lock(previous)
        if reclaimed is not None:
            # the node took back an abandoned withdrawal lock (see .escrows): its second
            # state never comes, and once the hub returned the lock the next state follows
            # the lock without its escrow ledger (the lock never changed the home ledger)
            migration = reclaimed["kind"] == "migration"
            if kind == (T.MIGRATE_FINALIZE if migration else T.ESCROW_WITHDRAW):
                text = MIGRATION_RECLAIMED if migration else ESCROW_WITHDRAWAL_RECLAIMED
                raise _fail(f"invalid state transition: {text}")
            if reclaimed["status"] == "reclaiming":
                what = "migration" if migration else "escrow withdrawal"
                raise _fail(
                    f"invalid state transition: {what} was abandoned past its deadline: the "
                    "node is taking its lock back"
                )
            previous = {
                k: v for k, v in previous.items() if k not in ("escrow_ledger", "escrow_channel_id")
            }
        # an escrow's lock is followed by its own second state only (the upstream advancer's
        # strict ordering, after v1.4.1): a close over a pending lock would carry the escrow
        # ledger, which the hub refuses (NonHomeStateMustBeEmpty); before the core's check,
        # so that is the refusal whatever ledgers the proposed state carries (a client drops
        # the lock's escrow ledger from anything but its second state); a migration state's
        # own check comes first (its refusals name what is pending)
        after = _ESCROW_SECOND.get(int(previous["transition"]["type"]))
        if kind in (T.MIGRATE, T.MIGRATE_FINALIZE):
            self.check_migration_advancement(previous, proposed)
        if after is not None and kind != after[0] and reclaimed is None:
            raise _fail(f"invalid state transition: {after[1]}")
        if kind not in (T.MIGRATE, T.MIGRATE_FINALIZE):
            verdict = validate_advancement(previous, proposed)
            if verdict != "ok":
                raise _fail(f"invalid state transition: {verdict.removeprefix('rejected: ')}")
        amount = parse_decimal(proposed["transition"]["amount"])
        if decimal_places(amount) > asset.decimals:
            raise _fail(
                f"invalid state transition: amount exceeds the asset's {asset.decimals} decimals"
            )
        if kind == T.ACKNOWLEDGEMENT:
            if previous.get("user_sig"):
                raise _fail(
                    "invalid state transition: acknowledgement is only valid for a state the "
                    "user has not signed"
                )
        elif kind == T.FINALIZE:
            if amount < 0:
                raise _fail("invalid state transition: amount cannot be negative")
        elif amount <= 0:
            raise _fail("invalid state transition: amount must be positive")
        _check_ledger(proposed["home_ledger"], "home ledger")

    def _verify_user_sig(
        self, state: Mapping[str, Any], approved_validators: frozenset[int]
    ) -> bytes:
        """Check the user's signature; returns the packed state it covers, which is what
        the node then signs (:meth:`_node_sign`): both signatures over the same bytes."""
        raw = state.get("user_sig")
        if not raw:
            raise _fail("missing incoming state user signature")
        try:
            signature = decode_hex(raw, field="user_sig")
            kind, body = split_channel_signature(signature)
            packed = pack_state(state, self._decimals)
            if kind == SIG_VALIDATOR_SESSION_KEY:
                if SIG_VALIDATOR_SESSION_KEY not in approved_validators:
                    raise SettlementValueError("the channel does not approve session keys")
                auth = SessionKeyAuth.decode(body)
                auth.check(state["user_wallet"], packed)
                self._check_channel_session_key(state, auth)
            elif recover_eip191(packed, body).lower() != state["user_wallet"].lower():
                raise SettlementValueError("signature is not from the user wallet")
        except SettlementValueError as exc:
            raise _fail(f"invalid incoming state user signature: {exc}") from None
        return packed

    def _check_channel_session_key(self, state: Mapping[str, Any], auth: SessionKeyAuth) -> None:
        """The key is registered (this exact metadata), unexpired and scoped to the asset."""
        history = self.ledger.key_state_history("channel", state["user_wallet"], auth.session_key)
        now_s = self._clock_ms() // 1000
        for registration in reversed(history):
            metadata = channel_session_key_metadata_hash(
                registration["user_address"],
                registration["version"],
                registration["assets"],
                registration["expires_at"],
            )
            if metadata != auth.metadata_hash:
                continue
            if registration is not history[-1]:
                raise SettlementValueError("session key registration was superseded")
            if int(registration["expires_at"]) <= now_s:
                raise SettlementValueError("session key expired")
            if state["asset"] not in registration["assets"]:
                raise SettlementValueError("session key is not allowed for this asset")
            return
        raise SettlementValueError("session key is not registered")

    def _node_sign(self, state: dict[str, Any], packed: bytes | None = None) -> str:
        """Sign ``state`` (``packed``: its packed bytes, when the caller has them)."""
        if packed is None:
            packed = pack_state(state, self._decimals)
        signature = "0x" + sign_packed_state(packed, self._key).hex()
        state["node_sig"] = signature
        return signature

    def _record(
        self,
        state: Mapping[str, Any],
        tx_type: int,
        from_account: str,
        to_account: str,
        *,
        receiver_state: Mapping[str, Any] | None = None,
    ) -> None:
        now = self._clock_ms()
        transition = state["transition"]
        tx: dict[str, Any] = {
            "id": transition["tx_id"],
            "asset": state["asset"],
            "tx_type": tx_type,
            "from_account": from_account,
            "to_account": to_account,
            "sender_new_state_id": state["id"],
        }
        if receiver_state is not None:
            tx["receiver_new_state_id"] = receiver_state["id"]
        tx["amount"] = plain_decimal_string(transition["amount"])
        tx["created_at"] = _iso(now)
        tx["created_at_ms"] = now
        self.ledger.add_transaction(tx)

    def _issue(
        self, wallet: str, asset: str, transition: Mapping[str, Any], *, sign: bool
    ) -> dict[str, Any]:
        """A node-issued state (transfer_receive, release) on top of ``wallet``'s latest,
        node-signed when ``sign`` (:meth:`.backing.BackingGuard.may_sign_issued`: the
        wallet's home channel operates on chain with nothing ongoing)."""
        previous = self.ledger.latest_state(wallet, asset) or _void_state(wallet, asset)
        reclaimed = self.reclaimed_lock(previous)
        if reclaimed is not None and reclaimed["status"] == "reclaimed":
            # the lock the node took back has no successor: the receive follows it bare
            previous = {
                k: v for k, v in previous.items() if k not in ("escrow_ledger", "escrow_channel_id")
            }
        state = next_state(previous)
        apply_transition(state, transition)
        state = wire_state(state)
        if sign and state.get("home_channel_id"):
            self._node_sign(state)
        return state

    def _on_chain_step(self, channel: dict[str, Any], state: Mapping[str, Any]) -> None:
        """Without a chain view: the co-signed on-chain state is assumed to be submitted."""
        channel["state_version"] = state["version"]
        channel["enforced_balance"] = state["home_ledger"]["user_balance"]
        if state["transition"]["type"] == T.FINALIZE:
            channel["status"] = "closed"

    async def _receiver_signable(self, state: Mapping[str, Any]) -> bool:
        """Whether a transfer's receive state gets the node's signature (see :meth:`_issue`)."""
        if state["transition"]["type"] != T.TRANSFER_SEND:
            return False
        return await self.backing.may_sign_issued(state["transition"]["account_id"], state["asset"])

    def _apply_accepted(
        self, state: dict[str, Any], channel: dict[str, Any], *, sign_receiver: bool
    ) -> None:
        """Store a co-signed user state and its side effects (all checks already passed)."""
        kind = state["transition"]["type"]
        wallet = state["user_wallet"]
        receiver: dict[str, Any] | None = None
        if kind == T.TRANSFER_SEND:
            receiver_wallet = self._display_wallet(
                state["transition"]["account_id"], state["asset"]
            )
            receiver = self._issue(
                receiver_wallet,
                state["asset"],
                {
                    "type": int(T.TRANSFER_RECEIVE),
                    "tx_id": state["transition"]["tx_id"],
                    "account_id": wallet,
                    "amount": state["transition"]["amount"],
                },
                sign=sign_receiver,
            )
        if kind in _ON_CHAIN or channel.get("creation_version") == state["version"]:
            self._on_chain_step(channel, state)
        self.ledger.put_state(state)
        if self.ledger.channels.get(channel["channel_id"]) != channel:
            # a transfer leaves its channel as it was: no row to rewrite in the COMMIT
            self.ledger.put_channel(channel)
        if receiver is not None:
            self.ledger.put_state(receiver)
            self._record(
                state,
                int(T.TRANSFER_SEND),
                wallet,
                receiver["user_wallet"],
                receiver_state=receiver,
            )
        elif kind == T.HOME_DEPOSIT:
            self._record(state, int(kind), channel["channel_id"], wallet)
        elif kind in (T.MUTUAL_LOCK, T.ESCROW_DEPOSIT, T.ESCROW_LOCK, T.ESCROW_WITHDRAW):
            self.record_escrow(state)
            self.escrow_work = True  # the node's on-chain steps (escrows.settle_escrow)
            if kind == T.ESCROW_DEPOSIT:
                self._record(state, int(kind), str(state["escrow_channel_id"]), wallet)
            elif kind == T.ESCROW_WITHDRAW:
                self._record(state, int(kind), wallet, str(state["escrow_channel_id"]))
        elif kind in (T.HOME_WITHDRAWAL, T.FINALIZE):
            self._record(state, int(kind), wallet, channel["channel_id"])
        elif kind in (T.MIGRATE, T.MIGRATE_FINALIZE):
            self.record_migration(state, channel)
            if kind == T.MIGRATE_FINALIZE:
                self.ledger.put_channel(channel)  # now on the new home chain
                self.escrow_work = True  # the old home's release (migrations.migration_action)

    def _check_receiver(self, state: Mapping[str, Any]) -> None:
        if state["transition"]["type"] != T.TRANSFER_SEND:
            return
        try:
            receiver = validate_address(state["transition"]["account_id"], field="receiver")
        except InvalidAddressError:
            raise _fail("invalid state transition: receiver is not a wallet address") from None
        if receiver.lower() == state["user_wallet"].lower():
            raise _fail("invalid state transition: cannot transfer to self")

    async def request_creation(self, params: Mapping[str, Any]) -> dict[str, Any]:
        state = _parse_state(params.get("state"))
        definition = _mapping(params.get("channel_definition"))
        nonce = _uint(definition.get("nonce"))
        challenge = definition.get("challenge")
        bitmap = definition.get("approved_sig_validators")
        if (
            isinstance(challenge, bool)
            or not isinstance(challenge, int)
            or not isinstance(bitmap, str)
        ):
            raise _fail(FAILED_TO_PARSE)
        if nonce == 0:
            raise _fail("invalid channel definition: nonce cannot be zero")
        low, high = self.config.challenge_range
        if not low <= challenge <= high:
            raise _fail(
                f"invalid channel definition: challenge must be between {low} and {high} seconds"
            )
        asset = self.config.asset(state["asset"])
        if asset is None:
            raise _fail(f"asset {state['asset']} is not supported")
        ledger = state["home_ledger"]
        chain_id = _uint(ledger["blockchain_id"])
        token = asset.token_on(chain_id)
        if self.config.chain(chain_id) is None or token is None:
            raise _fail(f"asset {state['asset']} is not supported on blockchain {chain_id}")
        if token.address.lower() != ledger["token_address"].lower():
            raise _fail(
                f"token {ledger['token_address']} is not the {state['asset']} token on "
                f"blockchain {chain_id}"
            )
        try:
            approved = sig_validators_from_bitmap(bitmap)
        except SettlementValueError:
            raise _fail(FAILED_TO_PARSE) from None
        unsupported = approved - set(self.config.supported_sig_validators)
        if unsupported:
            raise _fail(
                "invalid channel definition: unsupported signature validators "
                f"{sorted(unsupported)}"
            )
        expected_id = home_channel_id(
            node=self.node_address,
            user=state["user_wallet"],
            asset=state["asset"],
            nonce=nonce,
            challenge_duration=challenge,
            approved_sig_validators=bitmap,
        )
        if str(state.get("home_channel_id", "")).lower() != expected_id:
            raise _fail("invalid channel definition: home channel id mismatch")
        await self.backing.check_previous_closed(state["user_wallet"], state["asset"])
        await self.backing.check_new_channel_id(expected_id)
        kind = state["transition"]["type"]
        if kind not in _CREATION_TYPES:
            raise _fail(f"invalid state transition: transition {kind} cannot open a channel")
        self._check_receiver(state)
        await self._settle_transfer_parties(state)
        previous = self._previous(state)
        self._check_advancement(previous, state)
        self.backing.check_backed(previous, state, expected_id, VOID_CHANNEL)
        packed = self._verify_user_sig(state, approved)
        sign_receiver = await self._receiver_signable(state)
        signature = self._node_sign(state, packed)
        channel = {
            "channel_id": state["home_channel_id"],
            "user_wallet": state["user_wallet"],
            "asset": state["asset"],
            "blockchain_id": str(chain_id),
            "token_address": ledger["token_address"],
            "challenge_duration": challenge,
            "nonce": str(nonce),
            "approved_sig_validators": bitmap,
            "status": "open",
            "state_version": "0",
            "creation_version": state["version"],
            "enforced_balance": "0",
            "created_at_ms": self._clock_ms(),
        }
        self._apply_accepted(state, channel, sign_receiver=sign_receiver)
        return {"signature": signature}

    async def submit_state(self, params: Mapping[str, Any]) -> dict[str, Any]:
        state = _parse_state(params.get("state"))
        kind = state["transition"]["type"]
        if kind in _NOT_YET:
            raise _fail(NOT_SUPPORTED_YET)
        if kind not in _SUBMIT_TYPES:
            raise _fail(f"invalid state transition: transition {kind} cannot be submitted")
        await self._settle_transfer_parties(state)
        previous = self.ledger.latest_state(state["user_wallet"], state["asset"])
        channel_id = previous.get("home_channel_id") if previous is not None else None
        channel = self.ledger.channels.get(channel_id) if channel_id else None
        if previous is None or channel is None or channel["status"] == "closed":
            raise _fail("no home channel found for this wallet and asset")
        # on chain first, as upstream: the channel operates there and nothing is ongoing
        chain = await self.backing.check_active(channel, state["user_wallet"])
        self._check_receiver(state)
        self._check_advancement(previous, state)
        self.backing.check_backed(previous, state, channel["channel_id"], chain)
        if kind == T.MUTUAL_LOCK:
            await self.check_mutual_lock(state)
        elif kind == T.ESCROW_DEPOSIT:
            await self.check_escrow_deposit(state)
        elif kind == T.ESCROW_LOCK:
            await self.check_escrow_lock(state)
        elif kind == T.ESCROW_WITHDRAW:
            await self.check_escrow_withdraw(state)
        elif kind == T.MIGRATE:
            await self.check_migrate(state)
        elif kind == T.MIGRATE_FINALIZE:
            await self.check_migrate_finalize(state)
        approved = sig_validators_from_bitmap(channel["approved_sig_validators"])
        packed = self._verify_user_sig(state, approved)
        sign_receiver = await self._receiver_signable(state)
        signature = self._node_sign(state, packed)
        self._apply_accepted(state, dict(channel), sign_receiver=sign_receiver)
        return {"signature": signature}

    def _display_wallet(self, wallet: str, asset: str) -> str:
        """The spelling of ``wallet`` its state chain already uses (ids hash the address, not
        its text, but replies should not change case under a user)."""
        latest = self.ledger.latest_state(wallet, asset)
        return latest["user_wallet"] if latest is not None else validate_address(wallet)
