"""The standalone server (``python -m settlement_widgets.api``) and the installed extension, as
subprocesses on loopback: token printed once, no token refused, ``--no-auth`` loopback-only,
and ``pip install`` enabling the extension in a plain ``jupyter server``."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from settlement_widgets.api.handlers import with_base_url
from settlement_widgets.methods import settlement_config
from tests.server_banner import LOOPBACK_SERVER_FLAGS

STARTUP_TIMEOUT = 120.0  # importing jupyter_server takes seconds on a loaded 2-core box
BIN = Path(sys.executable).parent
ADDRESS = "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"


class Server:
    """A server subprocess whose stdout/stderr are collected by reader threads; ``ready`` is
    set when a line matches ``ready_pattern`` (no sleeping, no polling)."""

    def __init__(self, args: list[str], ready_pattern: str, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            args,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            env=env,
        )
        self.out: list[str] = []
        self.err: list[str] = []
        self.ready = threading.Event()
        self.match: re.Match[str] | None = None
        self._pattern = re.compile(ready_pattern)
        self._threads = [
            threading.Thread(target=self._read, args=(self.proc.stdout, self.out), daemon=True),
            threading.Thread(target=self._read, args=(self.proc.stderr, self.err), daemon=True),
        ]
        for t in self._threads:
            t.start()

    def _read(self, stream: object, sink: list[str]) -> None:
        for line in stream:  # type: ignore[attr-defined]
            sink.append(line)
            found = self._pattern.search(line)
            if found and not self.ready.is_set():
                self.match = found
                self.ready.set()
        self.ready.set()  # the process ended: wake the waiter

    def wait_ready(self) -> re.Match[str]:
        assert self.ready.wait(STARTUP_TIMEOUT), "server did not start in time"
        assert self.match is not None, "".join(self.out + self.err)
        return self.match

    def stop(self) -> str:
        """Terminate and return everything the process printed."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        for t in self._threads:
            t.join(timeout=10)
        return "".join(self.out) + "".join(self.err)


@pytest.fixture
def server_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER_", "SETTLEMENT_"))}
    env["SETTLEMENT_HOME"] = str(tmp_path / "home")
    env["JUPYTER_RUNTIME_DIR"] = str(tmp_path / "runtime")
    env["JUPYTER_CONFIG_DIR"] = str(tmp_path / "config")  # no user config
    env["JUPYTER_DATA_DIR"] = str(tmp_path / "data")
    return env


@pytest.fixture
def standalone(server_env: dict[str, str]) -> Iterator[Server]:
    server = Server(
        [sys.executable, "-m", "settlement_widgets.api", "--host", "127.0.0.1", "--port", "0"],
        r"settlement-api: serving the sepolia settlement endpoint at (\S+)",
        server_env,
    )
    yield server
    server.stop()


def test_standalone_server_token_auth_and_token_printed_once(standalone: Server) -> None:
    url = standalone.wait_ready().group(1)
    match = re.fullmatch(r"(http://127\.0\.0\.1:\d+/api/settlement)\?token=([0-9a-f]{32,})", url)
    assert match, url
    endpoint, token = match.groups()
    auth = {"Authorization": f"token {token}"}
    # separate clients: a token request leaves a login cookie in the client that made it
    with httpx.Client(timeout=30) as client, httpx.Client(timeout=30) as anon:
        refused = anon.get(endpoint)
        assert refused.status_code == 403 and refused.json() == {"error": "Forbidden"}
        assert anon.post(endpoint, json={"action": "v4:contracts"}).status_code == 403
        assert anon.get(endpoint, headers={"Authorization": "token wrong"}).status_code == 403
        assert anon.get(endpoint + "/proofs/v4").status_code == 403
        # the spec's body, plus the last comparison published (none here)
        expected = {**settlement_config("sepolia"), "comparison": None}
        assert client.get(url).json() == expected
        assert client.get(endpoint, headers=auth).json() == expected
        contracts = client.post(endpoint, json={"action": "v4:contracts"}, headers=auth)
        assert contracts.status_code == 200 and contracts.json()["status"] == "ok"
        bad = client.post(endpoint, content=b"{", headers=auth)
        assert bad.status_code == 400 and bad.json() == {"error": "Invalid request"}
        assert client.get(endpoint + "/proofs/v4", headers=auth).json()["proofs"] == []
        assert client.get(endpoint + "/openapi.json", headers=auth).status_code == 200
        # nothing but the endpoint: no kernels, contents or files
        root = endpoint.removesuffix("/api/settlement")
        for path in ("/api/kernels", "/api/contents", "/files/x", "/api/sessions"):
            assert client.get(root + path, headers=auth).status_code == 404, path
    output = standalone.stop()
    assert output.count(token) == 1, output


def test_no_auth_on_loopback_serves_without_token_but_checks_origin(
    server_env: dict[str, str],
) -> None:
    server = Server(
        [
            sys.executable,
            "-m",
            "settlement_widgets.api",
            "--port",
            "0",
            "--no-auth",
            "--base-url",
            "/sw/",
        ],
        r"at (http://127\.0\.0\.1:\d+/sw/api/settlement) \(authentication disabled\)",
        server_env,
    )
    try:
        endpoint = server.wait_ready().group(1)
        with httpx.Client(timeout=30) as client:
            assert client.get(endpoint).json() == {
                **with_base_url(settlement_config("sepolia"), "/sw/"),
                "comparison": None,
            }
            ok = client.post(endpoint, json={"action": "v4:contracts"})
            assert ok.status_code == 200
            # a cross-site page cannot drive it: a foreign Origin is refused
            foreign = client.post(
                endpoint,
                json={"action": "v4:contracts"},
                headers={"Origin": "http://evil.example"},
            )
            assert foreign.status_code in (403, 404)
            assert "error" in foreign.json()
    finally:
        server.stop()


@pytest.mark.parametrize("host", ["0.0.0.0", "192.0.2.10"])  # more hosts: unit test_is_loopback
def test_no_auth_is_refused_on_a_non_loopback_host(host: str, server_env: dict[str, str]) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "settlement_widgets.api", "--host", host, "--no-auth"],
        capture_output=True,
        text=True,
        env=server_env,
        timeout=STARTUP_TIMEOUT,
    )
    assert result.returncode == 2
    assert "refusing --no-auth" in result.stderr
    assert "settlement-api: serving" not in result.stdout


@pytest.mark.parametrize("host", ["0.0.0.0", "192.0.2.10", "::", "example.org"])
def test_build_config_refuses_no_auth_off_loopback_when_called_from_python(host: str) -> None:
    """The CLI's refusal holds for a caller of ``build_config`` too."""
    from settlement_widgets.api.standalone import build_config
    from settlement_widgets.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match="refusing no_auth=True"):
        build_config(host=host, port=0, network="local", no_auth=True)
    assert build_config(host=host, port=0, network="local").ServerApp.ip == host  # token kept
    assert build_config(host="127.0.0.1", port=0, network="local", no_auth=True)


def test_extension_is_enabled_by_the_installed_config(server_env: dict[str, str]) -> None:
    shipped = Path(sys.prefix, "etc/jupyter/jupyter_server_config.d/settlement_widgets.json")
    assert json.loads(shipped.read_text()) == {
        "ServerApp": {"jpserver_extensions": {"settlement_widgets": True}}
    }
    result = subprocess.run(
        [str(BIN / "jupyter"), "server", "extension", "list"],
        capture_output=True,
        text=True,
        env=server_env,
        timeout=STARTUP_TIMEOUT,
    )
    listing = re.sub(r"\x1b\[[0-9;]*m", "", result.stdout + result.stderr)  # drop colours
    assert re.search(r"settlement_widgets\s+enabled", listing), listing
    assert re.search(r"settlement_widgets.*OK", listing), listing


def test_plain_jupyter_server_serves_the_endpoint_under_its_base_url(
    server_env: dict[str, str], tmp_path: Path
) -> None:
    token = "a1" * 24
    root = tmp_path / "notebooks"
    root.mkdir()
    server = Server(
        [
            str(BIN / "jupyter"),
            "server",
            *LOOPBACK_SERVER_FLAGS,
            f"--IdentityProvider.token={token}",
            "--ServerApp.base_url=/hub/user/x/",
            f"--ServerApp.root_dir={root}",
        ],
        r"(http://127\.0\.0\.1:\d+)/hub/user/x/",
        server_env,
    )
    try:
        origin = server.wait_ready().group(1)
        endpoint = origin + "/hub/user/x/api/settlement"
        with httpx.Client(timeout=30) as client, httpx.Client(timeout=30) as anon:
            assert anon.get(endpoint).status_code == 403
            got = client.get(endpoint, headers={"Authorization": f"token {token}"})
            assert got.status_code == 200
            assert got.json() == {
                **with_base_url(settlement_config("sepolia"), "/hub/user/x/"),
                "comparison": None,
            }
            bare = client.get(
                origin + "/api/settlement", headers={"Authorization": f"token {token}"}
            )
            assert bare.status_code == 404
    finally:
        server.stop()


def test_the_per_client_faucet_limit_is_a_cli_option() -> None:
    from settlement_widgets.api.__main__ import parse_args

    assert parse_args([]).faucet_client_rate_limit is None  # the trait's default applies
    assert parse_args(["--faucet-client-rate-limit", "7"]).faucet_client_rate_limit == 7
    with pytest.raises(SystemExit) as refused:
        parse_args(["--faucet-client-rate-limit", "0"])
    assert refused.value.code == 2
