"""Nothing shown to a user is invented: the synthetic LI.FI responses the tests use carry
hashes of transactions that exist on no chain, so neither they, nor any data file shipped in
the package, nor any committed notebook output may link a transaction hash to a public
explorer (etherscan, arbiscan, optimistic.etherscan, scan.li.fi, ...). Links to this
machine's loopback explorer are fine: they show what the local sandbox really mined."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from settlement_widgets.aggregator.core.source import is_loopback_host

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "settlement_widgets"
SYNTHETIC = ROOT / "tests" / "fixtures" / "lifi_synthetic"
NOTEBOOKS = ROOT / "notebooks"
#: the data files a wheel of the package may carry besides code
DATA_SUFFIXES = frozenset({".json", ".html", ".js", ".css", ".txt", ".md"})
EXPLORER_KEYS = frozenset({"txLink", "lifiExplorerLink"})

# a bracketed IPv6 host, then anything up to a quote, space or closing bracket
URL = re.compile(r"https?://(?:\[[0-9a-fA-F:.]+\])?[^\s\"'<>\\`)\]}]*", re.IGNORECASE)
TX_HASH = re.compile(r"0x[0-9a-fA-F]{64}(?![0-9a-fA-F])")


def public_tx_links(text: str) -> list[str]:
    """Every http(s) URL in ``text`` to a host that is not loopback whose path (or query)
    names a 32-byte hash: a transaction page on a public explorer."""
    found = []
    for match in URL.finditer(text):
        url = match.group(0)
        try:
            parts = urlsplit(url)
            host = parts.hostname
        except ValueError:
            found.append(url)  # unparseable: not provably harmless
            continue
        rest = parts.path + "?" + parts.query + "#" + parts.fragment
        if TX_HASH.search(rest) and not is_loopback_host(host):
            found.append(url)
    return found


def package_data_files() -> list[Path]:
    return sorted(
        p
        for p in PACKAGE.rglob("*")
        if p.is_file() and p.suffix.lower() in DATA_SUFFIXES and "__pycache__" not in p.parts
    )


def notebooks() -> list[Path]:
    return sorted(p for p in NOTEBOOKS.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)


def keys(value: Any) -> Iterator[str]:
    """Every object key in a decoded JSON value, at any depth."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from keys(item)
    elif isinstance(value, list):
        for item in value:
            yield from keys(item)


def _name(path: Path) -> str:
    return str(path.relative_to(ROOT))


H = "ab" * 32


@pytest.mark.parametrize(
    "text",
    [
        f"https://arbiscan.io/tx/0x{H}",
        f"see https://optimistic.etherscan.io/tx/0x{H}.",
        f'"https://scan.li.fi/tx/0x{H}"',
        f"http://etherscan.io/tx/0x{H}?x=1",
        f"https://sepolia.etherscan.io/search?q=0x{H}",
        f"https://127.0.0.1.attacker.example/tx/0x{H}",
    ],
)
def test_the_check_finds_public_transaction_links(text: str) -> None:
    assert public_tx_links(text)


@pytest.mark.parametrize(
    "text",
    [
        f"http://127.0.0.1:8545/explorer/tx/0x{H}",
        f"http://localhost:8888/settlement/explorer/tx/0x{H}",
        f"http://[::1]:9/tx/0x{H}",
        f"/user/me/settlement/explorer/tx/0x{H}",  # a path on the Jupyter server
        "https://sepolia.etherscan.io/address/0x" + "ab" * 20,  # an address, not a tx
        "https://raw.githubusercontent.com/lifinance/types/main/src/assets/icons/usdc.svg",
        f"tx 0x{H} (no link)",
    ],
)
def test_the_check_lets_loopback_links_and_plain_hashes_pass(text: str) -> None:
    assert public_tx_links(text) == []


def test_the_package_ships_no_synthetic_lifi_data() -> None:
    assert not (PACKAGE / "aggregator" / "recorded").exists()
    assert package_data_files(), "the walk found no data files: the walk is wrong"


@pytest.mark.parametrize("path", package_data_files(), ids=_name)
def test_package_data_files_link_no_hash_to_an_explorer(path: Path) -> None:
    text = path.read_text("utf-8", errors="replace")
    assert public_tx_links(text) == [], _name(path)
    if path.suffix == ".json":
        assert not set(keys(json.loads(text))) & EXPLORER_KEYS, _name(path)


@pytest.mark.parametrize("path", sorted(SYNTHETIC.glob("*.json")), ids=lambda p: p.name)
def test_synthetic_responses_link_no_hash_to_an_explorer(path: Path) -> None:
    text = path.read_text("utf-8")
    assert public_tx_links(text) == []
    assert not set(keys(json.loads(text))) & EXPLORER_KEYS


def test_the_manifest_says_the_data_is_synthetic() -> None:
    note = json.loads((SYNTHETIC / "manifest.json").read_text())["note"]
    assert note.startswith("Synthetic") and "no such transactions exist" in note
    assert "not fetched from the live API" in note and "not live rates" in note


@pytest.mark.parametrize("path", notebooks(), ids=lambda p: p.name)
def test_committed_notebook_outputs_link_no_public_transaction(path: Path) -> None:
    """The committed outputs come from the local sandbox and synthetic data only; a public
    explorer link there would point at a transaction nobody made."""
    notebook = json.loads(path.read_text("utf-8"))
    for cell in notebook["cells"]:
        for output in cell.get("outputs", []):
            text = json.dumps(output)
            assert public_tx_links(text) == [], (path.name, text[:300])
