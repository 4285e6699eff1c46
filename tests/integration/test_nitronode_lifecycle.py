"""The local Nitronode end to end over its WebSocket: a home channel's life (create with a
deposit, transfer to a peer who acknowledges, withdraw, finalize), an app session between two
users (create, deposit, operate, close with releases), and durability across a restart."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from nitronode_helpers import (
    ACK,
    ALICE,
    ASSET,
    BOB,
    FINALIZE,
    NODE_KEY,
    TOKEN,
    V1Client,
    advance,
    app_update,
    creation_state,
    decimals,
    definition,
    deposit,
    node_config,
    quorum,
    send,
    withdraw,
)

from settlement_widgets.channel.v1.core.app_sessions import (
    create_app_session_hash,
    quorum_signature,
)
from settlement_widgets.channel.v1.core.state import eip191_digest, pack_state
from settlement_widgets.channel.v1.node import NitronodeNode
from settlement_widgets.keys import recover_address


@pytest.fixture
async def node(tmp_path: Path) -> AsyncIterator[NitronodeNode]:
    async with NitronodeNode(node_config(tmp_path / "node.sqlite")) as running:
        yield running


def node_signed(state: dict, signature: str) -> bool:
    raw = bytes.fromhex(signature[2:])
    digest = eip191_digest(pack_state(state, decimals))
    return raw[0] == 0 and recover_address(digest, raw[1:]) == NODE_KEY.address


_DEFS: dict[str, dict] = {}


def create(user, spec, previous=None, **kw) -> tuple[dict, dict]:
    chan_def = definition(**kw)
    state = creation_state(user, spec, chan_def, previous)
    _DEFS[state["home_channel_id"]] = chan_def
    return state, chan_def


async def test_home_channel_lifecycle(node: NitronodeNode, tmp_path: Path) -> None:
    async with V1Client(node.url) as c:
        assert await c.ok("node.v1.ping") == {}
        config = await c.ok("node.v1.get_config")
        assert config["node_address"] == NODE_KEY.address.lower()
        assert config["supported_sig_validators"] == "AAE="
        assets = await c.ok("node.v1.get_assets")
        assert assets["assets"][0]["tokens"][0]["address"] == TOKEN

        # Alice opens a channel with a 100 deposit
        s1, d1 = create(ALICE, deposit("100"))
        r = await c.ok("channels.v1.request_creation", {"state": s1, "channel_definition": d1})
        assert node_signed(s1, r["signature"])
        s1["node_sig"] = r["signature"]
        channel = (
            await c.ok("channels.v1.get_home_channel", {"wallet": ALICE.address, "asset": ASSET})
        )["channel"]
        assert channel["status"] == "open" and channel["channel_id"] == s1["home_channel_id"]

        # transfer 25.5 to Bob, who has no channel: his receive state is unsigned
        s2 = advance(ALICE, s1, send(BOB.address, "25.5"))
        r = await c.ok("channels.v1.submit_state", {"state": s2})
        assert node_signed(s2, r["signature"])
        s2["node_sig"] = r["signature"]
        bob = (
            await c.ok(
                "channels.v1.get_latest_state",
                {"wallet": BOB.address, "asset": ASSET, "only_signed": False},
            )
        )["state"]
        assert (
            bob["transition"]["type"] == 31
            and bob["transition"]["tx_id"] == s2["transition"]["tx_id"]
        )
        assert "node_sig" not in bob and bob["home_ledger"]["user_balance"] == "25.5"
        assert (
            await c.ok(
                "channels.v1.get_latest_state",
                {"wallet": BOB.address, "asset": ASSET, "only_signed": True},
            )
            == {}
        )

        # Bob acknowledges by opening his channel with an acknowledgement
        b2, bd = create(BOB, ACK, previous=bob)
        r = await c.ok("channels.v1.request_creation", {"state": b2, "channel_definition": bd})
        assert node_signed(b2, r["signature"])

        # Alice withdraws 10
        s3 = advance(ALICE, s2, withdraw("10"))
        r = await c.ok("channels.v1.submit_state", {"state": s3})
        s3["node_sig"] = r["signature"]
        balances = await c.ok("user.v1.get_balances", {"wallet": ALICE.address})
        assert balances == {"balances": [{"asset": ASSET, "amount": "64.5", "enforced": "64.5"}]}
        bob_bal = await c.ok("user.v1.get_balances", {"wallet": BOB.address})
        assert bob_bal["balances"][0]["amount"] == "25.5"

        # a second transfer to Bob, who now has a channel: his receive state is node-signed
        s4 = advance(ALICE, s3, send(BOB.address, "1.5"))
        s4["node_sig"] = (await c.ok("channels.v1.submit_state", {"state": s4}))["signature"]
        bob = (
            await c.ok(
                "channels.v1.get_latest_state",
                {"wallet": BOB.address, "asset": ASSET, "only_signed": False},
            )
        )["state"]
        assert bob["version"] == "3" and node_signed(bob, bob["node_sig"])

        txs = await c.ok("user.v1.get_transactions", {"wallet": ALICE.address})
        assert [t["tx_type"] for t in txs["transactions"]] == [30, 11, 30, 10]  # newest first
        assert txs["metadata"]["total_count"] == 4
        page = await c.ok(
            "user.v1.get_transactions",
            {
                "wallet": ALICE.address,
                "tx_type": 30,
                "pagination": {"offset": 1, "limit": 1, "sort": "asc"},
            },
        )
        assert [t["amount"] for t in page["transactions"]] == ["1.5"]
        assert page["metadata"] == {"page": 2, "per_page": 1, "total_count": 2, "page_count": 2}

        # finalize: the channel closes, the next epoch has no channel
        s5 = advance(ALICE, s4, FINALIZE)
        assert s5["transition"]["amount"] == "63"
        s5["node_sig"] = (await c.ok("channels.v1.submit_state", {"state": s5}))["signature"]
        channels = await c.ok("channels.v1.get_channels", {"wallet": ALICE.address})
        assert [ch["status"] for ch in channels["channels"]] == ["closed"]
        assert (
            await c.ok(
                "channels.v1.get_latest_state",
                {"wallet": ALICE.address, "asset": ASSET, "only_signed": True},
            )
        )["state"] == s5
        # after finalize a new channel may be opened (new epoch)
        n1, nd = create(ALICE, deposit("5"), previous=s5)
        assert n1["epoch"] == "1" and n1["version"] == "1"
        await c.ok("channels.v1.request_creation", {"state": n1, "channel_definition": nd})

    # everything acknowledged is reloaded by a restarted node
    await node.aclose()
    async with (
        NitronodeNode(node_config(tmp_path / "node.sqlite")) as again,
        V1Client(again.url) as c,
    ):
        latest = await c.ok(
            "channels.v1.get_latest_state",
            {"wallet": ALICE.address, "asset": ASSET, "only_signed": False},
        )
        assert latest["state"]["epoch"] == "1" and latest["state"]["node_sig"]
        txs = await c.ok("user.v1.get_transactions", {"wallet": BOB.address})
        assert txs["metadata"]["total_count"] == 2
        chans = await c.ok("channels.v1.get_channels", {"wallet": ALICE.address, "status": "open"})
        assert len(chans["channels"]) == 1


async def test_app_session_between_two_users(node: NitronodeNode) -> None:
    async with V1Client(node.url) as c:
        a1, ad = create(ALICE, deposit("50"))
        a1["node_sig"] = (
            await c.ok("channels.v1.request_creation", {"state": a1, "channel_definition": ad})
        )["signature"]
        b1, bd = create(BOB, deposit("10"))
        b1["node_sig"] = (
            await c.ok("channels.v1.request_creation", {"state": b1, "channel_definition": bd})
        )["signature"]

        app_def = {
            "application_id": "chess-v1",
            "participants": [
                {"wallet_address": ALICE.address, "signature_weight": 1},
                {"wallet_address": BOB.address, "signature_weight": 1},
            ],
            "quorum": 2,
            "nonce": "7",
        }
        digest = create_app_session_hash(app_def, "{}")
        sigs = ["0x" + quorum_signature(digest, k).hex() for k in (ALICE, BOB)]
        created = await c.ok(
            "app_sessions.v1.create_app_session",
            {"definition": app_def, "session_data": "{}", "quorum_sigs": sigs},
        )
        sid = created["app_session_id"]
        assert created["version"] == "1" and created["status"] == "open"
        assert (await c.ok("app_sessions.v1.get_app_definition", {"app_session_id": sid}))[
            "definition"
        ] == app_def

        # Alice deposits 20: a commit state on her channel plus the app update
        upd = app_update(sid, 1, 2, [(ALICE.address, "20"), (BOB.address, "0")])
        commit = advance(ALICE, a1, {"type": 40, "account_id": sid, "amount": "20"})
        r = await c.ok(
            "app_sessions.v1.submit_deposit_state",
            {"app_state_update": upd, "quorum_sigs": quorum(upd, ALICE, BOB), "user_state": commit},
        )
        assert node_signed(commit, r["signature"])

        # operate: 15 / 5
        upd = app_update(sid, 0, 3, [(ALICE.address, "15"), (BOB.address, "5")], '{"move":1}')
        assert (
            await c.ok(
                "app_sessions.v1.submit_app_state",
                {"app_state_update": upd, "quorum_sigs": quorum(upd, ALICE, BOB)},
            )
            == {}
        )
        # quorum not reached with one signature of weight 1
        upd4 = app_update(sid, 3, 4, [(ALICE.address, "15"), (BOB.address, "5")])
        assert (
            await c.error(
                "app_sessions.v1.submit_app_state",
                {"app_state_update": upd4, "quorum_sigs": quorum(upd4, ALICE)},
            )
            == "quorum not reached"
        )
        # close: every allocation is released into its owner's channel
        assert (
            await c.ok(
                "app_sessions.v1.submit_app_state",
                {"app_state_update": upd4, "quorum_sigs": quorum(upd4, ALICE, BOB)},
            )
            == {}
        )

        sessions = await c.ok("app_sessions.v1.get_app_sessions", {"participant": BOB.address})
        assert sessions["app_sessions"][0]["status"] == "closed"
        assert sessions["app_sessions"][0]["version"] == "4"
        for user, balance, version in ((ALICE, "45", "3"), (BOB, "15", "2")):
            state = (
                await c.ok(
                    "channels.v1.get_latest_state",
                    {"wallet": user.address, "asset": ASSET, "only_signed": False},
                )
            )["state"]
            assert state["transition"]["type"] == 41 and state["transition"]["account_id"] == sid
            assert state["version"] == version and state["home_ledger"]["user_balance"] == balance
            assert node_signed(state, state["node_sig"]) and "user_sig" not in state
        # the released state is built on: Bob sends 15 back on top of it
        bob_latest = (
            await c.ok(
                "channels.v1.get_latest_state",
                {"wallet": BOB.address, "asset": ASSET, "only_signed": False},
            )
        )["state"]
        await c.ok(
            "channels.v1.submit_state",
            {"state": advance(BOB, bob_latest, send(ALICE.address, "15"))},
        )
        assert (await c.ok("user.v1.get_balances", {"wallet": BOB.address}))["balances"][0][
            "amount"
        ] == "0"
        # after close, no more updates
        upd5 = app_update(sid, 0, 5, [(ALICE.address, "15"), (BOB.address, "5")])
        assert (
            await c.error(
                "app_sessions.v1.submit_app_state",
                {"app_state_update": upd5, "quorum_sigs": quorum(upd5, ALICE, BOB)},
            )
            == "app session is closed"
        )
