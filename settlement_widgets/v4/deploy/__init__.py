"""Putting the v4 method on a chain.

- :mod:`.stack`: :func:`deploy_v4`, the whole stack on a chain we control (the local
  sandbox's): PoolManager and routers, test tokens, the hook and adapter, a seeded pool;
- :mod:`.own`: :func:`deploy_own_v4`, the user's own hook, adapter and pool next to a public
  chain's PoolManager, recorded step by step so a later session reuses or resumes it.

Until the package was laid out by layer this path was :mod:`.stack`'s module, so its public
names stay importable from here (no warning: this package is public).
"""

from __future__ import annotations

from .own import OwnV4Deployment, deploy_own_v4, own_deployments_path, recorded_own_v4
from .stack import (
    POOL_FEE,
    POOL_SQRT_PRICE_X96,
    POOL_TICK_SPACING,
    V4Deployment,
    deploy_v4,
    seed_pool,
)

__all__ = [
    "POOL_FEE",
    "POOL_SQRT_PRICE_X96",
    "POOL_TICK_SPACING",
    "OwnV4Deployment",
    "V4Deployment",
    "deploy_own_v4",
    "deploy_v4",
    "own_deployments_path",
    "recorded_own_v4",
    "seed_pool",
]
