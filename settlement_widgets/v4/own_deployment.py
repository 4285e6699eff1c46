"""Deprecated path: this module moved to :mod:`settlement_widgets.v4.deploy.own`.

Kept for one release so existing imports keep working; importing it warns.
"""

from __future__ import annotations

import warnings

from .deploy.own import (
    OwnV4Deployment,
    deploy_own_v4,
    own_deployments_path,
    recorded_own_v4,
)

__all__ = [
    "OwnV4Deployment",
    "deploy_own_v4",
    "own_deployments_path",
    "recorded_own_v4",
]

_NEW = "settlement_widgets.v4.deploy.own"
warnings.warn(
    f"{__name__} moved to {_NEW}; this path will be removed in the next release",
    DeprecationWarning,
    stacklevel=2,
)
