"""A local EVM for the sandbox: in-process py-evm (default), anvil, or any JSON-RPC node.

Every backend is a :class:`Chain` with the same surface: an ``AsyncWeb3`` (``.w3``), the RPC
URL (``None`` in-process), the chain id, ten deterministic dev accounts, ``time_travel`` for
challenge periods, ``mine``, ``snapshot``/``revert`` and ``aclose``. Code that settles never
asks which backend it runs on. :func:`start_chain` starts one; the shared surface and the dev
accounts are in :mod:`.chain_base`, the backends in :mod:`.chain_inprocess` and
:mod:`.chain_rpc` (all re-exported here).

- ``inprocess``: eth-tester's py-evm backend (Prague) wrapped in an ``AsyncWeb3``. No process,
  no port. Its chain id is set to 31337 (eth-tester hard-codes 131277322940537 in both the VM
  and the ``eth_chainId`` endpoint; we override both), so channel ids and EIP-712 domains equal
  anvil's. Reverts are answered like a real node (JSON-RPC error with the revert data), so
  web3 raises the same exceptions on both backends and custom errors decode the same way.
- ``anvil``: the binary from the ``@foundry-rs/anvil`` npm package, on a free loopback port
  (``--port 0``; the port is read from its "Listening on" line), chain id 31337, hardfork Prague.
- any ``http(s)://`` or ``ws(s)://`` URL: an already running node (anvil, hardhat, ...).

The dev accounts are the well-known keys of the mnemonic ``test test ... junk`` (the same ten
on every backend; anvil funds them itself, the in-process genesis funds them with 10,000 ETH
each). They are public test keys: never send real funds to them.
"""

from __future__ import annotations

import os

from ..errors import SettlementValueError
from .chain_base import (
    BACKENDS,
    DEFAULT_CHAIN_ID,
    DEV_BALANCE_WEI,
    DEV_MNEMONIC,
    Chain,
    derive_dev_key,
    dev_keys,
)
from .chain_inprocess import InProcessChain
from .chain_rpc import AnvilChain, RpcChain, find_anvil

__all__ = [
    "BACKENDS",
    "DEFAULT_CHAIN_ID",
    "DEV_BALANCE_WEI",
    "DEV_MNEMONIC",
    "AnvilChain",
    "Chain",
    "InProcessChain",
    "RpcChain",
    "derive_dev_key",
    "dev_keys",
    "find_anvil",
    "start_chain",
]


async def start_chain(
    backend: str = "inprocess",
    *,
    chain_id: int = DEFAULT_CHAIN_ID,
    accounts: int = 10,
    anvil_path: str | os.PathLike[str] | None = None,
) -> Chain:
    """Start (or connect to) a chain.

    ``backend`` is ``"inprocess"`` (py-evm in this process, the default), ``"anvil"`` (a fresh
    anvil on a free loopback port) or the URL of a running JSON-RPC node. ``chain_id`` applies
    to the chains we start; a node given by URL reports its own.
    """
    if not isinstance(chain_id, int) or isinstance(chain_id, bool) or chain_id <= 0:
        raise SettlementValueError(f"chain_id must be a positive integer, got {chain_id!r}")
    if backend == "inprocess":
        return InProcessChain.create(chain_id=chain_id, accounts=accounts)
    if backend == "anvil":
        return await AnvilChain.start(chain_id=chain_id, accounts=accounts, anvil_path=anvil_path)
    if isinstance(backend, str) and "://" in backend:
        return await RpcChain.connect(backend, accounts=accounts)
    raise SettlementValueError(
        f"unknown chain backend {backend!r}: use one of {', '.join(BACKENDS)} or a JSON-RPC URL"
    )
