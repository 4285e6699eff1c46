"""keccak256 for the protocol core (implementation in :mod:`settlement_widgets._keccak`,
shared with :mod:`settlement_widgets.keys` so every hash on the hot path uses one backend)."""

from __future__ import annotations

from ...._keccak import BACKEND, keccak256

__all__ = ["BACKEND", "keccak256"]
