"""Drop files from the kernel's page cache without root, to approximate a cold start.

``/proc/sys/vm/drop_caches`` needs root and empties the cache of the whole (shared) machine.
``posix_fadvise(POSIX_FADV_DONTNEED)`` on a file asks the kernel to drop that file's clean
cached pages, and any user who can open the file may ask: applied to every file a Python
start reads (the interpreter's standard library, the environment's site-packages, our
package and the chain snapshots), the next start reads them from disk again, as after a
reboot. It is advice: pages mapped by a running process (the ``python`` binary, shared
libraries in use) stay, so this approximates cold rather than guaranteeing it.
"""

from __future__ import annotations

import os
import sysconfig
from collections.abc import Iterable
from pathlib import Path

__all__ = ["evict", "python_start_files"]


def python_start_files(*extra: Path) -> list[Path]:
    """The directories a ``python -m settlement_widgets...`` start reads from."""
    paths = sysconfig.get_paths()
    roots = {Path(paths["stdlib"]), Path(paths["platstdlib"]), Path(paths["purelib"])}
    roots |= {Path(paths["platlib"])}
    return sorted(roots | set(extra))


def evict(roots: Iterable[Path]) -> int:
    """Advise the kernel to drop every regular file under ``roots`` from its page cache;
    returns how many files were advised (0 where ``posix_fadvise`` does not exist)."""
    advise = getattr(os, "posix_fadvise", None)
    if advise is None:  # pragma: no cover - not Linux
        return 0
    count = 0
    for root in roots:
        for folder, _dirs, files in os.walk(root):
            for name in files:
                try:
                    fd = os.open(os.path.join(folder, name), os.O_RDONLY | os.O_NOFOLLOW)
                except OSError:
                    continue
                try:
                    advise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                    count += 1
                except OSError:
                    pass
                finally:
                    os.close(fd)
    return count
