"""The Nitronode ledger's index of home deposits, which the backing rule reads on every
spend: it must hold exactly the deposit states of the chain, in order, through every way a
state is stored (next version, the same version re-signed, an older version replaced) and
after the ledger is reopened from its file."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from settlement_widgets.channel.v1.node.ledger import NitronodeLedger, write_batch

WALLET = "0x" + "ab" * 20
DEPOSIT, TRANSFER = 10, 30


def _state(version: int, kind: int, *, epoch: int = 0, signed: bool = False) -> dict[str, Any]:
    state: dict[str, Any] = {
        "user_wallet": WALLET,
        "asset": "usdc",
        "epoch": str(epoch),
        "version": str(version),
        "transition": {"type": kind, "amount": "1"},
    }
    if signed:
        state["node_sig"] = "0x01"
    return state


def _expected(ledger: NitronodeLedger) -> list[tuple[str, str, bool]]:
    return [
        (s["epoch"], s["version"], bool(s.get("node_sig")))
        for s in ledger.state_chain(WALLET, "usdc")
        if s["transition"]["type"] == DEPOSIT
    ]


def _index(ledger: NitronodeLedger) -> list[tuple[str, str, bool]]:
    return [
        (s["epoch"], s["version"], bool(s.get("node_sig")))
        for s in ledger.deposit_chain(WALLET.upper().replace("0X", "0x"), "usdc")
    ]


def test_the_deposit_index_follows_every_way_a_state_is_stored(tmp_path: Path) -> None:
    path = tmp_path / "node.sqlite"
    ledger = NitronodeLedger(path)
    assert _index(ledger) == []
    ledger.put_state(_state(1, DEPOSIT))
    ledger.put_state(_state(1, DEPOSIT, signed=True))  # the same version, now signed
    ledger.put_state(_state(2, TRANSFER))
    ledger.put_state(_state(3, DEPOSIT))
    ledger.put_state(_state(3, TRANSFER, signed=True))  # re-stored as another transition
    ledger.put_state(_state(4, DEPOSIT, signed=True))
    ledger.put_state(_state(2, DEPOSIT, signed=True))  # an older version replaced
    ledger.put_state(_state(1, DEPOSIT, epoch=1))  # a new epoch (a new channel)
    assert (
        _index(ledger)
        == _expected(ledger)
        == [
            ("0", "1", True),
            ("0", "2", True),
            ("0", "4", True),
            ("1", "1", False),
        ]
    )
    assert all(
        a is b
        for a, b in zip(
            ledger.deposit_chain(WALLET, "usdc"),
            [s for s in ledger.state_chain(WALLET, "usdc") if s["transition"]["type"] == 10],
            strict=True,
        )
    )  # the same objects: a signature added in place shows in both

    batch = ledger.take_batch()
    assert batch is not None
    conn = sqlite3.connect(path, isolation_level=None)
    write_batch(conn, batch)
    conn.close()
    reopened = NitronodeLedger(path)
    assert _index(reopened) == _expected(reopened) == _index(ledger)
    assert reopened.deposit_chain(WALLET, "other") == []
