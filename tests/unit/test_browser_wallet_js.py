"""Runs the node unit tests of the BrowserWallet's page half (``browser_wallet.js``).

The page half of the BrowserWallet is tested without a browser here: ``node --test`` drives
the ES module with a fake window, fake EIP-1193 wallets and a fake anywidget model, so
discovery, the request/reply protocol and rendering are checked in a plain unit-test run.
The browser tests drive it for real, against an actual page.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
JS_TEST = Path("tests") / "js" / "browser_wallet.test.mjs"


def test_browser_wallet_js_node_tests_pass() -> None:
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is not on PATH: it is needed to run tests/js/browser_wallet.test.mjs")
    assert (REPO_ROOT / JS_TEST).is_file(), f"missing {JS_TEST}"
    proc = subprocess.run(
        [node, "--test", str(JS_TEST)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, (
        f"node --test failed with code {proc.returncode}\n"
        f"--- stdout ---\n{proc.stdout}\n--- stderr ---\n{proc.stderr}"
    )
