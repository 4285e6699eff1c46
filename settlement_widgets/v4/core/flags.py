"""Uniswap v4 hook permission flags, read from a hook's address.

v4 does not ask a hook what it wants to be called for: the PoolManager reads the low 14 bits
of the hook's address (v4-core ``libraries/Hooks.sol``). That is why a hook is deployed with
CREATE2 at a mined salt, and why the deployed hook's address ``0x...8080`` tells us, with no
chain access, that it is called on ``beforeSwap`` only (``0x8080 & 0x3FFF == 0x0080``).
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Final

from ...addresses import validate_address

__all__ = [
    "ALL_HOOK_MASK",
    "BEFORE_SWAP_FLAG",
    "HOOK_FLAGS",
    "flags_of",
    "has_exact_flags",
    "hook_permissions",
]

#: flag name (v4-core's ``Hooks.Permissions`` field) -> bit, highest bit first
HOOK_FLAGS: Final = MappingProxyType(
    {
        "beforeInitialize": 1 << 13,
        "afterInitialize": 1 << 12,
        "beforeAddLiquidity": 1 << 11,
        "afterAddLiquidity": 1 << 10,
        "beforeRemoveLiquidity": 1 << 9,
        "afterRemoveLiquidity": 1 << 8,
        "beforeSwap": 1 << 7,
        "afterSwap": 1 << 6,
        "beforeDonate": 1 << 5,
        "afterDonate": 1 << 4,
        "beforeSwapReturnDelta": 1 << 3,
        "afterSwapReturnDelta": 1 << 2,
        "afterAddLiquidityReturnDelta": 1 << 1,
        "afterRemoveLiquidityReturnDelta": 1 << 0,
    }
)
ALL_HOOK_MASK: Final = (1 << 14) - 1
BEFORE_SWAP_FLAG: Final = HOOK_FLAGS["beforeSwap"]


def flags_of(address: str) -> int:
    """The low 14 bits of ``address``: the hook permissions v4 will honour."""
    return int(validate_address(address, field="hook address"), 16) & ALL_HOOK_MASK


def hook_permissions(address: str) -> dict[str, bool]:
    """Every v4 hook flag of ``address`` by name (all 14, in v4-core's order)."""
    bits = flags_of(address)
    return {name: bool(bits & bit) for name, bit in HOOK_FLAGS.items()}


def has_exact_flags(address: str, flags: int) -> bool:
    """True when the address carries exactly ``flags`` (Hooks.validateHookPermissions)."""
    return flags_of(address) == flags & ALL_HOOK_MASK
