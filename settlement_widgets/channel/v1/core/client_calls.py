"""The Nitrolite v1 client core: every request the SDK ``Client`` sends, driven by a transport.

Why this module exists: a v1 node accepts a state only if it is exactly "previous state +
one transition", signed over the exact packed bytes (Nitrolite v1.4.1 SDK), and the SDK's
high-level calls (``deposit``, ``transfer``, ``acknowledge`` ...) each send a precise
sequence of requests to build that state (``get_config`` for the node address and validator
bitmap, ``get_assets`` on an asset-cache miss, ``get_latest_state``, then ``request_creation``
or ``submit_state``). :class:`V1ClientCore` reproduces those sequences and payloads byte for
byte (the ``rpc_client_frames`` vectors), on top of the pure core (:mod:`.lifecycle`,
:mod:`.state`, :mod:`.app_sessions`, :mod:`.wire`).

The layers: :mod:`.client_rpc` (the SDK ``RPCClient``: request payloads and the one
request path), :mod:`.client_queries` (the ``Client``'s reads and their parsing),
:mod:`.client_assets` (the asset cache), :mod:`.client_signers` (wallets and state
signers) and this module (the signed calls); :mod:`.client_vectors` replays the
``rpc_client_frames`` vectors through them.

It does no I/O of its own: every request goes through a :class:`FrameTransport` (one
``exchange(request) -> reply`` coroutine), and the request id, the clock and the channel
nonce come from injected sources. The WebSocket client
(:class:`settlement_widgets.channel.v1.client.rpc_client.V1RpcClient`) is one transport; the vector
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

from collections.abc import Callable, Coroutine, Mapping, Sequence
from decimal import Decimal
from typing import Any, Final, TypeVar

from ....errors import (
    InvalidSignatureError,
    InvalidStateError,
    RelayError,
    SettlementError,
)
from .client_app_calls import AppSessionCalls, _signature_from
from .client_assets import AssetStore
from .client_queries import ClientQueries
from .client_rpc import (
    FrameTransport,
    RpcClient,
    app_definition_to_wire,
    app_state_update_to_wire,
    channel_nonce,
    check_reply,
    now_ms,
    random_request_id,
    sdk_error_message,
)
from .client_signers import (
    ChannelDefaultSigner,
    ChannelSessionKeySigner,
    KeyMessageSigner,
    MessageSigner,
    StateSigner,
    sign_app_session_key_ownership,
    sign_channel_session_key_ownership,
    vector_state_signer,
)
from .ids import DEFAULT_CHALLENGE_DURATION
from .lifecycle import apply_channel_creation, apply_transition, check_advancement, next_state
from .state import pack_state
from .transitions import TransitionType, sig_validators_bitmap

__all__ = [
    "VECTORS",
    "AssetStore",
    "ChannelDefaultSigner",
    "ChannelSessionKeySigner",
    "ClientQueries",
    "FrameTransport",
    "KeyMessageSigner",
    "MessageSigner",
    "RpcClient",
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
    "sign_app_session_key_ownership",
    "sign_channel_session_key_ownership",
    "vector_state_signer",
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


# ---------------------------------------------------------------------------------------------
# the client core
# ---------------------------------------------------------------------------------------------


def _past_lock(current: Mapping[str, Any], kind: int) -> Mapping[str, Any]:
    """``current`` as the base of a ``kind`` state: a signed escrow lock or migrate state
    without its escrow ledger unless ``kind`` is its own second state. The node takes such a
    state only once it has taken back the abandoned lock (ours: ``node/escrows.py``,
    ``node/migrations.py``) and refuses it otherwise, as before."""
    second = {110: 21, 100: 101}.get(int(current["transition"]["type"]))
    if second is None or kind == second or not current.get("user_sig"):
        return current
    return {k: v for k, v in current.items() if k not in ("escrow_ledger", "escrow_channel_id")}


class V1ClientCore(AppSessionCalls):
    """The SDK ``Client`` over a :class:`FrameTransport`: its reads
    (:class:`~.client_queries.ClientQueries`) and its signed calls.

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
        super().__init__(
            transport, asset_cache=asset_cache, request_ids=request_ids, clock_ms=clock_ms
        )
        self.state_signer = state_signer
        self.home_blockchains: dict[str, int] = dict(home_blockchains or {})
        self._nonces = nonces if nonces is not None else (lambda: channel_nonce(clock_ms()))
        #: called with every state this client signed, and the channel definition of a
        #: creation (else None), after signing and before the node is asked: a provider
        #: writes it to disk there, so a crash between the two loses no signed state
        self.on_signed: Callable[[Mapping[str, Any], Mapping[str, Any] | None], None] | None = None

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

    def get_user_address(self) -> str:
        """The wallet the state signer acts for (SDK ``getUserAddress``)."""
        return self._signer().address

    async def validate_and_sign_state(
        self, current: Mapping[str, Any], proposed: Mapping[str, Any]
    ) -> str:
        """The user signature of ``proposed`` once it is checked to be a valid advancement
        of ``current`` (SDK ``validateAndSignState``); an invalid one is refused unsigned."""
        decimals = await self.assets.asset_decimals(proposed["asset"])
        check_advancement(current, proposed, asset_decimals=decimals)  # the SDK's messages
        return await self.sign_state(proposed)

    async def set_home_blockchain(self, asset: str, blockchain_id: int | str) -> None:
        """Pin the chain new channels for ``asset`` open on (SDK ``setHomeBlockchain``):
        set once per asset, and only to a chain the node serves the asset on (checked
        through the asset cache, which fetches ``get_assets`` on a miss)."""
        chain = int(blockchain_id)
        existing = self.home_blockchains.get(asset)
        if existing is not None:
            raise InvalidStateError(
                f"home blockchain is already set for asset {asset} to {existing}, please use "
                "Migrate() if you want to change home blockchain"
            )
        if not await self.assets.asset_exists_on_blockchain(chain, asset):
            raise InvalidStateError(f"asset {asset} not supported on blockchain {chain}")
        self.home_blockchains[asset] = chain

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
        """Existing-channel path (SDK ``signAndSubmitState``): validate, sign, submit.

        Over a signed escrow lock or migrate state, a state other than its second one
        carries no escrow ledger: the node takes one only once it has taken back the
        abandoned lock (ours; see ``node/escrows.py`` and ``node/migrations.py``), and
        refuses it otherwise."""
        current = _past_lock(current, int(transition["type"]))
        state = next_state(current)
        apply_transition(state, transition)
        decimals = await self.assets.asset_decimals(state["asset"])
        check_advancement(current, state, asset_decimals=decimals)  # the SDK's messages
        return await self._submit_built(state)

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

    async def transfer_from(
        self,
        current: Mapping[str, Any],
        recipient: str,
        asset: str,
        amount: Decimal | str | int,
    ) -> dict[str, Any]:
        """:meth:`transfer` built on ``current``, a state the caller holds as the latest,
        without asking the node for it (one ``submit_state``). The node refuses it if
        ``current`` is not its latest; the caller then falls back to :meth:`transfer`."""
        if not self._is_open(current) or current.get("asset") != asset:
            raise InvalidStateError(f"no open home channel state for {asset} to build on")
        spec = {"type": 30, "account_id": recipient, "amount": amount}
        return await self._advance(current, spec)

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

    async def mutual_lock(
        self, asset: str, blockchain_id: int | str, amount: Decimal | str | int
    ) -> dict[str, Any]:
        """The co-signed ``mutual_lock`` state that starts an escrow deposit of ``amount``
        from ``blockchain_id`` (core ``applyMutualLockTransition``; no SDK client method
        sends it, and Yellow's node v1.4.1 refuses it: see ``node/escrows.py``)."""
        return await self._escrow_start(120, asset, blockchain_id, amount)

    async def _open_latest(self, asset: str) -> dict[str, Any]:
        """The wallet's latest state of ``asset`` (signed or not), refused unless its home
        channel is open: what an escrow's lock or a migrate is built on."""
        state = await self.get_latest_state(self._signer().address, asset, False)
        if not self._is_open(state):
            raise InvalidStateError(f"no open home channel for {asset}")
        assert state is not None
        return state

    async def _escrow_start(
        self, kind: int, asset: str, blockchain_id: int | str, amount: Decimal | str | int
    ) -> dict[str, Any]:
        chain = int(blockchain_id)
        state = await self._open_latest(asset)
        spec = {
            "type": kind,
            "blockchain_id": chain,
            "token_address": await self.assets.token_address(asset, chain),
            "amount": amount,
        }
        return await self._advance(state, spec)

    async def escrow_lock(
        self, asset: str, blockchain_id: int | str, amount: Decimal | str | int
    ) -> dict[str, Any]:
        """The co-signed ``escrow_lock`` state that starts a withdrawal of ``amount`` to
        ``blockchain_id`` (core ``applyEscrowLockTransition``; as :meth:`mutual_lock`, no SDK
        client sends it and Yellow's node v1.4.1 refuses it)."""
        return await self._escrow_start(110, asset, blockchain_id, amount)

    async def escrow_withdraw(
        self, current: Mapping[str, Any], amount: Decimal | str | int
    ) -> dict[str, Any]:
        """The co-signed ``escrow_withdraw`` state on ``current`` (the co-signed escrow
        lock): ``amount`` debited at home, to be taken from the lock on its chain."""
        return await self._advance(current, {"type": 21, "amount": amount})

    async def escrow_deposit(
        self, current: Mapping[str, Any], amount: Decimal | str | int
    ) -> dict[str, Any]:
        """The co-signed ``escrow_deposit`` state on ``current`` (the co-signed mutual lock):
        the escrowed ``amount`` credited to the home balance."""
        return await self._advance(current, {"type": 20, "amount": amount})

    async def migrate(self, asset: str, blockchain_id: int | str) -> dict[str, Any]:
        """The co-signed ``migrate`` state moving the home channel of ``asset`` to
        ``blockchain_id`` (our protocol, :mod:`.migration`: the SDK's core throws on
        ``migrate`` and Yellow's node refuses it)."""
        from .migration import migrate_state

        chain = int(blockchain_id)
        state = await self._open_latest(asset)
        token = await self.assets.token_address(asset, chain)
        base = _past_lock(state, int(TransitionType.MIGRATE))
        return await self._submit_built(migrate_state(base, blockchain_id=chain, token=token))

    async def finalize_migration(self, current: Mapping[str, Any]) -> dict[str, Any]:
        """The co-signed ``migrate_finalize`` state on ``current`` (the co-signed migrate
        state): the home channel's ledger is now the new chain's. The node co-signs it once
        that chain shows the channel MIGRATING_IN (``initiateMigration`` sent there)."""
        from .migration import finalize_migration_state

        state = await self._submit_built(finalize_migration_state(current))
        if state["asset"] in self.home_blockchains:  # new channels follow the migration
            self.home_blockchains[state["asset"]] = int(state["home_ledger"]["blockchain_id"])
        return state

    async def _submit_built(self, state: dict[str, Any]) -> dict[str, Any]:
        """Sign a state (built by the SDK's transitions, or outside them: a migration's),
        write it ahead, submit it and add the node's signature."""
        state["user_sig"] = await self.sign_state(state)
        if self.on_signed is not None:
            self.on_signed(state, None)
        reply = await self.channels_v1_submit_state(state)
        state["node_sig"] = _signature_from(reply, "submit_state")
        return state

    async def close_home_channel(self, asset: str) -> dict[str, Any]:
        """The finalize state (user balance paid out); on-chain ``closeChannel`` is separate."""
        wallet = self._signer().address
        state = await self.get_latest_state(wallet, asset, False)
        if state is None or not state.get("home_channel_id"):
            raise InvalidStateError(f"no channel exists for asset {asset}")
        return await self._advance(state, {"type": _FINALIZE})


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


def _vector_rpc_client_frames(inputs: Mapping[str, Any], meta: Mapping[str, Any]) -> dict[str, Any]:
    """``rpc_client_frames`` (driver in :mod:`.client_vectors`, imported when used: it
    imports this module)."""
    from .client_vectors import rpc_client_frames

    return rpc_client_frames(inputs, meta)


VECTORS: dict[str, Callable[[Mapping[str, Any], Mapping[str, Any]], dict[str, Any]]] = {
    "rpc_client_frames": _vector_rpc_client_frames,
}
"""Vector group -> ``(inputs, meta) -> outputs`` (see :mod:`.vectors`)."""


def __getattr__(name: str) -> Any:
    """``call_by_sdk_name`` lives in :mod:`.client_vectors` (which imports this module);
    kept importable from here, where it was first published."""
    if name == "call_by_sdk_name":
        from .client_vectors import call_by_sdk_name

        return call_by_sdk_name
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
