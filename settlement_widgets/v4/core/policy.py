"""The policy hook's decision, in Python (pure): reason codes and the bound it enforces.

The hook answers ``checkPolicy(intentId, quoted) -> (bool, bytes32 reason)`` where the reason
is ``bytes32(0)`` or ``keccak256`` of a name. :func:`reason_name` turns the code into that
name; :func:`evaluate_policy` mirrors the contract so a notebook can say *why* before a
transaction is sent (tests check it against the contract's answers).
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Final

from eth_hash.auto import keccak

from ...errors import InvalidAmountError, SettlementValueError

__all__ = [
    "BPS_DENOMINATOR",
    "REASON_CODES",
    "REASON_OK",
    "REASON_POLICY_EXPIRED",
    "REASON_POLICY_MISSING",
    "REASON_SLIPPAGE_EXCEEDED",
    "Policy",
    "effective_min",
    "evaluate_policy",
    "explain_reason",
    "reason_code",
    "reason_name",
]

BPS_DENOMINATOR: Final = 10_000
REASON_OK: Final = b"\x00" * 32
REASON_POLICY_MISSING: Final = keccak(b"POLICY_MISSING")
REASON_POLICY_EXPIRED: Final = keccak(b"POLICY_EXPIRED")
REASON_SLIPPAGE_EXCEEDED: Final = keccak(b"SLIPPAGE_EXCEEDED")

#: readable name -> bytes32 code
REASON_CODES: Final = MappingProxyType(
    {
        "OK": REASON_OK,
        "POLICY_MISSING": REASON_POLICY_MISSING,
        "POLICY_EXPIRED": REASON_POLICY_EXPIRED,
        "SLIPPAGE_EXCEEDED": REASON_SLIPPAGE_EXCEEDED,
    }
)
_NAMES: Final = {code: name for name, code in REASON_CODES.items()}

_EXPLANATIONS: Final = MappingProxyType(
    {
        "OK": "the quote satisfies the intent's policy",
        "POLICY_MISSING": "no policy is registered for this intent id on the hook "
        "(the hook's owner must call setPolicy or setPolicyWithSlippage first)",
        "POLICY_EXPIRED": "the intent's policy deadline has passed "
        "(the owner or the policy's updater can extend it with updatePolicyBounds)",
        "SLIPPAGE_EXCEEDED": "the quoted output is below the policy's bound "
        "max(minAmountOut, referenceAmountOut x (1 - maxSlippageBps / 10000))",
    }
)


def _as_bytes32(code: bytes | str) -> bytes:
    if isinstance(code, str):
        text = code[2:] if code.startswith(("0x", "0X")) else code
        try:
            code = bytes.fromhex(text)
        except ValueError:
            raise SettlementValueError(f"reason code is not hex: {code!r}") from None
    if len(code) != 32:
        raise SettlementValueError(f"reason code must be 32 bytes, got {len(code)}")
    return bytes(code)


def reason_name(code: bytes | str) -> str:
    """``"OK"``, ``"POLICY_MISSING"``, ``"POLICY_EXPIRED"``, ``"SLIPPAGE_EXCEEDED"``, or the
    code as 0x-hex when the hook returned something we do not know."""
    raw = _as_bytes32(code)
    return _NAMES.get(raw, "0x" + raw.hex())


def reason_code(name: str) -> bytes:
    """The bytes32 code of a reason name (the inverse of :func:`reason_name`)."""
    try:
        return REASON_CODES[name]
    except KeyError:
        raise SettlementValueError(
            f"unknown policy reason {name!r}; known: {', '.join(REASON_CODES)}"
        ) from None


def explain_reason(name: str) -> str:
    """One sentence on what a reason means and what to do about it."""
    return _EXPLANATIONS.get(name, f"the hook returned an unknown reason code {name}")


def _uint(value: object, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0 or value >= 2**256:
        raise InvalidAmountError(f"{field} must be a uint256 integer, got {value!r}")
    return value


def effective_min(min_amount_out: int, reference_amount_out: int, max_slippage_bps: int) -> int:
    """The lowest acceptable output: ``max(min, reference * (10000 - bps) // 10000)``."""
    _uint(min_amount_out, "minAmountOut")
    _uint(reference_amount_out, "referenceAmountOut")
    bps = _uint(max_slippage_bps, "maxSlippageBps")
    if bps > BPS_DENOMINATOR:
        raise InvalidAmountError(f"maxSlippageBps must be at most 10000, got {bps}")
    bound = reference_amount_out * (BPS_DENOMINATOR - bps) // BPS_DENOMINATOR
    return max(min_amount_out, bound)


@dataclass(frozen=True)
class Policy:
    """One entry of the hook's ``policies(bytes32)`` mapping."""

    min_amount_out: int
    reference_amount_out: int
    deadline: int
    max_slippage_bps: int
    updater: str
    exists: bool

    @classmethod
    def from_abi(cls, result: tuple[Any, ...] | list[Any]) -> Policy:
        min_out, ref_out, deadline, bps, updater, exists = result
        return cls(int(min_out), int(ref_out), int(deadline), int(bps), str(updater), bool(exists))

    @property
    def effective_min(self) -> int:
        return effective_min(self.min_amount_out, self.reference_amount_out, self.max_slippage_bps)


def evaluate_policy(policy: Policy | None, quoted_amount_out: int, now: int) -> tuple[bool, str]:
    """What ``checkPolicy`` answers at block time ``now``: ``(allowed, reason name)``.

    A deadline equal to ``now`` is still valid (the contract checks ``deadline < now``).
    """
    quoted = _uint(quoted_amount_out, "quotedAmountOut")
    if policy is None or not policy.exists:
        return False, "POLICY_MISSING"
    if policy.deadline < now:
        return False, "POLICY_EXPIRED"
    if quoted < policy.effective_min:
        return False, "SLIPPAGE_EXCEEDED"
    return True, "OK"
