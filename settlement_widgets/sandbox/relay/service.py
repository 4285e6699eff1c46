"""What the relay node does with each request and each custody event (ClearNode v0.5 rules).

:class:`RelayService` is the protocol without the sockets: it takes a parsed request and the
connection's :class:`Session`, checks it the way the ClearNode does, changes the
:class:`~.ledger.Ledger` in memory and returns an :class:`Outcome` (the reply and the
notifications to push). A refusal raises :class:`~settlement_widgets.errors.RelayError` whose
text is the node's error message (erc7824-nitrolite.md §3, the ClearNode's own texts where
the reference quotes none); nothing is changed in that case, because every check runs before
the first mutation.

Handlers never await: a request is checked and applied in one step of the event loop, so
two requests can never interleave between a balance check and the debit.
"""

from __future__ import annotations

import sqlite3
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Final

from ...addresses import validate_address
from ...erc7824.amounts import is_decimal_amount, parse_decimal_amount, to_decimal_string
from ...erc7824.auth import ALLOWANCE_TYPEHASH, POLICY_TYPEHASH
from ...erc7824.eip712 import EIP712Domain, typed_data_digest
from ...erc7824.ids import channel_id as compute_channel_id
from ...erc7824.keccak import keccak256
from ...erc7824.resize import resize_data
from ...erc7824.signing import sign_state
from ...erc7824.types import Allocation, Channel, State, StateIntent
from ...errors import InvalidAddressError, RelayError, SettlementError
from ...keys import PrivateKey, recover_address_bytes
from .config import RelayConfig
from .jwt import decode_jwt, encode_jwt
from .ledger import CHANNEL_STATUSES, TX_TYPES, ChannelRecord, Ledger, SessionKeyRecord, TxRecord
from .wire import Incoming, recover_signer

__all__ = [
    "CLEARNODE_APPLICATION",
    "PRIVATE_METHODS",
    "PUBLIC_METHODS",
    "Note",
    "Outcome",
    "RelayService",
    "Session",
]

#: a session key of this application may spend without allowance checks (§3.3)
CLEARNODE_APPLICATION: Final = "clearnode"
PUBLIC_METHODS: Final = (
    "ping",
    "get_config",
    "get_assets",
    "get_channels",
    "get_ledger_transactions",
    "auth_request",
    "auth_verify",
)
PRIVATE_METHODS: Final = (
    "get_ledger_balances",
    "get_user_tag",
    "get_session_keys",
    "transfer",
    "create_channel",
    "resize_channel",
    "close_channel",
)
_CHALLENGE_TTL_S: Final = 300
_MAX_CHALLENGES: Final = 1000
_DEFAULT_LIMIT: Final = 10
_MAX_LIMIT: Final = 100
_TAG_ALPHABET: Final = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"


@dataclass(slots=True)
class Session:
    """Authentication state of one WebSocket connection."""

    wallet: str | None = None
    session_key: str | None = None
    application: str | None = None


@dataclass(slots=True)
class Note:
    """A notification for ``wallet``. ``bu`` and ``tr`` of one commit batch are coalesced
    (latest balances; all transactions), the others are sent as they are."""

    wallet: str
    method: str
    result: Any = None
    txs: tuple[dict[str, Any], ...] = ()


@dataclass(slots=True)
class Outcome:
    """A reply (``method`` and ``result``) plus what to push and to whom."""

    method: str
    result: Any
    notes: list[Note] = field(default_factory=list)
    #: the connection just authenticated as this wallet: push ``channels`` and ``bu`` to it
    authenticated: str | None = None


@dataclass(slots=True)
class _Challenge:
    address: str
    session_key: str
    application: str
    allowances: list[tuple[str, str]]
    expires_at: int
    scope: str
    created: float


@lru_cache(maxsize=256)
def _rfc3339_base(seconds: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))


def _rfc3339(ms: int, *, millis: bool = False) -> str:
    # memoised per second: a busy node formats the same second for every transfer in it
    seconds, rest = divmod(ms, 1000)
    base = _rfc3339_base(seconds)
    return f"{base}.{rest:03d}Z" if millis else base + "Z"


@lru_cache(maxsize=4096)
def _amount_text(units: int, decimals: int) -> str:
    """``to_decimal_string`` memoised: every reply and ``tr`` repeats the few amounts a
    client sends, and ``bu`` the balances."""
    return to_decimal_string(units, decimals, signed=True)


@lru_cache(maxsize=4096)
def _units(text: str, decimals: int) -> int:
    """``parse_decimal_amount`` memoised: clients send the same few amount strings over and
    over, and allowances are re-read on every transfer. Errors are raised, never cached."""
    return parse_decimal_amount(text, decimals)


def _fail(message: str) -> RelayError:
    return RelayError(message)


def _policy_digest(challenge: _Challenge, token: str) -> bytes:
    """The EIP-712 ``Policy`` digest rebuilt from the stored ``auth_request`` values.

    Written out (rather than through :class:`~settlement_widgets.erc7824.auth.AuthPolicy`,
    which validates its fields) because the node must first learn *who* signed, and only
    then judge the allowances, answering ``unsupported token: ...`` as the ClearNode does.
    """
    allowances = b"".join(
        keccak256(ALLOWANCE_TYPEHASH + keccak256(a.encode()) + keccak256(b.encode()))
        for a, b in challenge.allowances
    )
    struct = keccak256(
        POLICY_TYPEHASH
        + keccak256(token.encode())
        + keccak256(challenge.scope.encode())
        + bytes(12)
        + bytes.fromhex(challenge.address[2:])
        + bytes(12)
        + bytes.fromhex(challenge.session_key[2:])
        + challenge.expires_at.to_bytes(32, "big")
        + keccak256(allowances)
    )
    return typed_data_digest(EIP712Domain(name=challenge.application).separator, struct)


class RelayService:
    """The node's request handlers and chain-event effects over one :class:`Ledger`."""

    def __init__(
        self,
        config: RelayConfig,
        ledger: Ledger,
        broker_key: PrivateKey,
        jwt_secret: bytes,
        *,
        read_connection: sqlite3.Connection | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.config = config
        self.ledger = ledger
        self.broker = broker_key
        self.broker_address = broker_key.address
        self._jwt_secret = jwt_secret
        self._read = read_connection
        self._clock = clock
        self._challenges: dict[str, _Challenge] = {}
        self._checksums: dict[bytes, str] = {}
        self._addresses: dict[str, str] = {}
        self._decimals = {a.symbol: a.decimals for a in config.assets}
        self._config_result = {
            "broker_address": self.broker_address,
            "networks": [n.to_json() for n in config.networks],
        }
        self._public: dict[str, Callable[[Session, Incoming], Outcome]] = {
            "ping": self._ping,
            "get_config": self._get_config,
            "get_assets": self._get_assets,
            "get_channels": self._get_channels,
            "get_ledger_transactions": self._get_ledger_transactions,
            "auth_request": self._auth_request,
            "auth_verify": self._auth_verify,
        }
        self._private: dict[str, Callable[[Session, Incoming], Outcome]] = {
            "get_ledger_balances": self._get_ledger_balances,
            "get_user_tag": self._get_user_tag,
            "get_session_keys": self._get_session_keys,
            "transfer": self._transfer,
            "create_channel": self._create_channel,
            "resize_channel": self._resize_channel,
            "close_channel": self._close_channel,
        }
        self._seed_faucet()

    # --- dispatch -----------------------------------------------------------------------------

    def handle(self, session: Session, req: Incoming) -> Outcome:
        """Check and apply one request; raise :class:`RelayError` with the node's message."""
        handler = self._public.get(req.method)
        if handler is not None:
            return handler(session, req)
        handler = self._private.get(req.method)
        if handler is None:
            raise _fail(f"unknown method: {req.method}")
        if session.wallet is None:
            raise _fail("authentication required")
        self._check_timestamp(req.timestamp)
        return handler(session, req)

    def _check_timestamp(self, ts: int) -> None:
        # ClearNode ValidateTimestamp: 13-digit Unix ms, at most MSG_EXPIRY_TIME old
        if not 1_000_000_000_000 <= ts <= 9_999_999_999_999:
            raise _fail("invalid message timestamp")
        if self._now_ms() - ts > self.config.message_expiry_ms:
            raise _fail("invalid message timestamp")

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)

    # --- small helpers ------------------------------------------------------------------------

    def _checksum(self, raw20: bytes) -> str:
        text = self._checksums.get(raw20)
        if text is None:
            from ...addresses import to_checksum

            text = to_checksum("0x" + raw20.hex())
            if len(self._checksums) > 100_000:
                self._checksums.clear()
            self._checksums[raw20] = text
        return text

    def _recover(self, req: Incoming, index: int) -> str:
        try:
            return self._checksum(recover_signer(req.digest, req.sigs[index]))
        except SettlementError:
            raise _fail("failed to verify signer") from None

    def wallet_of_signer(self, signer: str) -> str:
        """The wallet a signer acts for: itself, or the wallet of its active session key."""
        key = self.ledger.session_keys.get(signer)
        if key is not None and key.wallet != signer and key.is_active(self._clock()):
            return key.wallet
        return signer

    def _verify_signer(self, req: Incoming, wallet: str) -> str:
        """ClearNode ``verifySigner``: ``sig[0]`` is ``wallet``'s or its session key's."""
        if not req.sigs:
            raise _fail("missing participant signature")
        signer = self._recover(req, 0)
        if signer == wallet:
            return signer
        key = self.ledger.session_keys.get(signer)
        if key is None or key.wallet != wallet:
            raise _fail("invalid signature")
        if not key.is_active(self._clock()):
            raise _fail("session key validation failed: session key expired")
        return signer

    def _signing_wallets(self, req: Incoming) -> set[str]:
        """ClearNode ``getWallets``: the wallets behind every signature of the request."""
        if not req.sigs:
            raise _fail("missing participant signature")
        return {self.wallet_of_signer(self._recover(req, i)) for i in range(len(req.sigs))}

    def decimals(self, asset: str) -> int | None:
        return self._decimals.get(asset)

    def amount_text(self, units: int, asset: str) -> str:
        decimals = self._decimals.get(asset)
        if decimals is None:
            return str(units)
        return _amount_text(units, decimals)

    def balances_json(self, account: str) -> list[dict[str, str]]:
        return self.balances_to_json(self.ledger.balances_of(account))

    def balances_to_json(self, balances: list[tuple[str, int]]) -> list[dict[str, str]]:
        """``balance_updates`` entries of a :meth:`Ledger.balances_of` snapshot (taken when
        the change was made, formatted only when a notification is actually sent)."""
        return [
            {"asset": asset, "amount": self.amount_text(units, asset)} for asset, units in balances
        ]

    def tx_json(self, tx: TxRecord) -> dict[str, Any]:
        out: dict[str, Any] = {"id": tx.id, "tx_type": tx.tx_type, "from_account": tx.from_account}
        tag = self.ledger.tags.get(tx.from_account)
        if tag:
            out["from_account_tag"] = tag
        out["to_account"] = tx.to_account
        tag = self.ledger.tags.get(tx.to_account)
        if tag:
            out["to_account_tag"] = tag
        out["asset"] = tx.asset
        out["amount"] = self.amount_text(tx.amount, tx.asset)
        out["created_at"] = _rfc3339(tx.created_at, millis=True)
        return out

    def channel_json(self, ch: ChannelRecord, *, wallet: bool = True) -> dict[str, Any]:
        return {
            "channel_id": ch.channel_id,
            "participant": ch.participant,
            "status": ch.status,
            "token": ch.token,
            "wallet": ch.wallet if wallet else "",
            "amount": str(ch.amount),
            "chain_id": ch.chain_id,
            "adjudicator": ch.adjudicator,
            "challenge": ch.challenge,
            "nonce": ch.nonce,
            "version": ch.version,
            "created_at": _rfc3339(ch.created_at),
            "updated_at": _rfc3339(ch.updated_at),
        }

    def open_channels_json(self, wallet: str) -> dict[str, Any]:
        """The ``channels`` push after auth: the wallet's open channels."""
        return {
            "channels": [
                self.channel_json(ch)
                for ch in self.ledger.channels_of(wallet)
                if ch.status == "open"
            ]
        }

    @staticmethod
    def balance_note(wallet: str) -> Note:
        """A ``bu`` for ``wallet``; the server fills in the balances only if it is connected."""
        return Note(wallet, "bu")

    @staticmethod
    def _list_options(params: Mapping[str, Any]) -> tuple[int, int, bool]:
        offset = params.get("offset", 0)
        limit = params.get("limit", _DEFAULT_LIMIT)
        sort = params.get("sort", "desc")
        if type(offset) is not int or offset < 0:
            raise _fail("failed to parse parameters: offset must be a non-negative integer")
        if type(limit) is not int or limit < 0:
            raise _fail("failed to parse parameters: limit must be a non-negative integer")
        if sort not in ("asc", "desc"):
            raise _fail('failed to parse parameters: sort must be "asc" or "desc"')
        return offset, min(limit or _DEFAULT_LIMIT, _MAX_LIMIT), sort == "desc"

    # --- public methods -----------------------------------------------------------------------

    def _ping(self, session: Session, req: Incoming) -> Outcome:
        return Outcome("pong", None)

    def _get_config(self, session: Session, req: Incoming) -> Outcome:
        return Outcome("get_config", self._config_result)

    def _get_assets(self, session: Session, req: Incoming) -> Outcome:
        chain_id = req.params.get("chain_id")
        if chain_id is not None and type(chain_id) is not int:
            raise _fail("failed to parse parameters: chain_id must be an integer")
        assets = [a.to_json() for a in self.config.assets if not chain_id or a.chain_id == chain_id]
        return Outcome("get_assets", {"assets": assets})

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

    def _get_ledger_transactions(self, session: Session, req: Incoming) -> Outcome:
        params = req.params
        offset, limit, descending = self._list_options(params)
        account = params.get("account_id") or None
        asset = params.get("asset") or None
        tx_type = params.get("tx_type") or None
        if account is not None and not isinstance(account, str):
            raise _fail("failed to parse parameters: account_id must be a string")
        if account is not None and len(account) == 42:
            try:
                account = validate_address(account, field="account_id")
            except InvalidAddressError as exc:
                raise _fail(f"failed to parse parameters: {exc}") from None
        if asset is not None and not isinstance(asset, str):
            raise _fail("failed to parse parameters: asset must be a string")
        if tx_type is not None and tx_type not in TX_TYPES:
            raise _fail(f"failed to parse parameters: tx_type must be one of {', '.join(TX_TYPES)}")
        if self._read is None:
            txs: list[TxRecord] = []
        else:
            txs = self.ledger.query_transactions(
                self._read,
                account=account,
                asset=asset,
                tx_type=tx_type,
                offset=offset,
                limit=limit,
                descending=descending,
            )
        return Outcome(
            "get_ledger_transactions", {"ledger_transactions": [self.tx_json(t) for t in txs]}
        )

    # --- authentication -----------------------------------------------------------------------

    def _auth_request(self, session: Session, req: Incoming) -> Outcome:
        p = req.params
        address = p.get("address")
        session_key = p.get("session_key")
        application = p.get("application", "")
        allowances = p.get("allowances") or []
        expires_at = p.get("expires_at", 0)
        scope = p.get("scope", "")
        if not isinstance(address, str) or not isinstance(session_key, str):
            raise _fail("failed to parse auth parameters: address and session_key are required")
        if not isinstance(application, str) or not isinstance(scope, str):
            raise _fail("failed to parse auth parameters: application and scope must be strings")
        if type(expires_at) is not int or not 0 <= expires_at < 2**64:
            raise _fail("failed to parse auth parameters: expires_at must be Unix seconds")
        parsed: list[tuple[str, str]] = []
        if not isinstance(allowances, list):
            raise _fail("failed to parse auth parameters: allowances must be a list")
        for item in allowances:
            if (
                not isinstance(item, dict)
                or not isinstance(item.get("asset"), str)
                or not isinstance(item.get("amount"), str)
            ):
                raise _fail(
                    "failed to parse auth parameters: allowances are {asset, amount} strings"
                )
            parsed.append((item["asset"], item["amount"]))
        try:
            validate_address(address, field="address")
            validate_address(session_key, field="session_key")
        except InvalidAddressError as exc:
            raise _fail(f"failed to parse auth parameters: {exc}") from None
        now = self._clock()
        self._expire_challenges(now)
        token = self._new_challenge_token()
        self._challenges[token] = _Challenge(
            address,
            session_key,
            application or CLEARNODE_APPLICATION,
            parsed,
            expires_at,
            scope,
            now,
        )
        return Outcome("auth_challenge", {"challenge_message": token})

    def _new_challenge_token(self) -> str:
        if self.config.deterministic:
            counter = self.ledger.next_counter("challenge_counter", 1)
            digest = keccak256(b"settlement_widgets sandbox challenge " + str(counter).encode())
            return str(uuid.UUID(bytes=digest[:16], version=4))
        return str(uuid.uuid4())

    def _expire_challenges(self, now: float) -> None:
        stale = [k for k, c in self._challenges.items() if now - c.created > _CHALLENGE_TTL_S]
        for key in stale:
            del self._challenges[key]
        while len(self._challenges) >= _MAX_CHALLENGES:
            del self._challenges[next(iter(self._challenges))]

    def _auth_verify(self, session: Session, req: Incoming) -> Outcome:
        p = req.params
        jwt = p.get("jwt")
        if isinstance(jwt, str) and jwt:
            return self._auth_jwt(session, jwt)
        if not req.sigs:
            raise _fail("invalid authentication method: expected JWT or signature")
        token = p.get("challenge")
        if not isinstance(token, str):
            raise _fail("invalid challenge")
        challenge = self._challenges.get(token)
        now = self._clock()
        if challenge is None or now - challenge.created > _CHALLENGE_TTL_S:
            raise _fail("invalid challenge")
        try:
            recovered = self._checksum(
                recover_address_bytes(_policy_digest(challenge, token), req.sigs[0])
            )
        except SettlementError:
            raise _fail("invalid signature") from None
        if recovered != challenge.address:  # case-sensitive, as the ClearNode compares
            raise _fail("invalid challenge or signature")
        del self._challenges[token]
        for asset, amount in challenge.allowances:
            decimals = self._decimals.get(asset)
            if decimals is None:
                raise _fail(f"unsupported token: asset '{asset}' is not supported")
            try:
                parse_decimal_amount(amount, decimals)
            except SettlementError:
                raise _fail(
                    f"unsupported token: invalid amount '{amount}' for asset '{asset}'"
                ) from None
        wallet = challenge.address
        key_address = challenge.session_key
        existing = self.ledger.session_keys.get(key_address)
        if existing is not None and existing.wallet != wallet:
            raise _fail("signer is already in use for another wallet")
        if existing is not None and not existing.is_active(now):
            raise _fail("session key already exists but is expired")
        if existing is None:
            if challenge.expires_at <= now:
                raise _fail("authentication failed: session key expires_at must be in the future")
            self.ledger.put_session_key(
                SessionKeyRecord(
                    id=self.ledger.new_key_id(),
                    session_key=key_address,
                    wallet=wallet,
                    application=challenge.application,
                    scope=challenge.scope or "all",
                    allowances=list(challenge.allowances),
                    used={},
                    expires_at=challenge.expires_at,
                    created_at=self._now_ms(),
                )
            )
        self._ensure_tag(wallet)
        claims = {
            "wallet": wallet,
            "session_key": key_address,
            "application": challenge.application,
            "scope": challenge.scope,
            "allowances": [list(a) for a in challenge.allowances],
            "expires_at": challenge.expires_at,
            "iat": int(now),
            "exp": int(now) + self.config.jwt_ttl_seconds,
        }
        jwt_token = encode_jwt(claims, self._jwt_secret)
        self._login(session, wallet, key_address, challenge.application)
        # Go marshals a map: keys in sorted order
        result = {
            "address": wallet,
            "jwt_token": jwt_token,
            "session_key": key_address,
            "success": True,
        }
        return Outcome("auth_verify", result, authenticated=wallet)

    def _auth_jwt(self, session: Session, token: str) -> Outcome:
        try:
            claims = decode_jwt(token, self._jwt_secret, now=self._clock())
            wallet = validate_address(claims["wallet"], field="wallet")
            key_address = str(claims["session_key"])
            application = str(claims.get("application", CLEARNODE_APPLICATION))
        except (SettlementError, KeyError):
            raise _fail("invalid JWT token") from None
        self._login(session, wallet, key_address, application)
        result = {"address": wallet, "session_key": key_address, "success": True}
        return Outcome("auth_verify", result, authenticated=wallet)

    @staticmethod
    def _login(session: Session, wallet: str, key: str, application: str) -> None:
        session.wallet = wallet
        session.session_key = key
        session.application = application

    def _ensure_tag(self, wallet: str) -> str:
        tag = self.ledger.tags.get(wallet)
        if tag is not None:
            return tag
        digest = keccak256(b"user tag " + wallet.encode())
        n = int.from_bytes(digest[:8], "big")
        while True:
            chars = []
            for _ in range(6):
                n, r = divmod(n, len(_TAG_ALPHABET))
                chars.append(_TAG_ALPHABET[r])
            tag = "".join(chars)
            if tag not in self.ledger.tag_wallets:
                break
            n = int.from_bytes(keccak256(digest + tag.encode())[:8], "big")
        self.ledger.put_tag(wallet, tag)
        return tag

    # --- private reads ------------------------------------------------------------------------

    def _private_signer(self, session: Session, req: Incoming) -> str:
        assert session.wallet is not None
        return self._verify_signer(req, session.wallet)

    def _get_ledger_balances(self, session: Session, req: Incoming) -> Outcome:
        self._private_signer(session, req)
        account = req.params.get("account_id") or session.wallet
        if not isinstance(account, str):
            raise _fail("failed to parse parameters: account_id must be a string")
        if len(account) == 42:
            try:
                account = validate_address(account, field="account_id")
            except InvalidAddressError as exc:
                raise _fail(f"failed to parse parameters: {exc}") from None
        return Outcome("get_ledger_balances", {"ledger_balances": self.balances_json(account)})

    def _get_user_tag(self, session: Session, req: Incoming) -> Outcome:
        self._private_signer(session, req)
        assert session.wallet is not None
        return Outcome("get_user_tag", {"tag": self._ensure_tag(session.wallet)})

    def _get_session_keys(self, session: Session, req: Incoming) -> Outcome:
        self._private_signer(session, req)
        now = self._clock()
        keys = sorted(
            (
                k
                for k in self.ledger.session_keys.values()
                if k.wallet == session.wallet and k.is_active(now)
            ),
            key=lambda k: k.id,
        )
        out = []
        for key in keys:
            allowances = []
            for asset, amount in key.allowances:
                allowances.append(
                    {
                        "asset": asset,
                        "allowance": amount,
                        "used": self.amount_text(key.used.get(asset, 0), asset),
                    }
                )
            entry: dict[str, Any] = {
                "id": key.id,
                "session_key": key.session_key,
                "application": key.application,
                "allowances": allowances,
            }
            if key.scope:
                entry["scope"] = key.scope
            entry["expires_at"] = _rfc3339(key.expires_at * 1000)
            entry["created_at"] = _rfc3339(key.created_at)
            out.append(entry)
        return Outcome("get_session_keys", {"session_keys": out})

    # --- transfer -----------------------------------------------------------------------------

    def _transfer(self, session: Session, req: Incoming) -> Outcome:
        ledger = self.ledger
        params = req.params
        now_ms = self._now_ms()
        digest = req.digest
        if ledger.is_seen(digest, now_ms):
            raise _fail("operation denied: the request has already been processed")
        destination = params.get("destination") or ""
        tag = params.get("destination_user_tag") or ""
        if not isinstance(destination, str) or not isinstance(tag, str):
            raise _fail("failed to parse parameters: destination must be a string")
        if not destination and not tag:
            raise _fail("destination or destination_tag must be provided")
        if destination:
            checked = self._addresses.get(destination)
            if checked is None:
                try:
                    checked = validate_address(destination, field="destination")
                except InvalidAddressError:
                    raise _fail(f"invalid destination account: {destination}") from None
                if len(self._addresses) > 100_000:
                    self._addresses.clear()
                self._addresses[destination] = checked
            destination = checked
        allocations = params.get("allocations")
        if not isinstance(allocations, list) or not allocations:
            raise _fail("allocations cannot be empty")
        wallet = session.wallet
        assert wallet is not None
        signer = self._verify_signer(req, wallet)
        if not destination:
            found = ledger.tag_wallets.get(tag)
            if found is None:
                raise _fail(f"failed to get wallet by tag: {tag}")
            destination = found
        if destination == wallet:
            raise _fail("cannot transfer to self")
        self._check_outgoing_allowed(wallet)
        key = None if signer == wallet else ledger.session_keys.get(signer)
        if key is not None and not key.is_active(self._clock()):
            raise _fail("session key validation failed: session key expired")
        plan: list[tuple[str, int]] = []
        spent: dict[str, int] = {}
        for alloc in allocations:
            asset, units = self._allocation(alloc, wallet)
            total = spent.get(asset, 0) + units
            if key is not None and key.application != CLEARNODE_APPLICATION:
                self._check_allowance(key, asset, total)
            if total > ledger.balance(wallet, asset):
                raise _fail(f"insufficient funds: {wallet} for asset {asset}")
            spent[asset] = total
            plan.append((asset, units))
        # every check passed: apply
        txs = [ledger.transfer(wallet, destination, asset, units) for asset, units in plan]
        if key is not None:
            for asset, units in spent.items():
                key.used[asset] = key.used.get(asset, 0) + units
            ledger.touch_session_key(key)
        ledger.mark_seen(digest, max(now_ms, req.timestamp) + self.config.message_expiry_ms)
        tx_json = tuple(self.tx_json(tx) for tx in txs)
        notes = [
            self.balance_note(wallet),
            Note(wallet, "tr", txs=tx_json),
            self.balance_note(destination),
            Note(destination, "tr", txs=tx_json),
        ]
        return Outcome("transfer", {"transactions": list(tx_json)}, notes)

    def _allocation(self, alloc: Any, wallet: str) -> tuple[str, int]:
        if not isinstance(alloc, dict):
            raise _fail("failed to parse parameters: allocations are {asset, amount} objects")
        asset = alloc.get("asset")
        amount = alloc.get("amount")
        if not isinstance(asset, str):
            raise _fail("failed to parse parameters: allocation asset must be a string")
        text = str(amount) if type(amount) is int else amount
        if not isinstance(text, str) or not is_decimal_amount(text):
            raise _fail(f"invalid allocation: {amount} for asset {asset}")
        decimals = self._decimals.get(asset)
        if decimals is None:  # an asset nobody holds: its balance is zero
            if parse_decimal_amount(text, 77) == 0:
                raise _fail(f"invalid allocation: {text} for asset {asset}")
            raise _fail(f"insufficient funds: {wallet} for asset {asset}")
        try:
            units = (
                _units(text, decimals) if len(text) <= 96 else parse_decimal_amount(text, decimals)
            )
        except SettlementError:
            raise _fail(f"invalid allocation: {text} for asset {asset}") from None
        if units <= 0:
            raise _fail(f"invalid allocation: {text} for asset {asset}")
        return asset, units

    def _check_allowance(self, key: SessionKeyRecord, asset: str, total: int) -> None:
        allowed_text = next((amount for a, amount in key.allowances if a == asset), None)
        decimals = self._decimals.get(asset, 0)
        if allowed_text is None:
            raise _fail(
                f"session key spending validation failed: asset {asset} is not in the "
                "session key's allowances"
            )
        allowed = _units(allowed_text, decimals)
        used = key.used.get(asset, 0)
        if used + total > allowed:
            raise _fail(
                "session key spending validation failed: insufficient session key allowance: "
                f"{self.amount_text(total, asset)} required, "
                f"{self.amount_text(max(allowed - used, 0), asset)} available"
            )

    def _check_outgoing_allowed(self, wallet: str) -> None:
        """v0.5: nothing leaves a wallet with a challenged or funded channel (§3.4, PR #414)."""
        channels = self.ledger.channels_of(wallet)
        if any(c.status == "challenged" for c in channels):
            raise _fail(f"participant {wallet} has challenged channels, cannot execute operation")
        funded = sum(1 for c in channels if not c.is_closed and c.amount != 0)
        if funded:
            raise _fail(
                f"operation denied: non-zero allocation in {funded} channel(s) detected "
                f"owned by wallet {wallet}"
            )

    def transfer_from(self, from_account: str, to_account: str, asset: str, units: int) -> Outcome:
        """A node-initiated transfer (the faucet): the same ledger effect and notifications."""
        if units <= 0:
            raise _fail(f"invalid allocation: {units} for asset {asset}")
        if from_account == to_account:
            raise _fail("cannot transfer to self")
        if units > self.ledger.balance(from_account, asset):
            raise _fail(f"insufficient funds: {from_account} for asset {asset}")
        tx = self.ledger.transfer(from_account, to_account, asset, units)
        tx_json = (self.tx_json(tx),)
        notes = [
            self.balance_note(from_account),
            Note(from_account, "tr", txs=tx_json),
            self.balance_note(to_account),
            Note(to_account, "tr", txs=tx_json),
        ]
        return Outcome("transfer", {"transactions": list(tx_json)}, notes)

    def _seed_faucet(self) -> None:
        faucet = self.config.faucet_account
        if faucet is None or self.ledger.meta.get("faucet_seeded") == faucet:
            return
        for asset in {a.symbol for a in self.config.assets}:
            units = self.config.faucet_seed_units
            self.ledger.add(faucet, asset, units)
            self.ledger.record_tx("deposit", self.broker_address, faucet, asset, units)
        self.ledger.set_meta("faucet_seeded", faucet)

    # --- channels -----------------------------------------------------------------------------

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
        nonce = self._now_ms()
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
        # nothing is stored until the Created event (§3.4)
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
        asset = self.config.asset_for_token(channel.token, channel.chain_id)
        if asset is None:
            raise _fail(
                f"failed to find asset for token {channel.token} on chain {channel.chain_id}"
            )
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
        channel.updated_at = self._now_ms()
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
        asset = self.config.asset_for_token(channel.token, channel.chain_id)
        if asset is None:
            raise _fail(
                f"failed to find asset for token {channel.token} on chain {channel.chain_id}"
            )
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

    # --- custody events (clearnode/custody.go) ------------------------------------------------

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
        now = self._now_ms()
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

    def on_challenged(self, channel_id: str) -> list[Note]:
        record = self.ledger.channels.get(channel_id)
        if record is None:
            return []
        record.status = "challenged"
        record.updated_at = self._now_ms()
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
        record.updated_at = self._now_ms()
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
        record.updated_at = self._now_ms()
        self.ledger.put_channel(record)
        return [
            self.balance_note(record.wallet),
            Note(record.wallet, "cu", self.channel_json(record, wallet=False)),
        ]
