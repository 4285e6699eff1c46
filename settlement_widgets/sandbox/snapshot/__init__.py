"""Chain snapshots: the sandbox's deployment phase done once, at ``make contracts`` time.

Starting ``LocalSandbox()`` used to send ~26 transactions (the ``channel`` contracts, wallet
and broker funding, the broker's custody deposit, the v4 PoolManager, hook, adapter and pool)
before anything could run. Their result depends only on things known before the sandbox
starts (:mod:`.key`), so ``make contracts`` runs ``python -m
settlement_widgets.sandbox.snapshot``, which deploys the common configurations once and
saves the resulting chains (:mod:`.store`); a sandbox then *resumes* such a chain
(:mod:`.backends`) instead of deploying. The chain is not an approximation of a deployment
but its continuation: the same transactions, receipts and logs block by block, the same
addresses, code, storage, balances and nonces, and so the same gas prices and transaction
hashes afterwards (block timestamps and hashes differ, as between any two deployments).

What is covered, and what falls back (:mod:`.start`): the in-process chain and anvil, any
plan (wallets, funding, liquidity, v4); a configuration without a snapshot deploys and saves
one for next time; a random broker (``deterministic=False``) is funded live on top of the
snapshot; the aggregator's second chain is deployed live on top; a chain given by URL, or
``LocalSandbox(snapshot=False)``, deploys as before.
"""

from __future__ import annotations

from .key import DEPLOYMENT_SOURCES, SnapshotKey, snapshot_key
from .start import (
    SNAPSHOT_BACKENDS,
    ProvisionedChain,
    build_snapshot,
    key_for,
    start_provisioned_chain,
)
from .store import ENV_DIR, ChainSnapshot, find_snapshot, snapshot_dir

__all__ = [
    "DEPLOYMENT_SOURCES",
    "ENV_DIR",
    "SNAPSHOT_BACKENDS",
    "ChainSnapshot",
    "ProvisionedChain",
    "SnapshotKey",
    "build_snapshot",
    "find_snapshot",
    "key_for",
    "snapshot_dir",
    "snapshot_key",
    "start_provisioned_chain",
]
