"""The ``v4`` method: a Uniswap v4 pool whose policy hook enforces a per-intent policy, and
an adapter that settles EIP-712 signed intents by swapping in the real PoolManager.

Pure parts (hook flags, intents and their digests, pool keys, the policy decision, CREATE2
salt mining) are importable without a chain; :class:`V4Provider` and :func:`deploy_v4` are
the effectful edges. Submodules load lazily, so ``import settlement_widgets.v4`` is cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    # flags
    "ALL_HOOK_MASK": "flags",
    "BEFORE_SWAP_FLAG": "flags",
    "HOOK_FLAGS": "flags",
    "flags_of": "flags",
    "hook_permissions": "flags",
    # intents
    "INTENT_TYPE": "intents",
    "INTENT_TYPEHASH": "intents",
    "SEPOLIA_ADAPTER_DOMAIN": "intents",
    "Eip712Domain": "intents",
    "Intent": "intents",
    "domain_separator": "intents",
    "intent_digest": "intents",
    "intent_id": "intents",
    "intent_struct_hash": "intents",
    "recover_intent_signer": "intents",
    "sign_intent": "intents",
    # pools
    "PoolKey": "pool",
    "SwapParams": "pool",
    "exact_input_swap": "pool",
    # policy
    "Policy": "policy",
    "REASON_CODES": "policy",
    "effective_min": "policy",
    "evaluate_policy": "policy",
    "explain_reason": "policy",
    "reason_code": "policy",
    "reason_name": "policy",
    # CREATE2
    "CREATE2_DEPLOYER": "create2",
    "create2_address": "create2",
    "mine_hook_salt": "create2",
    # events
    "DecodedEvent": "events",
    # deployment and provider
    "V4Deployment": "deploy",
    "deploy_v4": "deploy",
    "OwnV4Deployment": "own_deployment",
    "deploy_own_v4": "own_deployment",
    "recorded_own_v4": "own_deployment",
    "Tx": "provider",
    "V4Inspection": "provider",
    "V4Provider": "provider",
}

__all__ = [
    "ALL_HOOK_MASK",
    "BEFORE_SWAP_FLAG",
    "CREATE2_DEPLOYER",
    "HOOK_FLAGS",
    "INTENT_TYPE",
    "INTENT_TYPEHASH",
    "REASON_CODES",
    "SEPOLIA_ADAPTER_DOMAIN",
    "DecodedEvent",
    "Eip712Domain",
    "Intent",
    "OwnV4Deployment",
    "Policy",
    "PoolKey",
    "SwapParams",
    "Tx",
    "V4Deployment",
    "V4Inspection",
    "V4Provider",
    "create2_address",
    "deploy_own_v4",
    "deploy_v4",
    "domain_separator",
    "effective_min",
    "evaluate_policy",
    "exact_input_swap",
    "explain_reason",
    "flags_of",
    "hook_permissions",
    "intent_digest",
    "intent_id",
    "intent_struct_hash",
    "mine_hook_salt",
    "reason_code",
    "reason_name",
    "recorded_own_v4",
    "recover_intent_signer",
    "sign_intent",
]


__getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)


if TYPE_CHECKING:  # pragma: no cover
    from .create2 import CREATE2_DEPLOYER, create2_address, mine_hook_salt
    from .deploy import V4Deployment, deploy_v4
    from .events import DecodedEvent
    from .flags import ALL_HOOK_MASK, BEFORE_SWAP_FLAG, HOOK_FLAGS, flags_of, hook_permissions
    from .intents import (
        INTENT_TYPE,
        INTENT_TYPEHASH,
        SEPOLIA_ADAPTER_DOMAIN,
        Eip712Domain,
        Intent,
        domain_separator,
        intent_digest,
        intent_id,
        intent_struct_hash,
        recover_intent_signer,
        sign_intent,
    )
    from .own_deployment import OwnV4Deployment, deploy_own_v4, recorded_own_v4
    from .policy import (
        REASON_CODES,
        Policy,
        effective_min,
        evaluate_policy,
        explain_reason,
        reason_code,
        reason_name,
    )
    from .pool import PoolKey, SwapParams, exact_input_swap
    from .provider import Tx, V4Inspection, V4Provider
