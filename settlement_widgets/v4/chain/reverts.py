"""What a v4 revert means, and what to do about it.

The adapter, the hook, the PoolManager (with the v4-core libraries it links) and the ERC-20
tokens revert with custom errors. :func:`explain_revert` turns the decoded one into the error
a user can act on: it unwraps v4-core's ``WrappedError``, makes a policy refusal a
:class:`~settlement_widgets.errors.PolicyRejectedError` with the reason's name, and adds the
hint from :data:`REVERT_HINTS`. It is pure (no chain), so the table can be read and grown
without the provider's chain plumbing around it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from ...addresses import validate_address
from ...contracts import decode_revert
from ...errors import PolicyRejectedError, SettlementValueError, TransactionFailedError
from ..core.policy import explain_reason, reason_name

__all__ = ["LIBRARY_ERRORS", "REVERT_HINTS", "explain_revert"]

#: errors of v4-core libraries that the PoolManager artifact's ABI does not list
LIBRARY_ERRORS: Final[list[dict[str, Any]]] = [
    {
        "type": "error",
        "name": "WrappedError",
        "inputs": [
            {"name": "target", "type": "address"},
            {"name": "selector", "type": "bytes4"},
            {"name": "reason", "type": "bytes"},
            {"name": "details", "type": "bytes"},
        ],
    },
    {
        "type": "error",
        "name": "HookAddressNotValid",
        "inputs": [{"name": "hooks", "type": "address"}],
    },
    {"type": "error", "name": "InvalidHookResponse", "inputs": []},
    {"type": "error", "name": "HookCallFailed", "inputs": []},
    {
        "type": "error",
        "name": "PriceLimitAlreadyExceeded",
        "inputs": [
            {"name": "sqrtPriceCurrentX96", "type": "uint160"},
            {"name": "sqrtPriceLimitX96", "type": "uint160"},
        ],
    },
    {
        "type": "error",
        "name": "PriceLimitOutOfBounds",
        "inputs": [
            {"name": "sqrtPriceLimitX96", "type": "uint160"},
        ],
    },
]

#: what each revert means and what to do; formatted with the error's arguments
REVERT_HINTS: Final[Mapping[str, str]] = {
    "IntentExpired": "the intent's deadline {0} is before the block time {1}: the user must "
    "sign a new intent with a later deadline",
    "QuotedAmountOutTooLow": "the quote {0} is below the intent's minAmountOut {1}",
    "InvalidSignature": "the signature does not recover to intent.user under the adapter's "
    "EIP-712 domain (name, version, chainId, adapter address): have the user sign it with "
    "sign_intent(intent, key, await provider.eip712_domain())",
    "UnauthorizedSolver": "{0} is neither the adapter's owner nor an authorized solver: the "
    "adapter's owner must call setAuthorizedSolver({0}, true)",
    "IntentAlreadySettled": "intent {0} was already settled; an intent settles at most once",
    "NativeEthNotSupported": "the adapter settles ERC-20 tokens only; wrap native ETH first",
    "PoolMismatch": "the pool {0}/{1} with hooks {2} is not a policy-hook pool of the "
    "intent's two tokens",
    "SwapDirectionMismatch": "zeroForOne={0} does not sell the intent's tokenIn",
    "AmountMismatch": "the swap must be exact input of amountIn: amountSpecified {0} is not -{1}",
    "PartialFill": "the pool could take only {0} of the intent's amountIn {1} "
    "(price limit or liquidity reached)",
    "InsufficientOutput": "the swap would pay {0}, below the intent's minAmountOut {1}",
    "Unauthorized": "only the contract's owner may do this",
    "InvalidSlippageBps": "maxSlippageBps {0} is above 10000",
    "ERC20InsufficientAllowance": "{0} may spend only {1} of the user's tokens, {2} needed: "
    "the user must approve the adapter for amountIn",
    "ERC20InsufficientBalance": "{0} holds {1} of the token, {2} needed",
    "ReentrancyGuardReentrantCall": "settleIntent was re-entered",
    "UnauthorizedPoolManager": "unlockCallback was called by {0}, not the PoolManager",
    "PoolNotInitialized": "the pool of this key has not been initialised",
    "InvalidHookData": "the swap's hookData is not abi.encode(intentId, quotedAmountOut)",
    "NotPoolManager": "a hook callback was called by someone other than the PoolManager",
}


def _checksum_if_address(value: Any) -> Any:
    """eth-abi decodes addresses lowercase; errors show them EIP-55 like everything else."""
    if isinstance(value, str) and len(value) == 42 and value.startswith("0x"):
        try:
            return validate_address(value)
        except SettlementValueError:
            return value
    return value


def _show(value: Any) -> str:
    if isinstance(value, bytes):
        return "0x" + value.hex()
    return str(value)


def explain_revert(
    exc: TransactionFailedError,
    step: str,
    abis: Sequence[list[dict[str, Any]]],
    **context: Any,
) -> TransactionFailedError:
    """``exc`` as the error a user can act on.

    ``abis`` decode a ``WrappedError``'s inner revert; ``context["owner_hint"]`` replaces the
    generic ``Unauthorized`` hint (the provider knows who the owner is, this table does not).
    """
    name, args = exc.error_name, tuple(exc.error_args)
    if name == "WrappedError" and len(args) == 4:  # a callee's revert wrapped by v4-core
        inner_name, inner_args = decode_revert(args[2], *abis)
        if inner_name is not None:
            name, args = inner_name, inner_args
    args = tuple(_checksum_if_address(a) for a in args)
    if name in ("PolicyRejected", "PolicyViolation") and len(args) == 2:
        reason = reason_name(args[1])
        return PolicyRejectedError(
            f"{step}: {name}: the policy hook rejected intent {_show(args[0])}: {reason} "
            f"({explain_reason(reason)})",
            reason=reason,
            error_name=name,
            error_args=args,
            tx_hash=exc.tx_hash,
        )
    if name is None:
        return exc
    hint = REVERT_HINTS.get(name)
    if name == "Unauthorized" and context.get("owner_hint"):
        hint = str(context["owner_hint"])
    text = hint.format(*(_show(a) for a in args)) if hint else "see the contract's source"
    shown = ", ".join(_show(a) for a in args)
    return TransactionFailedError(
        f"{step} reverted with {name}({shown}): {text}",
        error_name=name,
        error_args=args,
        tx_hash=exc.tx_hash,
    )
