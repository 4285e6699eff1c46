"""``GET /api/settlement`` on loopback, with token auth, through both servers that serve it,
driven by keep-alive HTTP/1.1 connections.

Three server processes in one run, each a child process as in production (so the client's
and the server's CPU are measured apart, :mod:`.procs`):

* ``extension``: ``jupyter server`` (:meth:`ServerApp.launch_instance`, what the ``jupyter
  server`` command runs) configured as ``make lab`` configures it: the repository's
  ``jupyter-app`` config path, every installed server extension (ours, JupyterLab, Voila...),
  token auth. Rows: ``settlement`` (the headline: ``GET /api/settlement`` with
  ``Authorization: token``), ``revalidated`` (the same with ``If-None-Match`` set to the
  ETag: the 304 a revalidating browser gets) and ``floor`` (``GET /api`` with the same
  token: Jupyter's cheapest handler; ``prepare()`` authenticates every request, this one
  included, so its cost is Jupyter's per-request cost, routing, host and origin checks,
  identity, logging, with nothing of ours in it. Jupyter matches its own routes after every
  extension's, so ``/api`` also pays a few regex matches more than ours: a settlement/floor
  ratio of about 1 means the endpoint costs what Jupyter's cheapest route costs);
* ``standalone``: ``python -m settlement_widgets.api`` with its token auth (rows
  ``settlement`` and ``floor``, as above);
* ``standalone_no_auth``: the same with ``--no-auth`` (row ``settlement``): the figure this
  benchmark measured before token auth was measured, kept as a reference.

A minimal client (asyncio streams, one request in flight per connection) so that the numbers
are the server's. Each connection sends back the cookies it was given, as a browser or an
``httpx.Client`` does: jupyter_server signs a fresh login cookie for every cookie-less request,
which would otherwise be most of what we measure. The first body of each server is parsed
and checked against :func:`settlement_widgets.methods.settlement_config` before anything is
timed.

The token is random per run and reaches the servers through ``JUPYTER_TOKEN`` (not argv); it
is never printed: the standalone server prints its URL (token included) once on its stdout,
which this module reads for the port only.

Alone: ``python -m benchmarks.http_get [sequential [concurrent [connections]]]`` prints the
rows; ``python -m benchmarks --only http`` runs it inside the full harness.
"""

from __future__ import annotations

import asyncio
import json
import re
import secrets
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from settlement_widgets.methods import settlement_config
from settlement_widgets.networks import get_network

from .procs import REPO, ServerProcess, server_process
from .report import percentile

__all__ = [
    "HttpResult",
    "ServerBenchmark",
    "SettlementBenchmark",
    "get_settlement_benchmark",
]

#: what a row checks on its first answer: ``check(body, head)`` raises if it is wrong
Check = Callable[[bytes, bytes], None]

_READY = re.compile(r"at http://127\.0\.0\.1:(\d+)/")

#: ``jupyter server`` as :meth:`ServerApp.launch_instance` runs it, plus one line: the JSON
#: ready line :func:`.procs.server_process` waits for, printed by a loop callback queued after
#: the one that binds the port (Jupyter's own "running at" banner goes to stderr)
_JUPYTER_SERVER = """\
import json, sys
from jupyter_core.utils import ensure_event_loop
from jupyter_server.serverapp import ServerApp
ensure_event_loop()
app = ServerApp.instance()
app.initialize(sys.argv[1:])
app.io_loop.add_callback(lambda: print(json.dumps({"port": app.port}), flush=True))
app.start()
"""


def _standalone_ready(line: str) -> dict[str, Any] | None:
    """The port of the standalone server's start line (its token is not kept)."""
    match = _READY.search(line)
    return None if match is None else {"port": int(match.group(1))}


@dataclass
class HttpResult:
    """One row: one route of one server, sequential latencies (one connection) and
    concurrent throughput (``connections`` keep-alive connections); ``rps`` and the
    percentiles are derived at construction, so ``dataclasses.asdict`` carries them."""

    route: str
    path: str
    auth: str
    status: int
    sequential_ns: list[int]
    concurrent_ns: list[int]
    concurrent_wall_s: float
    connections: int
    server_cpu_us: float
    client_cpu_us: float
    body_bytes: int
    rps: float = field(init=False)
    p50_ms: float = field(init=False)
    p99_ms: float = field(init=False)
    sequential_rps: float = field(init=False)
    sequential_p50_ms: float = field(init=False)
    sequential_p99_ms: float = field(init=False)

    def __post_init__(self) -> None:
        conc = [v / 1e6 for v in self.concurrent_ns]
        seq = [v / 1e6 for v in self.sequential_ns]
        self.rps = len(conc) / self.concurrent_wall_s
        self.p50_ms = percentile(conc, 50)
        self.p99_ms = percentile(conc, 99)
        self.sequential_rps = len(seq) / (sum(seq) / 1e3)
        self.sequential_p50_ms = percentile(seq, 50)
        self.sequential_p99_ms = percentile(seq, 99)


@dataclass
class ServerBenchmark:
    """The rows of one server process. ``floor`` is ``GET /api`` with the same auth (None
    where not measured); ``ratio_to_floor`` is ``settlement.rps / floor.rps`` (1.0 would
    mean the endpoint costs nothing beyond what Jupyter spends on any request)."""

    server: str
    settlement: HttpResult
    floor: HttpResult | None = None
    revalidated: HttpResult | None = None
    ratio_to_floor: float | None = field(init=False)

    def __post_init__(self) -> None:
        self.ratio_to_floor = None if self.floor is None else self.settlement.rps / self.floor.rps


@dataclass
class SettlementBenchmark:
    """Every server of one run. ``extension.settlement.rps`` is the headline (through
    JupyterLab's server, with a token).

    The flat fields after the three servers repeat ``standalone_no_auth.settlement``: the
    shape :func:`get_settlement_benchmark` returned before, which ``benchmarks.report``
    still reads (``get_settlement_rps`` keeps meaning the no-auth standalone figure)."""

    extension: ServerBenchmark
    standalone: ServerBenchmark
    standalone_no_auth: ServerBenchmark
    sequential_ns: list[int] = field(init=False)
    concurrent_ns: list[int] = field(init=False)
    concurrent_wall_s: float = field(init=False)
    connections: int = field(init=False)
    server_cpu_us: float = field(init=False)
    client_cpu_us: float = field(init=False)
    body_bytes: int = field(init=False)

    def __post_init__(self) -> None:
        ref = self.standalone_no_auth.settlement
        self.sequential_ns = ref.sequential_ns
        self.concurrent_ns = ref.concurrent_ns
        self.concurrent_wall_s = ref.concurrent_wall_s
        self.connections = ref.connections
        self.server_cpu_us = ref.server_cpu_us
        self.client_cpu_us = ref.client_cpu_us
        self.body_bytes = ref.body_bytes

    @property
    def rows(self) -> dict[str, HttpResult]:
        """Every measured row by ``<server>.<route>``, e.g. ``extension.settlement``."""
        out: dict[str, HttpResult] = {}
        for server in (self.extension, self.standalone, self.standalone_no_auth):
            for row in (server.settlement, server.floor, server.revalidated):
                if row is not None:
                    out[f"{server.server}.{row.route}"] = row
        return out


class _Conn:
    """One keep-alive connection that, like a browser or an ``httpx.Client``, sends back the
    cookies it was given, with fixed extra headers (the token, ``If-None-Match``)."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        port: int,
        path: str,
        headers: dict[str, str],
        expect: int,
    ) -> None:
        self.reader = reader
        self.writer = writer
        self.port = port
        self.path = path
        self.headers = headers
        self.expect = str(expect).encode()
        self.cookies: dict[bytes, bytes] = {}
        self.request = self._request()
        self.last_head = b""

    def _request(self) -> bytes:
        cookie = b"; ".join(k + b"=" + v for k, v in self.cookies.items())
        extra = "".join(f"{name}: {value}\r\n" for name, value in self.headers.items())
        return (
            f"GET {self.path} HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\n"
            f"Accept: application/json\r\n{extra}".encode()
            + (b"Cookie: " + cookie + b"\r\n" if cookie else b"")
            + b"\r\n"
        )

    async def get(self) -> bytes:
        self.writer.write(self.request)
        head = await self.reader.readuntil(b"\r\n\r\n")
        self.last_head = head
        if head[9:12] != self.expect:
            raise RuntimeError(f"GET {self.path} answered {head[:40]!r}")
        for name, value in re.findall(rb"(?i)\r\nset-cookie:\s*([^=;\s]+)=([^;\r]*)", head):
            if self.cookies.get(name) != value:
                self.cookies[name] = value
                self.request = self._request()
        match = re.search(rb"(?i)\r\ncontent-length:\s*(\d+)", head)
        if match is None:
            if self.expect == b"304":
                return b""
            raise RuntimeError(f"GET {self.path} answered without Content-Length")
        return await self.reader.readexactly(int(match.group(1)))

    async def run(self, count: int, latencies: list[int]) -> None:
        for _ in range(count):
            t0 = time.perf_counter_ns()
            await self.get()
            latencies.append(time.perf_counter_ns() - t0)

    def close(self) -> None:
        self.writer.close()


async def _connect(
    port: int, path: str, headers: dict[str, str], expect: int = 200, timeout: float = 10.0
) -> _Conn:
    """Connect, retrying briefly: a server may print its ready line just before it listens."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            return _Conn(reader, writer, port, path, headers, expect)
        except ConnectionRefusedError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.05)


def _header(head: bytes, name: str) -> str | None:
    match = re.search(rb"(?i)\r\n" + name.encode() + rb":\s*([^\r]*)", head)
    return None if match is None else match.group(1).decode()


@dataclass(frozen=True)
class _Sizes:
    """Requests per row: ``sequential`` on one connection, then ``concurrent`` spread over
    ``connections`` connections at once."""

    sequential: int
    concurrent: int
    connections: int


async def _measure(
    server: ServerProcess,
    route: str,
    path: str,
    headers: dict[str, str],
    sizes: _Sizes,
    *,
    auth: str,
    expect: int = 200,
    check: Check | None = None,
) -> HttpResult:
    """Warm up, then the sequential phase, then the concurrent one (:class:`_Sizes`);
    ``check(body, head)`` sees the first answer."""
    sequential, concurrent, connections = sizes.sequential, sizes.concurrent, sizes.connections
    port = server.ready["port"]
    conns = [await _connect(port, path, headers, expect) for _ in range(connections)]
    try:
        body = await conns[0].get()
        if check is not None:
            check(body, conns[0].last_head)
        for conn in conns:  # warm-up: cookies settled, code paths hot
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
            conn.close()
    total = per_conn * connections
    return HttpResult(
        route=route,
        path=path,
        auth=auth,
        status=expect,
        sequential_ns=seq,
        concurrent_ns=conc,
        concurrent_wall_s=wall,
        connections=connections,
        server_cpu_us=server_cpu / total * 1e6,
        client_cpu_us=client_cpu / total * 1e6,
        body_bytes=len(body),
    )


def _body_checker(network: str) -> Check:
    expected = json.loads(json.dumps(settlement_config(get_network(network))))

    def check(body: bytes, head: bytes) -> None:
        answer = json.loads(body)
        # the last published comparison rides along (null on a fresh home); the rest is config
        if not isinstance(answer, dict) or answer.pop("comparison", None) is not None:
            raise RuntimeError("GET /api/settlement returned a published comparison")
        if answer != expected:
            raise RuntimeError("GET /api/settlement returned a body other than the config")

    return check


def _jupyter_env(tmp: Path, token: str, network: str) -> dict[str, str]:
    """``make lab``'s environment, minus the shared sandbox (the body is the ``network``'s);
    no user Jupyter config, runtime files in ``tmp``."""
    return {
        "JUPYTER_TOKEN": token,
        "JUPYTER_CONFIG_DIR": str(tmp / "config"),
        "JUPYTER_RUNTIME_DIR": str(tmp / "runtime"),
        "JUPYTER_DATA_DIR": str(tmp / "data"),
        "JUPYTER_CONFIG_PATH": str(REPO / "jupyter-app" / "etc" / "jupyter"),
        "JUPYTER_PATH": str(REPO / "jupyter-app" / "share" / "jupyter"),
        "SETTLEMENT_HOME": str(tmp / "home"),
        "SETTLEMENT_API_NETWORK": network,
        "SETTLEMENT_SHARED_SANDBOX": "0",
    }


def _standalone_args(network: str, *extra: str) -> list[str]:
    return [
        "-m", "settlement_widgets.api", "--host", "127.0.0.1", "--port", "0",
        "--network", network, "--log-level", "WARN", *extra,
    ]  # fmt: skip


async def _server_rows(
    name: str,
    args: Sequence[str],
    env: dict[str, str],
    *,
    ready: Callable[[str], dict[str, Any] | None] | None,
    token: str | None,
    floor: bool,
    revalidated: bool,
    network: str,
    sizes: _Sizes,
) -> ServerBenchmark:
    """Start one server, measure its rows, stop it."""
    auth_headers = {"Authorization": f"token {token}"} if token else {}
    auth = "token" if token else "none"
    kwargs: dict[str, Any] = {"ready": ready} if ready is not None else {}
    body_ok = _body_checker(network)
    etags: list[str] = []

    def check(body: bytes, head: bytes) -> None:
        body_ok(body, head)
        etag = _header(head, "Etag")
        if etag is None:
            raise RuntimeError("GET /api/settlement answered without an ETag")
        etags.append(etag)

    async with server_process(args, env=env, **kwargs) as server:
        path = "/api/settlement"
        settlement = await _measure(
            server, "settlement", path, auth_headers, sizes, auth=auth, check=check
        )
        again = None
        if revalidated:
            headers = {**auth_headers, "If-None-Match": etags[0]}
            again = await _measure(
                server, "revalidated", path, headers, sizes, auth=auth, expect=304
            )
        base = None
        if floor:
            base = await _measure(server, "floor", "/api", auth_headers, sizes, auth=auth)
    return ServerBenchmark(name, settlement, base, again)


async def get_settlement_benchmark(
    *,
    sequential: int,
    concurrent: int,
    connections: int,
    network: str = "sepolia",
) -> SettlementBenchmark:
    """Measure every row (module docstring) in one run, the servers one after another.

    ``sequential`` requests on one connection and ``concurrent`` requests over
    ``connections`` keep-alive connections, per row. ``network`` is the network the
    endpoint describes (``sepolia`` needs nothing running)."""
    token = secrets.token_hex(24)
    sizes = _Sizes(sequential, concurrent, connections)
    with tempfile.TemporaryDirectory(prefix="bench-http-") as tmp:
        env = _jupyter_env(Path(tmp), token, network)
        jupyter_args = [
            "-c", _JUPYTER_SERVER, "--ip=127.0.0.1", "--port=0", "--port-retries=0",
            "--no-browser", "--allow-root", f"--ServerApp.root_dir={tmp}",
        ]  # fmt: skip
        extension = await _server_rows(
            "extension",
            jupyter_args,
            env,
            ready=None,
            token=token,
            floor=True,
            revalidated=True,
            network=network,
            sizes=sizes,
        )
        standalone = await _server_rows(
            "standalone",
            _standalone_args(network),
            env,
            ready=_standalone_ready,
            token=token,
            floor=True,
            revalidated=False,
            network=network,
            sizes=sizes,
        )
        no_auth = await _server_rows(
            "standalone_no_auth",
            _standalone_args(network, "--no-auth"),
            env,
            ready=_standalone_ready,
            token=None,
            floor=False,
            revalidated=False,
            network=network,
            sizes=sizes,
        )
    return SettlementBenchmark(extension, standalone, no_auth)


def _table(result: SettlementBenchmark) -> str:
    """The rows as a small text table (``python -m benchmarks.http_get``)."""
    lines = [
        f"{'row':<32} {'req/s':>8} {'p50 ms':>7} {'p99 ms':>7} {'seq req/s':>9} "
        f"{'seq p50':>8} {'srv us':>7}"
    ]
    for name, row in result.rows.items():
        lines.append(
            f"{name:<32} {row.rps:>8.0f} {row.p50_ms:>7.2f} {row.p99_ms:>7.2f} "
            f"{row.sequential_rps:>9.0f} {row.sequential_p50_ms:>8.3f} {row.server_cpu_us:>7.0f}"
        )
    for server in (result.extension, result.standalone):
        if server.ratio_to_floor is not None:
            lines.append(f"{server.server}: settlement / floor = {server.ratio_to_floor:.2f}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m benchmarks.http_get [sequential concurrent connections]``."""
    args = [int(a) for a in (sys.argv[1:] if argv is None else argv)]
    sequential, concurrent, connections = (args + [1000, 4000, 4][len(args) :])[:3]
    result = asyncio.run(
        get_settlement_benchmark(
            sequential=sequential, concurrent=concurrent, connections=connections
        )
    )
    print(_table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
