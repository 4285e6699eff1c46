"""Taking a chain's state out of a running backend, and starting a backend from it.

- in-process (py-evm): the whole key-value store of the chain
  (:meth:`~..chain.InProcessChain.database`, ``marshal``-encoded), resumed by
  ``InProcessChain.create(database=...)``: blocks, receipts and logs included.
- anvil: ``anvil_dumpState`` (blocks and transactions included), started again with
  ``--load-state``.

Either way the resumed chain is checked against the head recorded when the snapshot was
taken (block number and state root; the block hash too on anvil, which keeps it): a state
that does not reproduce its head is not used.

The in-process chain is moved to the present (:mod:`..pyevm_database`: a genesis of its own,
timestamps of now). anvil's is resumed as recorded: its blocks keep the build's timestamps
and hashes, because its state holds them (the EIP-2935 history contract stores every block
hash, and the header state roots commit to it), so moving them would leave roots that no
longer match. Consequences: the latest block's time is the build's until the next block is
mined (which carries the current time), and every anvil resumed from one snapshot shares a
genesis hash (so ``LocalSandbox`` deploys instead when a relay ledger, which tells chains
apart by that hash, is left in its ``data_dir``). Two fresh anvil deployments differ in that
history contract's storage and so in state roots; our contracts' code, storage, balances
and nonces are the same.
"""

from __future__ import annotations

import gzip
import marshal
from typing import TYPE_CHECKING, Any

from ...errors import SettlementValueError
from ..chain import AnvilChain, InProcessChain

if TYPE_CHECKING:
    from ..chain import Chain
    from .store import ChainSnapshot

__all__ = ["capture_state", "resume_chain"]


async def capture_state(chain: Chain) -> tuple[bytes, dict[str, Any]]:
    """``(state file bytes, head)`` of a running in-process or anvil chain."""
    if isinstance(chain, InProcessChain):
        header = chain.tester.backend.chain.get_canonical_head()
        head = {
            "number": int(header.block_number),
            "hash": "0x" + bytes(header.hash).hex(),
            "stateRoot": "0x" + bytes(header.state_root).hex(),
        }
        return marshal.dumps(chain.database()), head
    if isinstance(chain, AnvilChain):
        dump = await chain.request("anvil_dumpState")
        state = gzip.decompress(bytes.fromhex(str(dump).removeprefix("0x")))
        return state, await _rpc_head(chain)
    raise SettlementValueError(  # pragma: no cover - internal
        f"cannot snapshot a {type(chain).__name__}: only in-process and anvil chains"
    )


async def resume_chain(backend: str, snapshot: ChainSnapshot, state: bytes) -> Chain | None:
    """A ``backend`` chain started from ``state``, or None when it does not reproduce the
    recorded head (then nothing is left running)."""
    recorded = snapshot.head
    if backend == "inprocess":
        database = marshal.loads(state)
        if not isinstance(database, dict) or not all(
            type(k) is bytes and type(v) is bytes for k, v in database.items()
        ):
            return None
        inprocess = InProcessChain.create(database=database)
        header = inprocess.tester.backend.chain.get_canonical_head()
        ok = int(header.block_number) == recorded["number"] and (
            "0x" + bytes(header.state_root).hex() == recorded["stateRoot"]
        )
        return inprocess if ok else None
    anvil = await AnvilChain.start(extra_args=("--load-state", str(snapshot.state_path)))
    try:
        head = await _rpc_head(anvil)
    except BaseException:
        await anvil.aclose()
        raise
    if head != recorded:
        await anvil.aclose()
        return None
    return anvil


async def _rpc_head(chain: Chain) -> dict[str, Any]:
    block = await chain.w3.eth.get_block("latest")
    return {
        "number": int(block["number"]),
        "hash": "0x" + bytes(block["hash"]).hex(),
        "stateRoot": "0x" + bytes(block["stateRoot"]).hex(),
    }
