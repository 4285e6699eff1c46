"""Where chain snapshots live, and how they are written and read back.

A snapshot is two files in :func:`snapshot_dir`, both named by :attr:`SnapshotKey.name`:

- ``<name>.state``: the chain itself, as the backend takes it back: the py-evm key-value
  store (``marshal`` of a ``dict[bytes, bytes]``) in-process, anvil's own state JSON
  (``anvil_dumpState``, un-gzipped, what ``--load-state`` reads) for anvil;
- ``<name>.json``: what the sandbox needs besides the chain (the deployment results), the
  key digest it was built for, the head block it ended at, and the sha256 of the state file.

The state file is written first and the record second, each by an atomic rename, so a reader
sees a complete record or none; a record whose state file does not match its sha256 (two
writers crossing) is unusable and simply rebuilt.

The default directory is in the user's cache directory (platformdirs), one folder per
build (artifacts and deployment code by content: two versions never overwrite each other's
snapshots, an installed package shares the ones of the checkout it was built from), never
inside the installed package: a ``pip uninstall`` must not leave files behind,
and ``site-packages`` may not be writable. Snapshots are never committed or shipped (the
in-process state holds the npm package's PoolManager bytecode). ``SETTLEMENT_SNAPSHOTS``
points elsewhere.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..provision import Provisioned
from .key import FORMAT, SnapshotKey

__all__ = [
    "ENV_DIR",
    "ChainSnapshot",
    "find_snapshot",
    "list_records",
    "remove_snapshot",
    "save_snapshot",
    "snapshot_dir",
]

#: the environment variable that moves the snapshot directory
ENV_DIR = "SETTLEMENT_SNAPSHOTS"


def snapshot_dir() -> Path:
    """``$SETTLEMENT_SNAPSHOTS``, else ``<user cache>/settlement_widgets/snapshots/<build>``
    (:func:`~.key.build_digest`)."""
    env = os.environ.get(ENV_DIR)
    if env:
        return Path(env)
    from platformdirs import user_cache_dir

    from .key import build_digest

    folder = build_digest()[:16]
    return Path(user_cache_dir("settlement_widgets", appauthor=False)) / "snapshots" / folder


@dataclass(frozen=True)
class ChainSnapshot:
    """A snapshot found for a key: its record, and its state file (verified on read)."""

    name: str
    provisioned: Provisioned
    #: the head block when it was taken: ``number``, ``hash``, ``stateRoot`` (0x-hex)
    head: dict[str, Any]
    state_path: Path
    state_sha256: str

    def state(self) -> bytes | None:
        """The state file's bytes, or None when it is missing or not the one recorded."""
        try:
            data = self.state_path.read_bytes()
        except OSError:
            return None
        return data if hashlib.sha256(data).hexdigest() == self.state_sha256 else None


def find_snapshot(directory: Path, key: SnapshotKey) -> tuple[ChainSnapshot | None, str]:
    """The snapshot of ``key`` in ``directory``, or None and why: ``"missing"`` (none for
    this configuration), ``"stale"`` (one built from other artifacts, code or versions) or
    ``"unreadable"``."""
    record_path = directory / f"{key.name}.json"
    try:
        record = json.loads(record_path.read_text())
    except FileNotFoundError:
        return None, "missing"
    except (OSError, ValueError):
        return None, "unreadable"
    if not isinstance(record, dict) or record.get("format") != FORMAT:
        return None, "stale"
    if record.get("key") != key.digest:
        return None, "stale"
    try:
        snapshot = ChainSnapshot(
            name=key.name,
            provisioned=Provisioned.from_json(record["provisioned"]),
            head=dict(record["head"]),
            state_path=directory / f"{key.name}.state",
            state_sha256=str(record["stateSha256"]),
        )
    except (KeyError, TypeError, ValueError):
        return None, "unreadable"
    return snapshot, "found"


def save_snapshot(
    directory: Path,
    key: SnapshotKey,
    state: bytes,
    provisioned: Provisioned,
    head: dict[str, Any],
) -> Path:
    """Write ``key``'s snapshot (state file, then record); returns the record's path.
    Raises OSError when ``directory`` cannot be written."""
    directory.mkdir(parents=True, exist_ok=True)
    _write_atomic(directory / f"{key.name}.state", state)
    record = {
        "format": FORMAT,
        "key": key.digest,
        "inputs": key.to_json(),
        "head": head,
        "stateSha256": hashlib.sha256(state).hexdigest(),
        "stateBytes": len(state),
        "provisioned": provisioned.to_json(),
    }
    path = directory / f"{key.name}.json"
    _write_atomic(path, (json.dumps(record, indent=1, sort_keys=True) + "\n").encode())
    return path


def list_records(directory: Path) -> list[tuple[str, dict[str, Any]]]:
    """``(name, record)`` of every readable snapshot record in ``directory``."""
    out: list[tuple[str, dict[str, Any]]] = []
    for path in sorted(directory.glob("*.json")):
        with contextlib.suppress(OSError, ValueError):
            record = json.loads(path.read_text())
            if isinstance(record, dict):
                out.append((path.stem, record))
    return out


def remove_snapshot(directory: Path, name: str) -> None:
    """Delete snapshot ``name`` (record first, so no reader follows it to a missing state)."""
    for suffix in (".json", ".state"):
        with contextlib.suppress(FileNotFoundError):
            (directory / f"{name}{suffix}").unlink()


def _write_atomic(path: Path, data: bytes) -> None:
    """``data`` to ``path`` by a rename of a uniquely named temporary file beside it, so
    concurrent writers never share a temporary file."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
