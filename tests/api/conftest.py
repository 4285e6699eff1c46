"""Fixtures for the /api/settlement tests: a real Jupyter server in-process (pytest-jupyter),
a tiny loopback faucet that follows the sandbox faucet's documented HTTP contract, misbehaving
upstreams (closed port, slow, 503, non-JSON) and a local network profile pointing at them."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from eth_utils import is_hex_address, to_checksum_address

# the pytest-jupyter fixtures (jp_fetch, jp_serverapp, jp_base_url, ...) for this folder only
from pytest_jupyter.jupyter_server import *  # noqa: F403

from settlement_widgets.networks import Network, local

FAUCET_PATH = "/faucet/requestTokens"


@dataclass
class LoopbackFaucet:
    """A faucet on 127.0.0.1 with the HTTP contract of the v0 sandbox faucet
    (``erc7824/faucet-app``): ``POST /faucet/requestTokens`` with ``{"userAddress"}`` ->
    200 ``{success, message, txId, amount, asset, destination}`` or 400 ``{"error"}``.

    Extra paths misbehave for the fallback tests: ``/unavailable/…`` answers 503 like a
    drained faucet, ``/slow/…`` answers only after :meth:`release`, ``/not-json/…`` answers
    200 with HTML. Not the sandbox's faucet (that one belongs to the sandbox package)."""

    server: ThreadingHTTPServer
    requests: list[dict[str, Any]] = field(default_factory=list)
    released: threading.Event = field(default_factory=threading.Event)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def url(self, kind: str = "faucet") -> str:
        return f"{self.base}/{kind}/requestTokens"

    def release(self) -> None:
        self.released.set()


def _faucet_handler(state: LoopbackFaucet) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
            pass

        def _send(self, status: int, body: bytes, ctype: str = "application/json") -> None:
            try:
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                pass  # a client that timed out (the /slow/ case) has hung up

        def _json(self, status: int, obj: dict[str, Any]) -> None:
            self._send(status, json.dumps(obj).encode())

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            state.requests.append(
                {"path": self.path, "contentType": self.headers.get("Content-Type"), "body": raw}
            )
            kind = self.path.split("/")[1]
            if kind == "unavailable":
                return self._json(503, {"error": "Faucet service is currently unavailable."})
            if kind == "not-json":
                return self._send(200, b"<html>maintenance</html>", "text/html")
            if kind == "slow":
                state.released.wait(timeout=30)
            try:
                data = json.loads(raw)
                address = data["userAddress"]
            except (ValueError, KeyError, TypeError):
                return self._json(
                    400,
                    {"error": "Invalid request format. Expected JSON with 'userAddress' field."},
                )
            if not isinstance(address, str) or not is_hex_address(address):
                return self._json(400, {"error": "Invalid address format."})
            self._json(
                200,
                {
                    "success": True,
                    "message": "Tokens sent successfully",
                    "txId": str(len(state.requests)),
                    "amount": "10",
                    "asset": "ytest.usd",
                    "destination": to_checksum_address(address),
                },
            )

    return Handler


@pytest.fixture
def loopback_faucet() -> Iterator[LoopbackFaucet]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    server.daemon_threads = True
    state = LoopbackFaucet(server)
    server.RequestHandlerClass = _faucet_handler(state)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield state
    state.release()
    server.shutdown()
    server.server_close()
    thread.join(timeout=10)


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A port bound but not listening: connecting is refused, and nobody else can take it."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    yield sock.getsockname()[1]
    sock.close()


@pytest.fixture
def jp_asyncio_loop(_function_scoped_runner: Any) -> Any:
    """Run pytest-jupyter's server on pytest-asyncio's loop (asyncio_mode=auto runs the async
    tests there), so the in-process server and the test share one loop. The runner closes it."""
    return _function_scoped_runner.get_loop()


LOCAL_CHAIN_ID = 31337


def local_network(faucet_url: str, rpc_url: str | None = None) -> Network:
    return local(
        chain_id=LOCAL_CHAIN_ID,
        custody="0x" + "11" * 20,
        adjudicator="0x" + "22" * 20,
        policy_hook="0x" + "33" * 20,
        settlement_adapter="0x" + "44" * 20,
        pool_manager="0x" + "55" * 20,
        node_url="ws://127.0.0.1:9/ws",
        faucet_url=faucet_url,
        explorer_base="http://127.0.0.1:9/explorer",
        rpc_url=rpc_url,
        deployer="0x" + "66" * 20,
    )


@pytest.fixture
def write_profile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """``write_profile(faucet_url)`` writes a local sandbox profile the server reads per request."""
    path = tmp_path / "profile.json"
    monkeypatch.setenv("SETTLEMENT_PROFILE", str(path))

    def write(faucet_url: str, rpc_url: str | None = None) -> Network:
        network = local_network(faucet_url, rpc_url)
        path.write_text(json.dumps(network.to_json()))
        return network

    return write


@pytest.fixture(autouse=True)
def _no_ambient_network(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SETTLEMENT_NETWORK", raising=False)
    monkeypatch.delenv("SEPOLIA_RPC_URL", raising=False)


@pytest.fixture
def settlement_traits() -> dict[str, Any]:
    """``c.SettlementConfig`` of the in-process server; modules override this fixture."""
    return {}


@pytest.fixture
def jp_server_config(settlement_traits: dict[str, Any]) -> dict[str, Any]:
    return {
        "ServerApp": {
            "jpserver_extensions": {"settlement_widgets": True, "jupyter_server_terminals": False}
        },
        "SettlementConfig": settlement_traits,
    }
