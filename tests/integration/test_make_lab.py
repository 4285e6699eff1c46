"""`make lab` really starts JupyterLab on notebooks/ (headless here, on loopback), and its
``/api/settlement`` answers 200 for the local sandbox the server owns."""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_make_lab_serves_api_status(tmp_path: Path) -> None:
    port, token = _free_port(), secrets.token_hex(16)
    flags = (
        f"--no-browser --ServerApp.ip=127.0.0.1 --ServerApp.port={port} "
        f"--ServerApp.port_retries=0 --IdentityProvider.token={token} "
        f"--LabApp.workspaces_dir={tmp_path / 'ws'}"
    )
    log = (tmp_path / "lab.log").open("wb")
    proc = subprocess.Popen(
        ["make", "-s", "lab", f"LAB_FLAGS={flags}"],
        cwd=ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        env={**os.environ, "JUPYTER_CONFIG_DIR": str(tmp_path / "cfg")},
    )
    try:
        deadline = time.monotonic() + 120
        status = None
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                r = httpx.get(
                    f"http://127.0.0.1:{port}/api/status",
                    headers={"Authorization": f"token {token}"},
                    timeout=2,
                )
                status = r.status_code
                break
            except httpx.TransportError:
                time.sleep(0.2)  # polling an external process's port: nothing to await on
        assert status == 200, (tmp_path / "lab.log").read_text()[-2000:]
        # the tree it serves is notebooks/
        r = httpx.get(
            f"http://127.0.0.1:{port}/api/contents",
            headers={"Authorization": f"token {token}"},
            timeout=5,
        )
        assert r.status_code == 200
        names = {item["name"] for item in r.json()["content"]}
        assert names == {
            p.name for p in (ROOT / "notebooks").iterdir() if not p.name.startswith(".")
        }
        # unauthenticated requests are refused
        assert httpx.get(f"http://127.0.0.1:{port}/api/contents", timeout=5).status_code == 403
        # the server owns the local sandbox: its endpoint describes it (the first request
        # waits for the sandbox the server started at launch)
        r = httpx.get(
            f"http://127.0.0.1:{port}/api/settlement",
            headers={"Authorization": f"token {token}"},
            timeout=300,
        )
        assert r.status_code == 200, r.text
        channel = r.json()["methods"]["channel"]
        assert (channel["network"], channel["chainId"]) == ("local", 31337)
        assert r.json()["methods"]["v4"]["explorerBase"] == "/settlement/explorer"
        explorer = httpx.get(
            f"http://127.0.0.1:{port}/settlement/explorer/",
            headers={"Authorization": f"token {token}"},
            timeout=60,
        )
        assert explorer.status_code == 200 and "Custody" in explorer.text
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
        log.close()
