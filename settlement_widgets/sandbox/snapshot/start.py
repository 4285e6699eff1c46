"""A sandbox chain with the deployment phase done: from a snapshot when one fits, else by
deploying (and saving a snapshot for next time).

:func:`start_provisioned_chain` decides, for a backend and a :class:`~..provision.ProvisionPlan`:

- the backend is ``inprocess`` or ``anvil`` and snapshots are on: the snapshot of the plan
  *with the fixed sandbox broker* is looked up (:mod:`.store`). Found and valid: the chain
  starts from it, no deployment transaction is sent. Missing, stale or unusable: the plan is
  deployed as always, a snapshot of it is saved when the directory is writable, and the
  fallback is logged (once per process for each snapshot file and reason). Either way the
  chain is then what deploying that plan gives: the same blocks with the same transactions,
  receipts and logs, the same addresses, code, storage, balances and nonces, the same base
  fee next; only block timestamps and hashes differ, as between any two deployments (see
  :mod:`.backends`);
- the sandbox's broker is not the fixed one (``deterministic=False``: a random key): the
  above, then that broker is funded live on top (:func:`~..provision.top_up_broker`: its
  tokens, gas and custody deposit, four transactions). Every contract address is
  the same as a deployment for that broker gives (none depends on the broker), the broker
  holds what a deployment gives it; the difference from such a deployment is that the fixed
  broker is funded too (tokens, gas and a custody deposit that nothing uses) and the deployer
  has sent those few extra transactions;
- a chain given by URL, or ``snapshots=False``: the plan is deployed as always, with the
  sandbox's own broker; nothing is read or written.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..chain import DEFAULT_CHAIN_ID, DEV_BALANCE_WEI, start_chain
from ..provision import Provisioned, ProvisionPlan, provision, top_up_broker
from .key import SnapshotKey, snapshot_key
from .store import find_snapshot, save_snapshot, snapshot_dir

if TYPE_CHECKING:
    from ...keys import PrivateKey
    from ..chain import Chain

__all__ = [
    "SNAPSHOT_BACKENDS",
    "ProvisionedChain",
    "build_snapshot",
    "key_for",
    "start_provisioned_chain",
]

_log = logging.getLogger(__name__)
#: the backends a snapshot can start (a chain given by URL has its own state)
SNAPSHOT_BACKENDS = ("inprocess", "anvil")
_DEV_ACCOUNTS = 10
_logged: set[str] = set()


@dataclass(frozen=True)
class ProvisionedChain:
    """A started chain, what is deployed on it, and how it got there: ``"snapshot"``
    (started from one) or ``"deployed"`` (deployment transactions sent)."""

    chain: Chain
    provisioned: Provisioned
    source: str


def key_for(backend: str, plan: ProvisionPlan) -> SnapshotKey:
    """The snapshot key of ``plan`` on a fresh ``backend`` chain as the sandbox starts it."""
    return snapshot_key(
        backend,
        plan,
        chain_id=DEFAULT_CHAIN_ID,
        accounts=_DEV_ACCOUNTS,
        balance_wei=DEV_BALANCE_WEI,
    )


async def start_provisioned_chain(
    backend: str,
    plan: ProvisionPlan,
    broker_key: PrivateKey,
    *,
    fixed_broker_key: PrivateKey,
    snapshots: bool = True,
    directory: Path | None = None,
) -> ProvisionedChain:
    """Start ``backend`` with ``plan`` deployed (see the module doc for when a snapshot is
    used). ``broker_key`` is the key of ``plan.broker``; ``fixed_broker_key`` the broker
    the snapshots are built for. If anything fails, no chain is left running."""
    if not snapshots or backend not in SNAPSHOT_BACKENDS:
        chain = await start_chain(backend)
        try:
            return ProvisionedChain(chain, await provision(chain, plan, broker_key), "deployed")
        except BaseException:
            await chain.aclose()
            raise
    if backend == "inprocess":
        import eth_tester  # noqa: F401  (its version is part of the key; imported anyway)
    base = replace(plan, broker=fixed_broker_key.address)
    key = key_for(backend, base)
    folder = directory if directory is not None else snapshot_dir()
    started = await _from_snapshot(backend, key, folder)
    if started is None:
        started = await _deploy_and_save(backend, key, fixed_broker_key, folder)
    if broker_key.address != base.broker:
        try:
            await top_up_broker(started.chain, started.provisioned, plan, broker_key)
        except BaseException:
            await started.chain.aclose()
            raise
    return started


async def build_snapshot(
    backend: str, plan: ProvisionPlan, broker_key: PrivateKey, directory: Path
) -> Path:
    """Deploy ``plan`` on a fresh ``backend`` chain and save its snapshot (what ``make
    contracts`` runs); returns the record's path."""
    from .backends import capture_state

    key = key_for(backend, plan)
    chain = await start_chain(backend)
    try:
        provisioned = await provision(chain, plan, broker_key)
        state, head = await capture_state(chain)
    finally:
        await chain.aclose()
    return save_snapshot(directory, key, state, provisioned, head)


async def _from_snapshot(backend: str, key: SnapshotKey, folder: Path) -> ProvisionedChain | None:
    from .backends import resume_chain

    snapshot, why = find_snapshot(folder, key)
    if snapshot is not None:
        state = snapshot.state()
        chain = None if state is None else await resume_chain(backend, snapshot, state)
        if chain is not None:
            return ProvisionedChain(chain, snapshot.provisioned, "snapshot")
        why = "unusable"
    said = {"missing": "no chain snapshot yet"}.get(why, f"{why} chain snapshot")
    _log_once(
        f"{why} {folder / key.name}",
        "settlement_widgets: %s for this sandbox (%s) in %s: deploying the contracts once and "
        "saving it, so the next start resumes it",
        said,
        key.describe(),
        folder,
        # the first start of a new installation: expected, so not a warning
        level=logging.INFO if why == "missing" else logging.WARNING,
    )
    return None


async def _deploy_and_save(
    backend: str, key: SnapshotKey, broker_key: PrivateKey, folder: Path
) -> ProvisionedChain:
    from .backends import capture_state

    chain = await start_chain(backend)
    try:
        provisioned = await provision(chain, key.plan, broker_key)
        state, head = await capture_state(chain)
    except BaseException:
        await chain.aclose()
        raise
    try:
        save_snapshot(folder, key, state, provisioned, head)
    except OSError as exc:
        _log_once(
            f"save {folder / key.name}",
            "settlement_widgets: cannot save the chain snapshot in %s (%s)",
            folder,
            exc,
        )
    return ProvisionedChain(chain, provisioned, "deployed")


def _log_once(tag: str, message: str, *args: object, level: int = logging.WARNING) -> None:
    if tag not in _logged:
        _logged.add(tag)
        _log.log(level, message, *args)
