"""The documentation site: ``mkdocs build --strict`` (what ``make docs`` runs) builds with no
warning, every link of the result passes docs/check_links.py, and the pages hold what they
promise: the README, each notebook with its outputs and widget snapshots, the API reference.
The checker itself is tested on pages made to fail."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "docs"))
from check_links import check  # noqa: E402


@pytest.mark.slow
def test_the_site_builds_strict_and_every_link_holds(tmp_path: Path) -> None:
    site = tmp_path / "site"
    built = subprocess.run(
        [str(Path(sys.executable).parent / "mkdocs"), "build", "--strict", "--site-dir", str(site)],
        capture_output=True, text=True, cwd=ROOT, timeout=600,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )  # fmt: skip
    assert built.returncode == 0, built.stderr[-3000:]
    assert "WARNING" not in built.stderr, built.stderr[-3000:]
    problems, external = check(site)
    assert problems == []
    assert all(link.startswith("https://") for link in external), external
    assert "## Scripts" not in (site / "index.html").read_text()  # rendered, not raw
    assert 'id="scripts"' in (site / "index.html").read_text()
    for notebook in sorted((ROOT / "notebooks").glob("*.ipynb")):
        page = (site / "notebooks" / notebook.with_suffix(".html").name).read_text()
        assert "Error displaying widget" not in page
    assert "sw-static-snapshot" in (site / "notebooks" / "dashboard.html").read_text()
    channel = (site / "api" / "channel.html").read_text()
    for name in ("ChannelProvider", "ChannelProviderV1", "open_channel_provider", "transfer"):
        assert name in channel, name


def _site(tmp_path: Path, pages: dict[str, str]) -> Path:
    for name, body in pages.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(f"<html><body>{body}</body></html>")
    return tmp_path


def test_the_checker_finds_loopback_missing_files_and_missing_anchors(tmp_path: Path) -> None:
    site = _site(
        tmp_path,
        {
            "index.html": '<h2 id="here">x</h2><a href="#here">ok</a><a href="a/b.html#there">'
            '</a><a href="gone.html">x</a><a href="http://127.0.0.1:8888/explorer/tx/0x1">x</a>'
            '<a href="https://example.org/">x</a><img src="/a/b.html">',
            "a/b.html": '<p id="elsewhere"></p><a href="../index.html#here">back</a>',
        },
    )
    problems, external = check(site)
    assert problems == [
        "index.html: a/b.html#there: no #there in b.html",
        "index.html: gone.html names no file of the site",
        "index.html: a link to a loopback host: http://127.0.0.1:8888/explorer/tx/0x1",
    ]
    assert external == {"https://example.org/"}
