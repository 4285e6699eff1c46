"""With ``commit_hold``, the Nitronode groups a pipelining client's states into few COMMITs
and still answers none of them before its COMMIT (``node_base.commit_hold``); a client that
waits for each reply gets one COMMIT per state, as before; without it, nothing is held.

An ordered log records every ``write_batch`` the node's committer runs (after the real call
returned) and every reply frame the node hands to a connection; each reply must come after
the COMMIT of the batch holding its state, and the ledger reopened from its file holds
every state that was answered.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from nitronode_helpers import (
    ALICE,
    ASSET,
    BOB,
    V1Client,
    advance,
    creation_state,
    definition,
    deposit,
    node_config,
    send,
)

from settlement_widgets.channel.v1.core.wire import MessageType
from settlement_widgets.channel.v1.node import NitronodeNode
from settlement_widgets.channel.v1.node import server as server_module
from settlement_widgets.channel.v1.node.ledger import NitronodeLedger

RC = "channels.v1.request_creation"
SUBMIT = "channels.v1.submit_state"


@pytest.fixture
async def node(tmp_path: Path) -> AsyncIterator[NitronodeNode]:
    async with NitronodeNode(node_config(tmp_path / "node.sqlite", commit_hold=True)) as node:
        yield node


def _log_commits_and_replies(node: NitronodeNode, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """``("commit", [Alice's state versions])`` after each COMMIT, ``("reply", request id)``
    as each submit_state reply is handed to the connection."""
    log: list[Any] = []
    committer = node.committer
    assert committer is not None
    write = committer._write

    def logged_write(conn: Any, batch: Any) -> None:
        write(conn, batch)
        alice = ALICE.address.lower()
        versions = [int(key[3]) for key in batch.rows.get("states", {}) if key[0] == alice]
        log.append(("commit", versions))

    monkeypatch.setattr(committer, "_write", logged_write)
    request_ids: dict[bytes, int] = {}
    real_encode = server_module.encode_frame

    def encode(frame: Any) -> str:
        text = real_encode(frame)
        if frame.method == SUBMIT and frame.type is MessageType.RESPONSE:
            request_ids[text.encode()] = frame.request_id
        return text

    monkeypatch.setattr(server_module, "encode_frame", encode)
    for link in node._hold.links:
        push = link.push

        def logged_push(frame: bytes, push: Any = push) -> None:
            if frame in request_ids:
                log.append(("reply", request_ids[frame]))
            push(frame)

        link.push = logged_push
    return log


async def _channel(c: V1Client, amount: str = "1000") -> dict[str, Any]:
    d = definition()
    state = creation_state(ALICE, deposit(amount), d)
    state["node_sig"] = (await c.ok(RC, {"state": state, "channel_definition": d}))["signature"]
    return state


async def test_pipelined_states_share_commits_and_each_reply_follows_its_commit(
    node: NitronodeNode, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with V1Client(node.url) as c:
        state = await _channel(c)
        states = []
        for _ in range(40):
            state = advance(ALICE, state, send(BOB.address, "1"))
            states.append(state)
        log = _log_commits_and_replies(node, monkeypatch)
        assert node.committer is not None and node.ledger is not None
        before = node.committer.batches
        first_id = next(c._ids) + 1
        version_of = {first_id + i: int(s["version"]) for i, s in enumerate(states)}
        # the first two sent together (the second before the first is answered: the client
        # pipelines), then each once the node has taken the one before: one at a time, as
        # a pipelining client's states arrive when the node keeps up with them
        pending = [c.request(SUBMIT, {"state": states[0]})]
        for s in states[1:]:
            pending.append(c.request(SUBMIT, {"state": s}))
            while node.ledger.latest_state(ALICE.address, ASSET)["version"] != s["version"]:
                await asyncio.sleep(0)
        replies = await asyncio.gather(*pending)
        assert all(r.type is MessageType.RESPONSE for r in replies)
        batches = node.committer.batches - before
        assert batches < len(states) // 2, batches  # grouped, not one COMMIT per state
    # every reply after the COMMIT of its state
    committed: set[int] = set()
    for kind, what in log:
        if kind == "commit":
            committed.update(what)
        else:
            assert version_of[what] in committed, (what, log)
    assert committed == {int(s["version"]) for s in states}
    await node.aclose()
    ledger = NitronodeLedger(node.config.db_path)
    assert ledger.latest_state(ALICE.address, ASSET)["version"] == states[-1]["version"]


async def test_a_client_waiting_for_each_reply_is_not_held(node: NitronodeNode) -> None:
    async with V1Client(node.url) as c:
        state = await _channel(c)
        assert node.committer is not None
        before = node.committer.batches
        for _ in range(10):
            state = advance(ALICE, state, send(BOB.address, "1"))
            await c.ok(SUBMIT, {"state": state})
        assert node.committer.batches - before == 10
        assert not any(link.pipelined for link in node._hold.links)


async def test_without_commit_hold_the_node_commits_each_state_of_a_pipelining_client(
    tmp_path: Path,
) -> None:
    async with (
        NitronodeNode(node_config(tmp_path / "node.sqlite", commit_hold=False)) as node,
        V1Client(node.url) as c,
    ):
        state = await _channel(c)
        assert node.committer is not None and node.committer.hold is None
        assert node.ledger is not None
        before = node.committer.batches
        pending = []
        for _ in range(10):
            state = advance(ALICE, state, send(BOB.address, "1"))
            pending.append(c.request(SUBMIT, {"state": state}))
            while node.ledger.latest_state(ALICE.address, ASSET)["version"] != state["version"]:
                await asyncio.sleep(0)
        replies = await asyncio.gather(*pending)
        assert all(r.type is MessageType.RESPONSE for r in replies)
        assert node.committer.batches - before == 10
