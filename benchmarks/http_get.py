"""``GET /api/settlement`` on loopback: the standalone endpoint server in its own process
(``python -m settlement_widgets.api --no-auth``), driven by keep-alive HTTP/1.1 connections.

A minimal client (asyncio streams, one request in flight per connection) so that the
numbers are the server's; the first body is parsed and checked against
:func:`settlement_widgets.methods.settlement_config` before anything is timed.
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
import time
from dataclasses import dataclass
from typing import Any

from settlement_widgets.methods import settlement_config
from settlement_widgets.networks import get_network

from .procs import server_process

__all__ = ["HttpResult", "get_settlement_benchmark"]

_READY = re.compile(r"at (http://127\.0\.0\.1:(\d+)/\S*)")


def _ready(line: str) -> dict[str, Any] | None:
    match = _READY.search(line)
    return None if match is None else {"url": match.group(1), "port": int(match.group(2))}


@dataclass
class HttpResult:
    """Sequential latencies (one connection) and concurrent throughput."""

    sequential_ns: list[int]
    concurrent_ns: list[int]
    concurrent_wall_s: float
    connections: int
    server_cpu_us: float
    client_cpu_us: float
    body_bytes: int


class _Conn:
    """One keep-alive connection that, like a browser or an ``httpx.Client``, sends back the
    cookies it was given (jupyter_server signs a fresh login cookie for every cookie-less
    request, which would otherwise be most of what we measure)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, port: int):
        self.reader = reader
        self.writer = writer
        self.port = port
        self.cookies: dict[bytes, bytes] = {}
        self.request = self._request()

    def _request(self) -> bytes:
        cookie = b"; ".join(k + b"=" + v for k, v in self.cookies.items())
        return (
            f"GET /api/settlement HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\n"
            "Accept: application/json\r\n".encode()
            + (b"Cookie: " + cookie + b"\r\n" if cookie else b"")
            + b"\r\n"
        )

    async def get(self) -> bytes:
        self.writer.write(self.request)
        head = await self.reader.readuntil(b"\r\n\r\n")
        status = head[9:12]
        if status != b"200":
            raise RuntimeError(f"GET /api/settlement answered {head[:60]!r}")
        match = re.search(rb"(?i)\r\ncontent-length:\s*(\d+)", head)
        if match is None:
            raise RuntimeError("the endpoint answered without Content-Length")
        for name, value in re.findall(rb"(?i)\r\nset-cookie:\s*([^=;\s]+)=([^;\r]*)", head):
            if self.cookies.get(name) != value:
                self.cookies[name] = value
                self.request = self._request()
        return await self.reader.readexactly(int(match.group(1)))

    async def run(self, count: int, latencies: list[int]) -> None:
        for _ in range(count):
            t0 = time.perf_counter_ns()
            await self.get()
            latencies.append(time.perf_counter_ns() - t0)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def _connect(port: int, timeout: float = 10.0) -> _Conn:
    """Connect, retrying briefly: the server prints its URL just before it listens."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            return _Conn(reader, writer, port)
        except ConnectionRefusedError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.05)


async def get_settlement_benchmark(
    *, sequential: int, concurrent: int, connections: int, network: str = "sepolia"
) -> HttpResult:
    args = [
        "-m", "settlement_widgets.api",
        "--host", "127.0.0.1", "--port", str(_free_port()), "--no-auth",
        "--network", network, "--log-level", "WARN",
    ]  # fmt: skip
    async with server_process(args, ready=_ready) as server:
        port = server.ready["port"]
        conns = [await _connect(port) for _ in range(connections)]
        try:
            body = await conns[0].get()
            expected = settlement_config(get_network(network))
            if json.loads(body) != json.loads(json.dumps(expected)):
                raise RuntimeError("GET /api/settlement returned a body other than the config")
            for conn in conns:  # warm-up
                for _ in range(20):
                    await conn.get()
            seq: list[int] = []
            await conns[0].run(sequential, seq)
            conc: list[int] = []
            per_conn = max(1, concurrent // connections)
            cpu0, ccpu0, t0 = server.cpu(), time.process_time(), time.perf_counter()
            await asyncio.gather(*(conn.run(per_conn, conc) for conn in conns))
            wall = time.perf_counter() - t0
            server_cpu = server.cpu() - cpu0
            client_cpu = time.process_time() - ccpu0
        finally:
            for conn in conns:
                conn.writer.close()
    total = per_conn * connections
    return HttpResult(
        sequential_ns=seq,
        concurrent_ns=conc,
        concurrent_wall_s=wall,
        connections=connections,
        server_cpu_us=server_cpu / total * 1e6,
        client_cpu_us=client_cpu / total * 1e6,
        body_bytes=len(body),
    )
