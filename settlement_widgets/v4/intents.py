"""Deprecated path: this module moved to :mod:`settlement_widgets.v4.core.intents`.

Kept for one release so existing imports keep working; importing it warns.
"""

from __future__ import annotations

import warnings

from .core.intents import (
    EIP712_DOMAIN_TYPEHASH,
    INTENT_TYPE,
    INTENT_TYPEHASH,
    SEPOLIA_ADAPTER_DOMAIN,
    UINT256_MAX,
    Eip712Domain,
    Intent,
    domain_separator,
    intent_digest,
    intent_id,
    intent_struct_hash,
    recover_intent_signer,
    sign_intent,
)

__all__ = [
    "EIP712_DOMAIN_TYPEHASH",
    "INTENT_TYPE",
    "INTENT_TYPEHASH",
    "SEPOLIA_ADAPTER_DOMAIN",
    "UINT256_MAX",
    "Eip712Domain",
    "Intent",
    "domain_separator",
    "intent_digest",
    "intent_id",
    "intent_struct_hash",
    "recover_intent_signer",
    "sign_intent",
]

_NEW = "settlement_widgets.v4.core.intents"
warnings.warn(
    f"{__name__} moved to {_NEW}; this path will be removed in the next release",
    DeprecationWarning,
    stacklevel=2,
)
