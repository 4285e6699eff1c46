"""CREATE2 addresses and the salt search that gives a hook the address bits v4 requires (pure).

A CREATE2 address is ``keccak256(0xff ++ factory ++ salt ++ keccak256(initCode))[12:]``; v4
reads a hook's permissions from the address's low 14 bits, so we try salts 0, 1, 2, ... until
those bits equal the hook's flags exactly (1 in 16384 salts on average). Starting from 0 makes
the search, and so the sandbox's hook address, deterministic.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from eth_hash.auto import keccak

from ...addresses import to_checksum, validate_address
from ...errors import ConfigurationError, SettlementValueError
from .flags import ALL_HOOK_MASK

__all__ = ["CREATE2_DEPLOYER", "SaltSearch", "create2_address", "mine_hook_salt"]

#: the deterministic deployment proxy (Arachnid's) every Foundry CREATE2 deploy goes
#: through: at the same address on every chain that has it (Sepolia, anvil)
CREATE2_DEPLOYER = "0x4e59b44847b379578588920cA78FbF26c0B4956C"


@dataclass(frozen=True)
class SaltSearch:
    """The first salt whose CREATE2 address carries the wanted flags, and what it cost."""

    salt: int
    address: str
    attempts: int
    seconds: float

    @property
    def salt_bytes(self) -> bytes:
        return self.salt.to_bytes(32, "big")


def create2_address(factory: str, salt: int | bytes, init_code_hash: bytes) -> str:
    """The EIP-55 address ``factory`` deploys ``init_code`` (by its hash) to under ``salt``."""
    raw_salt = salt if isinstance(salt, bytes) else int(salt).to_bytes(32, "big")
    if len(raw_salt) != 32 or len(init_code_hash) != 32:
        raise SettlementValueError("salt and init code hash must both be 32 bytes")
    factory_raw = bytes.fromhex(validate_address(factory, field="factory")[2:])
    digest = keccak(b"\xff" + factory_raw + raw_salt + init_code_hash)
    return to_checksum("0x" + digest[12:].hex())


def _prefix_hasher(prefix: bytes) -> Callable[[bytes], bytes]:
    """keccak256(prefix + suffix), reusing the absorbed prefix with pysha3 (8x faster)."""
    try:
        import sha3  # safe-pysha3, pulled in by the eth-tester stack

        base = sha3.keccak_256(prefix)

        def fast(suffix: bytes) -> bytes:
            h = base.copy()
            h.update(suffix)
            return bytes(h.digest())

        return fast
    except ImportError:  # pragma: no cover - the eth_hash backend gives the same digests
        return lambda suffix: keccak(prefix + suffix)


def mine_hook_salt(
    factory: str,
    init_code_hash: bytes,
    flags: int,
    *,
    start: int = 0,
    max_attempts: int = 1_000_000,
) -> SaltSearch:
    """The first salt from ``start`` whose address's low 14 bits equal ``flags`` exactly."""
    if len(init_code_hash) != 32:
        raise SettlementValueError("init code hash must be 32 bytes")
    wanted = flags & ALL_HOOK_MASK
    factory_raw = bytes.fromhex(validate_address(factory, field="factory")[2:])
    hash_with = _prefix_hasher(b"\xff" + factory_raw)
    t0 = time.perf_counter()
    for salt in range(start, start + max_attempts):
        digest = hash_with(salt.to_bytes(32, "big") + init_code_hash)
        if int.from_bytes(digest[30:32], "big") & ALL_HOOK_MASK == wanted:
            return SaltSearch(
                salt=salt,
                address=to_checksum("0x" + digest[12:].hex()),
                attempts=salt - start + 1,
                seconds=time.perf_counter() - t0,
            )
    raise ConfigurationError(
        f"no salt in [{start}, {start + max_attempts}) gives flags 0x{wanted:04x}; "
        "raise max_attempts"
    )
