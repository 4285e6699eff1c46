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

from settlement_widgets.links import is_loopback_url
from settlement_widgets.sandbox import dev_keys
from settlement_widgets.sandbox.local import sandbox_key
from tests.notebook_links import output_links

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
        "08_nitrolite_v1_two_chains.ipynb",
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


# --- links a reader can open, and notebooks that read as tutorials ---------------------------

#: the faucet takes only POST: a link to it answers "405 Method Not Allowed"
POST_ONLY = ("/faucet/requestTokens",)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_committed_outputs_link_to_no_loopback_port(path: Path) -> None:
    """A committed output is read on other machines, after its kernel and sandbox are gone:
    no link in it may point at a loopback port (or at an endpoint a link cannot use)."""
    links = list(output_links(json.loads(path.read_text())))
    loopback = [(cell, link) for cell, link in links if is_loopback_url(link)]
    assert not loopback, f"links to a loopback port in {path.name}: {loopback}"
    post_only = [(cell, link) for cell, link in links if link.endswith(POST_ONLY)]
    assert not post_only, f"links to a POST-only endpoint in {path.name}: {post_only}"


def test_output_links_sees_anchors_and_autolinked_text() -> None:
    """The collector the test above relies on finds what JupyterLab would make a link."""
    nb = {
        "cells": [
            {
                "cell_type": "code",
                "outputs": [
                    {
                        "output_type": "stream",
                        "name": "stdout",
                        "text": "at http://127.0.0.1:9/x\n",
                    },
                    {
                        "output_type": "display_data",
                        "data": {"text/html": '<a href="/settlement/explorer/tx/0x1">t</a>'},
                    },
                    # with HTML present the text form is not shown, so not a link
                    {
                        "output_type": "execute_result",
                        "data": {"text/html": "<b>x</b>", "text/plain": "http://127.0.0.1:9/y"},
                    },
                ],
            }
        ]
    }
    assert list(output_links(nb)) == [
        (0, "http://127.0.0.1:9/x"),
        (0, "/settlement/explorer/tx/0x1"),
    ]


def test_notebooks_folder_holds_only_notebooks() -> None:
    """What a reader's file browser lists under notebooks/: the notebooks (test support files
    live in tests/nbval/)."""
    entries = [p for p in (ROOT / "notebooks").iterdir() if not p.name.startswith(".")]
    others = [p.name for p in entries if p.suffix != ".ipynb"]
    assert not others, f"not notebooks: {others}"


#: a regular expression, or a hand-rolled HTML parse, in a cell
_REGEX_USE = re.compile(
    r"^\s*(import re\b|from re import)"
    r"|\bre\.(search|match|fullmatch|findall|finditer|sub|split|compile)\("
    r"|BeautifulSoup|HTMLParser",
    re.M,
)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_cell_parses_html_with_regular_expressions(path: Path) -> None:
    """Notebooks are tutorials: proving the explorer's HTML is the test suite's job
    (tests/nbval/probes.py), not a cell's."""
    nb = json.loads(path.read_text())
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            source = "".join(cell["source"])
            assert not _REGEX_USE.search(source), f"{path.name}: {source[:300]}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_cell_is_a_chain_of_asserts(path: Path) -> None:
    """At most two asserts in a cell: a short one where the check is the lesson (the rest is
    in tests/nbval/probes.py)."""
    nb = json.loads(path.read_text())
    for cell in nb["cells"]:
        source = "".join(cell["source"])
        if cell["cell_type"] == "code":
            asserts = re.findall(r"^\s*assert\b", source, re.M)
            assert len(asserts) <= 2, f"{path.name}: {len(asserts)} asserts in {source[:200]}"


def test_every_walkthrough_but_the_comparison_has_a_probe() -> None:
    """The checks dropped from the notebooks run as their probes under ``make notebooks``;
    07's claims are the comparison's integration test's; the dashboard is the browser tests'."""
    from tests.nbval.probes import PROBES

    assert set(PROBES) == {p.name for p in NOTEBOOKS} - {
        "07_compare_methods.ipynb",
        "dashboard.ipynb",
    }
