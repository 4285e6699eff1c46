"""write_atomic: the whole new text or the old one, with the mode asked for."""

from __future__ import annotations

import stat
from pathlib import Path

from settlement_widgets.atomic_file import write_atomic


def test_replaces_the_whole_file_with_the_mode_asked_for(tmp_path: Path) -> None:
    target = tmp_path / "deep" / "secret.env"
    assert write_atomic(target, "export A=1\n", mode=0o600) == target
    assert target.read_text() == "export A=1\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    write_atomic(target, "export A=2\n", mode=0o600)
    assert target.read_text() == "export A=2\n"
    assert sorted(p.name for p in target.parent.iterdir()) == ["secret.env"]  # no .tmp left
