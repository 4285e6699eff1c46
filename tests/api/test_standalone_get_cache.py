"""The standalone server (``python -m settlement_widgets.api``, a subprocess on loopback, token
auth) answers ``GET /api/settlement`` pre-serialised and revalidatable, as the extension does:
ETag and Cache-Control, 304 for a matching ``If-None-Match``, the token checked first, and a
new ETag when the sandbox it describes (started elsewhere) restarts and rewrites its profile."""

from __future__ import annotations

import asyncio
import json
import os
import re
import secrets
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from settlement_widgets.methods import settlement_config
from settlement_widgets.networks import Network
from tests.fake_networks import fake_local

STARTUP_TIMEOUT = 120.0  # importing jupyter_server takes seconds on a loaded 2-core box
READY = re.compile(rb"serving the local settlement endpoint at http://127\.0\.0\.1:(\d+)/")


def network(faucet_port: int) -> Network:
    return fake_local(
        port=9,
        faucet_url=f"http://127.0.0.1:{faucet_port}/faucet/requestTokens",
        explorer_base="http://127.0.0.1:9/explorer",
    )


def write_profile(path: Path, net: Network) -> None:
    """As the sandbox does: a new file renamed over the profile (mtime an hour back)."""
    fresh = path.with_suffix(".new")
    fresh.write_text(json.dumps(net.to_json()))
    old = time.time_ns() - 3600 * 10**9
    os.utime(fresh, ns=(old, old))
    os.replace(fresh, path)


class Standalone:
    def __init__(self, url: str, token: str) -> None:
        self.url = url
        self.auth = {"Authorization": f"token {token}"}


@pytest.fixture
async def standalone(tmp_path: Path) -> AsyncIterator[Standalone]:
    profile = tmp_path / "profile.json"
    write_profile(profile, network(9))
    token = secrets.token_hex(24)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER_", "SETTLEMENT_"))}
    env.update(
        JUPYTER_TOKEN=token,
        SETTLEMENT_PROFILE=str(profile),
        SETTLEMENT_HOME=str(tmp_path / "home"),
        JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"),
        JUPYTER_CONFIG_DIR=str(tmp_path / "config"),
        JUPYTER_DATA_DIR=str(tmp_path / "data"),
    )
    with (tmp_path / "stderr.txt").open("wb") as stderr:
        proc = await asyncio.create_subprocess_exec(
            *(sys.executable, "-m", "settlement_widgets.api", "--host", "127.0.0.1"),
            *("--port", "0", "--network", "local", "--log-level", "WARN"),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=stderr,
            env=env,
        )
        try:
            assert proc.stdout is not None
            line = await asyncio.wait_for(proc.stdout.readline(), STARTUP_TIMEOUT)
            match = READY.search(line)
            assert match, (tmp_path / "stderr.txt").read_text()[-2000:]
            yield Standalone(f"http://127.0.0.1:{int(match.group(1))}/api/settlement", token)
        finally:
            proc.terminate()
            await asyncio.wait_for(proc.wait(), 30)


async def test_standalone_get_is_revalidatable_after_the_token_check(
    standalone: Standalone, tmp_path: Path
) -> None:
    url, auth = standalone.url, standalone.auth
    async with httpx.AsyncClient(timeout=30) as client, httpx.AsyncClient(timeout=30) as anon:
        first = await client.get(url, headers=auth)
        assert first.status_code == 200
        assert (
            first.content
            == json.dumps({**settlement_config(network(9)), "comparison": None}).encode()
        )
        etag = first.headers["ETag"]
        assert first.headers["Cache-Control"] == "private, no-cache"

        revalidated = await client.get(url, headers={**auth, "If-None-Match": etag})
        assert revalidated.status_code == 304 and revalidated.content == b""
        assert revalidated.headers["ETag"] == etag
        stale = await client.get(url, headers={**auth, "If-None-Match": '"nope"'})
        assert stale.status_code == 200 and stale.content == first.content

        for headers in ({}, {"Authorization": "token wrong"}):
            refused = await anon.get(url, headers={**headers, "If-None-Match": etag})
            assert refused.status_code == 403
            assert refused.json() == {"error": "Forbidden"}

        write_profile(tmp_path / "profile.json", network(10))  # the sandbox restarted
        changed = await client.get(url, headers={**auth, "If-None-Match": etag})
        assert changed.status_code == 200
        assert changed.headers["ETag"] != etag
        assert (
            changed.content
            == json.dumps({**settlement_config(network(10)), "comparison": None}).encode()
        )
