"""Helpers for the Nitronode tests: a minimal v1 WebSocket client and signed-state builders.

States are built with the protocol core (``nitrolite_v1.lifecycle``/``state``), exactly as a
client must build them, so the node is tested against the core's arithmetic and signatures.
The client is deliberately small (the real one is ``channel_v1.rpc_client``): it pipelines
requests and matches replies by id.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import websockets

from settlement_widgets.channel.v1.core.app_sessions import quorum_signature, update_hash
from settlement_widgets.channel.v1.core.ids import state_id
from settlement_widgets.channel.v1.core.lifecycle import (
    apply_channel_creation,
    apply_transition,
    next_state,
)
from settlement_widgets.channel.v1.core.rpc_shapes import wire_state
from settlement_widgets.channel.v1.core.state import sign_state
from settlement_widgets.channel.v1.core.wire import Frame, MessageType, decode_frame, encode_frame
from settlement_widgets.channel.v1.node import NitronodeConfig, NodeAsset, NodeChain, NodeToken
from settlement_widgets.keys import PrivateKey
from settlement_widgets.sandbox.chain import dev_keys

CHAIN_ID = 31337
HUB = "0x5FbDB2315678afecb367f032d93F642f64180aa3"
TOKEN = "0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512"
ASSET = "usdc"
NODE_KEY, ALICE, BOB, CAROL = dev_keys(4)
USDC = NodeAsset(ASSET, 6, (NodeToken(CHAIN_ID, TOKEN, 6),), name="USD Coin")
_nonces = itertools.count(int(time.time() * 1000) * 1_000_000)


def node_config(db: Path, **overrides: Any) -> NitronodeConfig:
    values: dict[str, Any] = {
        "db_path": db,
        "node_key": NODE_KEY,
        "chains": (NodeChain(CHAIN_ID, HUB, "local"),),
        "assets": (USDC,),
        # rule tests fire requests unpaced; the limits have their own tests
        # (test_nitronode_rate_limits.py)
        "rate_limit_burst": 1_000_000,
    }
    values.update(overrides)
    return NitronodeConfig(**values)


def decimals(chain: int, token: str) -> int:
    return 6


def void_state(wallet: str, asset: str = ASSET) -> dict[str, Any]:
    return {
        "id": state_id(wallet, asset, 0, 0),
        "transition": {"type": 0, "tx_id": "", "account_id": "", "amount": "0"},
        "asset": asset,
        "user_wallet": wallet,
        "epoch": "0",
        "version": "0",
        "home_ledger": {
            "token_address": "0x0",
            "blockchain_id": "0",
            "user_balance": "0",
            "user_net_flow": "0",
            "node_balance": "0",
            "node_net_flow": "0",
        },
    }


def definition(
    nonce: int | None = None, challenge: int = 86400, bitmap: str = "0x03"
) -> dict[str, Any]:
    return {
        "nonce": str(next(_nonces) if nonce is None else nonce),
        "challenge": challenge,
        "approved_sig_validators": bitmap,
    }


def creation_state(
    user: PrivateKey,
    spec: Mapping[str, Any],
    chan_def: Mapping[str, Any],
    previous: Mapping[str, Any] | None = None,
    *,
    node: str = NODE_KEY.address,
    token: str = TOKEN,
    chain: int = CHAIN_ID,
    sign: bool = True,
) -> dict[str, Any]:
    """The first state of a new home channel, user-signed (SDK ``applyChannelCreation``)."""
    state = next_state(previous or void_state(user.address))
    apply_channel_creation(
        state,
        {
            "nonce": chan_def["nonce"],
            "challenge": chan_def["challenge"],
            "approvedSigValidators": chan_def["approved_sig_validators"],
        },
        str(chain),
        token,
        node,
    )
    apply_transition(state, spec)
    return _signed(state, user, sign)


def advance(
    user: PrivateKey, previous: Mapping[str, Any], spec: Mapping[str, Any], sign: bool = True
) -> dict[str, Any]:
    """``previous`` + one transition, user-signed (``sign=False``: a junk signature, for
    states that cannot be packed, e.g. with a negative balance)."""
    state = next_state(previous)
    apply_transition(state, spec)
    return _signed(state, user, sign)


def _signed(state: dict[str, Any], user: PrivateKey, sign: bool = True) -> dict[str, Any]:
    out = wire_state(state)
    if sign:
        out["user_sig"] = "0x" + sign_state(out, user, decimals).hex()
    else:
        out["user_sig"] = "0x00" + "11" * 65
    return out


def deposit(amount: str) -> dict[str, Any]:
    return {"type": 10, "amount": amount}


def withdraw(amount: str) -> dict[str, Any]:
    return {"type": 11, "amount": amount}


def send(to: str, amount: str) -> dict[str, Any]:
    return {"type": 30, "account_id": to, "amount": amount}


ACK: dict[str, Any] = {"type": 1}
FINALIZE: dict[str, Any] = {"type": 200}


def app_update(
    session_id: str, intent: int, version: int, allocations: list[tuple[str, str]], data: str = ""
) -> dict[str, Any]:
    return {
        "app_session_id": session_id,
        "intent": intent,
        "version": str(version),
        "allocations": [{"participant": w, "asset": ASSET, "amount": a} for w, a in allocations],
        "session_data": data,
    }


def quorum(update: Mapping[str, Any], *keys: PrivateKey) -> list[str]:
    digest = update_hash(update)
    return ["0x" + quorum_signature(digest, k).hex() for k in keys]


class V1Client:
    """Pipelining v1 client: :meth:`call` sends a request and awaits its reply by id."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[Frame]] = {}
        self.unmatched: asyncio.Queue[str] = asyncio.Queue()
        self.ws: Any = None
        self._reader: asyncio.Task[None] | None = None
        self.closed = asyncio.Event()
        self._sends: set[asyncio.Future[None]] = set()

    async def __aenter__(self) -> V1Client:
        self.ws = await websockets.connect(self.url, max_size=None, compression=None)
        self._reader = asyncio.create_task(self._read())
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.ws.close()
        if self._reader is not None:
            await self._reader

    async def _read(self) -> None:
        try:
            async for message in self.ws:
                frame = decode_frame(message)
                future = self._pending.pop(frame.request_id, None)
                if future is None or future.done():
                    self.unmatched.put_nowait(message)
                else:
                    future.set_result(frame)
        except websockets.ConnectionClosed:
            pass
        finally:
            self.closed.set()
            for future in self._pending.values():
                if not future.done():
                    future.set_exception(ConnectionError("connection closed"))

    def request(self, method: str, payload: Mapping[str, Any]) -> asyncio.Future[Frame]:
        """Send now; the future resolves with the reply."""
        request_id = next(self._ids)
        future: asyncio.Future[Frame] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        frame = Frame(MessageType.REQUEST, request_id, method, payload, int(time.time() * 1000))
        sending = asyncio.ensure_future(self.ws.send(encode_frame(frame)))
        self._sends.add(sending)
        sending.add_done_callback(self._sends.discard)
        return future

    async def call(self, method: str, payload: Mapping[str, Any] | None = None) -> Frame:
        return await asyncio.wait_for(self.request(method, payload or {}), 30)

    async def ok(self, method: str, payload: Mapping[str, Any] | None = None) -> dict[str, Any]:
        frame = await self.call(method, payload)
        assert frame.type == MessageType.RESPONSE, frame.error
        assert frame.method == method
        return dict(frame.payload)

    async def error(self, method: str, payload: Mapping[str, Any] | None = None) -> str:
        frame = await self.call(method, payload)
        assert frame.type == MessageType.ERROR, frame.payload
        assert frame.method == method
        return frame.error or ""

    async def raw(self, text: str | bytes) -> str:
        """Send a raw message and return the next message no request awaits."""
        await self.ws.send(text)
        return await asyncio.wait_for(self.unmatched.get(), 30)
