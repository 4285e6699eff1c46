"""Nothing shown to a user is invented: the synthetic aggregator responses shipped for offline
use carry hashes of transactions that exist on no chain, so neither they nor any committed
notebook output may link such a hash to a public explorer."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RECORDED = ROOT / "settlement_widgets" / "aggregator" / "recorded"
# an http(s) link to a transaction page that is not on this machine's loopback explorer
PUBLIC_TX_LINK = re.compile(r"https?://(?!127\.0\.0\.1|localhost)[^\s\"'<>]*/tx/0x[0-9a-fA-F]{64}")


@pytest.mark.parametrize("path", sorted(RECORDED.glob("*.json")), ids=lambda p: p.name)
def test_synthetic_responses_link_no_hash_to_an_explorer(path: Path) -> None:
    text = path.read_text()
    assert not PUBLIC_TX_LINK.search(text)
    keys = set(re.findall(r'"(\w+)":', text))
    assert not keys & {"txLink", "lifiExplorerLink"}


def test_the_manifest_says_the_data_is_synthetic() -> None:
    note = json.loads((RECORDED / "manifest.json").read_text())["note"]
    assert note.startswith("Synthetic") and "no such transactions exist" in note


@pytest.mark.parametrize(
    "path", sorted((ROOT / "notebooks").glob("*.ipynb")), ids=lambda p: p.name
)
def test_committed_notebook_outputs_link_no_public_transaction(path: Path) -> None:
    """The committed outputs come from the local sandbox and synthetic data only; a public
    explorer link there would point at a transaction nobody made."""
    notebook = json.loads(path.read_text())
    for cell in notebook["cells"]:
        for output in cell.get("outputs", []):
            text = json.dumps(output)
            assert not PUBLIC_TX_LINK.search(text), (path.name, text[:300])
