"""The committed walkthrough notebooks and their nbval sanitize file.

Notebooks are committed executed (nbval compares against the stored outputs), top to bottom
in one kernel, without widget state (it cannot be restored and GitHub refuses to render it)
and never with a secret in them. The sanitize file replaces what differs between runs (ports,
timestamps, durations) and nothing that the sandbox keeps deterministic.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from nbval.plugin import get_sanitize_patterns

from settlement_widgets.sandbox import dev_keys
from settlement_widgets.sandbox.local import sandbox_key

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
SANITIZE = ROOT / "tests" / "nbval" / "sanitize.cfg"


def _sanitize(text: str) -> str:
    for regex, replace in get_sanitize_patterns(SANITIZE.read_text()):
        text = re.sub(regex, replace, text)
    return text


def test_the_walkthroughs_exist() -> None:
    names = {p.name for p in NOTEBOOKS}
    assert {
        "01_settlement_methods.ipynb",
        "02_faucet.ipynb",
        "03_channel_lifecycle.ipynb",
        "04_v4_contracts.ipynb",
        "05_aggregator_routes.ipynb",
        "06_nitrolite_v1.ipynb",
        "dashboard.ipynb",
    } <= names


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_committed_executed_top_to_bottom_without_errors(path: Path) -> None:
    nb = json.loads(path.read_text())
    assert nb["metadata"]["kernelspec"]["name"] == "python3"  # neutral kernel (nbval#106)
    assert "widgets" not in nb["metadata"], "strip widget state before committing"
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert code, "a walkthrough has code"
    counts = [c["execution_count"] for c in code]
    assert counts == list(range(1, len(code) + 1)), f"not one top-to-bottom run: {counts}"
    for cell in code:
        assert not [o for o in cell["outputs"] if o["output_type"] == "error"], cell["source"]
        assert "execution" not in cell.get("metadata", {}), "timing metadata changes every run"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_private_key_in_a_notebook(path: Path) -> None:
    text = path.read_text().lower()
    keys = [*dev_keys(10), sandbox_key("broker"), sandbox_key("faucet")]
    for key in keys:
        secret = key.secret_hex().lower().removeprefix("0x")
        assert secret not in text, f"a sandbox private key ({key.address}) is in {path.name}"
    assert "secret_hex" not in text  # no cell reads a key's secret


def test_sanitize_replaces_ports_timestamps_and_durations() -> None:
    text = (
        "relay ws://127.0.0.1:38681/ws, rpc http://localhost:8545/rpc\n"
        "recorded 2026-02-08T18:30:00.123Z and 2026-02-08 18:30:00+00:00\n"
        "sandbox ready in 4.8 s, took 350 ms"
    )
    assert _sanitize(text) == (
        "relay ws://127.0.0.1:PORT/ws, rpc http://localhost:PORT/rpc\n"
        "recorded TIMESTAMP and TIMESTAMP\n"
        "sandbox ready in N s, took N s"
    )


def test_sanitize_keeps_what_the_sandbox_keeps_deterministic() -> None:
    kept = (
        "hook 0xA5e2828D18a5D89bf62a93726bcF955C492b0080 "
        "tx 0x4c258de50e684494e011c19b320bb28e425acca04c5e5516a745bd4889150a02 "
        "block 45, gas 204230, 0.996901 V4B, deadline 2000000000, chain 31337, 100 USDC"
    )
    assert _sanitize(kept) == kept
