"""``python -m settlement_widgets.sandbox.snapshot``: build the chain snapshots (``make
contracts`` runs it after compiling).

Builds the snapshot of each configuration in :data:`BUILT_CONFIGURATIONS` that has none or
a stale one (``--force``: all), then removes the stale snapshots of other configurations
(those a sandbox saved itself after deploying). A current snapshot is left alone, so a second
run costs a few hundred milliseconds. anvil's are built when the binary is installed.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path
from typing import Any

from ...errors import ConfigurationError
from ..provision import ProvisionPlan
from .start import build_snapshot, key_for
from .store import find_snapshot, list_records, remove_snapshot, snapshot_dir

__all__ = ["BUILT_CONFIGURATIONS", "main"]

#: ``(backend, LocalSandbox options)`` built ahead: ``LocalSandbox()`` (the notebooks, the
#: CLI), the Jupyter server's shared sandbox (``make lab``: 8 wallets), and the default on anvil
BUILT_CONFIGURATIONS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("inprocess", {}),
    ("inprocess", {"wallets": 8}),
    ("anvil", {}),
)


def _plan(backend: str, options: dict[str, Any]) -> ProvisionPlan:
    from ..local import LocalSandbox

    return LocalSandbox(chain=backend, deterministic=True, **options).provision_plan()


def _anvil_available() -> bool:
    from ..chain import find_anvil

    try:
        find_anvil()
    except ConfigurationError:
        return False
    return True


async def _build(directory: Path, *, force: bool, anvil: bool) -> int:
    from ..local import sandbox_key

    broker = sandbox_key("broker")
    wanted: set[str] = set()
    for backend, options in BUILT_CONFIGURATIONS:
        if backend == "anvil" and not anvil:
            print("  anvil: not installed, its snapshot skipped", flush=True)
            continue
        plan = _plan(backend, options)
        key = key_for(backend, plan)
        wanted.add(key.name)
        found, why = find_snapshot(directory, key)
        if found is not None and found.state() is not None and not force:
            print(f"  {key.name}: current ({key.describe()})", flush=True)
            continue
        t0 = time.perf_counter()
        await build_snapshot(backend, plan, broker, directory)
        took = time.perf_counter() - t0
        print(f"  {key.name}: built in {took:.1f} s ({key.describe()}; was {why})", flush=True)
    for name, record in list_records(directory):
        if name in wanted:
            continue
        try:
            inputs = record["inputs"]
            backend = inputs["backend"]
            current = key_for(backend, ProvisionPlan.from_json(inputs["plan"])).digest
        except (KeyError, TypeError, ValueError, ConfigurationError):
            current = None
        if record.get("key") != current:
            remove_snapshot(directory, name)
            print(f"  {name}: stale, removed", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m settlement_widgets.sandbox.snapshot",
        description="Build the local sandbox's chain snapshots (run by `make contracts`; "
        "after `pip install`, a first sandbox start saves its own).",
    )
    p.add_argument("--dir", type=Path, help="where (default: $SETTLEMENT_SNAPSHOTS or "
                   "the user cache directory)")  # fmt: skip
    p.add_argument("--force", action="store_true", help="rebuild current snapshots too")
    p.add_argument("--no-anvil", action="store_true", help="skip anvil's snapshot")
    args = p.parse_args(argv)
    directory = args.dir or snapshot_dir()
    t0 = time.perf_counter()
    print(f"chain snapshots in {directory}:", flush=True)
    code = asyncio.run(
        _build(directory, force=args.force, anvil=not args.no_anvil and _anvil_available())
    )
    print(f"  done in {time.perf_counter() - t0:.1f} s", flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
