"""The v1 RPC methods: parameters in, node rules applied, ledger changed, result out.

:class:`NitronodeService` holds one coroutine per method (``METHODS``). Each either returns
the result payload or raises :class:`~settlement_widgets.errors.RelayError` whose text goes
verbatim into the type-4 error frame, so clients can match the Go node's texts where the
reference gives them (``"failed to parse parameters"``, ``"transition is not supported
yet"``, ``"invalid incoming state user signature: …"``).

Every check runs before the first mutation, so a refused request changes nothing. The rules
are the Go node's as described in nitrolite-v1.md §4, §6.4; the state arithmetic itself is
the core's (:func:`~settlement_widgets.channel.v1.core.lifecycle.next_state`,
:func:`~settlement_widgets.channel.v1.core.lifecycle.apply_transition`,
:func:`~settlement_widgets.channel.v1.core.lifecycle.validate_advancement`), never re-derived.

Before any signature the node checks that the funds the state gives the user are backed
(:mod:`.backing`: channel ids never reused, on-chain steps confirmed after the chain's
``confirmation_delay_secs`` before the next state, no state for a channel the chain does
not show operating, no spend beyond the backed balance). Without a
:class:`~.chain_view.ChainView` the node assumes every co-signed on-chain step was carried
out: a channel is ``open`` once its creation state is co-signed and ``closed`` once
its finalize state is, and the ``enforced`` balance is the user balance of the last
co-signed state that goes on chain (creation, deposit, withdrawal, finalize).
"""

from __future__ import annotations

import base64
import logging
import re
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any, Final

from ....addresses import validate_address
from ....errors import InvalidAddressError, InvalidFrameError, RelayError, SettlementValueError
from ....keys import PrivateKey
from ..core.app_sessions import (
    QUORUM_SIG_SESSION_KEY,
    QUORUM_SIG_WALLET,
    app_session_id,
    app_session_key_state_hash,
    create_app_session_hash,
    update_hash,
)
from ..core.decimals import (
    decimal_places,
    exact_add,
    exact_sub,
    from_units,
    parse_decimal,
    plain_decimal_string,
)
from ..core.ids import home_channel_id, state_id
from ..core.lifecycle import apply_transition, next_state, validate_advancement
from ..core.rpc_shapes import wire_state
from ..core.state import (
    SIG_VALIDATOR_SESSION_KEY,
    channel_session_key_metadata_hash,
    pack_channel_session_key_auth,
    pack_state,
    sign_state,
)
from ..core.transitions import TransitionType, sig_validators_from_bitmap
from .backing import BackingGuard
from .chain_view import VOID_CHANNEL, ChainView, as_confirmed_view
from .config import NitronodeConfig
from .ledger import NitronodeLedger, wallet_key
from .signatures import SessionKeyAuth, decode_hex, recover_eip191, split_channel_signature

__all__ = [
    "FAILED_TO_PARSE",
    "INTERNAL_ERROR",
    "NOT_SUPPORTED_YET",
    "NitronodeService",
]

_log = logging.getLogger(__name__)

#: the Go node's fixed fallback texts (pkg/rpc/context.go, channel_v1 handlers)
FAILED_TO_PARSE: Final = "failed to parse parameters"
NOT_SUPPORTED_YET: Final = "transition is not supported yet"
INTERNAL_ERROR: Final = "an error occurred while processing the request"

_APP_ID = re.compile(r"^[a-z0-9_-]{1,66}$")
_DECIMAL_UINT = re.compile(r"^[0-9]+$")
_MAX_PARTICIPANTS: Final = 32
_MAX_SESSION_DATA: Final = 1024
_DEFAULT_PAGE: Final = 100
_MAX_PAGE: Final = 1000
_KEY_STATES_PAGE: Final = 10
_ZERO_LEDGER: Final = {
    "token_address": "0x0",
    "blockchain_id": "0",
    "user_balance": "0",
    "user_net_flow": "0",
    "node_balance": "0",
    "node_net_flow": "0",
}

T = TransitionType
#: accepted as the first state of a channel (request_creation)
_CREATION_TYPES: Final = frozenset(
    {T.ACKNOWLEDGEMENT, T.HOME_DEPOSIT, T.HOME_WITHDRAWAL, T.TRANSFER_SEND}
)
#: accepted by submit_state
_SUBMIT_TYPES: Final = frozenset(
    {T.ACKNOWLEDGEMENT, T.HOME_DEPOSIT, T.HOME_WITHDRAWAL, T.TRANSFER_SEND, T.FINALIZE}
)
#: refused by submit_state with the Go node's "not supported yet"
_NOT_YET: Final = frozenset(
    {T.MUTUAL_LOCK, T.ESCROW_LOCK, T.ESCROW_DEPOSIT, T.ESCROW_WITHDRAW, T.MIGRATE}
)
#: transitions whose co-signed state the user takes on chain (creation aside)
_ON_CHAIN: Final = frozenset({T.HOME_DEPOSIT, T.HOME_WITHDRAWAL, T.FINALIZE})
#: app-session intents
_OPERATE, _DEPOSIT, _WITHDRAW, _CLOSE = 0, 1, 2, 3

Handler = Callable[[Mapping[str, Any]], Awaitable[dict[str, Any]]]


def _fail(text: str) -> RelayError:
    return RelayError(text)


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _iso(ms: int) -> str:
    """Go marshals ``time.Time`` as RFC 3339; milliseconds are what we keep."""
    return (
        datetime.fromtimestamp(ms / 1000, UTC)
        .isoformat(timespec="milliseconds")
        .replace("+00:00", "Z")
    )


# --- parameter parsing ----------------------------------------------------------------------


def _mapping(value: Any, what: str = FAILED_TO_PARSE) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise _fail(what)
    return value


def _text(params: Mapping[str, Any], key: str, *, optional: bool = False) -> str | None:
    value = params.get(key)
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise _fail(FAILED_TO_PARSE)
    return value


def _req_text(params: Mapping[str, Any], key: str) -> str:
    value = _text(params, key)
    assert value is not None
    return value


def _uint(value: Any, *, optional: bool = False, default: int = 0) -> int:
    """A uint64 sent as a decimal string or a JSON integer (the Go side takes both)."""
    if value is None and optional:
        return default
    if isinstance(value, bool):
        raise _fail(FAILED_TO_PARSE)
    if isinstance(value, int) and 0 <= value < 2**64:
        return value
    if isinstance(value, str) and _DECIMAL_UINT.match(value) and int(value) < 2**64:
        return int(value)
    raise _fail(FAILED_TO_PARSE)


def _wallet(value: Any) -> str:
    try:
        return validate_address(value, field="wallet")
    except InvalidAddressError:
        raise _fail(FAILED_TO_PARSE) from None


def _pagination(
    params: Mapping[str, Any], *, default: int = _DEFAULT_PAGE, fixed: int | None = None
) -> tuple[int, int, str]:
    raw = params.get("pagination")
    if raw is None:
        raw = {}
    page = _mapping(raw)
    offset = _uint(page.get("offset"), optional=True)
    limit = fixed if fixed is not None else _uint(page.get("limit"), optional=True, default=default)
    limit = max(1, min(limit or default, _MAX_PAGE))
    sort = page.get("sort") or "desc"
    if sort not in ("asc", "desc"):
        raise _fail(FAILED_TO_PARSE)
    return offset, limit, sort


def _page(items: list[Any], offset: int, limit: int) -> tuple[list[Any], dict[str, int]]:
    total = len(items)
    return items[offset : offset + limit], {
        "page": offset // limit + 1,
        "per_page": limit,
        "total_count": total,
        "page_count": (total + limit - 1) // limit,
    }


_LEDGER_FIELDS: Final = (
    "token_address",
    "blockchain_id",
    "user_balance",
    "user_net_flow",
    "node_balance",
    "node_net_flow",
)


def _parse_state(value: Any) -> dict[str, Any]:
    """A wire ``StateV1`` checked for shape (types, not rules), in the SDK's key order."""
    state = _mapping(value, "failed to parse state")
    try:
        transition = state["transition"]
        if not isinstance(transition, Mapping) or not isinstance(transition.get("type"), int):
            raise InvalidFrameError("transition")
        for key in ("tx_id", "account_id", "amount"):
            if not isinstance(transition.get(key), str):
                raise InvalidFrameError(key)
        for key in ("id", "asset", "user_wallet"):
            if not isinstance(state.get(key), str):
                raise InvalidFrameError(key)
        validate_address(state["user_wallet"], field="user_wallet")
        for key in ("epoch", "version"):
            if not isinstance(state.get(key), str) or not _DECIMAL_UINT.match(state[key]):
                raise InvalidFrameError(key)
        for key in ("home_ledger", "escrow_ledger"):
            ledger = state.get(key)
            if ledger is None and key == "escrow_ledger":
                continue
            if not isinstance(ledger, Mapping) or not all(
                isinstance(ledger.get(f), str) for f in _LEDGER_FIELDS
            ):
                raise InvalidFrameError(key)
            for f in _LEDGER_FIELDS[2:]:
                parse_decimal(ledger[f])
        for key in ("home_channel_id", "escrow_channel_id", "user_sig", "node_sig"):
            if state.get(key) is not None and not isinstance(state[key], str):
                raise InvalidFrameError(key)
        parse_decimal(transition["amount"])
        parsed = wire_state(state)
    except (KeyError, SettlementValueError) as exc:  # InvalidFrameError is one
        raise _fail(
            f"failed to parse state: invalid {exc.args[0] if exc.args else 'state'}"
        ) from None
    # wire_state re-renders the transition amount; keep the text the user signed
    parsed["transition"]["amount"] = transition["amount"]
    return parsed


def _void_state(wallet: str, asset: str) -> dict[str, Any]:
    """The implicit state before a wallet's first one (version 0, empty ledger)."""
    return {
        "id": state_id(wallet, asset, 0, 0),
        "transition": {"type": 0, "tx_id": "", "account_id": "", "amount": "0"},
        "asset": asset,
        "user_wallet": wallet,
        "epoch": "0",
        "version": "0",
        "home_ledger": dict(_ZERO_LEDGER),
    }


def _check_ledger(ledger: Mapping[str, Any], where: str) -> None:
    """Go ``validateLedger``: balances ≥ 0 and balances sum to net flows."""
    user, node = parse_decimal(ledger["user_balance"]), parse_decimal(ledger["node_balance"])
    if user < 0:
        raise _fail(f"invalid state transition: {where} user balance cannot be negative")
    if node < 0:
        raise _fail(f"invalid state transition: {where} node balance cannot be negative")
    flows = exact_add(ledger["user_net_flow"], ledger["node_net_flow"])
    if exact_add(user, node) != flows:
        raise _fail(f"invalid state transition: {where} balances do not match net flows")


class NitronodeService:
    """The node's request handlers over one :class:`NitronodeLedger`."""

    def __init__(
        self,
        config: NitronodeConfig,
        ledger: NitronodeLedger,
        *,
        chain_view: ChainView | None = None,
        clock_ms: Callable[[], int] = _now_ms,
    ) -> None:
        self.config = config
        self.ledger = ledger
        #: head reads (wire status, ``enforced``) and confirmed reads (the backing rules)
        self.chain_view = as_confirmed_view(chain_view)
        self.backing = BackingGuard(config, ledger, self.chain_view)
        self._key: PrivateKey = config.node_key
        self._decimals = config.token_decimals()
        self._clock_ms = clock_ms
        self.methods: dict[str, Handler] = {
            "node.v1.ping": self.ping,
            "node.v1.get_config": self.get_config,
            "node.v1.get_assets": self.get_assets,
            "user.v1.get_balances": self.get_balances,
            "user.v1.get_transactions": self.get_transactions,
            "channels.v1.get_home_channel": self.get_home_channel,
            "channels.v1.get_escrow_channel": self.get_escrow_channel,
            "channels.v1.get_channels": self.get_channels,
            "channels.v1.get_latest_state": self.get_latest_state,
            "channels.v1.request_creation": self.request_creation,
            "channels.v1.submit_state": self.submit_state,
            "channels.v1.submit_session_key_state": self.submit_channel_key_state,
            "channels.v1.get_last_key_states": self.get_channel_key_states,
            "app_sessions.v1.create_app_session": self.create_app_session,
            "app_sessions.v1.submit_deposit_state": self.submit_deposit_state,
            "app_sessions.v1.submit_app_state": self.submit_app_state,
            "app_sessions.v1.get_app_definition": self.get_app_definition,
            "app_sessions.v1.get_app_sessions": self.get_app_sessions,
            "app_sessions.v1.submit_session_key_state": self.submit_app_key_state,
            "app_sessions.v1.get_last_key_states": self.get_app_key_states,
        }

    @property
    def node_address(self) -> str:
        return self._key.address

    # --- node -----------------------------------------------------------------------------

    async def ping(self, params: Mapping[str, Any]) -> dict[str, Any]:
        return {}

    async def get_config(self, params: Mapping[str, Any]) -> dict[str, Any]:
        validators = bytes(self.config.supported_sig_validators)
        return {  # the Go node marshals the top level sorted by key
            "blockchains": [c.to_json() for c in self.config.chains],
            "node_address": self.node_address.lower(),
            "node_version": self.config.node_version,
            "supported_sig_validators": base64.b64encode(validators).decode(),
        }

    async def get_assets(self, params: Mapping[str, Any]) -> dict[str, Any]:
        chain = params.get("blockchain_id")
        assets = [a.to_json() for a in self.config.assets]
        if chain is not None:  # the Go node keeps only that chain's tokens
            wanted = str(_uint(chain))
            assets = [
                {**a, "tokens": [t for t in a["tokens"] if t["blockchain_id"] == wanted]}
                for a in assets
            ]
            assets = [a for a in assets if a["tokens"]]
        return {"assets": assets}

    # --- users ----------------------------------------------------------------------------

    async def get_balances(self, params: Mapping[str, Any]) -> dict[str, Any]:
        wallet = _wallet(params.get("wallet"))
        balances = []
        for asset in self.ledger.assets_of(wallet):
            state = self.ledger.latest_state(wallet, asset)
            assert state is not None
            enforced = await self._enforced(wallet, asset)
            balances.append(
                {
                    "asset": asset,
                    "amount": plain_decimal_string(state["home_ledger"]["user_balance"]),
                    "enforced": plain_decimal_string(enforced),
                }
            )
        return {"balances": balances}

    async def _enforced(self, wallet: str, asset: str) -> Decimal:
        channel = self._current_channel(wallet, asset)
        if channel is None:
            return Decimal(0)
        if self.chain_view is not None:
            units = await self.chain_view.enforced_user_balance(channel["channel_id"])
            token = self._decimals(int(channel["blockchain_id"]), channel["token_address"])
            return from_units(units, token)
        return parse_decimal(channel.get("enforced_balance", "0"))

    async def get_transactions(self, params: Mapping[str, Any]) -> dict[str, Any]:
        wallet = wallet_key(_wallet(params.get("wallet")))
        asset = _text(params, "asset", optional=True)
        tx_type = params.get("tx_type")
        if tx_type is not None and (isinstance(tx_type, bool) or not isinstance(tx_type, int)):
            raise _fail(FAILED_TO_PARSE)
        start = _uint(params.get("from_time"), optional=True, default=0)
        end = _uint(params.get("to_time"), optional=True, default=2**64 - 1)
        offset, limit, sort = _pagination(params)
        found = [
            tx
            for tx in self.ledger.transactions
            if wallet in (tx["from_account"].lower(), tx["to_account"].lower())
            and (asset is None or tx["asset"] == asset)
            and (tx_type is None or tx["tx_type"] == tx_type)
            and start <= tx["created_at_ms"] // 1000 <= end
        ]
        if sort == "desc":
            found.reverse()
        page, metadata = _page(found, offset, limit)
        return {
            "transactions": [{k: v for k, v in tx.items() if k != "created_at_ms"} for tx in page],
            "metadata": metadata,
        }

    # --- channels: reads ------------------------------------------------------------------

    def _current_channel(self, wallet: str, asset: str) -> dict[str, Any] | None:
        channels = self.ledger.channels_of(wallet, asset)
        return channels[-1] if channels else None

    async def _status(self, channel: Mapping[str, Any]) -> str:
        if self.chain_view is not None:
            return await self.chain_view.channel_status(channel["channel_id"])
        return str(channel["status"])

    async def _channel_json(self, channel: Mapping[str, Any]) -> dict[str, Any]:
        return {
            "channel_id": channel["channel_id"],
            "user_wallet": channel["user_wallet"],
            "asset": channel["asset"],
            "type": "home",
            "blockchain_id": channel["blockchain_id"],
            "token_address": channel["token_address"],
            "challenge_duration": channel["challenge_duration"],
            "challenge_expires_at": None,
            "nonce": channel["nonce"],
            "approved_sig_validators": channel["approved_sig_validators"],
            "status": await self._status(channel),
            "state_version": channel["state_version"],
        }

    async def get_home_channel(self, params: Mapping[str, Any]) -> dict[str, Any]:
        wallet = _wallet(params.get("wallet"))
        channel = self._current_channel(wallet, _req_text(params, "asset"))
        return {} if channel is None else {"channel": await self._channel_json(channel)}

    async def get_escrow_channel(self, params: Mapping[str, Any]) -> dict[str, Any]:
        _req_text(params, "escrow_channel_id")
        return {}  # escrow operations are not supported by this node

    async def get_channels(self, params: Mapping[str, Any]) -> dict[str, Any]:
        wallet = _wallet(params.get("wallet"))
        asset = _text(params, "asset", optional=True)
        status = _text(params, "status", optional=True)
        kind = _text(params, "channel_type", optional=True)
        offset, limit, sort = _pagination(params)
        channels = [] if kind == "escrow" else self.ledger.channels_of(wallet, asset)
        rendered = [await self._channel_json(c) for c in channels]
        if status is not None:
            rendered = [c for c in rendered if c["status"] == status]
        if sort == "desc":
            rendered.reverse()
        page, metadata = _page(rendered, offset, limit)
        return {"channels": page, "metadata": metadata}

    async def get_latest_state(self, params: Mapping[str, Any]) -> dict[str, Any]:
        wallet = _wallet(params.get("wallet"))
        only_signed = params.get("only_signed", False)
        if not isinstance(only_signed, bool):
            raise _fail(FAILED_TO_PARSE)
        state = self.ledger.latest_state(
            wallet, _req_text(params, "asset"), only_signed=only_signed
        )
        return {} if state is None else {"state": state}

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
    ) -> None:
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

    def _node_sign(self, state: dict[str, Any]) -> str:
        signature = "0x" + sign_state(state, self._key, self._decimals).hex()
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
        elif kind in (T.HOME_WITHDRAWAL, T.FINALIZE):
            self._record(state, int(kind), wallet, channel["channel_id"])

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
        previous = self._previous(state)
        self._check_advancement(previous, state)
        self.backing.check_backed(previous, state, expected_id, VOID_CHANNEL)
        self._verify_user_sig(state, approved)
        sign_receiver = await self._receiver_signable(state)
        signature = self._node_sign(state)
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
        approved = sig_validators_from_bitmap(channel["approved_sig_validators"])
        self._verify_user_sig(state, approved)
        sign_receiver = await self._receiver_signable(state)
        signature = self._node_sign(state)
        self._apply_accepted(state, dict(channel), sign_receiver=sign_receiver)
        return {"signature": signature}

    # --- session keys -----------------------------------------------------------------------

    def _key_state(self, params: Mapping[str, Any], scopes: Sequence[str]) -> dict[str, Any]:
        raw = _mapping(params.get("state"))
        state: dict[str, Any] = {
            "user_address": _wallet(raw.get("user_address")),
            "session_key": _wallet(raw.get("session_key")),
            "version": str(_uint(raw.get("version"))),
        }
        for scope in scopes:
            items = raw.get(scope, [])
            if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
                raise _fail(FAILED_TO_PARSE)
            state[scope] = list(items)
        state["expires_at"] = str(_uint(raw.get("expires_at")))
        state["user_sig"] = _req_text(raw, "user_sig")
        session_sig = _text(raw, "session_key_sig", optional=True)
        if session_sig:
            state["session_key_sig"] = session_sig
        # keep the addresses as the user sent them: the hashes do not depend on letter case
        state["user_address"] = raw["user_address"]
        state["session_key"] = raw["session_key"]
        return state

    def _store_key_state(self, kind: str, state: dict[str, Any], message: bytes) -> None:
        history = self.ledger.key_state_history(kind, state["user_address"], state["session_key"])
        expected = int(history[-1]["version"]) + 1 if history else 1
        if int(state["version"]) != expected:
            raise _fail(f"invalid session key state: version must be {expected}")
        try:
            user_sig = decode_hex(state["user_sig"], field="user_sig")
            if recover_eip191(message, user_sig).lower() != state["user_address"].lower():
                raise SettlementValueError("user_sig is not from user_address")
            if int(state["expires_at"]) > self._clock_ms() // 1000:
                if "session_key_sig" not in state:
                    raise SettlementValueError("session_key_sig is required")
                key_sig = decode_hex(state["session_key_sig"], field="session_key_sig")
                if recover_eip191(message, key_sig).lower() != state["session_key"].lower():
                    raise SettlementValueError("session_key_sig is not from session_key")
        except SettlementValueError as exc:
            raise _fail(f"invalid session key state signature: {exc}") from None
        self.ledger.put_key_state(kind, state)

    async def submit_channel_key_state(self, params: Mapping[str, Any]) -> dict[str, Any]:
        state = self._key_state(params, ("assets",))
        metadata = channel_session_key_metadata_hash(
            state["user_address"], state["version"], state["assets"], state["expires_at"]
        )
        self._store_key_state(
            "channel", state, pack_channel_session_key_auth(state["session_key"], metadata)
        )
        return {}

    async def submit_app_key_state(self, params: Mapping[str, Any]) -> dict[str, Any]:
        state = self._key_state(params, ("application_ids", "app_session_ids"))
        self._store_key_state("app", state, app_session_key_state_hash(state))
        return {}

    def _key_states(self, kind: str, params: Mapping[str, Any]) -> dict[str, Any]:
        user = _wallet(params.get("user_address"))
        session_key = _text(params, "session_key", optional=True)
        include_inactive = params.get("include_inactive", False)
        if not isinstance(include_inactive, bool):
            raise _fail(FAILED_TO_PARSE)
        offset, limit, _ = _pagination(params, fixed=_KEY_STATES_PAGE)
        now_s = self._clock_ms() // 1000
        states = [
            s
            for s in self.ledger.latest_key_states(kind, user)
            if (session_key is None or s["session_key"].lower() == session_key.lower())
            and (include_inactive or int(s["expires_at"]) > now_s)
        ]
        page, metadata = _page(states, offset, limit)
        return {"states": page, "metadata": metadata}

    async def get_channel_key_states(self, params: Mapping[str, Any]) -> dict[str, Any]:
        return self._key_states("channel", params)

    async def get_app_key_states(self, params: Mapping[str, Any]) -> dict[str, Any]:
        return self._key_states("app", params)

    # --- app sessions -----------------------------------------------------------------------

    def _quorum(
        self,
        digest: bytes,
        signatures: Any,
        participants: Sequence[Mapping[str, Any]],
        quorum: int,
        scope: tuple[str, str | None],
    ) -> None:
        """Attribute each quorum signature to a participant and require ``quorum`` weight."""
        if not isinstance(signatures, list) or not all(isinstance(s, str) for s in signatures):
            raise _fail(FAILED_TO_PARSE)
        weights = {
            wallet_key(p["wallet_address"]): int(p["signature_weight"]) for p in participants
        }
        signed: set[str] = set()
        now_s = self._clock_ms() // 1000
        for text in signatures:
            try:
                raw = decode_hex(text, field="quorum signature")
                if len(raw) != 66 or raw[0] not in (QUORUM_SIG_WALLET, QUORUM_SIG_SESSION_KEY):
                    raise SettlementValueError("expected 0xA1 or 0xA2 and a 65-byte signature")
                signer = recover_eip191(digest, raw[1:]).lower()
            except SettlementValueError as exc:
                raise _fail(f"invalid quorum signature: {exc}") from None
            if raw[0] == QUORUM_SIG_SESSION_KEY:
                signer = self._app_key_owner(signer, scope, now_s) or ""
            if signer not in weights:
                raise _fail("invalid quorum signature: signer is not a participant")
            signed.add(signer)
        if sum(weights[s] for s in signed) < quorum:
            raise _fail("quorum not reached")

    def _app_key_owner(
        self, session_key: str, scope: tuple[str, str | None], now_s: int
    ) -> str | None:
        """The wallet whose active app session key this is, for this application/session."""
        application, session_id = scope
        for (kind, user, key), history in self.ledger.key_states.items():
            if kind != "app" or key != session_key or not history:
                continue
            latest = history[-1]
            if int(latest["expires_at"]) <= now_s:
                continue
            if application in latest["application_ids"] or (
                session_id is not None and session_id in latest["app_session_ids"]
            ):
                return user
        return None

    async def create_app_session(self, params: Mapping[str, Any]) -> dict[str, Any]:
        raw = _mapping(params.get("definition"))
        application = _req_text(raw, "application_id")
        participants_raw = raw.get("participants")
        quorum = raw.get("quorum")
        session_data = params.get("session_data", "")
        if (
            not isinstance(participants_raw, list)
            or isinstance(quorum, bool)
            or not isinstance(quorum, int)
            or not isinstance(session_data, str)
        ):
            raise _fail(FAILED_TO_PARSE)
        participants: list[dict[str, Any]] = []
        for p in participants_raw:
            p = _mapping(p)
            weight = p.get("signature_weight")
            if isinstance(weight, bool) or not isinstance(weight, int) or not 0 <= weight <= 255:
                raise _fail(FAILED_TO_PARSE)
            participants.append(
                {"wallet_address": _req_text(p, "wallet_address"), "signature_weight": weight}
            )
            _wallet(p["wallet_address"])
        definition: dict[str, Any] = {
            "application_id": application,
            "participants": participants,
            "quorum": quorum,
            "nonce": str(_uint(raw.get("nonce"))),
        }
        if not _APP_ID.match(application):
            raise _fail(
                "invalid app session definition: application_id must match ^[a-z0-9_-]{1,66}$"
            )
        if not participants or len(participants) > _MAX_PARTICIPANTS:
            raise _fail(f"invalid app session definition: 1 to {_MAX_PARTICIPANTS} participants")
        wallets = [wallet_key(p["wallet_address"]) for p in participants]
        if len(set(wallets)) != len(wallets):
            raise _fail("invalid app session definition: duplicate participant")
        if not 0 < quorum <= sum(p["signature_weight"] for p in participants):
            raise _fail("invalid app session definition: quorum exceeds the total weight")
        if len(session_data.encode()) > _MAX_SESSION_DATA:
            raise _fail(f"session_data exceeds {_MAX_SESSION_DATA} bytes")
        session_id = "0x" + app_session_id(definition).hex()
        if session_id in self.ledger.app_sessions:
            raise _fail("app session already exists")
        digest = create_app_session_hash(definition, session_data)
        self._quorum(digest, params.get("quorum_sigs"), participants, quorum, (application, None))
        now = self._clock_ms()
        self.ledger.put_app_session(
            {
                "app_session_id": session_id,
                "status": "open",
                "app_definition": definition,
                "session_data": session_data,
                "version": "1",
                "allocations": [],
                "created_at_ms": now,
                "updated_at_ms": now,
            }
        )
        return {"app_session_id": session_id, "version": "1", "status": "open"}

    def _app_update(
        self, params: Mapping[str, Any]
    ) -> tuple[dict[str, Any], dict[str, Any], dict[tuple[str, str], Decimal]]:
        """(update, session, new allocations) after the checks every update shares."""
        raw = _mapping(params.get("app_state_update"))
        intent = raw.get("intent")
        allocations_raw = raw.get("allocations")
        session_data = raw.get("session_data", "")
        if (
            isinstance(intent, bool)
            or not isinstance(intent, int)
            or not isinstance(allocations_raw, list)
            or not isinstance(session_data, str)
        ):
            raise _fail(FAILED_TO_PARSE)
        update: dict[str, Any] = {
            "app_session_id": _req_text(raw, "app_session_id").lower(),
            "intent": intent,
            "version": str(_uint(raw.get("version"))),
            "allocations": [],
            "session_data": session_data,
        }
        allocations: dict[tuple[str, str], Decimal] = {}
        for a in allocations_raw:
            a = _mapping(a)
            entry = {
                "participant": _req_text(a, "participant"),
                "asset": _req_text(a, "asset"),
                "amount": _req_text(a, "amount"),
            }
            _wallet(entry["participant"])
            update["allocations"].append(entry)
            try:
                amount = parse_decimal(entry["amount"])
            except SettlementValueError:
                raise _fail(FAILED_TO_PARSE) from None
            asset = self.config.asset(entry["asset"])
            if asset is None:
                raise _fail(f"asset {entry['asset']} is not supported")
            if amount < 0 or decimal_places(amount) > asset.decimals:
                raise _fail(f"invalid allocation amount {entry['amount']}")
            key = (wallet_key(entry["participant"]), entry["asset"])
            if key in allocations:
                raise _fail("invalid allocations: duplicate participant and asset")
            allocations[key] = amount
        session = self.ledger.app_sessions.get(update["app_session_id"])
        if session is None:
            raise _fail("app session not found")
        if session["status"] != "open":
            raise _fail("app session is closed")
        if int(update["version"]) != int(session["version"]) + 1:
            raise _fail(f"invalid app session version: expected {int(session['version']) + 1}")
        members = {
            wallet_key(p["wallet_address"]) for p in session["app_definition"]["participants"]
        }
        if any(w not in members for w, _ in allocations):
            raise _fail("invalid allocations: allocation to a non-participant")
        if len(session_data.encode()) > _MAX_SESSION_DATA:
            raise _fail(f"session_data exceeds {_MAX_SESSION_DATA} bytes")
        definition = session["app_definition"]
        try:
            digest = update_hash(update)
        except SettlementValueError:
            raise _fail(FAILED_TO_PARSE) from None
        self._quorum(
            digest,
            params.get("quorum_sigs"),
            definition["participants"],
            int(definition["quorum"]),
            (definition["application_id"], update["app_session_id"]),
        )
        return update, session, allocations

    @staticmethod
    def _current_allocations(session: Mapping[str, Any]) -> dict[tuple[str, str], Decimal]:
        return {
            (wallet_key(a["participant"]), a["asset"]): parse_decimal(a["amount"])
            for a in session["allocations"]
        }

    @staticmethod
    def _totals(allocations: Mapping[tuple[str, str], Decimal]) -> dict[str, Decimal]:
        totals: dict[str, Decimal] = {}
        for (_, asset), amount in allocations.items():
            totals[asset] = exact_add(totals.get(asset, Decimal(0)), amount)
        return {a: t for a, t in totals.items() if t != 0}

    def _advance_session(
        self, session: Mapping[str, Any], update: Mapping[str, Any], status: str = "open"
    ) -> None:
        self.ledger.put_app_session(
            {
                **session,
                "status": status,
                "version": update["version"],
                "session_data": update["session_data"],
                "allocations": [
                    {**a, "amount": plain_decimal_string(a["amount"])}
                    for a in update["allocations"]
                ],
                "updated_at_ms": self._clock_ms(),
            }
        )

    async def submit_deposit_state(self, params: Mapping[str, Any]) -> dict[str, Any]:
        user_state = _parse_state(params.get("user_state"))
        update, session, allocations = self._app_update(params)
        if update["intent"] != _DEPOSIT:
            raise _fail("invalid app state update: intent must be deposit")
        current = self._current_allocations(session)
        deltas = {
            k: exact_sub(allocations.get(k, Decimal(0)), current.get(k, Decimal(0)))
            for k in set(current) | set(allocations)
        }
        if any(d < 0 for d in deltas.values()):
            raise _fail("invalid app state update: a deposit cannot decrease an allocation")
        grown = {k: d for k, d in deltas.items() if d > 0}
        depositor = (wallet_key(user_state["user_wallet"]), user_state["asset"])
        transition = user_state["transition"]
        if list(grown) != [depositor]:
            raise _fail("invalid app state update: only the depositor's allocation may grow")
        if transition["type"] != T.COMMIT:
            raise _fail("invalid state transition: user_state must carry a commit transition")
        if transition["account_id"].lower() != update["app_session_id"]:
            raise _fail("invalid state transition: commit account must be the app session id")
        if parse_decimal(transition["amount"]) != grown[depositor]:
            raise _fail("invalid state transition: commit amount does not match the deposit")
        previous = self.ledger.latest_state(user_state["user_wallet"], user_state["asset"])
        channel_id = previous.get("home_channel_id") if previous is not None else None
        channel = self.ledger.channels.get(channel_id) if channel_id else None
        if previous is None or channel is None:
            raise _fail("no home channel found for this wallet and asset")
        chain = await self.backing.check_active(channel, user_state["user_wallet"])
        self._check_advancement(previous, user_state)
        self.backing.check_backed(previous, user_state, channel["channel_id"], chain)
        self._verify_user_sig(
            user_state, sig_validators_from_bitmap(channel["approved_sig_validators"])
        )
        signature = self._node_sign(user_state)
        self.ledger.put_state(user_state)
        self._record(user_state, int(T.COMMIT), user_state["user_wallet"], update["app_session_id"])
        self._advance_session(session, update)
        return {"signature": signature}

    async def submit_app_state(self, params: Mapping[str, Any]) -> dict[str, Any]:
        update, session, allocations = self._app_update(params)
        intent = update["intent"]
        current = self._current_allocations(session)
        if intent == _DEPOSIT:
            raise _fail("invalid app state update: deposits go through submit_deposit_state")
        if intent not in (_OPERATE, _WITHDRAW, _CLOSE):
            raise _fail(f"invalid app state update: unknown intent {intent}")
        releases: list[tuple[str, str, Decimal]] = []
        if intent in (_OPERATE, _CLOSE):
            if self._totals(allocations) != self._totals(current):
                raise _fail("invalid app state update: allocations must keep the session totals")
            if intent == _CLOSE:
                releases = [(w, a, x) for (w, a), x in allocations.items() if x > 0]
        else:
            for key in set(current) | set(allocations):
                delta = exact_sub(current.get(key, Decimal(0)), allocations.get(key, Decimal(0)))
                if delta < 0:
                    raise _fail("invalid app state update: a withdrawal cannot grow an allocation")
                if delta > 0:
                    releases.append((*key, delta))
        wallets = {
            wallet_key(p["wallet_address"]): p["wallet_address"]
            for p in session["app_definition"]["participants"]
        }
        signable = [await self.backing.may_sign_issued(w, a) for w, a, _ in releases]
        issued = []
        for (wallet, asset, amount), sign in zip(releases, signable, strict=True):
            state = self._issue(
                self._display_wallet(wallets[wallet], asset),
                asset,
                {
                    "type": int(T.RELEASE),
                    "account_id": update["app_session_id"],
                    "amount": plain_decimal_string(amount),
                },
                sign=sign,
            )
            issued.append(state)
        self._advance_session(session, update, "closed" if intent == _CLOSE else "open")
        for state in issued:
            self.ledger.put_state(state)
            self._record(state, int(T.RELEASE), update["app_session_id"], state["user_wallet"])
        return {}

    def _display_wallet(self, wallet: str, asset: str) -> str:
        """The spelling of ``wallet`` its state chain already uses (ids hash the address, not
        its text, but replies should not change case under a user)."""
        latest = self.ledger.latest_state(wallet, asset)
        return latest["user_wallet"] if latest is not None else validate_address(wallet)

    def _session_json(self, session: Mapping[str, Any]) -> dict[str, Any]:
        out = {
            "app_session_id": session["app_session_id"],
            "status": session["status"],
            "app_definition": session["app_definition"],
        }
        if session["session_data"]:
            out["session_data"] = session["session_data"]
        out["version"] = session["version"]
        out["allocations"] = session["allocations"]
        return out

    async def get_app_definition(self, params: Mapping[str, Any]) -> dict[str, Any]:
        session = self.ledger.app_sessions.get(_req_text(params, "app_session_id").lower())
        return {} if session is None else {"definition": session["app_definition"]}

    async def get_app_sessions(self, params: Mapping[str, Any]) -> dict[str, Any]:
        session_id = _text(params, "app_session_id", optional=True)
        participant = _text(params, "participant", optional=True)
        status = _text(params, "status", optional=True)
        if session_id is None and participant is None:
            raise _fail("either app_session_id or participant must be provided")
        offset, limit, sort = _pagination(params)
        sessions = sorted(
            self.ledger.app_sessions.values(),
            key=lambda s: (s["created_at_ms"], s["app_session_id"]),
        )
        if session_id is not None:
            sessions = [s for s in sessions if s["app_session_id"] == session_id.lower()]
        if participant is not None:
            sessions = [
                s
                for s in sessions
                if any(
                    p["wallet_address"].lower() == participant.lower()
                    for p in s["app_definition"]["participants"]
                )
            ]
        if status is not None:
            sessions = [s for s in sessions if s["status"] == status]
        if sort == "desc":
            sessions.reverse()
        page, metadata = _page(sessions, offset, limit)
        return {"app_sessions": [self._session_json(s) for s in page], "metadata": metadata}
