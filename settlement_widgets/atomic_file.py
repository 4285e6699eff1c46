"""Replace a small file all at once: a reader (another kernel, the endpoint, the next
session) sees the old content or the new one, never half of it.

The text goes to ``<name>.tmp`` beside the target, created with ``mode`` (0600 for a file
that holds a key, so it is never readable by others even for an instant), then renamed over
the target, which is atomic on one filesystem.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["write_atomic"]


def write_atomic(path: Path, text: str, *, mode: int = 0o644) -> Path:
    """Write ``text`` to ``path`` atomically (creating its directory); returns ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    tmp.replace(path)
    return path
