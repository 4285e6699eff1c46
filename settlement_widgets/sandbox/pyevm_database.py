"""The in-process chain's whole py-evm database as bytes, so a chain can be saved and resumed.

eth-tester keeps a py-evm chain over an in-memory key-value store (``AtomicDB`` over a
``MemoryDB``): state tries, contract code, headers, transactions, receipts and the canonical
index. A copy of that store *is* the chain: a chain resumed from it has the same blocks,
transactions, receipts and logs, the same state root, the same base fee for the next block,
and so the same gas prices and transaction hashes for whatever is sent next.

What :func:`restore` changes is time: every header's timestamp moves by the time elapsed
since the chain's genesis was stamped, so the genesis carries the current time, as a freshly
created chain's does. Two reasons. A chain started now is a new chain: code that tells
chains apart by their genesis hash (the relay's ledger, the v4 deployment store) must not
take a chain resumed today for one resumed yesterday. And "now" read from the latest block
(a deadline of ``chain_time + 3600``) must not be the build's time. The headers are
re-linked (each ``parentHash``) and made canonical; block hashes change, as they differ
between any two deployments anyway, and nothing else does: py-evm's state holds no block
hashes or timestamps (the state root of a deployment is the same whenever it runs), the
bodies, receipts and transaction index are keyed by root or by number. Only py-evm's public
header store and the canonical-head call eth-tester itself uses to revert snapshots are
involved.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

__all__ = ["dump", "restore"]


def dump(chain: Any) -> dict[bytes, bytes]:
    """A copy of every key and value of ``chain``'s (an eth-tester py-evm chain) database.

    Everything mined is in it; eth-tester mines each transaction as it arrives, so nothing
    is pending between two calls of ours."""
    store = chain.chaindb.db.wrapped_db.kv_store
    return dict(store)


def restore(
    chain_class: type[Any], database: Mapping[bytes, bytes], *, now: int | None = None
) -> Any:
    """A ``chain_class`` chain over a copy of ``database``, its headers moved in time so its
    genesis is stamped ``now`` (default: the current time; never moved backwards)."""
    from eth.db.atomic import AtomicDB
    from eth.db.backends.memory import MemoryDB

    base_db = AtomicDB(MemoryDB(dict(database)))
    chain = chain_class(base_db)
    stamp = int(time.time()) if now is None else now
    shift = stamp - chain.get_canonical_block_header_by_number(0).timestamp
    if shift <= 0:
        return chain
    _move_headers(chain, shift)
    return chain_class(base_db)  # a new pending header, built on the moved head


def _move_headers(chain: Any, shift: int) -> None:
    """Replace the canonical headers by copies ``shift`` seconds later, re-linked."""
    from eth.constants import GENESIS_PARENT_HASH

    chaindb = chain.chaindb
    head = chain.get_canonical_head()
    moved = []
    parent_hash = GENESIS_PARENT_HASH
    for number in range(head.block_number + 1):
        header = chain.get_canonical_block_header_by_number(number)
        new = header.copy(timestamp=header.timestamp + shift, parent_hash=parent_hash)
        moved.append(new)
        parent_hash = new.hash
    chaindb.persist_header_chain(moved)  # the same score as the old chain: not canonical yet
    # as eth-tester's PyEVMBackend.revert_to_snapshot makes a block canonical
    chaindb._set_as_canonical_chain_head(chaindb.db, moved[-1], GENESIS_PARENT_HASH)
