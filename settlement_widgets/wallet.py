"""WalletClient: one private key plus an ``AsyncWeb3`` connection.

The :class:`~settlement_widgets.signer.Signer` for the sandbox and scripts: it signs in this
process (no person to ask), assigns nonces itself and broadcasts raw transactions. Every
on-chain step (custody create/resize/close/withdraw, v4 settlement) goes through
:meth:`~settlement_widgets.signer.Signer.transact`, shared with the browser wallet. The same
code serves the in-process EVM and any JSON-RPC node.

The key is held in a :class:`~settlement_widgets.keys.PrivateKey`, whose repr shows the
address only; ``repr(wallet)`` never shows the key.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from .errors import ConfigurationError
from .keys import PrivateKey
from .signer import Signer, TxRequest, is_connection_error

if TYPE_CHECKING:
    from web3 import AsyncWeb3

    from .networks import Network

__all__ = ["WalletClient", "is_connection_error"]


class WalletClient(Signer):
    """A signing wallet bound to one chain: a private key held in this process.

    ``w3`` may be given directly (the sandbox passes its in-process provider); otherwise it is
    created lazily from ``rpc_url`` (HTTP or WebSocket JSON-RPC).
    """

    _no_connection_hint = "pass rpc_url= or w3= (on Sepolia set SEPOLIA_RPC_URL)"

    def __init__(
        self,
        private_key: str | bytes | PrivateKey,
        *,
        rpc_url: str | None = None,
        w3: AsyncWeb3 | None = None,
        receipt_timeout: float = 120.0,
    ) -> None:
        self._key = private_key if isinstance(private_key, PrivateKey) else PrivateKey(private_key)
        self._read_connection(rpc_url, w3)
        self._nonce_lock = asyncio.Lock()
        self._next_nonce: int | None = None
        self.receipt_timeout = receipt_timeout

    # --- construction -------------------------------------------------------------------

    @classmethod
    def from_env(
        cls, network: Network | None = None, *, var: str = "SETTLEMENT_PRIVATE_KEY"
    ) -> WalletClient:
        """A wallet from ``$SETTLEMENT_PRIVATE_KEY`` and the network's RPC URL."""
        secret = os.environ.get(var)
        if not secret:
            raise ConfigurationError(
                f"{var} is not set: export a funded test key (never a key holding real funds)"
            )
        rpc = network.rpc_url if network is not None else os.environ.get("SEPOLIA_RPC_URL")
        return cls(secret.strip(), rpc_url=rpc)

    # --- identity -----------------------------------------------------------------------

    @property
    def address(self) -> str:
        return self._key.address

    @property
    def key(self) -> PrivateKey:
        """The signing key object (its repr never reveals the secret)."""
        return self._key

    def __repr__(self) -> str:
        return f"WalletClient(address={self.address!r}, rpc_url={self._rpc_url!r})"

    __str__ = __repr__

    def __reduce__(self) -> str | tuple[Any, ...]:
        raise TypeError("WalletClient holds a private key and cannot be pickled")

    # --- signing ------------------------------------------------------------------------

    def sign_hash(self, digest: bytes) -> str:
        """Raw ECDSA over a 32-byte digest, 0x-hex ``r||s||v`` with v 27/28."""
        return self._key.sign_hash_hex(digest)

    async def sign_typed_data(self, full_message: Mapping[str, Any]) -> str:
        """EIP-712 signature of a full typed-data message (domain, types, primaryType, message)."""
        return self.sign_typed_data_now(full_message)

    def sign_typed_data_now(self, full_message: Mapping[str, Any]) -> str:
        """:meth:`sign_typed_data` without awaiting (a key answers at once)."""
        from eth_account.messages import encode_typed_data
        from eth_hash.auto import keccak

        signable = encode_typed_data(full_message=dict(full_message))
        digest = keccak(b"\x19" + signable.version + signable.header + signable.body)
        return self.sign_hash(digest)

    async def sign_message(self, message: bytes) -> str:
        """EIP-191 ``personal_sign`` over raw bytes."""
        return self.sign_message_now(message)

    def sign_message_now(self, message: bytes) -> str:
        """:meth:`sign_message` without awaiting."""
        from ._keccak import keccak256

        digest = keccak256(b"\x19Ethereum Signed Message:\n" + str(len(message)).encode() + message)
        return self.sign_hash(digest)

    # --- transactions -------------------------------------------------------------------

    def reset_nonce(self) -> None:
        """Forget the cached next nonce; the next send asks the node again.

        Needed when the chain went back (a sandbox snapshot revert, a reorg): the cache would
        otherwise stay ahead of the chain and every later transaction would wait forever.
        """
        self._next_nonce = None

    async def _nonce(self) -> int:
        count = await self.w3.eth.get_transaction_count(
            self.address,  # type: ignore[arg-type]
            "pending",
        )
        pending = int(count)
        if self._next_nonce is None or pending > self._next_nonce:
            self._next_nonce = pending
        nonce = self._next_nonce
        self._next_nonce += 1
        return nonce

    async def send_transaction(
        self, tx: TxRequest, *, on_signed: Callable[[str], Any] | None = None
    ) -> str:
        """Fill in what ``tx`` lacks (chain id, EIP-1559 fees, the nonce), sign it with the
        key and broadcast it. ``on_signed(hash)`` runs after signing and *before*
        broadcasting, so a caller can persist the hash first (write-ahead): a process killed
        mid-send then still knows which transaction may be in flight."""
        from eth_account import Account

        tx = {k: v for k, v in tx.items() if k != "from"}
        async with self._nonce_lock:
            if "chainId" not in tx:
                tx["chainId"] = int(await self.w3.eth.chain_id)
            if "maxFeePerGas" not in tx and "gasPrice" not in tx:
                block = await self.w3.eth.get_block("latest")
                base = int(block.get("baseFeePerGas") or 0)
                tx["maxPriorityFeePerGas"] = 10**9
                tx["maxFeePerGas"] = 2 * base + 10**9
            tx["nonce"] = await self._nonce()
            signed = Account.sign_transaction(tx, self._key.secret_hex())
            if on_signed is not None:
                on_signed("0x" + bytes(signed.hash).hex())
            try:
                tx_hash = await self.w3.eth.send_raw_transaction(signed.raw_transaction)
            except Exception as exc:
                self._next_nonce = None  # resync from the node next time
                if is_connection_error(exc):
                    raise
                raise self._revert(exc, ()) from exc
        return "0x" + bytes(tx_hash).hex()
