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


def test_concurrent_writers_never_mix_their_texts(tmp_path: Path) -> None:
    """Each writer has its own temporary file: the target is always one writer's whole text
    (a shared ``<name>.tmp`` let one writer truncate another's before its rename)."""
    from concurrent.futures import ThreadPoolExecutor

    target = tmp_path / "comparisons" / "local.json"
    texts = [str(i) * 50_000 for i in range(8)]
    with ThreadPoolExecutor(8) as pool:
        for _ in range(5):
            list(pool.map(lambda t: write_atomic(target, t), texts))
            assert target.read_text() in texts
    assert [p.name for p in target.parent.iterdir()] == ["local.json"]
