"""THIRD_PARTY_NOTICES.md names every bundled artifact that is not compiled from our own
sources, with the npm package and version it comes from (the lock's), the licence the lock
records for it, and a licence text in LICENSES/; the package metadata ships them all."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NOTICES = (ROOT / "THIRD_PARTY_NOTICES.md").read_text()
LOCK = json.loads((ROOT / "contracts" / "package-lock.json").read_text())["packages"]
SHIPPED = {
    "@uniswap/v4-core": "uniswap-v4-core",
    "@openzeppelin/contracts": "openzeppelin-contracts",
}


def test_every_artifact_not_built_from_our_sources_is_listed() -> None:
    build = (ROOT / "contracts" / "build.js").read_text()
    copied = re.search(r"const V4_ARTIFACTS = \[([^\]]*)\]", build)
    assert copied is not None
    names = re.findall(r"'(\w+)'", copied.group(1))
    assert names  # build.js still copies the v4 artifacts from npm
    for name in names:
        assert f"`{name}`" in NOTICES, name


def test_each_shipped_package_is_named_with_the_locked_version_and_licence() -> None:
    for package, stem in SHIPPED.items():
        locked = LOCK[f"node_modules/{package}"]
        assert f"`{package}` {locked['version']} (npm)" in NOTICES, package
        licence = locked["license"]
        texts = sorted((ROOT / "LICENSES").glob(f"*{stem}*"))
        assert any(p.name.startswith(licence) for p in texts), (package, licence, texts)
        assert licence in NOTICES


def test_the_metadata_ships_the_licence_files() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license-files"] == ["LICENSE", "LICENSES/*", "THIRD_PARTY_NOTICES.md"]
    assert "BUSL-1.1" in project["license"]
    for text in (ROOT / "LICENSES").iterdir():
        assert f"`LICENSES/{text.name}`" in NOTICES, text.name
