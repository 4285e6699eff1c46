"""The Nitrolite v1 client core: every request the SDK ``Client`` sends, driven by a transport.

Why this module exists: a v1 node accepts a state only if it is exactly "previous state +
one transition", signed over the exact packed bytes (nitrolite-v1.md §6, §7), and the SDK's
high-level calls (``deposit``, ``transfer``, ``acknowledge`` ...) each send a precise
sequence of requests to build that state (``get_config`` for the node address and validator
bitmap, ``get_assets`` on an asset-cache miss, ``get_latest_state``, then ``request_creation``
or ``submit_state``). :class:`V1ClientCore` reproduces those sequences and payloads byte for
byte (the ``rpc_client_frames`` vectors), on top of the pure core (:mod:`.lifecycle`,
:mod:`.state`, :mod:`.app_sessions`, :mod:`.wire`).

It does no I/O of its own: every request goes through a :class:`FrameTransport` (one
``exchange(request) -> reply`` coroutine), and the request id, the clock and the channel
nonce come from injected sources. The WebSocket client
(:class:`settlement_widgets.channel_v1.rpc_client.V1RpcClient`) is one transport; the vector
driver at the bottom of this module is another, replaying recorded replies with the recorded
ids, timestamps and nonces. Both run this same code.

States are handled in their wire form (snake_case dicts, decimal strings, as in
:mod:`.state`); the SDK's camelCase shapes are only built for the vectors
(:mod:`.rpc_shapes`). Signing goes through a :class:`StateSigner`, which wraps anything with
``address`` and ``async sign_message(bytes) -> hex`` (EIP-191), i.e. our
:class:`~settlement_widgets.signer.Signer` (a local key or a browser wallet) or a bare
:class:`~settlement_widgets.keys.PrivateKey` (:class:`KeyMessageSigner`).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Final, Protocol, TypeVar

from ..addresses import validate_address
from ..errors import (
    InvalidAmountError,
    InvalidFrameError,
    InvalidSignatureError,
    InvalidStateError,
    RelayError,
    SettlementError,
    SettlementValueError,
)
from ..keys import PrivateKey
from .abi import abi_encode
from .app_sessions import app_session_key_state_hash
from .decimals import decimal_places, sdk_decimal_string
from .ids import DEFAULT_CHALLENGE_DURATION
from .lifecycle import apply_channel_creation, apply_transition, next_state, validate_advancement
from .rpc_shapes import sdk_assets, sdk_balances, sdk_channel, sdk_state, wire_state
from .state import (
    SIG_VALIDATOR_DEFAULT,
    SIG_VALIDATOR_SESSION_KEY,
    channel_session_key_metadata_hash,
    eip191_digest,
    pack_channel_session_key_auth,
    pack_state,
)
from .transitions import sig_validators_bitmap
from .wire import MAX_SAFE_INTEGER, Frame, MessageType, decode_frame, parse_node_config

__all__ = [
    "VECTORS",
    "AssetStore",
    "ChannelDefaultSigner",
    "ChannelSessionKeySigner",
    "FrameTransport",
    "KeyMessageSigner",
    "MessageSigner",
    "StateSigner",
    "V1ClientCore",
    "app_definition_to_wire",
    "app_state_update_to_wire",
    "channel_nonce",
    "check_reply",
    "now_ms",
    "random_request_id",
    "run_without_suspending",
    "sdk_error_message",
]

_T = TypeVar("_T")

_FINALIZE: Final = 200
_EMPTY_LEDGER: Final[Mapping[str, str]] = {
    "token_address": "0x0",
    "blockchain_id": "0",
    "user_balance": "0",
    "user_net_flow": "0",
    "node_balance": "0",
    "node_net_flow": "0",
}


# ---------------------------------------------------------------------------------------------
# sources and transport
# ---------------------------------------------------------------------------------------------


def random_request_id() -> int:
    """A request id like the SDK's (``floor(random * MAX_SAFE_INTEGER)``), never 0 (events)."""
    return 1 + secrets.randbelow(MAX_SAFE_INTEGER - 1)


def now_ms() -> int:
    """Unix time in milliseconds, the frame timestamp."""
    return time.time_ns() // 1_000_000


def channel_nonce(clock_ms: int) -> int:
    """The SDK's ``generateNonce()``: ``ms × 10^6 + random(0..10^6)``, unique per channel."""
    return clock_ms * 1_000_000 + secrets.randbelow(1_000_000)


class FrameTransport(Protocol):
    """Sends one request frame and returns the node's reply to it (any type; checked here).

    The transport owns the wire: it encodes ``request`` (:meth:`Frame.encode`), matches the
    reply by request id, and raises its own errors for a dead connection or a timeout.
    """

    async def exchange(self, request: Frame) -> Frame: ...


def check_reply(request: Frame, reply: Frame) -> dict[str, Any]:
    """The payload of ``reply`` if it is the successful answer to ``request``.

    A type-4 frame becomes :class:`RelayError` with the node's text verbatim (``code`` = the
    method); a reply for another request id or method, or of another type, is a protocol
    violation (:class:`InvalidFrameError`), never silently taken as this call's answer.
    """
    if not isinstance(reply, Frame):
        raise InvalidFrameError(f"the transport returned {type(reply).__name__}, not a Frame")
    if reply.request_id != request.request_id:
        raise InvalidFrameError(
            f"reply to {request.method} carries request id {reply.request_id}, "
            f"expected {request.request_id}"
        )
    if reply.type == MessageType.ERROR:
        raise RelayError(reply.error or "", code=reply.method or request.method)
    if reply.type != MessageType.RESPONSE:
        raise InvalidFrameError(
            f"reply to {request.method} is a frame of type {int(reply.type)}, not a response"
        )
    if reply.method != request.method:
        raise InvalidFrameError(
            f"reply to {request.method} (id {request.request_id}) names method {reply.method!r}"
        )
    return dict(reply.payload)


def sdk_error_message(exc: BaseException) -> str:
    """The text the TS SDK would throw for ``exc`` (``RPCClient.call`` prefixes node errors)."""
    if isinstance(exc, RelayError):
        return f"rpc returned error: {exc.message}"
    return str(exc)


# ---------------------------------------------------------------------------------------------
# signers
# ---------------------------------------------------------------------------------------------


class MessageSigner(Protocol):
    """What signs for a wallet: :class:`~settlement_widgets.signer.Signer` fits, as does
    :class:`KeyMessageSigner`. ``sign_message`` is EIP-191 ``personal_sign`` over raw bytes,
    returning the 65-byte ``r‖s‖v`` signature as 0x-hex."""

    @property
    def address(self) -> str: ...

    async def sign_message(self, message: bytes) -> str: ...


class KeyMessageSigner:
    """A :class:`MessageSigner` over a private key held in the process (tests, scripts,
    session keys). Its repr shows the address only."""

    __slots__ = ("_key",)

    def __init__(self, key: PrivateKey) -> None:
        if not isinstance(key, PrivateKey):
            raise SettlementValueError("KeyMessageSigner needs a PrivateKey")
        self._key = key

    @property
    def address(self) -> str:
        return self._key.address

    async def sign_message(self, message: bytes) -> str:
        return "0x" + self._key.sign_hash(eip191_digest(bytes(message))).hex()

    def __repr__(self) -> str:
        return f"KeyMessageSigner({self._key.address})"


def _signature_bytes(value: object, who: str) -> bytes:
    """A signer's answer as 65 bytes (a wallet that returns something else is refused)."""
    if isinstance(value, bytes | bytearray):
        raw = bytes(value)
    elif isinstance(value, str) and value.startswith(("0x", "0X")):
        try:
            raw = bytes.fromhex(value[2:])
        except ValueError:
            raise InvalidSignatureError(f"{who} returned a signature that is not hex") from None
    else:
        raise InvalidSignatureError(f"{who} returned {type(value).__name__}, not a signature")
    if len(raw) != 65:
        raise InvalidSignatureError(f"{who} returned a {len(raw)}-byte signature, expected 65")
    return raw


class StateSigner(Protocol):
    """Signs channel states for one wallet (the SDK's ``StateSigner``).

    ``address`` is the wallet the states belong to; ``sign_state`` returns the channel
    signature with its validator prefix byte; ``sign_wallet_message`` is the wallet's plain
    EIP-191 signature, needed for session-key registrations (refused by session-key signers,
    as in the SDK).
    """

    @property
    def address(self) -> str: ...

    async def sign_state(self, packed_state: bytes) -> str: ...

    async def sign_wallet_message(self, message: bytes) -> str: ...


@dataclass(frozen=True)
class ChannelDefaultSigner:
    """The wallet signs its states itself: ``0x00 ‖ EIP-191 signature`` (validator 0)."""

    wallet: MessageSigner

    @property
    def address(self) -> str:
        return validate_address(self.wallet.address, field="signer address")

    async def sign_state(self, packed_state: bytes) -> str:
        raw = _signature_bytes(await self.wallet.sign_message(packed_state), "the wallet")
        return "0x" + bytes((SIG_VALIDATOR_DEFAULT,)).hex() + raw.hex()

    async def sign_wallet_message(self, message: bytes) -> str:
        return "0x" + _signature_bytes(await self.wallet.sign_message(message), "the wallet").hex()


@dataclass(frozen=True)
class ChannelSessionKeySigner:
    """States signed by a registered channel session key (validator 1, nitrolite-v1.md §7.2).

    ``user_sig = 0x01 ‖ abi.encode((sessionKey, metadataHash, authSig), skSig)``: the wallet's
    registration signature travels with every state, so the contract needs no registry.
    """

    session_key: MessageSigner
    wallet_address: str
    metadata_hash: str
    auth_signature: str

    @property
    def address(self) -> str:
        return validate_address(self.wallet_address, field="wallet")

    async def sign_state(self, packed_state: bytes) -> str:
        inner = _signature_bytes(await self.session_key.sign_message(packed_state), "session key")
        body = abi_encode(
            ["(address,bytes32,bytes)", "bytes"],
            [
                (
                    validate_address(self.session_key.address, field="session key"),
                    _hex32(self.metadata_hash, "metadata_hash"),
                    _signature_bytes(self.auth_signature, "auth_signature"),
                ),
                inner,
            ],
        )
        return "0x" + bytes((SIG_VALIDATOR_SESSION_KEY,)).hex() + body.hex()

    async def sign_wallet_message(self, message: bytes) -> str:
        raise InvalidSignatureError(
            "session key signing requires the default wallet signer, not a session key signer"
        )


def _hex32(value: object, field: str) -> bytes:
    if isinstance(value, str) and value.startswith("0x") and len(value) == 66:
        try:
            return bytes.fromhex(value[2:])
        except ValueError:
            pass
    raise SettlementValueError(f"{field} must be 32 bytes of 0x-hex, got {value!r}")


# ---------------------------------------------------------------------------------------------
# asset store (SDK ClientAssetStore)
# ---------------------------------------------------------------------------------------------


def _parse_assets(assets: object) -> list[dict[str, Any]]:
    """``get_assets`` entries checked and normalised (ints for decimals, strings for chains)."""
    if not isinstance(assets, list):
        raise InvalidFrameError("invalid get_assets result: 'assets' must be an array")
    out: list[dict[str, Any]] = []
    try:
        for asset in assets:
            tokens = []
            for token in asset["tokens"]:
                tokens.append(
                    {
                        "name": str(token["name"]),
                        "symbol": str(token["symbol"]),
                        "address": _text(token["address"], "token address"),
                        "blockchain_id": str(int(token["blockchain_id"])),
                        "decimals": _small_int(token["decimals"], "token decimals"),
                    }
                )
            out.append(
                {
                    "name": str(asset["name"]),
                    "symbol": _text(asset["symbol"], "asset symbol"),
                    "decimals": _small_int(asset["decimals"], "asset decimals"),
                    "suggested_blockchain_id": str(int(asset["suggested_blockchain_id"])),
                    "tokens": tokens,
                }
            )
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidFrameError(f"invalid get_assets result: {exc!r}") from None
    return out


def _text(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise InvalidFrameError(f"invalid {what}: expected a string, got {value!r}")
    return value


def _small_int(value: object, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= 255:
        raise InvalidFrameError(f"invalid {what}: {value!r}")
    return value


class AssetStore:
    """Asset and token decimals cached from ``node.v1.get_assets`` (SDK ``ClientAssetStore``).

    The cache decides *whether* a call sends ``get_assets`` (only when empty, or when an
    asset is unknown), and that is part of the request sequence the SDK sends, so the rules
    are the SDK's, miss for miss. Not frozen: it is a cache, filled as calls go.
    """

    def __init__(
        self,
        fetch: Callable[[], Awaitable[list[dict[str, Any]]]],
        cached: Sequence[Mapping[str, Any]] = (),
    ) -> None:
        self._fetch = fetch
        self._cache: dict[str, dict[str, Any]] = {}
        self._fill(_parse_assets(list(cached)))

    def _fill(self, assets: Sequence[dict[str, Any]]) -> None:
        for asset in assets:
            self._cache[asset["symbol"].lower()] = asset

    @property
    def assets(self) -> list[dict[str, Any]]:
        """The cached assets, wire form, in the order they were cached."""
        return list(self._cache.values())

    async def _refresh(self) -> None:
        self._fill(await self._fetch())

    async def asset_decimals(self, asset: str) -> int:
        """The asset's own decimals (the precision an amount may have)."""
        if asset.lower() not in self._cache:
            await self._refresh()
        if asset.lower() not in self._cache:
            raise InvalidStateError(f"asset {asset} not found")
        return int(self._cache[asset.lower()]["decimals"])

    async def token_decimals(self, blockchain_id: int | str, token: str) -> int:
        """The decimals of ``token`` on chain ``blockchain_id`` (what ledgers are scaled by)."""
        if not self._cache:
            await self._refresh()
        return self.cached_token_decimals(int(blockchain_id), token)

    def cached_token_decimals(self, blockchain_id: int, token: str) -> int:
        """As :meth:`token_decimals` from the cache only (a :data:`.state.TokenDecimals`)."""
        for asset in self._cache.values():
            for entry in asset["tokens"]:
                if (
                    int(entry["blockchain_id"]) == int(blockchain_id)
                    and entry["address"].lower() == token.lower()
                ):
                    return int(entry["decimals"])
        raise InvalidStateError(f"token {token} on blockchain {blockchain_id} not found")

    def _token_address(self, asset: str, blockchain_id: int) -> str | None:
        entry = self._cache.get(asset.lower())
        if entry is None:
            return None
        for token in entry["tokens"]:
            if int(token["blockchain_id"]) == blockchain_id:
                return str(token["address"])
        raise InvalidStateError(f"asset {asset} not available on blockchain {blockchain_id}")

    async def token_address(self, asset: str, blockchain_id: int | str) -> str:
        """The token contract of ``asset`` on ``blockchain_id``."""
        chain = int(blockchain_id)
        if not self._cache:
            await self._refresh()
        found = self._token_address(asset, chain)
        if found is None:
            await self._refresh()
            found = self._token_address(asset, chain)
        if found is None:
            raise InvalidStateError(f"asset {asset} not found")
        return found

    async def suggested_blockchain_id(self, asset: str) -> int:
        """The chain the node suggests as ``asset``'s home when the caller names none."""
        if asset.lower() not in self._cache:
            await self._refresh()
        entry = self._cache.get(asset.lower())
        if entry is None:
            raise InvalidStateError(f"asset {asset} not found")
        chain = int(entry["suggested_blockchain_id"])
        if chain == 0:
            raise InvalidStateError(f"no suggested blockchain ID for asset {asset}")
        return chain


# ---------------------------------------------------------------------------------------------
# request shapes
# ---------------------------------------------------------------------------------------------


def _pick(mapping: Mapping[str, Any], camel: str, snake: str) -> Any:
    if camel in mapping:
        return mapping[camel]
    if snake in mapping:
        return mapping[snake]
    raise SettlementValueError(f"missing field {snake!r}")


def _uint_str(value: object, field: str) -> str:
    if isinstance(value, bool):
        raise SettlementValueError(f"{field} must be an unsigned integer, got {value!r}")
    if isinstance(value, int) and value >= 0:
        return str(value)
    if isinstance(value, str) and value.isascii() and value.isdigit():
        return str(int(value))
    raise SettlementValueError(f"{field} must be an unsigned integer, got {value!r}")


def app_definition_to_wire(definition: Mapping[str, Any]) -> dict[str, Any]:
    """An app definition (camelCase or snake_case) as the SDK sends it."""
    return {
        "application_id": _pick(definition, "applicationId", "application_id"),
        "participants": [
            {
                "wallet_address": _pick(p, "walletAddress", "wallet_address"),
                "signature_weight": int(_pick(p, "signatureWeight", "signature_weight")),
            }
            for p in definition["participants"]
        ],
        "quorum": int(definition["quorum"]),
        "nonce": _uint_str(definition["nonce"], "definition.nonce"),
    }


def app_state_update_to_wire(update: Mapping[str, Any]) -> dict[str, Any]:
    """An app state update (camelCase or snake_case) as the SDK sends it (amounts rendered
    by decimal.js, which is also the text the quorum signatures must cover)."""
    return {
        "app_session_id": _pick(update, "appSessionId", "app_session_id"),
        "intent": int(update["intent"]),
        "version": _uint_str(update["version"], "app_state_update.version"),
        "allocations": [
            {
                "participant": a["participant"],
                "asset": a["asset"],
                "amount": sdk_decimal_string(a["amount"]),
            }
            for a in update["allocations"]
        ],
        "session_data": _pick(update, "sessionData", "session_data"),
    }


def _channel_key_state_to_wire(state: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "user_address": state["user_address"],
        "session_key": state["session_key"],
        "version": _uint_str(state["version"], "version"),
        "assets": list(state["assets"]),
        "expires_at": _uint_str(state["expires_at"], "expires_at"),
    }
    for key in ("user_sig", "session_key_sig"):
        if state.get(key):
            out[key] = state[key]
    return out


def _app_key_state_to_wire(state: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "user_address": state["user_address"],
        "session_key": state["session_key"],
        "version": _uint_str(state["version"], "version"),
        "application_ids": list(state.get("application_ids", [])),
        "app_session_ids": list(state.get("app_session_ids", [])),
        "expires_at": _uint_str(state["expires_at"], "expires_at"),
    }
    for key in ("user_sig", "session_key_sig"):
        if state.get(key):
            out[key] = state[key]
    return out


def _compact(**fields: Any) -> dict[str, Any]:
    """A payload without the absent fields (the SDK drops ``undefined``)."""
    return {key: value for key, value in fields.items() if value is not None}


def _void_state(asset: str, wallet: str) -> dict[str, Any]:
    """SDK ``newVoidState``: the placeholder before a wallet's first state for an asset."""
    return {
        "id": "",
        "transition": {"type": 0, "tx_id": "", "account_id": "", "amount": "0"},
        "asset": asset,
        "user_wallet": wallet,
        "epoch": "0",
        "version": "0",
        "home_ledger": dict(_EMPTY_LEDGER),
    }


def _state_from_payload(payload: Mapping[str, Any], key: str = "state") -> dict[str, Any] | None:
    value = payload.get(key)
    if value is None:
        return None
    return wire_state(value)


def _signature_from(payload: Mapping[str, Any], method: str) -> str:
    signature = payload.get("signature")
    if not isinstance(signature, str) or not signature.startswith("0x"):
        raise InvalidFrameError(f"invalid {method} result: missing signature")
    return signature


# ---------------------------------------------------------------------------------------------
# the client core
# ---------------------------------------------------------------------------------------------


class V1ClientCore:
    """The SDK ``Client`` / ``RPCClient`` logic over a :class:`FrameTransport`.

    ``state_signer`` is needed only by calls that sign (reads work without one);
    ``asset_cache`` pre-fills the asset store (``get_assets`` wire entries);
    ``home_blockchains`` maps an asset to the chain new channels for it open on (else the
    previous state's chain, else the node's suggestion). ``request_ids``, ``clock_ms`` and
    ``nonces`` are the sources of request ids, frame timestamps and channel nonces.
    """

    def __init__(
        self,
        transport: FrameTransport,
        *,
        state_signer: StateSigner | None = None,
        asset_cache: Sequence[Mapping[str, Any]] = (),
        home_blockchains: Mapping[str, int] | None = None,
        request_ids: Callable[[], int] = random_request_id,
        clock_ms: Callable[[], int] = now_ms,
        nonces: Callable[[], int] | None = None,
    ) -> None:
        self._transport = transport
        self.state_signer = state_signer
        self.assets = AssetStore(self.get_assets, asset_cache)
        self.home_blockchains: dict[str, int] = dict(home_blockchains or {})
        self._request_ids = request_ids
        self._clock_ms = clock_ms
        self._nonces = nonces if nonces is not None else (lambda: channel_nonce(clock_ms()))
        #: called with every state this client signed, and the channel definition of a
        #: creation (else None), after signing and before the node is asked: a provider
        #: writes it to disk there, so a crash between the two loses no signed state
        self.on_signed: Callable[[Mapping[str, Any], Mapping[str, Any] | None], None] | None = None

    # --- the one request path --------------------------------------------------------------

    async def call(self, method: str, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Send ``method`` with ``params`` (wire form) and return the result payload.

        Raises :class:`RelayError` for the node's error replies and
        :class:`InvalidFrameError` for a reply that does not answer this request.
        """
        request = Frame(
            MessageType.REQUEST, self._request_ids(), method, dict(params or {}), self._clock_ms()
        )
        request.encode()  # check every field before anything is sent
        reply = await self._transport.exchange(request)
        return check_reply(request, reply)

    # --- node.v1 -----------------------------------------------------------------------

    async def node_v1_ping(self) -> dict[str, Any]:
        return await self.call("node.v1.ping")

    async def node_v1_get_config(self) -> dict[str, Any]:
        return await self.call("node.v1.get_config")

    async def node_v1_get_assets(self, blockchain_id: int | str | None = None) -> dict[str, Any]:
        params = _compact(
            blockchain_id=None if blockchain_id is None else _uint_str(blockchain_id, "chain")
        )
        return await self.call("node.v1.get_assets", params)

    # --- user.v1 -----------------------------------------------------------------------

    async def user_v1_get_balances(self, wallet: str) -> dict[str, Any]:
        return await self.call("user.v1.get_balances", {"wallet": wallet})

    async def user_v1_get_transactions(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """Raw: ``params`` are sent as given (the SDK sends ``from_time`` as a string)."""
        return await self.call("user.v1.get_transactions", params)

    # --- channels.v1 -------------------------------------------------------------------

    async def channels_v1_get_home_channel(self, wallet: str, asset: str) -> dict[str, Any]:
        return await self.call("channels.v1.get_home_channel", {"wallet": wallet, "asset": asset})

    async def channels_v1_get_escrow_channel(self, escrow_channel_id: str) -> dict[str, Any]:
        return await self.call(
            "channels.v1.get_escrow_channel", {"escrow_channel_id": escrow_channel_id}
        )

    async def channels_v1_get_channels(self, params: Mapping[str, Any]) -> dict[str, Any]:
        return await self.call("channels.v1.get_channels", params)

    async def channels_v1_get_latest_state(
        self, wallet: str, asset: str, only_signed: bool
    ) -> dict[str, Any]:
        return await self.call(
            "channels.v1.get_latest_state",
            {"wallet": wallet, "asset": asset, "only_signed": bool(only_signed)},
        )

    async def channels_v1_request_creation(
        self, state: Mapping[str, Any], channel_definition: Mapping[str, Any]
    ) -> dict[str, Any]:
        return await self.call(
            "channels.v1.request_creation",
            {"state": wire_state(state), "channel_definition": dict(channel_definition)},
        )

    async def channels_v1_submit_state(self, state: Mapping[str, Any]) -> dict[str, Any]:
        return await self.call("channels.v1.submit_state", {"state": wire_state(state)})

    async def channels_v1_submit_session_key_state(
        self, state: Mapping[str, Any]
    ) -> dict[str, Any]:
        return await self.call(
            "channels.v1.submit_session_key_state", {"state": _channel_key_state_to_wire(state)}
        )

    async def channels_v1_get_last_key_states(self, params: Mapping[str, Any]) -> dict[str, Any]:
        return await self.call("channels.v1.get_last_key_states", params)

    # --- app_sessions.v1 ---------------------------------------------------------------

    async def app_sessions_v1_create_app_session(
        self,
        definition: Mapping[str, Any],
        session_data: str,
        quorum_sigs: Sequence[str],
        owner_sig: str | None = None,
    ) -> dict[str, Any]:
        params = {
            "definition": app_definition_to_wire(definition),
            "session_data": session_data,
            "quorum_sigs": list(quorum_sigs),
        }
        if owner_sig:
            params["owner_sig"] = owner_sig
        return await self.call("app_sessions.v1.create_app_session", params)

    async def app_sessions_v1_submit_deposit_state(
        self,
        app_state_update: Mapping[str, Any],
        quorum_sigs: Sequence[str],
        user_state: Mapping[str, Any],
    ) -> dict[str, Any]:
        return await self.call(
            "app_sessions.v1.submit_deposit_state",
            {
                "app_state_update": app_state_update_to_wire(app_state_update),
                "quorum_sigs": list(quorum_sigs),
                "user_state": wire_state(user_state),
            },
        )

    async def app_sessions_v1_submit_app_state(
        self, app_state_update: Mapping[str, Any], quorum_sigs: Sequence[str]
    ) -> dict[str, Any]:
        return await self.call(
            "app_sessions.v1.submit_app_state",
            {
                "app_state_update": app_state_update_to_wire(app_state_update),
                "quorum_sigs": list(quorum_sigs),
            },
        )

    async def app_sessions_v1_get_app_definition(self, app_session_id: str) -> dict[str, Any]:
        return await self.call(
            "app_sessions.v1.get_app_definition", {"app_session_id": app_session_id}
        )

    async def app_sessions_v1_get_app_sessions(self, params: Mapping[str, Any]) -> dict[str, Any]:
        return await self.call("app_sessions.v1.get_app_sessions", params)

    async def app_sessions_v1_submit_session_key_state(
        self, state: Mapping[str, Any]
    ) -> dict[str, Any]:
        return await self.call(
            "app_sessions.v1.submit_session_key_state", {"state": _app_key_state_to_wire(state)}
        )

    async def app_sessions_v1_get_last_key_states(
        self, params: Mapping[str, Any]
    ) -> dict[str, Any]:
        return await self.call("app_sessions.v1.get_last_key_states", params)

    # --- high-level reads (SDK Client) -------------------------------------------------

    async def ping(self) -> None:
        await self.node_v1_ping()

    async def get_config(self) -> dict[str, Any]:
        """Node config in the SDK shape (``nodeAddress``, ``supportedSigValidators`` ...)."""
        return parse_node_config(await self.node_v1_get_config())

    async def get_assets(self, blockchain_id: int | str | None = None) -> list[dict[str, Any]]:
        """Supported assets, wire form (checked, decimals as ints)."""
        payload = await self.node_v1_get_assets(blockchain_id)
        return _parse_assets(payload.get("assets"))

    async def get_balances(self, wallet: str) -> list[dict[str, Any]]:
        """``[{asset, amount, enforced?}]`` as the node sends them."""
        balances = (await self.user_v1_get_balances(wallet)).get("balances")
        if not isinstance(balances, list) or not all(isinstance(b, Mapping) for b in balances):
            raise InvalidFrameError("invalid get_balances result: 'balances' must be an array")
        return [dict(b) for b in balances]

    async def get_latest_state(
        self, wallet: str, asset: str, only_signed: bool = False
    ) -> dict[str, Any] | None:
        """The wallet's latest state for ``asset`` (wire form), or None when it has none."""
        return _state_from_payload(
            await self.channels_v1_get_latest_state(wallet, asset, only_signed)
        )

    async def get_home_channel(self, wallet: str, asset: str) -> dict[str, Any] | None:
        """The wallet's home channel for ``asset`` (wire form), or None."""
        channel = (await self.channels_v1_get_home_channel(wallet, asset)).get("channel")
        if channel is not None and not isinstance(channel, Mapping):
            raise InvalidFrameError("invalid get_home_channel result: 'channel' not an object")
        return None if channel is None else dict(channel)

    async def get_channels(
        self,
        wallet: str,
        *,
        status: str | None = None,
        asset: str | None = None,
        channel_type: str | None = None,
        pagination: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        params = _compact(
            wallet=wallet,
            status=status,
            asset=asset,
            channel_type=channel_type,
            pagination=None if pagination is None else dict(pagination),
        )
        return await self.channels_v1_get_channels(params)

    async def get_transactions(
        self,
        wallet: str,
        *,
        asset: str | None = None,
        tx_type: int | None = None,
        from_time: int | None = None,
        to_time: int | None = None,
        pagination: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Transaction history. Times are sent as JSON **numbers** (what the Go node parses),
        unlike the SDK, which sends bigints as strings (nitrolite-v1.md §11)."""
        params = _compact(
            wallet=wallet,
            asset=asset,
            tx_type=tx_type,
            pagination=None if pagination is None else dict(pagination),
            from_time=from_time,
            to_time=to_time,
        )
        return await self.user_v1_get_transactions(params)

    # --- helpers for the signed calls --------------------------------------------------

    def _signer(self) -> StateSigner:
        if self.state_signer is None:
            raise InvalidSignatureError("this client has no state signer: it can only read")
        return self.state_signer

    async def _node_address(self) -> str:
        return str((await self.get_config())["nodeAddress"])

    async def _sig_validators_bitmap(self) -> str:
        return sig_validators_bitmap((await self.get_config())["supportedSigValidators"])

    async def _latest_or_none(self, wallet: str, asset: str) -> dict[str, Any] | None:
        """``getLatestState`` where the SDK swallows a refusal and treats it as "no state"."""
        try:
            return await self.get_latest_state(wallet, asset, False)
        except RelayError:
            return None

    async def sign_state(self, state: Mapping[str, Any]) -> str:
        """The user signature of ``state`` (token decimals fetched first if not cached)."""
        for key in ("home_ledger", "escrow_ledger"):
            ledger = state.get(key)
            if ledger:
                await self.assets.token_decimals(ledger["blockchain_id"], ledger["token_address"])
        packed = pack_state(state, self.assets.cached_token_decimals)
        return await self._signer().sign_state(packed)

    async def _open_channel(
        self,
        previous: Mapping[str, Any] | None,
        *,
        asset: str,
        blockchain_id: int,
        token: str,
        node: str,
        bitmap: str,
        transition: Mapping[str, Any],
        nonce: int | None = None,
    ) -> dict[str, Any]:
        """Channel-creation path: next state bound to a new home channel, user-signed, sent
        with ``request_creation``; returns it with the node's signature."""
        definition = {
            "nonce": str(self._nonces() if nonce is None else nonce),
            "challenge": DEFAULT_CHALLENGE_DURATION,
            "approvedSigValidators": bitmap,
        }
        base = previous if previous is not None else _void_state(asset, self._signer().address)
        state = next_state(base)
        apply_channel_creation(state, definition, str(blockchain_id), token, node)
        apply_transition(state, transition)
        state["user_sig"] = await self.sign_state(state)
        wire_definition = {
            "nonce": definition["nonce"],
            "challenge": definition["challenge"],
            "approved_sig_validators": bitmap,
        }
        if self.on_signed is not None:
            self.on_signed(state, wire_definition)
        reply = await self.channels_v1_request_creation(state, wire_definition)
        state["node_sig"] = _signature_from(reply, "request_creation")
        return state

    async def _advance(
        self, current: Mapping[str, Any], transition: Mapping[str, Any]
    ) -> dict[str, Any]:
        """Existing-channel path (SDK ``signAndSubmitState``): validate, sign, submit."""
        state = next_state(current)
        apply_transition(state, transition)
        verdict = validate_advancement(current, state)
        if verdict != "ok":
            raise InvalidStateError(f"the new state is not a valid advancement: {verdict}")
        decimals = await self.assets.asset_decimals(state["asset"])
        if decimal_places(state["transition"]["amount"]) > decimals:
            raise InvalidAmountError(
                f"amount {state['transition']['amount']} exceeds the {decimals} decimals "
                f"of asset {state['asset']}"
            )
        state["user_sig"] = await self.sign_state(state)
        if self.on_signed is not None:
            self.on_signed(state, None)
        reply = await self.channels_v1_submit_state(state)
        state["node_sig"] = _signature_from(reply, "submit_state")
        return state

    async def _home_chain(self, asset: str, state: Mapping[str, Any] | None) -> int:
        chain = self.home_blockchains.get(asset)
        if chain:
            return int(chain)
        if state is not None and int(state["home_ledger"]["blockchain_id"]) != 0:
            return int(state["home_ledger"]["blockchain_id"])
        return await self.assets.suggested_blockchain_id(asset)

    @staticmethod
    def _is_open(state: Mapping[str, Any] | None) -> bool:
        return bool(
            state is not None
            and state.get("home_channel_id")
            and int(state["transition"]["type"]) != _FINALIZE
        )

    # --- high-level channel calls (SDK Client) -----------------------------------------

    async def _deposit_or_withdraw(
        self, kind: int, blockchain_id: int | str, asset: str, amount: Decimal | str | int
    ) -> dict[str, Any]:
        wallet = self._signer().address
        chain = int(blockchain_id)
        node = await self._node_address()
        token = await self.assets.token_address(asset, chain)
        state = await self._latest_or_none(wallet, asset)
        spec = {"type": kind, "amount": amount}
        if state is None or not self._is_open(state):
            bitmap = await self._sig_validators_bitmap()
            return await self._open_channel(
                state,
                asset=asset,
                blockchain_id=chain,
                token=token,
                node=node,
                bitmap=bitmap,
                transition=spec,
            )
        return await self._advance(state, spec)

    async def deposit(
        self, blockchain_id: int | str, asset: str, amount: Decimal | str | int
    ) -> dict[str, Any]:
        """Deposit ``amount`` into the home channel, opening it on ``blockchain_id`` if there
        is none (or it was finalized). Returns the co-signed state; the on-chain step
        (``createChannel`` / ``depositToChannel``) is separate."""
        return await self._deposit_or_withdraw(10, blockchain_id, asset, amount)

    async def withdraw(
        self, blockchain_id: int | str, asset: str, amount: Decimal | str | int
    ) -> dict[str, Any]:
        """Withdraw ``amount`` from the home channel (co-signed state; on-chain step apart)."""
        return await self._deposit_or_withdraw(11, blockchain_id, asset, amount)

    async def _send_or_acknowledge(
        self, asset: str, spec: Mapping[str, Any], *, acknowledge: bool
    ) -> dict[str, Any]:
        wallet = self._signer().address
        state = await self._latest_or_none(wallet, asset)
        if state is None or not state.get("home_channel_id"):
            # no channel yet (possibly funds received without one): open it with this state
            bitmap = await self._sig_validators_bitmap()
            chain = await self._home_chain(asset, state)
            node = await self._node_address()
            token = await self.assets.token_address(asset, chain)
            return await self._open_channel(
                state,
                asset=asset,
                blockchain_id=chain,
                token=token,
                node=node,
                bitmap=bitmap,
                transition=spec,
            )
        if acknowledge and state.get("user_sig"):
            raise InvalidStateError("state already acknowledged by user")
        return await self._advance(state, spec)

    async def transfer(
        self, recipient: str, asset: str, amount: Decimal | str | int
    ) -> dict[str, Any]:
        """Send ``amount`` off-chain to ``recipient`` (hashed as the exact text given)."""
        spec = {"type": 30, "account_id": recipient, "amount": amount}
        return await self._send_or_acknowledge(asset, spec, acknowledge=False)

    async def acknowledge(self, asset: str) -> dict[str, Any]:
        """Co-sign the node-issued latest state (e.g. a received transfer), opening the
        channel if the wallet has none."""
        return await self._send_or_acknowledge(asset, {"type": 1}, acknowledge=True)

    async def open_home_channel(
        self,
        blockchain_id: int | str,
        asset: str,
        amount: Decimal | str | int,
        *,
        nonce: int | None = None,
    ) -> dict[str, Any]:
        """Open a new home channel on ``blockchain_id`` with a deposit of ``amount`` (or,
        for 0, an acknowledgement: a channel with nothing in it, whose creation intent is
        OPERATE). A channel that is open already is an :class:`InvalidStateError`.
        ``nonce`` (default: the SDK's clock-based one) is the channel definition's nonce."""
        wallet = self._signer().address
        chain = int(blockchain_id)
        state = await self._latest_or_none(wallet, asset)
        if self._is_open(state):
            raise InvalidStateError(f"a home channel for {asset} is open already")
        spec: dict[str, Any] = {"type": 10, "amount": amount} if Decimal(amount) else {"type": 1}
        return await self._open_channel(
            state,
            asset=asset,
            blockchain_id=chain,
            token=await self.assets.token_address(asset, chain),
            node=await self._node_address(),
            bitmap=await self._sig_validators_bitmap(),
            transition=spec,
            nonce=nonce,
        )

    async def close_home_channel(self, asset: str) -> dict[str, Any]:
        """The finalize state (user balance paid out); on-chain ``closeChannel`` is separate."""
        wallet = self._signer().address
        state = await self.get_latest_state(wallet, asset, False)
        if state is None or not state.get("home_channel_id"):
            raise InvalidStateError(f"no channel exists for asset {asset}")
        return await self._advance(state, {"type": _FINALIZE})

    # --- app sessions (SDK Client) -----------------------------------------------------

    async def create_app_session(
        self,
        definition: Mapping[str, Any],
        session_data: str,
        quorum_sigs: Sequence[str],
        owner_sig: str | None = None,
    ) -> dict[str, Any]:
        """``{app_session_id, version, status}`` of the new session."""
        reply = await self.app_sessions_v1_create_app_session(
            definition, session_data, quorum_sigs, owner_sig
        )
        try:
            return {
                "app_session_id": _text(reply["app_session_id"], "app_session_id"),
                "version": _uint_str(reply["version"], "version"),
                "status": _text(reply["status"], "status"),
            }
        except (KeyError, SettlementValueError) as exc:
            raise InvalidFrameError(f"invalid create_app_session result: {exc}") from None

    async def submit_app_session_deposit(
        self,
        app_state_update: Mapping[str, Any],
        quorum_sigs: Sequence[str],
        asset: str,
        amount: Decimal | str | int,
    ) -> str:
        """Move ``amount`` from the channel into the app session: a commit state, signed,
        sent with the deposit update. Returns the node's signature on the channel state."""
        current = await self.get_latest_state(self._signer().address, asset, False)
        if current is None:
            raise InvalidStateError(f"no channel state for asset {asset} to commit from")
        state = next_state(current)
        app_session_id = _pick(app_state_update, "appSessionId", "app_session_id")
        apply_transition(state, {"type": 40, "account_id": app_session_id, "amount": amount})
        state["user_sig"] = await self.sign_state(state)
        reply = await self.app_sessions_v1_submit_deposit_state(
            app_state_update, quorum_sigs, state
        )
        return _signature_from(reply, "submit_deposit_state")

    async def submit_app_state(
        self, app_state_update: Mapping[str, Any], quorum_sigs: Sequence[str]
    ) -> None:
        """An operate / withdraw / close update (deposits: :meth:`submit_app_session_deposit`)."""
        await self.app_sessions_v1_submit_app_state(app_state_update, quorum_sigs)

    # --- session keys ------------------------------------------------------------------

    async def sign_channel_session_key_state(self, state: Mapping[str, Any]) -> str:
        """The wallet's ``user_sig`` for a channel session-key registration."""
        payload = _channel_key_payload(state)
        return await self._signer().sign_wallet_message(payload)

    async def submit_channel_session_key_state(self, state: Mapping[str, Any]) -> None:
        await self.channels_v1_submit_session_key_state(state)

    async def sign_app_session_key_state(self, state: Mapping[str, Any]) -> str:
        """The wallet's ``user_sig`` for an app-session key registration."""
        return await self._signer().sign_wallet_message(app_session_key_state_hash(state))

    async def submit_app_session_key_state(self, state: Mapping[str, Any]) -> None:
        await self.app_sessions_v1_submit_session_key_state(state)


def _channel_key_payload(state: Mapping[str, Any]) -> bytes:
    metadata = channel_session_key_metadata_hash(
        state["user_address"], state["version"], state["assets"], state["expires_at"]
    )
    return pack_channel_session_key_auth(state["session_key"], metadata)


async def sign_channel_session_key_ownership(
    state: Mapping[str, Any], session_key: MessageSigner
) -> str:
    """The session key's proof of possession (``session_key_sig``) for a channel key state."""
    raw = await session_key.sign_message(_channel_key_payload(state))
    return "0x" + _signature_bytes(raw, "session key").hex()


async def sign_app_session_key_ownership(
    state: Mapping[str, Any], session_key: MessageSigner
) -> str:
    """The session key's proof of possession for an app-session key state."""
    raw = await session_key.sign_message(app_session_key_state_hash(state))
    return "0x" + _signature_bytes(raw, "session key").hex()


__all__ += [
    "call_by_sdk_name",
    "sign_app_session_key_ownership",
    "sign_channel_session_key_ownership",
    "vector_state_signer",
]


def run_without_suspending(coro: Coroutine[Any, Any, _T]) -> _T:
    """Run a coroutine that never waits (scripted transport, in-process keys) to its end.

    Lets the synchronous vector driver run the same async client code without an event loop
    (so it also works inside Jupyter's running loop); a coroutine that does suspend is a bug
    in the scripted set-up and is reported, not awaited.
    """
    try:
        coro.send(None)
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]
    coro.close()
    raise SettlementError("a scripted client call suspended: it needs a real event loop")


# ---------------------------------------------------------------------------------------------
# vectors: rpc_client_frames
# ---------------------------------------------------------------------------------------------


class _ScriptedTransport:
    """Answers the k-th request with the k-th recorded reply, keeping each request's text."""

    def __init__(self, exchanges: Sequence[Mapping[str, Any]]) -> None:
        self._exchanges = list(exchanges)
        self.frames: list[dict[str, str]] = []

    async def exchange(self, request: Frame) -> Frame:
        k = len(self.frames)
        if k >= len(self._exchanges):
            raise SettlementError(f"request {k + 1} ({request.method}) was not scripted")
        script = self._exchanges[k]
        if script["method"] != request.method:
            raise SettlementError(
                f"request {k + 1} is {request.method}, the script expects {script['method']}"
            )
        text = script["scripted_response_frame"]
        self.frames.append({"request_frame": request.encode(), "response_frame": text})
        return decode_frame(text)


def _sequence(values: Sequence[Any], what: str) -> Callable[[], int]:
    queue = [int(v) for v in values]

    def take() -> int:
        if not queue:
            raise SettlementError(f"more {what} were drawn than recorded")
        return queue.pop(0)

    return take


def vector_state_signer(spec: Mapping[str, Any], meta: Mapping[str, Any]) -> StateSigner:
    """The state signer a vector's ``client.state_signer`` names, from ``meta.keys``."""
    keys = {k["address"].lower(): PrivateKey(k["private_key"]) for k in meta["keys"].values()}
    if spec["type"].startswith("ChannelDefaultSigner"):
        return ChannelDefaultSigner(KeyMessageSigner(keys[spec["address"].lower()]))
    if spec["type"] == "ChannelSessionKeyStateSigner":
        return ChannelSessionKeySigner(
            KeyMessageSigner(keys[spec["session_key"].lower()]),
            spec["wallet"],
            spec["metadata_hash"],
            spec["auth_signature"],
        )
    raise SettlementValueError(f"unknown state signer type {spec['type']!r}")


def _optional_sdk_state(state: Mapping[str, Any] | None) -> dict[str, Any] | None:
    return None if state is None else sdk_state(state)


async def call_by_sdk_name(core: V1ClientCore, api: str, args: Mapping[str, Any]) -> Any:
    """Run the SDK call named ``api`` (``"Client.deposit"``, ``"RPCClient.channelsV1GetChannels"``
    ...) with a vector's structured ``args`` on ``core``; the result in the SDK's shape.

    Public so that any transport (the scripted one below, a loopback WebSocket in the tests)
    can replay a recorded session through the same dispatch.
    """
    if api == "Client.ping":
        return await core.ping()
    if api == "Client.getConfig":
        return await core.get_config()
    if api == "Client.getAssets":
        return sdk_assets(await core.get_assets(args.get("blockchain_id")))
    if api == "Client.getBalances":
        return sdk_balances(await core.get_balances(args["wallet"]))
    if api == "Client.getLatestState":
        state = await core.get_latest_state(args["wallet"], args["asset"], args["only_signed"])
        return _optional_sdk_state(state)
    if api == "Client.getHomeChannel":
        channel = await core.get_home_channel(args["wallet"], args["asset"])
        return None if channel is None else sdk_channel(channel)
    if api == "Client.deposit":
        return sdk_state(await core.deposit(args["blockchain_id"], args["asset"], args["amount"]))
    if api == "Client.withdraw":
        return sdk_state(await core.withdraw(args["blockchain_id"], args["asset"], args["amount"]))
    if api == "Client.transfer":
        return sdk_state(
            await core.transfer(args["recipient_wallet"], args["asset"], args["amount"])
        )
    if api == "Client.acknowledge":
        return sdk_state(await core.acknowledge(args["asset"]))
    if api == "Client.closeHomeChannel":
        return sdk_state(await core.close_home_channel(args["asset"]))
    if api == "Client.createAppSession":
        created = await core.create_app_session(
            args["definition"], args["session_data"], args["quorum_sigs"]
        )
        return {
            "appSessionId": created["app_session_id"],
            "version": created["version"],
            "status": created["status"],
        }
    if api == "Client.submitAppSessionDeposit":
        return await core.submit_app_session_deposit(
            args["app_state_update"], args["quorum_sigs"], args["asset"], args["deposit_amount"]
        )
    if api == "Client.submitAppState":
        return await core.submit_app_state(args["app_state_update"], args["quorum_sigs"])
    if api == "Client.submitChannelSessionKeyState":
        return await core.submit_channel_session_key_state(args["state"])
    if api == "Client.submitSessionKeyState":
        return await core.submit_app_session_key_state(args["state"])
    if api == "RPCClient.channelsV1GetChannels":
        return await core.channels_v1_get_channels(args["req"])
    if api == "RPCClient.userV1GetTransactions":
        return await core.user_v1_get_transactions(args["req"])
    raise SettlementValueError(f"unknown client call {api!r}")


def _vector_rpc_client_frames(inputs: Mapping[str, Any], meta: Mapping[str, Any]) -> dict[str, Any]:
    """A fresh client from ``inputs.client``, driven by the recorded replies, ids and nonces."""
    exchanges = inputs["exchanges"]
    client = inputs["client"]
    transport = _ScriptedTransport(exchanges)
    signer_spec = client.get("state_signer")
    core = V1ClientCore(
        transport,
        state_signer=None if signer_spec is None else vector_state_signer(signer_spec, meta),
        asset_cache=client.get("asset_store_cache") or (),
        home_blockchains={k: int(v) for k, v in (client.get("home_blockchains") or {}).items()},
        request_ids=_sequence([e["request_id"] for e in exchanges], "request ids"),
        clock_ms=_sequence([e["timestamp_ms"] for e in exchanges], "timestamps"),
        nonces=_sequence(inputs.get("generated_channel_nonces") or [], "channel nonces"),
    )
    call = inputs["call"]
    result: Any = None
    error: str | None = None
    try:
        result = run_without_suspending(call_by_sdk_name(core, call["api"], call["args"]))
    except (RelayError, InvalidStateError, InvalidAmountError) as exc:
        error = sdk_error_message(exc)
    return {"frames": transport.frames, "result": result, "error": error}


VECTORS: dict[str, Callable[[Mapping[str, Any], Mapping[str, Any]], dict[str, Any]]] = {
    "rpc_client_frames": _vector_rpc_client_frames,
}
"""Vector group -> ``(inputs, meta) -> outputs`` (see :mod:`.vectors`)."""
