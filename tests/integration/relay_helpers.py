"""A small WebSocket client for the relay tests: every frame is parsed with the protocol
core's exact parser and its broker signature verified; replies are matched by id and
notifications can be awaited with a predicate (no sleeps)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import websockets

from settlement_widgets.channel.v0_5.core import rpc
from settlement_widgets.channel.v0_5.core.auth import AuthPolicy
from settlement_widgets.channel.v0_5.core.rpc import Request, Response
from settlement_widgets.channel.v0_5.node import AssetConfig, NetworkConfig, RelayConfig
from settlement_widgets.keys import PrivateKey
from settlement_widgets.networks import SEPOLIA

TIMEOUT = 20.0
assert SEPOLIA.token is not None  # the Sepolia profile always names its channel asset
TOKEN: str = SEPOLIA.token
CUSTODY = SEPOLIA.contracts.custody
ADJUDICATOR = SEPOLIA.contracts.adjudicator
CHAIN_ID = 31337
ASSET = "ytest.usd"


def relay_config(db: Path, **overrides: Any) -> RelayConfig:
    """A chain-less relay config (the chain facts are only echoed by get_config/get_assets)."""
    options: dict[str, Any] = {
        "db_path": db,
        "networks": (NetworkConfig(CHAIN_ID, "local", CUSTODY, ADJUDICATOR),),
        "assets": (AssetConfig(ASSET, TOKEN, CHAIN_ID, 6),),
        "durability": "normal",
    }
    options.update(overrides)
    return RelayConfig(**options)


class RelayTestClient:
    """One connection. ``await client.call(req)`` sends a request frame and returns the reply."""

    def __init__(self, url: str, broker: str) -> None:
        self.url = url
        self.broker = broker
        self.frames: list[Response] = []
        self._changed = asyncio.Condition()
        self._ws: Any = None
        self._reader: asyncio.Task[None] | None = None
        self._next_id = int(time.time() * 1000) * 10

    async def __aenter__(self) -> RelayTestClient:
        self._ws = await websockets.connect(self.url, compression=None, max_size=1 << 22)
        self._reader = asyncio.create_task(self._read())
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        if self._ws is not None:
            await self._ws.close()
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._reader

    async def _read(self) -> None:
        async for text in self._ws:
            frame = rpc.parse_response(text)
            frame.verify(self.broker)  # every frame is the broker's, over the exact bytes
            async with self._changed:
                self.frames.append(frame)
                self._changed.notify_all()

    def next_id(self) -> int:
        self._next_id += 1
        return self._next_id

    async def send_raw(self, text: str | bytes) -> None:
        await self._ws.send(text)

    async def wait_for(
        self,
        predicate: Callable[[Response], bool],
        *,
        timeout: float = TIMEOUT,
        after: int = 0,
    ) -> Response:
        """The first frame (from index ``after`` on) matching ``predicate``."""

        async def scan() -> Response:
            seen = after
            async with self._changed:
                while True:
                    for frame in self.frames[seen:]:
                        if predicate(frame):
                            return frame
                    seen = len(self.frames)
                    await self._changed.wait()

        return await asyncio.wait_for(scan(), timeout)

    async def reply(self, request_id: int, *, timeout: float = TIMEOUT, after: int = 0) -> Response:
        return await self.wait_for(
            lambda f: f.request_id == request_id, timeout=timeout, after=after
        )

    async def notification(
        self, method: str, predicate: Callable[[Response], bool] = lambda f: True
    ) -> Response:
        return await self.wait_for(
            lambda f: f.request_id == 0 and f.method == method and predicate(f)
        )

    async def call(self, req: Request) -> Response:
        """Send ``req`` and return the reply to *this* send (a replayed id is answered anew)."""
        start = len(self.frames)
        await self._ws.send(req.to_frame())
        return await self.reply(req.request_id, after=start)

    def notifications(self, method: str) -> list[Response]:
        return [f for f in self.frames if f.request_id == 0 and f.method == method]

    async def authenticate(
        self,
        wallet: PrivateKey,
        session_key: PrivateKey,
        *,
        application: str = "settlement_widgets tests",
        allowances: tuple[tuple[str, str], ...] = ((ASSET, "1000000"),),
        expires_at: int | None = None,
    ) -> Response:
        policy = AuthPolicy(
            wallet.address,
            session_key.address,
            application,
            allowances,  # type: ignore[arg-type]
            expires_at if expires_at is not None else int(time.time()) + 3600,
            "console",
        )
        challenge = await self.call(policy.request(request_id=self.next_id()))
        assert challenge.method == "auth_challenge", challenge.result
        verify = policy.verify_request(
            challenge.result["challenge_message"], wallet, request_id=self.next_id()
        )
        reply = await self.call(verify)
        assert reply.method == "auth_verify", reply.result
        await self.notification("bu")
        return reply
