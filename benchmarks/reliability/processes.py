"""The processes the checks start, kill and restart: a relay node, anvil, the sandbox CLI, the
standalone endpoint server, and a TCP proxy that can make the chain unreachable.

Every process runs on loopback, writes its stderr to a log file the security check scans
later, and signals readiness with a line on stdout (never a sleep). A process is only ever
stopped through the handle that started it (its own pid).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any

from settlement_widgets.networks import SEPOLIA

from .common import REPO

__all__ = [
    "ADJUDICATOR",
    "ANVIL_READY",
    "ASSET",
    "CUSTODY",
    "TOKEN",
    "AnvilProcess",
    "ApiServer",
    "LineProcess",
    "RelayProcess",
    "SandboxProcess",
    "TcpProxy",
    "child_env",
]

#: chain facts a chain-less relay only echoes (get_config / get_assets)
assert SEPOLIA.token is not None  # the Sepolia profile always names its channel asset
TOKEN: str = SEPOLIA.token
CUSTODY = SEPOLIA.contracts.custody
ADJUDICATOR = SEPOLIA.contracts.adjudicator
ASSET = "ytest.usd"
ANVIL_READY = re.compile(r"Listening on (?P<host>[\d.]+):(?P<port>\d+)")
START_TIMEOUT = 120.0


def child_env(**extra: str) -> dict[str, str]:
    """The environment of a child process: ours, unbuffered, the repo importable."""
    env = dict(os.environ)
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    env.update(extra)
    return env


class RelayProcess:
    """``python -m settlement_widgets.channel.v0_5.node`` on a fixed loopback port (so clients
    reconnect to the same URL after a restart), on one SQLite ledger."""

    def __init__(
        self,
        db: Path,
        *,
        port: int,
        faucet_account: str,
        log_path: Path,
        durability: str = "full",
    ) -> None:
        self.db = db
        self.port = port
        self.faucet_account = faucet_account
        self.log_path = log_path
        self.durability = durability
        self.proc: asyncio.subprocess.Process | None = None
        self.info: dict[str, Any] = {}
        self.starts = 0

    @property
    def url(self) -> str:
        return str(self.info["relayUrl"])

    @property
    def broker_address(self) -> str:
        return str(self.info["brokerAddress"])

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.returncode is None

    async def start(self) -> None:
        """Start and wait for the ready line (the node listens and its ledger is loaded)."""
        with self.log_path.open("ab") as log:
            self.proc = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m", "settlement_widgets.channel.v0_5.node",
                "--db", str(self.db),
                "--port", str(self.port),
                "--custody", CUSTODY,
                "--adjudicator", ADJUDICATOR,
                "--token", TOKEN,
                "--faucet-account", self.faucet_account,
                "--durability", self.durability,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=log,
                env=child_env(),
            )  # fmt: skip
        assert self.proc.stdout is not None
        line = await asyncio.wait_for(self.proc.stdout.readline(), START_TIMEOUT)
        if not line:
            await self.proc.wait()
            tail = self.log_path.read_text(errors="replace")[-2000:]
            raise RuntimeError(f"the relay did not start (exit {self.proc.returncode}): {tail}")
        self.info = json.loads(line)
        self.starts += 1

    async def kill(self) -> None:
        """SIGKILL: no cleanup, no flush, exactly a crash."""
        if self.proc is not None and self.proc.returncode is None:
            self.proc.send_signal(signal.SIGKILL)
            await self.proc.wait()

    async def stop(self) -> int | None:
        """SIGTERM and wait (the node closes its ledger cleanly); the exit code."""
        if self.proc is None:
            return None
        if self.proc.returncode is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(self.proc.wait(), 30)
            except TimeoutError:
                self.proc.kill()
                await self.proc.wait()
        return self.proc.returncode

    async def alive(self) -> bool:
        return self.proc is not None and self.proc.returncode is None


class LineProcess:
    """A child process whose stdout and stderr are read by threads into a log file; ``ready``
    fires on the first stdout line matching ``pattern`` (or when the process ends)."""

    def __init__(
        self, args: list[str], pattern: str, log_path: Path, env: dict[str, str] | None = None
    ) -> None:
        self.log_path = log_path
        self.args = args
        self._log: IO[str] = log_path.open("a", encoding="utf-8", errors="replace")
        self._lock = threading.Lock()
        self.proc = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env or child_env(),
            cwd=str(REPO),
        )
        self.ready = threading.Event()
        self.match: re.Match[str] | None = None
        self.first_line: str | None = None
        self._pattern = re.compile(pattern)
        self._threads = [
            threading.Thread(target=self._read, args=(self.proc.stdout, True), daemon=True),
            threading.Thread(target=self._read, args=(self.proc.stderr, False), daemon=True),
        ]
        for t in self._threads:
            t.start()

    def _read(self, stream: IO[str], is_stdout: bool) -> None:
        for line in stream:
            with self._lock:
                self._log.write(line)
                self._log.flush()
            if is_stdout and not self.ready.is_set():
                found = self._pattern.search(line)
                if found:
                    self.match = found
                    self.first_line = line
                    self.ready.set()
        if is_stdout:
            self.ready.set()

    def wait_ready(self, timeout: float = START_TIMEOUT) -> re.Match[str]:
        if not self.ready.wait(timeout) or self.match is None:
            self.stop()
            tail = self.log_path.read_text(errors="replace")[-3000:]
            raise RuntimeError(f"{self.args[:3]} did not start: {tail}")
        return self.match

    def stop(self) -> int | None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        for t in self._threads:
            t.join(timeout=10)
        with self._lock:
            self._log.close()
        return self.proc.returncode


class SandboxProcess:
    """``python -m settlement_widgets.sandbox --chain anvil --no-v4``: chain, contracts,
    relay and faucet in their own process; the profile is written under ``home``."""

    def __init__(self, home: Path, log_path: Path, *, wallets: int = 1) -> None:
        self.home = home
        env = child_env(SETTLEMENT_HOME=str(home))
        self.process = LineProcess(
            [
                sys.executable, "-m", "settlement_widgets.sandbox",
                "--chain", "anvil", "--no-v4", "--wallets", str(wallets),
                "--durability", "normal",
            ],
            r"^\{",
            log_path,
            env,
        )  # fmt: skip
        self.profile: dict[str, Any] = {}

    def start(self) -> SandboxProcess:
        self.process.wait_ready()
        assert self.process.first_line is not None
        self.profile = json.loads(self.process.first_line)
        return self

    def stop(self) -> None:
        self.process.stop()


class ApiServer:
    """The standalone endpoint server (``python -m settlement_widgets.api``) on a free
    loopback port, token auth on, serving the local network of ``home``."""

    def __init__(self, home: Path, log_path: Path, runtime: Path) -> None:
        env = {k: v for k, v in child_env().items() if not k.startswith("JUPYTER_")}
        env.update(
            SETTLEMENT_HOME=str(home),
            JUPYTER_RUNTIME_DIR=str(runtime / "runtime"),
            JUPYTER_CONFIG_DIR=str(runtime / "config"),
            JUPYTER_DATA_DIR=str(runtime / "data"),
        )
        self.process = LineProcess(
            [
                sys.executable, "-m", "settlement_widgets.api",
                "--host", "127.0.0.1", "--port", "0", "--network", "local",
                "--log-level", "WARN",
                # the load harness's fifty clients all come from 127.0.0.1: one "client" to
                # the per-client faucet limit, which is not what the load check measures
                "--faucet-client-rate-limit", "1000000",
            ],
            r"serving the local settlement endpoint at "
            r"(?P<endpoint>http://127\.0\.0\.1:\d+/api/settlement)\?token=(?P<token>[0-9a-f]+)",
            log_path,
            env,
        )  # fmt: skip
        self.endpoint = ""
        self.token = ""

    def start(self) -> ApiServer:
        match = self.process.wait_ready()
        self.endpoint, self.token = match["endpoint"], match["token"]
        return self

    @property
    def base(self) -> str:
        return self.endpoint.removesuffix("/api/settlement")

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"token {self.token}"}

    def stop(self) -> None:
        self.process.stop()


class AnvilProcess:
    """anvil on a loopback port with its state in a file: SIGTERM dumps the state and a
    restart loads it, so a restarted node still has every block, receipt and log."""

    def __init__(self, state_dir: Path, *, chain_id: int = 31337) -> None:
        self.state_file = state_dir / "anvil-state.json"
        self.chain_id = chain_id
        self.proc: subprocess.Popen[bytes] | None = None
        self.port = 0
        self._reader: threading.Thread | None = None
        self.restarts = 0

    def start(self) -> int:
        from settlement_widgets.sandbox.chain import DEV_MNEMONIC, find_anvil

        args = [
            str(find_anvil()),
            "--host", "127.0.0.1", "--port", "0",
            "--chain-id", str(self.chain_id), "--hardfork", "prague",
            "--mnemonic", DEV_MNEMONIC, "--state", str(self.state_file),
        ]  # fmt: skip
        self.proc = subprocess.Popen(
            args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
        assert self.proc.stdout is not None
        port = 0
        # anvil's banner lists the dev keys: lines are matched and dropped, never kept
        for raw in self.proc.stdout:
            found = ANVIL_READY.search(raw.decode("utf-8", "replace"))
            if found:
                port = int(found["port"])
                break
        if not port:
            self.proc.wait()
            raise RuntimeError(f"anvil exited before listening (code {self.proc.returncode})")
        stream = self.proc.stdout
        self._reader = threading.Thread(target=lambda: [None for _ in stream], daemon=True)
        self._reader.start()
        self.port = port
        return port

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        """SIGTERM (anvil dumps its state) and wait."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        if self._reader is not None:
            self._reader.join(timeout=5)

    def restart(self) -> int:
        self.stop()
        self.restarts += 1
        return self.start()

    def wait_for_receipt(self, tx_hash: str, timeout: float = 30.0) -> None:
        """Block until anvil (directly, not through a proxy) has the receipt of ``tx_hash``:
        its miner has stored the block."""
        import urllib.request

        body = json.dumps(
            {"jsonrpc": "2.0", "id": 1, "method": "eth_getTransactionReceipt", "params": [tx_hash]}
        ).encode()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            request = urllib.request.Request(
                self.url, data=body, headers={"Content-Type": "application/json"}
            )
            with urllib.request.urlopen(request, timeout=5) as response:  # loopback anvil
                if json.loads(response.read()).get("result") is not None:
                    return
            time.sleep(0.01)  # polling anvil's own state, not synchronising with our code
        raise TimeoutError(f"anvil never sealed {tx_hash}")


class TcpProxy:
    """A loopback TCP forwarder in front of the chain node: :meth:`down` closes the
    listening socket and cuts every open connection (the node is unreachable: connections
    are refused), :meth:`up` listens again on the same port; :meth:`retarget` points it at
    a restarted node."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.port = 0
        self._server: asyncio.Server | None = None
        self._pipes: set[asyncio.StreamWriter] = set()
        self.connections = 0
        self.refused_windows = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def is_up(self) -> bool:
        return self._server is not None

    async def start(self) -> TcpProxy:
        await self.up()
        return self

    async def up(self) -> None:
        if self._server is not None:
            return
        self._server = await asyncio.start_server(
            self._handle, "127.0.0.1", self.port, reuse_address=True
        )
        self.port = int(next(iter(self._server.sockets)).getsockname()[1])

    async def down(self) -> None:
        """Refuse new connections and reset the open ones."""
        server, self._server = self._server, None
        if server is not None:
            self.refused_windows += 1
            server.close()
        for writer in list(self._pipes):
            transport = writer.transport
            if transport is not None:
                transport.abort()
        self._pipes.clear()
        if server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(server.wait_closed(), 5)

    def retarget(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port

    async def aclose(self) -> None:
        await self.down()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        window = self.refused_windows
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        except OSError:
            writer.transport.abort()
            return
        if self._server is None or self.refused_windows != window:
            # down() ran while this connection was being made: it was not in _pipes to be
            # cut, and must not outlive the outage (a kept-alive HTTP client would go on
            # reaching the node through it)
            writer.transport.abort()
            up_writer.transport.abort()
            return
        self._pipes.update((writer, up_writer))

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            try:
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            except (OSError, asyncio.IncompleteReadError):
                pass
            finally:
                with contextlib.suppress(Exception):
                    dst.close()

        try:
            await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))
        finally:
            self._pipes.discard(writer)
            self._pipes.discard(up_writer)
