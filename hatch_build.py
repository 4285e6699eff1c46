"""Build hook: refuse to build an sdist or a wheel without the compiled contract artifacts.

The artifacts (``settlement_widgets/_artifacts/*.json``) are git-ignored: ``make contracts``
compiles them from ``contracts/src`` with solc-js and copies the four Uniswap v4 artifacts
from the npm package. A package built without them imports but cannot start a sandbox or a
channel client, so the build fails here, naming what is missing, instead of shipping that.
The sdist carries the artifacts (``artifacts =`` in pyproject.toml), so a wheel built from it
passes this check without node.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

#: copied from @uniswap/v4-core by contracts/build.js (keep in step with its V4_ARTIFACTS)
V4_ARTIFACTS = ("PoolManager", "PoolModifyLiquidityTest", "PoolSwapTest", "TestERC20")
_DECLARATION = re.compile(r"^\s*(?:abstract\s+)?(?:contract|library|interface)\s+(\w+)", re.M)


def expected_artifacts(root: Path) -> set[str]:
    """Every artifact ``contracts/build.js`` writes: one per contract, library and interface
    declared in ``contracts/src``, plus the v4 ones."""
    names = set(V4_ARTIFACTS)
    for source in sorted((root / "contracts" / "src").rglob("*.sol")):
        names.update(_DECLARATION.findall(source.read_text(encoding="utf-8")))
    return names


class ArtifactsHook(BuildHookInterface):  # type: ignore[type-arg]
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if version == "editable":
            return  # a checkout (`pip install -e`, before `make contracts`) reads _artifacts/ live
        root = Path(self.root)
        folder = root / "settlement_widgets" / "_artifacts"
        present = {p.stem for p in folder.glob("*.json")}
        missing = sorted(expected_artifacts(root) - present)
        if missing:
            raise RuntimeError(
                f"settlement_widgets/_artifacts lacks {len(missing)} compiled contract(s) "
                f"({', '.join(missing[:6])}{' …' if len(missing) > 6 else ''}): run "
                "`make contracts` (node contracts/build.js) before building the package"
            )
