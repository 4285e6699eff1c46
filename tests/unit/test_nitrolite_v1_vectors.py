"""``python -m settlement_widgets.channel.v1.core.vectors compute``: the published Nitrolite v1
vectors (``data/nitrolite-v1-vectors.json``, as the official
SDK 1.4.1 made them) with every ``outputs``
removed, computed again by our code from the inputs alone, must equal the published outputs.
The private keys in that file's ``meta.keys`` are the oracle's fixed, public test keys
(``0x01…01`` to ``0x04…04``): the inputs every vector was signed with, never funded anywhere.

Groups not implemented are left without outputs and make the command exit 3, naming them;
the list below of what is still missing is empty (all 129 vectors are reproduced), so a group
that stops being computed, or a new published group, fails here.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from settlement_widgets.channel.v1.core.vectors import compute_document, groups

DATA = Path(__file__).resolve().parent / "data" / "nitrolite-v1-vectors.json"
PUBLISHED: dict[str, Any] = json.loads(DATA.read_text())


def _stripped() -> dict[str, Any]:
    return {
        **PUBLISHED,
        "vectors": {
            group: [{k: v for k, v in vector.items() if k != "outputs"} for vector in vectors]
            for group, vectors in PUBLISHED["vectors"].items()
        },
    }


def test_every_implemented_group_reproduces_the_published_outputs() -> None:
    computed, report = compute_document(_stripped())
    assert report.failed == []
    implemented = set(groups())
    checked = 0
    for group, vectors in PUBLISHED["vectors"].items():
        if group not in implemented:
            continue
        for ours, theirs in zip(computed["vectors"][group], vectors, strict=True):
            assert ours["id"] == theirs["id"]
            assert ours["outputs"] == theirs["outputs"], ours["id"]
            checked += 1
    assert checked == report.computed > 0
    assert checked == sum(len(v) for v in PUBLISHED["vectors"].values()) == 129


def test_the_command_writes_the_file_and_names_what_it_cannot_compute(tmp_path: Path) -> None:
    source = tmp_path / "in.json"
    source.write_text(json.dumps(_stripped()))
    out = tmp_path / "out.json"
    proc = subprocess.run(
        [sys.executable, "-m", "settlement_widgets.channel.v1.core.vectors", "compute", str(source),
         str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )  # fmt: skip
    missing = sorted(set(PUBLISHED["vectors"]) - set(groups()))
    assert proc.returncode == (3 if missing else 0), proc.stderr
    for group in missing:
        assert f"not implemented yet: {group}" in proc.stderr
    written = json.loads(out.read_text())
    assert written["meta"] == PUBLISHED["meta"]
    for group in missing:  # never guessed
        assert all("outputs" not in v for v in written["vectors"][group])


def test_a_file_that_is_not_a_vector_file_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2, 3]")
    proc = subprocess.run(
        [sys.executable, "-m", "settlement_widgets.channel.v1.core.vectors", "compute", str(bad),
         str(tmp_path / "out.json")],
        capture_output=True,
        text=True,
        timeout=120,
    )  # fmt: skip
    assert proc.returncode == 2
    assert "not a vector file" in proc.stderr
    assert not (tmp_path / "out.json").exists()


@pytest.mark.parametrize("group", sorted(PUBLISHED["vectors"]))
def test_each_group_is_implemented_or_listed_as_missing(group: str) -> None:
    """What issue 22 still needs, by name: every published group is implemented now."""
    not_yet: set[str] = set()
    assert (group in groups()) != (group in not_yet)
