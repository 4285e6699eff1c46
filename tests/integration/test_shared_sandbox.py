"""One sandbox per Jupyter server: a real ``jupyter server`` under a non-root ``base_url`` owns
the sandbox; a kernel it starts opens a session on it, sends a transaction and prints the
explorer link; after the kernel is shut down the link still answers (with the server's token,
not without), ``/api/settlement`` describes that sandbox with links under the server, and a
second server on the same ``SETTLEMENT_HOME`` adopts the sandbox instead of starting another.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import secrets
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from tornado.websocket import websocket_connect

from tests.server_banner import LOOPBACK_SERVER_FLAGS, process_until_banner

BASE = "/user/ada/"


@dataclass
class Server:
    url: str  # with the base_url, trailing slash
    origin: str
    token: str
    proc: subprocess.Popen[str]
    log: list[str]

    def get(self, path: str, *, auth: bool = True, **kwargs: Any) -> httpx.Response:
        headers = {"Authorization": f"token {self.token}"} if auth else {}
        return httpx.get(self.url + path.lstrip("/"), headers=headers, timeout=120, **kwargs)


@contextlib.contextmanager
def jupyter_server(tmp: Path, home: Path) -> Iterator[Server]:
    tmp.mkdir(parents=True, exist_ok=True)
    token = secrets.token_hex(16)
    env = {
        **os.environ,
        "SETTLEMENT_HOME": str(home),
        "SETTLEMENT_API_NETWORK": "local",
        "SETTLEMENT_SHARED_SANDBOX": "1",
        "JUPYTER_RUNTIME_DIR": str(tmp / "runtime"),
        "JUPYTER_CONFIG_DIR": str(tmp / "config"),
    }
    args = [
        sys.executable,
        "-m",
        "jupyter_server",
        *LOOPBACK_SERVER_FLAGS,
        f"--ServerApp.base_url={BASE}",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={tmp}",
    ]
    banner = re.compile(r"(http://127\.0\.0\.1:\d+)" + re.escape(BASE))
    with process_until_banner(args, env, banner, what="server") as started:
        origin = started.match.group(1)
        yield Server(origin + BASE, origin, token, started.proc, started.log)


async def run_in_kernel(server: Server, kernel_id: str, code: str) -> str:
    """Execute ``code`` in a kernel of ``server`` over its websocket; its stdout (an error in
    the cell fails the test with the traceback)."""
    ws_url = server.url.replace("http://", "ws://") + f"api/kernels/{kernel_id}/channels"
    conn = await websocket_connect(
        httpx.URL(ws_url, params={"token": server.token}).__str__(), max_message_size=1 << 24
    )
    msg_id = uuid.uuid4().hex
    conn.write_message(
        json.dumps(
            {
                "header": {
                    "msg_id": msg_id,
                    "msg_type": "execute_request",
                    "username": "test",
                    "session": uuid.uuid4().hex,
                    "version": "5.3",
                    "date": "2026-01-01T00:00:00Z",
                },
                "parent_header": {},
                "metadata": {},
                "content": {"code": code, "silent": False, "allow_stdin": False},
                "channel": "shell",
                "buffers": [],
            }
        )
    )
    out: list[str] = []
    idle = False
    replied = False
    try:
        while not (idle and replied):
            raw = await asyncio.wait_for(conn.read_message(), 300)
            assert raw is not None, "the kernel's websocket closed"
            msg = json.loads(raw)
            if msg.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind, content = msg["msg_type"], msg["content"]
            if kind == "stream":
                out.append(content["text"])
            elif kind == "error":
                pytest.fail("the cell failed:\n" + "\n".join(content["traceback"]))
            elif kind == "execute_reply":
                replied = True
                assert content["status"] == "ok", content
            elif kind == "status" and content["execution_state"] == "idle":
                idle = True
    finally:
        conn.close()
    return "".join(out)


CELL = """
from settlement_widgets.notebook import open_session
session = await open_session(progress=False)
receipt = await session.user.transact(to=session.wallets[1].address, value=12345)
tx = "0x" + bytes(receipt["transactionHash"]).hex()
print("LINK", session.network.explorer.tx_url(tx))
print("SANDBOX", type(session.sandbox).__name__)
# the server's sandbox runs the aggregator's second chain and route server too
from settlement_widgets import AggregatorProvider
sb = session.sandbox
a, b = sb.chain_ids
usdc = {c: sb.crosschain.chains[c].usdc for c in (a, b)}
async with AggregatorProvider(base_url=sb.lifi_url, poll_interval=0.05) as p:
    route = await p.best_route(a, b, usdc[a], usdc[b], 10**6, session.user.address)
    plan = await p.execute_plan(route, wallet=session.user, send=True)
    final = await p.track(plan.tx_hashes[-1])
print("BRIDGED", final.status, final.receiving.chain_id)
print("BLINK", sb.explorer_tx(b, final.receiving.tx_hash))
await session.aclose()
"""


def test_explorer_link_outlives_the_kernel_under_a_base_url(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with jupyter_server(tmp_path, home) as server:
        kernel = httpx.post(
            server.url + "api/kernels",
            headers={"Authorization": f"token {server.token}"},
            json={"name": "python3"},
            timeout=60,
        )
        assert kernel.status_code == 201, kernel.text
        kernel_id = kernel.json()["id"]
        output = asyncio.run(run_in_kernel(server, kernel_id, CELL))
        link = re.search(r"LINK (\S+)", output)
        assert link is not None, output
        assert "SANDBOX SharedSandbox" in output
        href = link.group(1)
        # a path under the server's base_url, not a port of the sandbox
        assert href.startswith(f"{BASE}settlement/explorer/tx/0x"), href
        # the bridged transfer's receiving transaction, on the second chain, under the server
        assert "BRIDGED DONE 31338" in output, output
        blink = re.search(r"BLINK (\S+)", output)
        assert blink is not None
        assert blink.group(1).startswith(f"{BASE}settlement/explorer/chain/31338/tx/0x")
        bpage = httpx.get(
            server.origin + blink.group(1),
            headers={"Authorization": f"token {server.token}"},
            timeout=60,
        )
        assert bpage.status_code == 200 and "class='ok'>success" in bpage.text
        assert "TransferReleased" in bpage.text
        assert f"href='{BASE}settlement/explorer/chain/31338/address/0x" in bpage.text
        gone = httpx.delete(
            server.url + f"api/kernels/{kernel_id}",
            headers={"Authorization": f"token {server.token}"},
            timeout=60,
        )
        assert gone.status_code == 204
        kernels = server.get("api/kernels").json()
        assert kernel_id not in {k["id"] for k in kernels}

        page = httpx.get(
            server.origin + href, headers={"Authorization": f"token {server.token}"}, timeout=60
        )
        assert page.status_code == 200, page.text
        assert page.headers["Content-Type"].startswith("text/html")
        assert "class='ok'>success" in page.text
        assert href.rsplit("/", 1)[1] in page.text
        # its links stay under the server too
        assert f"href='{BASE}settlement/explorer/address/0x" in page.text
        # Jupyter's auth: no token, no page (an API client gets 403, a browser the login page)
        anonymous = httpx.get(server.origin + href, timeout=30, follow_redirects=False)
        assert anonymous.status_code in (302, 403)
        if anonymous.status_code == 302:
            assert "/login" in anonymous.headers["Location"]

        # the server's start log names the channel protocol, at start and once it is ready
        started = [line for line in server.log if "/api/settlement serving the" in line]
        assert len(started) == 1 and "local network, channel: Nitrolite v0.5" in started[0]
        assert any(
            "the server's sandbox is ready (Nitrolite v0.5" in line for line in server.log
        ), "".join(server.log)[-3000:]

        # /api/settlement describes that very sandbox, its links under the server
        body = server.get("api/settlement").json()
        profile = json.loads((home / "sandbox" / "profile.json").read_text())
        channel, v4 = body["methods"]["channel"], body["methods"]["v4"]
        assert (channel["network"], channel["chainId"]) == ("local", profile["chainId"])
        assert channel["contracts"]["custody"] == profile["contracts"]["custody"]
        assert v4["explorerBase"] == f"{BASE}settlement/explorer"
        # the spec's path, under the server's base_url so that it can be fetched as given
        assert body["testnetProofs"]["channel"] == f"{BASE}api/settlement/proofs/channel"
        proofs = httpx.get(
            server.origin + body["testnetProofs"]["channel"],
            headers={"Authorization": f"token {server.token}"},
            timeout=60,
        )
        assert proofs.status_code == 200
        assert server.get("settlement/explorer/").status_code == 200

        # a second server on the same SETTLEMENT_HOME adopts the running sandbox
        with jupyter_server(tmp_path / "second", home) as second:
            again = second.get("api/settlement").json()
            assert again == body
            assert json.loads((home / "sandbox" / "profile.json").read_text()) == profile
