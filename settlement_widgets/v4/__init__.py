"""The ``v4`` method: a Uniswap v4 pool whose policy hook enforces a per-intent policy, and
an adapter that settles EIP-712 signed intents by swapping in the real PoolManager.

Laid out by layer:

- :mod:`.core` (pure): hook flags, intents and their EIP-712 digests, pool keys, the policy
  decision, CREATE2 salt mining; importable without a chain;
- :mod:`.chain`: the contract bindings every provider call goes through, event decoding and
  what each custom error means;
- :mod:`.client`: :class:`V4Provider` (inspection, policy registration, settlement);
- :mod:`.deploy`: putting the method on a chain: :func:`deploy_v4` (the whole stack, on a
  chain we control: the local sandbox) and :func:`deploy_own_v4` (the user's own hook next
  to a public chain's PoolManager).

Submodules load lazily, so ``import settlement_widgets.v4`` is cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    # flags
    "ALL_HOOK_MASK": "core.flags",
    "BEFORE_SWAP_FLAG": "core.flags",
    "HOOK_FLAGS": "core.flags",
    "flags_of": "core.flags",
    "hook_permissions": "core.flags",
    # intents
    "INTENT_TYPE": "core.intents",
    "INTENT_TYPEHASH": "core.intents",
    "SEPOLIA_ADAPTER_DOMAIN": "core.intents",
    "Eip712Domain": "core.intents",
    "Intent": "core.intents",
    "domain_separator": "core.intents",
    "intent_digest": "core.intents",
    "intent_id": "core.intents",
    "intent_struct_hash": "core.intents",
    "recover_intent_signer": "core.intents",
    "sign_intent": "core.intents",
    # pools
    "PoolKey": "core.pool",
    "SwapParams": "core.pool",
    "exact_input_swap": "core.pool",
    # policy
    "Policy": "core.policy",
    "REASON_CODES": "core.policy",
    "effective_min": "core.policy",
    "evaluate_policy": "core.policy",
    "explain_reason": "core.policy",
    "reason_code": "core.policy",
    "reason_name": "core.policy",
    # CREATE2
    "CREATE2_DEPLOYER": "core.create2",
    "create2_address": "core.create2",
    "mine_hook_salt": "core.create2",
    # events
    "DecodedEvent": "chain.events",
    # deployment and provider
    "V4Deployment": "deploy",
    "deploy_v4": "deploy",
    "OwnV4Deployment": "deploy",
    "deploy_own_v4": "deploy",
    "recorded_own_v4": "deploy",
    "Tx": "client",
    "V4Inspection": "client",
    "V4Provider": "client",
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
    from .chain.events import DecodedEvent
    from .client.provider import Tx, V4Inspection, V4Provider
    from .core.create2 import CREATE2_DEPLOYER, create2_address, mine_hook_salt
    from .core.flags import ALL_HOOK_MASK, BEFORE_SWAP_FLAG, HOOK_FLAGS, flags_of, hook_permissions
    from .core.intents import (
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
    from .core.policy import (
        REASON_CODES,
        Policy,
        effective_min,
        evaluate_policy,
        explain_reason,
        reason_code,
        reason_name,
    )
    from .core.pool import PoolKey, SwapParams, exact_input_swap
    from .deploy.own import OwnV4Deployment, deploy_own_v4, recorded_own_v4
    from .deploy.stack import V4Deployment, deploy_v4
