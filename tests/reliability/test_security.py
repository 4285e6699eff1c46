"""Security checks: refusals (endpoint auth, faucet proxy, relay replay / stale / wrong
signer / over allowance, session-key expiry), key file modes, no private key in reprs,
widget HTML, logs or notebook outputs, inert XSS payloads; and the scanners themselves catch
what they look for."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.reliability.common import SecretRegistry, capture_logs, secrets
from benchmarks.reliability.security import (
    check_endpoint_auth,
    check_faucet_proxy_pinned,
    check_live_objects,
    check_logs,
    check_notebooks,
    check_relay_refusals,
    check_widget_xss,
    html_problems,
)
from benchmarks.reliability.stack import EndpointStack
from settlement_widgets.keys import PrivateKey


def test_unauthenticated_endpoint_calls_are_refused(endpoint_stack: EndpointStack) -> None:
    api = endpoint_stack.api
    assert api is not None
    finding = check_endpoint_auth(api.endpoint, api.token)
    assert finding.ok, finding.detail


def test_the_faucet_proxy_cannot_be_pointed_at_another_host(
    endpoint_stack: EndpointStack,
) -> None:
    api = endpoint_stack.api
    assert api is not None
    finding = check_faucet_proxy_pinned(api.endpoint, api.token)
    assert finding.ok, finding.detail


@pytest.mark.slow
async def test_relay_refusals_session_expiry_and_database_modes(tmp_path: Path) -> None:
    findings = await check_relay_refusals(tmp_path, expiry_seconds=2)
    names = {f.name for f in findings}
    assert names == {
        "relay database files are 0600",
        "relay refuses a replayed request",
        "relay refuses a stale-timestamp request",
        "relay refuses a wrong-signer request",
        "relay refuses an over-allowance request",
        "session keys expire",
    }
    assert [f for f in findings if not f.ok] == []


@pytest.mark.slow
@pytest.mark.anvil
async def test_no_key_in_reprs_widget_html_or_logs_and_store_is_0600(tmp_path: Path) -> None:
    with capture_logs() as logged:
        findings = await check_live_objects(tmp_path)
    findings.append(check_logs(sorted(tmp_path.rglob("*.log")), logged))
    assert {f.name for f in findings} == {
        "channel store files are 0600",
        "no private key in reprs",
        "no private key in widget HTML",
        "no private key in logs",
    }
    assert [f for f in findings if not f.ok] == []
    assert "provider session key" in secrets.labels()  # the scans knew the session key


def test_no_key_in_notebook_outputs() -> None:
    finding = check_notebooks()
    assert finding.ok, finding.detail


def test_widget_xss_payloads_are_inert() -> None:
    finding = check_widget_xss()
    assert finding.ok, finding.detail


# --- the scanners catch what they look for ---------------------------------------------------


def test_the_registry_finds_a_key_in_any_spelling() -> None:
    registry = SecretRegistry()
    key = PrivateKey.generate()
    registry.add_key(key, "k")
    bare = key.secret_hex().removeprefix("0x")
    for text in (f"x={bare}", f"0x{bare.upper()} y", f'"{key.secret_hex()}"'):
        assert registry.find(text) == ["k"], text
    assert registry.find(bare + "00") == []  # a longer hex string is something else
    assert registry.find("0x" + "ab" * 32) == []


def test_the_notebook_scan_catches_the_key_of_a_shown_address(tmp_path: Path) -> None:
    key = PrivateKey.generate()  # unknown to every registry: found through its address
    cell = {
        "cell_type": "code",
        "source": "session",
        "metadata": {},
        "execution_count": 1,
        "outputs": [
            {
                "output_type": "stream",
                "name": "stdout",
                "text": f"session key {key.address} secret {key.secret_hex()}\n",
            }
        ],
    }
    (tmp_path / "leak.ipynb").write_text(
        json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    )
    finding = check_notebooks(tmp_path)
    assert not finding.ok
    assert "the private key of a shown address" in finding.detail


def test_the_html_probe_catches_what_a_browser_would_run() -> None:
    base = "https://sepolia.etherscan.io"
    assert html_problems(f'<div><a href="{base}/tx/0x1">tx</a></div>', base) == []
    bad = {
        "<script>alert(1)</script>": "element <script>",
        '<img src=x onerror="alert(1)">': "element <img>",
        '<div onmouseover="alert(1)">x</div>': "attribute onmouseover on <div>",
        '<a href="javascript:alert(1)">x</a>': "javascript: in href",
        '<a href="https://evil.example/">x</a>': "link outside the explorer: https://evil.example/",
    }
    for html, problem in bad.items():
        assert problem in html_problems(html, base), html


def test_the_log_scan_catches_a_logged_key(tmp_path: Path) -> None:
    key = PrivateKey.generate()
    secrets.add_key(key, "test leak key")
    log = tmp_path / "x.log"
    log.write_text(f"INFO signing with {key.secret_hex()}\n")
    finding = check_logs([log], "")
    assert not finding.ok and "test leak key" in finding.detail
