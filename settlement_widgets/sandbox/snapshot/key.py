"""What a chain snapshot depends on, hashed: when any of it changes, the snapshot is stale.

A snapshot records the chain state the deployment phase (:mod:`..provision`) left behind.
That state is a function of:

- the chain: the backend (``inprocess`` or ``anvil``), the chain id, the dev accounts and
  their genesis balance;
- the :class:`~..provision.ProvisionPlan` (wallets, funding, liquidity, v4, broker);
- the compiled artifacts deployed (every ``*.json`` of ``artifacts_dir()``, by content);
- the code that sends the transactions (:data:`DEPLOYMENT_SOURCES`, by content: a new step,
  another gas limit or fee rule changes the state);
- the versions of the libraries that build, sign and execute them (web3, eth-account, and
  py-evm/eth-tester or anvil).

:class:`SnapshotKey` holds all of it; its :attr:`~SnapshotKey.name` (backend and plan only)
names the files, its :attr:`~SnapshotKey.digest` (everything) must match the one recorded in
a snapshot for the snapshot to be used.
"""

from __future__ import annotations

import hashlib
import json
import platform
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import SettlementValueError
from ..provision import ProvisionPlan

__all__ = [
    "DEPLOYMENT_SOURCES",
    "FORMAT",
    "SnapshotKey",
    "anvil_version",
    "snapshot_key",
]

#: the snapshot layout's version; a change makes every older snapshot stale
FORMAT = 1
_PACKAGE = Path(__file__).resolve().parents[2]
#: the modules (relative to the package) whose code decides what the deployment phase sends
DEPLOYMENT_SOURCES = (
    "sandbox/provision.py",
    "sandbox/deploy.py",
    "sandbox/chain.py",
    "sandbox/chain_base.py",
    "sandbox/chain_inprocess.py",
    "sandbox/chain_rpc.py",
    "sandbox/pyevm_database.py",
    "sandbox/snapshot/key.py",
    "sandbox/snapshot/store.py",
    "v4/deploy/stack.py",
    "v4/core/create2.py",
    "v4/core/pool.py",
    "v4/core/flags.py",
    "wallet.py",
    "keys.py",
    "channel/custody.py",
)
_LIBRARIES = {
    "inprocess": (("web3", "web3"), ("eth_account", "eth-account"), ("eth_tester", "eth-tester"),
                  ("eth", "py-evm")),
    "anvil": (("web3", "web3"), ("eth_account", "eth-account")),
}  # fmt: skip


@dataclass(frozen=True)
class SnapshotKey:
    """Everything a snapshot of one sandbox configuration depends on (see the module doc)."""

    backend: str
    chain: dict[str, int]
    plan: ProvisionPlan
    artifacts: str
    code: str
    versions: dict[str, str]

    @property
    def name(self) -> str:
        """The files' stem: backend and configuration only, so a stale snapshot of the same
        configuration is found (and replaced) rather than left beside the new one."""
        config = {"backend": self.backend, "chain": self.chain, "plan": self.plan.to_json()}
        return f"{self.backend}-{_digest(config)[:16]}"

    @property
    def digest(self) -> str:
        """sha256 over every input (hex)."""
        return _digest(self.to_json())

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "backend": self.backend,
            "chain": self.chain,
            "plan": self.plan.to_json(),
            "artifacts": self.artifacts,
            "code": self.code,
            "versions": self.versions,
        }

    def describe(self) -> str:
        """One line for logs: which configuration."""
        p = self.plan
        return (
            f"{self.backend}, {p.wallets} wallets, v4 {'on' if p.v4 else 'off'}, "
            f"funding {p.token_funding}, liquidity {p.broker_liquidity}"
        )


def snapshot_key(
    backend: str, plan: ProvisionPlan, *, chain_id: int, accounts: int, balance_wei: int
) -> SnapshotKey:
    """The key of ``plan`` deployed on a fresh ``backend`` chain (reads the artifacts and the
    deployment sources: about a millisecond)."""
    from ...contracts import artifacts_dir

    if backend not in _LIBRARIES:
        raise SettlementValueError(f"chain snapshots cover inprocess and anvil, not {backend!r}")
    versions = {dist: _version(module, dist) for module, dist in _LIBRARIES[backend]}
    # the in-process state is a marshal dump, whose format belongs to the interpreter
    versions["python"] = platform.python_version()
    if backend == "anvil":
        versions["anvil"] = anvil_version()
    return SnapshotKey(
        backend=backend,
        chain={"chainId": chain_id, "accounts": accounts, "balanceWei": balance_wei},
        plan=plan,
        artifacts=_files_digest(sorted(artifacts_dir().glob("*.json"))),
        code=_files_digest([_PACKAGE / name for name in DEPLOYMENT_SOURCES]),
        versions=versions,
    )


def build_digest() -> str:
    """What a snapshot folder is named for: the artifacts and the deployment code by content,
    so an installed package and the checkout it was built from (same contracts, same code)
    share snapshots, while two versions never overwrite each other's."""
    from ...contracts import artifacts_dir

    artifacts = _files_digest(sorted(artifacts_dir().glob("*.json")))
    code = _files_digest([_PACKAGE / name for name in DEPLOYMENT_SOURCES])
    return hashlib.sha256(f"{artifacts}:{code}".encode()).hexdigest()


def anvil_version() -> str:
    """The anvil in use, as its npm package names it (else the binary's size and mtime)."""
    from ..chain import find_anvil

    binary = find_anvil()
    package = binary.parent.parent / "package.json"
    try:
        return f"npm {json.loads(package.read_text())['version']}"
    except (OSError, ValueError, KeyError):
        stat = binary.stat()
        return f"binary {stat.st_size} {stat.st_mtime_ns}"


def _version(module: str, dist: str) -> str:
    """A library's version: its ``__version__`` when already imported (free), else from
    its installed metadata."""
    loaded = sys.modules.get(module)
    version = getattr(loaded, "__version__", None)
    if isinstance(version, str):
        return version
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed(dist)
    except PackageNotFoundError:
        return "absent"


def _files_digest(paths: list[Path]) -> str:
    h = hashlib.sha256()
    for path in paths:
        h.update(path.name.encode() + b"\0")
        try:
            h.update(hashlib.sha256(path.read_bytes()).digest())
        except OSError:
            h.update(b"missing")
    return h.hexdigest()


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()
