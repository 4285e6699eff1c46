"""Replace a small file all at once: a reader (another kernel, the endpoint, the next
session) sees the old content or the new one, never half of it.

The text goes to a temporary file beside the target, named for this writer alone
(``.<name>.<pid>.<random>.tmp``: two writers of the same file, a kernel publishing a
comparison while the server does, never write into each other's temporary file), created
with ``mode`` (0600 for a file that holds a key, so it is never readable by others even for
an instant), then renamed over the target, which is atomic on one filesystem. The last rename
wins; a failed write leaves no temporary file behind.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path

__all__ = ["write_atomic"]


def write_atomic(path: Path, text: str, *, mode: int = 0o644) -> Path:
    """Write ``text`` to ``path`` atomically (creating its directory); returns ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        tmp.replace(path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    return path
