"""The relay node over a real WebSocket: envelope, auth, ledger rules, error texts, restarts.

Chain-less relays (one per test, its own SQLite file); channel events are fed through the same
service entry points the chain watcher calls (test_relay_chain.py drives them from a chain).
Every frame the client receives is parsed with the protocol core and its broker signature
checked over the exact bytes (relay_helpers.RelayTestClient).
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from relay_helpers import (
    ADJUDICATOR,
    ASSET,
    CHAIN_ID,
    CUSTODY,
    TOKEN,
    RelayTestClient,
    relay_config,
)

from settlement_widgets.channel.v0_5.core import messages as M
from settlement_widgets.channel.v0_5.core.auth import AuthPolicy
from settlement_widgets.channel.v0_5.core.rpc import make_request, now_ms
from settlement_widgets.channel.v0_5.core.types import Allocation, Channel, State, StateIntent
from settlement_widgets.channel.v0_5.node import RelayNode
from settlement_widgets.keys import PrivateKey

ALICE = PrivateKey("0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80")
BOB = PrivateKey("0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d")
CAROL = PrivateKey("0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a")
SEED = 10**15  # what the faucet account (Alice here) starts with: 1,000,000,000 ytest.usd


@pytest_asyncio.fixture
async def node(tmp_path: Path) -> AsyncIterator[RelayNode]:
    relay = RelayNode(relay_config(tmp_path / "relay.sqlite", faucet_account=ALICE.address))
    await relay.start()
    try:
        yield relay
    finally:
        await relay.aclose()


def client(node: RelayNode) -> RelayTestClient:
    return RelayTestClient(node.url, node.broker_address)


def ledger_state(node: RelayNode) -> tuple[dict[tuple[str, str], int], int, int]:
    assert node.ledger is not None
    return dict(node.ledger.balances), node.ledger.next_tx_id, len(node.ledger.channels)


async def test_connect_pushes_assets_and_answers_public_methods(node: RelayNode) -> None:
    async with client(node) as c:
        assets = await c.notification("assets")
        assert assets.result == {
            "assets": [{"token": TOKEN, "chain_id": CHAIN_ID, "symbol": ASSET, "decimals": 6}]
        }
        assert c.frames[0] is assets  # before anything else
        pong = await c.call(M.ping_message(request_id=c.next_id()))
        assert (pong.method, pong.result) == ("pong", None)
        config = await c.call(M.get_config_message(request_id=c.next_id()))
        assert config.method == "get_config"
        assert config.result == {  # exactly these keys: SDK 0.5.3 parses it .strict()
            "broker_address": node.broker_address,
            "networks": [
                {
                    "chain_id": CHAIN_ID,
                    "name": "local",
                    "custody_address": CUSTODY,
                    "adjudicator_address": ADJUDICATOR,
                }
            ],
        }
        assert (await c.call(M.get_assets_message(CHAIN_ID, request_id=c.next_id()))).result[
            "assets"
        ] == assets.result["assets"]
        assert (await c.call(M.get_assets_message(5, request_id=c.next_id()))).result == {
            "assets": []
        }


async def test_auth_pushes_channels_and_balances_and_jwt_relogs_in(node: RelayNode) -> None:
    session = PrivateKey.generate()
    async with client(node) as c:
        reply = await c.authenticate(ALICE, session)
        assert set(reply.result) == {"address", "jwt_token", "session_key", "success"}
        assert reply.result["address"] == ALICE.address
        assert reply.result["session_key"] == session.address
        assert reply.result["success"] is True
        after = c.frames[c.frames.index(reply) + 1 :]
        assert [f.method for f in after[:2]] == ["channels", "bu"]
        assert after[0].result == {"channels": []}
        assert after[1].result == {"balance_updates": [{"asset": ASSET, "amount": "1000000000"}]}
        jwt = reply.result["jwt_token"]
    async with client(node) as c:
        again = await c.call(M.auth_verify_jwt_message(jwt, request_id=c.next_id()))
        assert again.method == "auth_verify"
        assert again.result == {
            "address": ALICE.address,
            "session_key": session.address,
            "success": True,
        }
        balances = await c.call(M.get_ledger_balances_message(session, request_id=c.next_id()))
        assert balances.result == {"ledger_balances": [{"asset": ASSET, "amount": "1000000000"}]}
        forged = jwt[:-4] + ("AAAA" if not jwt.endswith("AAAA") else "BBBB")
        bad = await c.call(M.auth_verify_jwt_message(forged, request_id=c.next_id()))
        assert bad.error == "invalid JWT token"


async def test_auth_refusals_use_the_nodes_messages(node: RelayNode) -> None:
    async with client(node) as c:
        policy = AuthPolicy(
            ALICE.address, CAROL.address, "app", ((ASSET, "1"),), int(time.time()) + 600, "x"
        )
        challenge = await c.call(policy.request(request_id=c.next_id()))
        token = challenge.result["challenge_message"]
        # signed by the wrong wallet
        wrong = AuthPolicy(
            BOB.address, CAROL.address, "app", ((ASSET, "1"),), policy.expires_at, "x"
        )
        frame = M.auth_verify_message(token, wrong.sign(token, BOB), request_id=c.next_id())
        assert (await c.call(frame)).error == "invalid challenge or signature"
        unknown = M.auth_verify_message(
            "550e8400-e29b-41d4-a716-446655440000",
            policy.sign(token, ALICE),
            request_id=c.next_id(),
        )
        assert (await c.call(unknown)).error == "invalid challenge"
        # an asset the node does not know
        usdc = AuthPolicy(
            ALICE.address, CAROL.address, "app", (("usdc", "1"),), policy.expires_at, "x"
        )
        challenge = await c.call(usdc.request(request_id=c.next_id()))
        token = challenge.result["challenge_message"]
        reply = await c.call(usdc.verify_request(token, ALICE, request_id=c.next_id()))
        assert reply.error == "unsupported token: asset 'usdc' is not supported"
        # still unauthenticated: private calls are refused
        balances = await c.call(M.get_ledger_balances_message(ALICE, request_id=c.next_id()))
        assert balances.error == "authentication required"
    # a session key registered for Alice cannot be claimed by Bob
    async with client(node) as c:
        await c.authenticate(ALICE, CAROL)
    async with client(node) as c:
        policy = AuthPolicy(BOB.address, CAROL.address, "app", (), int(time.time()) + 600, "x")
        challenge = await c.call(policy.request(request_id=c.next_id()))
        reply = await c.call(
            policy.verify_request(
                challenge.result["challenge_message"], BOB, request_id=c.next_id()
            )
        )
        assert reply.error == "signer is already in use for another wallet"


def _transfer(key: PrivateKey, to: str, amount: str, **kw: Any) -> Any:
    return M.transfer_message(key, [(ASSET, amount)], destination=to, **kw)


async def test_bad_frames_get_the_reference_errors_and_change_nothing(node: RelayNode) -> None:
    session = PrivateKey.generate()
    async with client(node) as alice, client(node) as bob, client(node) as stranger:
        await alice.authenticate(ALICE, session, allowances=((ASSET, "100"),))
        await bob.authenticate(BOB, BOB, application="clearnode", allowances=())
        await stranger.notification("assets")
        # a valid transfer (Bob now holds 1), later sent again byte for byte (replay)
        first = _transfer(session, BOB.address, "1", request_id=alice.next_id())
        assert (await alice.call(first)).method == "transfer"
        before = ledger_state(node)
        balances_before = await alice.call(
            M.get_ledger_balances_message(session, request_id=alice.next_id())
        )
        results: dict[str, tuple[str | None, int, int]] = {}
        for name, text in [
            ("not JSON", "this is not JSON"),
            ("wrong arity", '{"req":[1,"ping",{}],"sig":[]}'),
        ]:
            count = len(alice.frames)
            await alice.send_raw(text)
            reply = await alice.wait_for(lambda f: f.is_error, after=count)
            results[name] = (reply.error, reply.request_id, 0)
        stale = now_ms() - 61_000
        for name, req, conn in [
            ("bad signature", _transfer(PrivateKey.generate(), CAROL.address, "1"), alice),
            ("stale timestamp", _transfer(session, CAROL.address, "1", timestamp=stale), alice),
            ("replay", first, alice),
            ("unknown method", make_request("get_unicorns", {}, key=session), alice),
            ("unauthenticated", _transfer(session, CAROL.address, "1"), stranger),
            ("overdraft", _transfer(BOB, CAROL.address, "2"), bob),
            ("self-transfer", _transfer(session, ALICE.address, "1"), alice),
            ("zero amount", _transfer(session, CAROL.address, "0"), alice),
            ("unsigned", make_request("transfer", dict(first.params)), alice),
            ("allowance exceeded", _transfer(session, CAROL.address, "99.5"), alice),
        ]:
            reply = await conn.call(req)
            results[name] = (reply.error, reply.request_id, req.request_id)
        matched = {name: rid == expected for name, (_, rid, expected) in results.items()}
        assert matched == dict.fromkeys(results, True)
        assert {name: text for name, (text, _, _) in results.items()} == {
            "not JSON": "invalid message format",
            "wrong arity": "invalid message format",
            "bad signature": "invalid signature",
            "stale timestamp": "invalid message timestamp",
            "replay": "operation denied: the request has already been processed",
            "unknown method": "unknown method: get_unicorns",
            "unauthenticated": "authentication required",
            "overdraft": f"insufficient funds: {BOB.address} for asset {ASSET}",
            "self-transfer": "cannot transfer to self",
            "zero amount": "invalid allocation: 0 for asset ytest.usd",
            "unsigned": "missing participant signature",
            "allowance exceeded": "session key spending validation failed: insufficient session "
            "key allowance: 99.5 required, 99 available",
        }
        assert ledger_state(node) == before
        balances_after = await alice.call(
            M.get_ledger_balances_message(session, request_id=alice.next_id())
        )
        assert balances_after.result == balances_before.result
        bob_balances = await bob.call(M.get_ledger_balances_message(BOB, request_id=bob.next_id()))
        assert bob_balances.result == {"ledger_balances": [{"asset": ASSET, "amount": "1"}]}


async def test_overdraft_of_the_balance_itself(node: RelayNode) -> None:
    assert node.ledger is not None
    async with client(node) as bob:
        await bob.authenticate(BOB, BOB, application="clearnode", allowances=())
        before = ledger_state(node)
        reply = await bob.call(_transfer(BOB, CAROL.address, "0.000001"))
        assert reply.error == f"insufficient funds: {BOB.address} for asset {ASSET}"
        assert ledger_state(node) == before


async def test_transfer_notifies_both_parties_and_is_listed(node: RelayNode) -> None:
    async with client(node) as alice, client(node) as bob:
        await alice.authenticate(ALICE, ALICE, application="clearnode", allowances=())
        await bob.authenticate(BOB, PrivateKey.generate())
        req = M.transfer_message(
            ALICE,
            [(ASSET, "2.5"), (ASSET, "0.25")],
            destination=BOB.address,
            request_id=alice.next_id(),
        )
        reply = await alice.call(req)
        txs = reply.result["transactions"]
        assert [t["amount"] for t in txs] == ["2.5", "0.25"]
        assert all(t["tx_type"] == "transfer" for t in txs)
        assert {t["from_account"] for t in txs} == {ALICE.address}
        assert {t["to_account"] for t in txs} == {BOB.address}
        assert all(t["from_account_tag"] and t["to_account_tag"] for t in txs)
        bob_bu = await bob.notification(
            "bu", lambda f: f.result["balance_updates"] == [{"asset": ASSET, "amount": "2.75"}]
        )
        bob_tr = await bob.notification("tr")
        assert bob_tr.result == {"transactions": txs}
        alice_tr = await alice.notification("tr")
        assert alice_tr.result == {"transactions": txs}
        assert c_index(alice, reply) < c_index(alice, alice_tr)  # reply before notifications
        assert bob_bu.request_id == 0
        listed = await bob.call(
            make_request(
                "get_ledger_transactions",
                {"account_id": BOB.address, "tx_type": "transfer", "sort": "asc"},
                request_id=bob.next_id(),
            )
        )
        assert listed.result == {"ledger_transactions": txs}


def c_index(c: RelayTestClient, frame: Any) -> int:
    return c.frames.index(frame)


def _created(node: RelayNode, wallet: str, amount: int, nonce: int) -> tuple[str, list[Any]]:
    service = node.service
    assert service is not None
    channel = Channel((wallet, node.broker_address), ADJUDICATOR, 3600, nonce)
    state = State(
        StateIntent.INITIALIZE,
        0,
        b"",
        (Allocation(wallet, TOKEN, amount), Allocation(node.broker_address, TOKEN, 0)),
    )
    from settlement_widgets.channel.v0_5.core.ids import channel_id

    cid = channel_id(channel, CHAIN_ID)
    return cid, service.on_created(cid, wallet, channel, state, CHAIN_ID)


async def _commit(node: RelayNode, notes: list[Any]) -> None:
    assert node.committer is not None
    seq = node.committer.kick()
    node.add_notes(seq, notes)
    await node.committer.wait(seq)


async def test_outgoing_transfers_refused_while_a_channel_is_funded_or_challenged(
    node: RelayNode,
) -> None:
    async with client(node) as alice:
        await alice.authenticate(ALICE, ALICE, application="clearnode", allowances=())
        cid, notes = _created(node, ALICE.address, 7_000_000, 1)  # created with a deposit
        await _commit(node, notes)
        update = await alice.notification("cu")
        assert update.result["channel_id"] == cid
        assert (update.result["status"], update.result["amount"], update.result["wallet"]) == (
            "open",
            "7000000",
            "",
        )
        before = ledger_state(node)
        reply = await alice.call(_transfer(ALICE, BOB.address, "1"))
        assert reply.error == (
            f"operation denied: non-zero allocation in 1 channel(s) detected owned by wallet "
            f"{ALICE.address}"
        )
        assert ledger_state(node) == before
        service = node.service
        assert service is not None
        final = State(
            StateIntent.FINALIZE,
            1,
            b"",
            (
                Allocation(ALICE.address, TOKEN, 7_000_000),
                Allocation(node.broker_address, TOKEN, 0),
            ),
        )
        await _commit(node, service.on_closed(cid, final))
        assert (await alice.call(_transfer(ALICE, BOB.address, "1"))).method == "transfer"
        cid2, notes = _created(node, ALICE.address, 0, 2)
        disputed = State(
            StateIntent.INITIALIZE,
            0,
            b"",
            (Allocation(ALICE.address, TOKEN, 0), Allocation(node.broker_address, TOKEN, 0)),
        )
        await _commit(node, notes + service.on_challenged(cid2, disputed))
        await alice.notification("cu", lambda f: f.result["status"] == "challenged")
        before = ledger_state(node)
        reply = await alice.call(_transfer(ALICE, BOB.address, "1"))
        assert reply.error == (
            f"participant {ALICE.address} has challenged channels, cannot execute operation"
        )
        assert ledger_state(node) == before


async def test_get_channels_filters_sorts_and_pages(node: RelayNode) -> None:
    ids = []
    for nonce, wallet in enumerate([ALICE.address, BOB.address, ALICE.address], start=1):
        if nonce == 3:
            service = node.service
            assert service is not None
            final = State(
                StateIntent.FINALIZE,
                1,
                b"",
                (Allocation(ALICE.address, TOKEN, 0), Allocation(node.broker_address, TOKEN, 0)),
            )
            await _commit(node, service.on_closed(ids[0], final))
        cid, notes = _created(node, wallet, 0, nonce)
        ids.append(cid)
        await _commit(node, notes)
    async with client(node) as c:

        async def channels(**params: Any) -> list[str]:
            reply = await c.call(make_request("get_channels", params, request_id=c.next_id()))
            assert reply.method == "get_channels", reply.result
            for ch in reply.result["channels"]:
                assert set(ch) == {
                    "channel_id", "participant", "status", "token", "wallet", "amount",
                    "chain_id", "adjudicator", "challenge", "nonce", "version", "created_at",
                    "updated_at",
                }  # fmt: skip
            return [ch["channel_id"] for ch in reply.result["channels"]]

        assert sorted(await channels()) == sorted(ids)
        assert set(await channels(participant=ALICE.address)) == {ids[0], ids[2]}
        assert await channels(participant=ALICE.address, status="closed") == [ids[0]]
        assert await channels(status="open", sort="asc") == [ids[1], ids[2]]
        assert await channels(sort="asc", limit=1, offset=1) == [ids[1]]
        bad = await c.call(make_request("get_channels", {"status": "nope"}, request_id=c.next_id()))
        assert bad.error is not None and bad.error.startswith("failed to parse parameters")
        # an offset past what the database holds is a parse error, not an internal one
        # (the fuzzer's 2**64 on get_ledger_transactions reached SQLite before)
        for method in ("get_channels", "get_ledger_transactions"):
            for offset in (2**63, 2**64):
                bad = await c.call(make_request(method, {"offset": offset}, request_id=c.next_id()))
                assert bad.error is not None, method
                assert bad.error.startswith("failed to parse parameters: offset"), bad.error


async def test_restart_keeps_balances_keys_jwt_and_replay_guard(tmp_path: Path) -> None:
    db = tmp_path / "relay.sqlite"
    session = PrivateKey.generate()
    async with RelayNode(relay_config(db, faucet_account=ALICE.address)) as first:
        broker = first.broker_address
        async with client(first) as alice:
            jwt = (await alice.authenticate(ALICE, session)).result["jwt_token"]
            sent = _transfer(session, BOB.address, "3", request_id=alice.next_id())
            assert (await alice.call(sent)).method == "transfer"
        balances = ledger_state(first)[0]
    async with RelayNode(relay_config(db, faucet_account=ALICE.address)) as second:
        assert second.broker_address == broker  # the generated broker key was kept
        assert ledger_state(second)[0] == balances  # the faucet seed was not paid twice
        async with client(second) as alice:
            relog = await alice.call(M.auth_verify_jwt_message(jwt, request_id=alice.next_id()))
            assert relog.result["success"] is True
            assert (await alice.call(sent)).error == (
                "operation denied: the request has already been processed"
            )
            again = _transfer(session, BOB.address, "3", request_id=alice.next_id())
            assert (await alice.call(again)).method == "transfer"  # the session key survived
        assert second.ledger is not None
        assert second.ledger.balance(BOB.address, ASSET) == 6_000_000


@pytest.mark.parametrize("durability", ["normal", "full"])
async def test_pipelined_transfers_are_group_committed(tmp_path: Path, durability: str) -> None:
    db = tmp_path / "relay.sqlite"
    count = 200
    config = relay_config(db, faucet_account=ALICE.address, durability=durability)
    async with RelayNode(config) as node:
        async with client(node) as alice:
            await alice.authenticate(ALICE, ALICE, application="clearnode", allowances=())
            reqs = [
                _transfer(ALICE, BOB.address, "0.000001", request_id=alice.next_id())
                for _ in range(count)
            ]
            await asyncio.gather(*(alice.send_raw(r.to_frame()) for r in reqs))
            replies = [await alice.reply(r.request_id) for r in reqs]
            assert all(r.method == "transfer" for r in replies)
            ids = [r.result["transactions"][0]["id"] for r in replies]
            assert ids == sorted(ids) and len(set(ids)) == count
            # replies came in request order
            order = [
                f.request_id for f in alice.frames if f.request_id in {r.request_id for r in reqs}
            ]
            assert order == [r.request_id for r in reqs]
        assert node.committer is not None
        assert node.committer.largest_batch > 1  # transfers shared COMMITs
        assert node.ledger is not None
        memory = node.ledger.balance(BOB.address, ASSET)
    with sqlite3.connect(db) as conn:  # what is on disk is what was acknowledged
        (stored,) = conn.execute(
            "SELECT amount FROM balances WHERE account = ? AND asset = ?", (BOB.address, ASSET)
        ).fetchone()
        (rows,) = conn.execute(
            "SELECT COUNT(*) FROM transactions WHERE tx_type = 'transfer'"
        ).fetchone()
    assert int(stored) == memory == count
    assert rows == count


async def test_session_keys_are_listed_with_usage(node: RelayNode) -> None:
    session = PrivateKey.generate()
    async with client(node) as alice:
        await alice.authenticate(ALICE, session, allowances=((ASSET, "10"),))
        await alice.call(_transfer(session, BOB.address, "1.5"))
        reply = await alice.call(M.get_session_keys_message(session, request_id=alice.next_id()))
        (key,) = reply.result["session_keys"]
        assert key["session_key"] == session.address
        assert key["allowances"] == [{"asset": ASSET, "allowance": "10", "used": "1.5"}]
        tag = await alice.call(M.get_user_tag_message(session, request_id=alice.next_id()))
        assert set(tag.result) == {"tag"} and len(tag.result["tag"]) == 6
        by_tag = M.transfer_message(session, [(ASSET, "1")], destination_user_tag=tag.result["tag"])
        assert (await alice.call(by_tag)).error == "cannot transfer to self"


def test_frames_are_json_objects() -> None:
    # a guard on the helper's expectations: what we send is what the SDK sends
    req = _transfer(ALICE, BOB.address, "1", request_id=5, timestamp=1_700_000_000_000)
    frame = json.loads(req.to_frame())
    assert list(frame) == ["req", "sig"]
