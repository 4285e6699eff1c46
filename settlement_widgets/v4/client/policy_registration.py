"""Policy registration: put, change and read the per-intent policies on the policy hook.

Only the hook's owner may register a policy (``setPolicy`` / ``setPolicyWithSlippage``); a
policy's updater may later change its bounds. When the wallet is not the owner, the revert is
explained with who the owner is (and :meth:`~.inspection.InspectionMixin.inspect` says
whether that owner can register policies at all). The decision table itself is the pure
:mod:`..core.policy`.
"""

from __future__ import annotations

from ...addresses import validate_address
from ...errors import (
    ConfigurationError,
    InvalidAmountError,
    SettlementValueError,
    TransactionFailedError,
)
from ..chain.base import Tx, V4ProviderBase, check_uint
from ..core.intents import Intent
from ..core.policy import BPS_DENOMINATOR, Policy, reason_name

__all__ = ["PolicyRegistrationMixin"]


class PolicyRegistrationMixin(V4ProviderBase):
    """Register, update, read and check the hook's per-intent policies."""

    async def _owner_hint(self) -> str:
        try:
            owner = await self._read(self._hook.functions.owner(), "hook owner()")
        except (ConfigurationError, TransactionFailedError):
            return "only the hook's owner can set policies"
        return (
            f"only the hook's owner {owner} can set policies, and this wallet is "
            f"{self.wallet.address} (run inspect() to see whether the owner can at all)"
        )

    async def register_policy(
        self,
        intent_id: str | bytes,
        min_amount_out: int,
        deadline: int,
        *,
        reference_amount_out: int | None = None,
        max_slippage_bps: int | None = None,
        updater: str | None = None,
    ) -> Tx:
        """Register the policy of ``intent_id`` on the hook (the wallet must be its owner).

        With ``reference_amount_out`` and ``max_slippage_bps`` it calls
        ``setPolicyWithSlippage``, otherwise ``setPolicy``; ``updater`` (default: this wallet)
        may later change the bounds.
        """
        iid = Intent.normalise_id(intent_id)
        check_uint(min_amount_out, "minAmountOut")
        check_uint(deadline, "deadline")
        who = validate_address(
            updater if updater is not None else self.wallet.address, field="updater"
        )
        if (reference_amount_out is None) != (max_slippage_bps is None):
            raise SettlementValueError(
                "give both reference_amount_out and max_slippage_bps, or neither"
            )
        hook = self._hook
        if reference_amount_out is None or max_slippage_bps is None:
            call = hook.functions.setPolicy(bytes.fromhex(iid[2:]), min_amount_out, deadline, who)
            ref, bps = min_amount_out, 0
        else:
            check_uint(reference_amount_out, "referenceAmountOut")
            check_uint(max_slippage_bps, "maxSlippageBps", bits=16)
            if max_slippage_bps > BPS_DENOMINATOR:
                raise InvalidAmountError(
                    f"maxSlippageBps must be at most 10000, got {max_slippage_bps}"
                )
            call = hook.functions.setPolicyWithSlippage(
                bytes.fromhex(iid[2:]),
                min_amount_out,
                reference_amount_out,
                max_slippage_bps,
                deadline,
                who,
            )
            ref, bps = reference_amount_out, max_slippage_bps
        try:
            tx = await self._transact(call, "register_policy")
        except TransactionFailedError as exc:
            if exc.error_name == "Unauthorized":
                raise self.explain_error(
                    exc, "register_policy", owner_hint=await self._owner_hint()
                ) from exc
            raise
        self._record(
            "register_policy",
            "on-chain",
            tx=tx,
            data={
                "intentId": iid,
                "minAmountOut": str(min_amount_out),
                "referenceAmountOut": str(ref),
                "maxSlippageBps": bps,
                "deadline": deadline,
                "updater": who,
            },
        )
        return tx

    async def update_policy_bounds(
        self,
        intent_id: str | bytes,
        min_amount_out: int,
        reference_amount_out: int,
        max_slippage_bps: int,
        deadline: int,
    ) -> Tx:
        """Change an existing policy's bounds (the hook's owner or the policy's updater)."""
        iid = Intent.normalise_id(intent_id)
        for value, name in (
            (min_amount_out, "minAmountOut"),
            (reference_amount_out, "referenceAmountOut"),
            (deadline, "deadline"),
        ):
            check_uint(value, name)
        check_uint(max_slippage_bps, "maxSlippageBps", bits=16)
        call = self._hook.functions.updatePolicyBounds(
            bytes.fromhex(iid[2:]), min_amount_out, reference_amount_out, max_slippage_bps, deadline
        )
        tx = await self._transact(call, "update_policy_bounds")
        self._record(
            "update_policy_bounds",
            "on-chain",
            tx=tx,
            data={
                "intentId": iid,
                "minAmountOut": str(min_amount_out),
                "referenceAmountOut": str(reference_amount_out),
                "maxSlippageBps": max_slippage_bps,
                "deadline": deadline,
            },
        )
        return tx

    async def get_policy(self, intent_id: str | bytes) -> Policy:
        """The hook's stored policy of ``intent_id`` (``exists`` False when there is none)."""
        iid = Intent.normalise_id(intent_id)
        raw = await self._read(self._hook.functions.policies(bytes.fromhex(iid[2:])), "policies()")
        return Policy.from_abi(raw)

    async def check_policy(
        self, intent_id: str | bytes, quoted_amount_out: int
    ) -> tuple[bool, str]:
        """The hook's verdict on a quote: ``(allowed, "OK" | "POLICY_MISSING" | ...)``."""
        iid = Intent.normalise_id(intent_id)
        check_uint(quoted_amount_out, "quotedAmountOut")
        allowed, code = await self._read(
            self._hook.functions.checkPolicy(bytes.fromhex(iid[2:]), quoted_amount_out),
            "checkPolicy()",
        )
        reason = reason_name(bytes(code))
        self._record(
            "check_policy",
            "read-only",
            data={
                "intentId": iid,
                "quotedAmountOut": str(quoted_amount_out),
                "allowed": bool(allowed),
                "reason": reason,
            },
        )
        return bool(allowed), reason
