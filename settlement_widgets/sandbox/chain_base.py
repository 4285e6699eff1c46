"""What every sandbox chain backend shares: the dev accounts and the :class:`Chain` surface.

The dev accounts are the well-known keys of the mnemonic ``test test ... junk`` (the same ten
on every backend; anvil funds them itself, the in-process genesis funds them with 10,000 ETH
each). They are public test keys: never send real funds to them. The backends are in
:mod:`.chain_inprocess` and :mod:`.chain_rpc`; :mod:`.chain` starts one.
"""

from __future__ import annotations

import abc
import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..errors import ChainUnavailableError, SettlementValueError
from ..keys import PrivateKey
from ..wallet import WalletClient

if TYPE_CHECKING:
    from web3 import AsyncWeb3


__all__ = [
    "BACKENDS",
    "DEFAULT_CHAIN_ID",
    "DEV_BALANCE_WEI",
    "DEV_MNEMONIC",
    "Chain",
    "chain_instance_id",
    "derive_dev_key",
    "dev_keys",
]

#: The mnemonic of anvil's (and hardhat's) default accounts. Public: test use only.
DEV_MNEMONIC = "test test test test test test test test test test test junk"
#: One chain id for every local backend (anvil's default).
DEFAULT_CHAIN_ID = 31337
#: What each dev account holds at genesis (anvil's default, 10,000 ETH).
DEV_BALANCE_WEI = 10_000 * 10**18
#: Names accepted by :func:`start_chain` besides a URL.
BACKENDS = ("inprocess", "anvil")

_HD_PATH = "m/44'/60'/0'/0"


# The first ten keys of DEV_MNEMONIC at m/44'/60'/0'/0/i, as anvil prints them. Deriving them
# takes ~0.7 s per key in pure Python, so they are spelled out (tests re-derive two of them).
# Public, well-known test keys: never fund them on a real network.
_WELL_KNOWN_DEV_KEYS = (
    "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80",
    "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d",
    "0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a",
    "0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6",
    "0x47e179ec197488593b187f80a00eb0da91f1b9d0b13f8733639f19c30a34926a",
    "0x8b3a350cf5c34c9194ca85829a2df0ec3153be0318b5e2d3348e872092edffba",
    "0x92db14e403b83dfe3df233f83dfa3a0d7096f21ca9b0d6d6b8d88b2b4ec1564e",
    "0x4bbbf85ce3377467afe5d46f804f221813b2bb87f24d81f60f1fcdbf7cbf4356",
    "0xdbda1821b80551c9d65939329250298aa3472ba22feea921c0cf5d620ea67b97",
    "0x2a871d0798f97d79848a013d4936a73bf4cc922c825d33c1cf7073dff6d409c6",
)


def derive_dev_key(index: int) -> PrivateKey:
    """Key ``index`` of :data:`DEV_MNEMONIC` by BIP-32 derivation (slow; see :func:`dev_keys`)."""
    from eth_account.hdaccount import key_from_seed, seed_from_mnemonic

    return PrivateKey(key_from_seed(seed_from_mnemonic(DEV_MNEMONIC, ""), f"{_HD_PATH}/{index}"))


@functools.cache
def _dev_key(index: int) -> PrivateKey:
    if index < len(_WELL_KNOWN_DEV_KEYS):
        return PrivateKey(_WELL_KNOWN_DEV_KEYS[index])
    return derive_dev_key(index)


def dev_keys(count: int = 10) -> tuple[PrivateKey, ...]:
    """The first ``count`` keys of :data:`DEV_MNEMONIC` (``m/44'/60'/0'/0/i``), anvil's accounts."""
    if not isinstance(count, int) or isinstance(count, bool) or not 1 <= count <= 100:
        raise SettlementValueError(f"count must be an integer from 1 to 100, got {count!r}")
    return tuple(_dev_key(i) for i in range(count))


class Chain(abc.ABC):
    """A running EVM with funded dev accounts. Use ``async with`` or call :meth:`aclose`."""

    #: "inprocess", "anvil" or "rpc"
    backend: str = ""

    def __init__(
        self, w3: AsyncWeb3, *, rpc_url: str | None, chain_id: int, keys: Sequence[PrivateKey]
    ):
        self._w3 = w3
        self._rpc_url = rpc_url
        self._chain_id = chain_id
        self._keys = tuple(keys)
        self._wallets: dict[str, WalletClient] = {}
        self._closed = False

    # --- identity ---------------------------------------------------------------------

    @property
    def w3(self) -> AsyncWeb3:
        """The ``AsyncWeb3`` connected to this chain."""
        return self._w3

    @property
    def rpc_url(self) -> str | None:
        """JSON-RPC URL other processes can use; ``None`` for the in-process EVM."""
        return self._rpc_url

    @property
    def chain_id(self) -> int:
        return self._chain_id

    @property
    def accounts(self) -> tuple[PrivateKey, ...]:
        """The funded dev keys (index 0 is the usual deployer)."""
        return self._keys

    @property
    def addresses(self) -> tuple[str, ...]:
        return tuple(k.address for k in self._keys)

    def wallet(self, index: int = 0) -> WalletClient:
        """The :class:`WalletClient` of dev account ``index``, bound to this chain.

        One wallet per account (so one nonce sequence per account); :meth:`revert` resets
        their nonce caches.
        """
        if not isinstance(index, int) or not 0 <= index < len(self._keys):
            raise SettlementValueError(
                f"dev account index must be 0..{len(self._keys) - 1}, got {index!r}"
            )
        return self.wallet_for(self._keys[index])

    def wallet_for(self, key: PrivateKey | str | bytes) -> WalletClient:
        """The :class:`WalletClient` of any key on this chain (fund it first); one per address,
        tracked like :meth:`wallet`."""
        private_key = key if isinstance(key, PrivateKey) else PrivateKey(key)
        wallet = self._wallets.get(private_key.address)
        if wallet is None:
            wallet = WalletClient(private_key, rpc_url=self._rpc_url, w3=self._w3)
            self._wallets[private_key.address] = wallet
        return wallet

    def __repr__(self) -> str:
        where = self._rpc_url or "in-process"
        return f"{type(self).__name__}(chain_id={self._chain_id}, {where})"

    # --- time and blocks --------------------------------------------------------------

    async def block_number(self) -> int:
        return int(await self._w3.eth.block_number)

    async def timestamp(self) -> int:
        """Timestamp of the latest block."""
        block = await self._w3.eth.get_block("latest")
        return int(block["timestamp"])

    async def time_travel(self, seconds: int) -> int:
        """Move the chain clock forward by ``seconds`` and mine a block; returns its timestamp.

        Afterwards the latest block's timestamp is at least the previous one plus ``seconds``,
        so a challenge that expires within ``seconds`` has expired for the next transaction.
        """
        if not isinstance(seconds, int) or isinstance(seconds, bool) or seconds < 0:
            raise SettlementValueError(f"seconds must be a non-negative integer, got {seconds!r}")
        before = await self.timestamp()
        await self._advance(seconds)
        after = await self.timestamp()
        if after < before + seconds:  # pragma: no cover - defensive: a node that ignores us
            raise ChainUnavailableError(
                f"the chain did not move its clock: {after} < {before} + {seconds}"
            )
        return after

    async def mine(self, blocks: int = 1) -> int:
        """Mine ``blocks`` empty blocks; returns the new block number."""
        if not isinstance(blocks, int) or isinstance(blocks, bool) or blocks < 1:
            raise SettlementValueError(f"blocks must be a positive integer, got {blocks!r}")
        await self._mine(blocks)
        return await self.block_number()

    async def snapshot(self) -> Any:
        """Remember the current chain state; pass the returned id to :meth:`revert` (once)."""
        return await self._snapshot()

    async def revert(self, snapshot_id: Any) -> None:
        """Return to a snapshot. Nonce caches of this chain's wallets are reset."""
        await self._revert(snapshot_id)
        for wallet in self._wallets.values():
            wallet.reset_nonce()

    # --- lifecycle --------------------------------------------------------------------

    async def aclose(self) -> None:
        """Release the connection (and stop the node process, if we started one)."""
        if self._closed:
            return
        self._closed = True
        await self._close()

    async def __aenter__(self) -> Chain:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # --- backend hooks ----------------------------------------------------------------

    @abc.abstractmethod
    async def _advance(self, seconds: int) -> None: ...

    @abc.abstractmethod
    async def _mine(self, blocks: int) -> None: ...

    @abc.abstractmethod
    async def _snapshot(self) -> Any: ...

    @abc.abstractmethod
    async def _revert(self, snapshot_id: Any) -> None: ...

    @abc.abstractmethod
    async def _close(self) -> None: ...


async def chain_instance_id(chain: Chain, backend: str) -> str:
    """A chain the sandbox starts itself is new at every start, even when its genesis is
    byte-identical to the last one (the in-process chain is deterministic): a fresh random
    id. A chain given by URL outlives the sandbox: its genesis block hash names it."""
    import secrets

    if backend in ("inprocess", "anvil"):
        return "sb-" + secrets.token_hex(6)
    block = await chain.w3.eth.get_block(0)
    return "g-" + bytes(block["hash"]).hex()[:12]
