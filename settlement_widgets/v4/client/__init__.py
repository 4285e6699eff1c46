"""The v4 method's client: :class:`V4Provider` and the parts it is built from.

- :mod:`.provider`: :class:`V4Provider`, one class over the parts below;
- :mod:`.inspection`: what the chain allows (:meth:`V4Provider.inspect`, the owner check);
- :mod:`.policy_registration`: registering, updating and checking the hook's policies;
- :mod:`.settlement`: solvers, approvals, signing and settling intents.
"""

from __future__ import annotations

from .provider import (
    DETERMINISTIC_PROXY_RUNTIME,
    OwnerKind,
    Tx,
    V4Inspection,
    V4Provider,
    classify_owner_code,
)

__all__ = [
    "DETERMINISTIC_PROXY_RUNTIME",
    "OwnerKind",
    "Tx",
    "V4Inspection",
    "V4Provider",
    "classify_owner_code",
]
