"""keccak256 on the fastest backend installed.

Every state hash, request hash and EIP-712 digest is one or more keccak calls over a few
hundred bytes. ``eth_hash.auto`` picks pycryptodome, which pays about 4 µs of binding overhead
per call; safe-pysha3 does the same work in about 1.5 µs. Use it
when present, else pycryptodome directly (skipping eth-hash's dispatch), else eth-hash.
Tests assert all backends agree.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["BACKEND", "keccak256"]


def _select() -> tuple[str, Callable[[bytes], bytes]]:
    try:
        import sha3  # safe-pysha3

        keccak_256 = sha3.keccak_256

        def _pysha3(data: bytes) -> bytes:
            return keccak_256(data).digest()  # type: ignore[no-any-return]

        return "pysha3", _pysha3
    except ImportError:  # pragma: no cover - depends on the environment
        pass
    try:
        from Crypto.Hash import keccak as _ck

        new = _ck.new

        def _pycryptodome(data: bytes) -> bytes:
            return new(data=data, digest_bits=256).digest()  # type: ignore[no-any-return]

        return "pycryptodome", _pycryptodome
    except ImportError:  # pragma: no cover - depends on the environment
        from eth_hash.auto import keccak as _eth_hash_keccak

        return "eth-hash", _eth_hash_keccak


BACKEND, keccak256 = _select()
"""``keccak256(data: bytes) -> bytes`` (32 bytes); ``BACKEND`` names the implementation."""
