"""Every rule the local Nitronode enforces, with the error text it answers, and the wire's
bad-frame handling (Nitrolite v1.4.1)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import websockets
from nitronode_helpers import (
    ACK,
    ALICE,
    ASSET,
    BOB,
    CAROL,
    FINALIZE,
    NODE_KEY,
    V1Client,
    advance,
    creation_state,
    definition,
    deposit,
    node_config,
    send,
    withdraw,
)

from settlement_widgets.channel.v1.core.app_sessions import (
    create_app_session_hash,
    quorum_signature,
)
from settlement_widgets.channel.v1.core.state import (
    channel_session_key_metadata_hash,
    pack_state,
    session_key_state_signature,
    sign_channel_session_key_state,
)
from settlement_widgets.channel.v1.node import MAX_FRAME_BYTES, NitronodeNode

RC = "channels.v1.request_creation"
SUBMIT = "channels.v1.submit_state"


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[V1Client]:
    async with (
        NitronodeNode(node_config(tmp_path / "node.sqlite")) as node,
        V1Client(node.url) as c,
    ):
        yield c


async def _opened(c: V1Client, user=ALICE, amount: str = "100", bitmap: str = "0x03") -> dict:
    d = definition(bitmap=bitmap)
    latest = await c.ok(
        "channels.v1.get_latest_state",
        {"wallet": user.address, "asset": ASSET, "only_signed": False},
    )
    state = creation_state(user, deposit(amount), d, latest.get("state"))
    state["node_sig"] = (await c.ok(RC, {"state": state, "channel_definition": d}))["signature"]
    return state


async def test_request_creation_rules(client: V1Client) -> None:
    c = client
    d = definition()
    good = creation_state(ALICE, deposit("10"), d)

    async def refused(state: dict, chan_def: dict) -> str:
        return await c.error(RC, {"state": state, "channel_definition": chan_def})

    assert (
        await refused(good, {**d, "nonce": "0"})
        == "invalid channel definition: nonce cannot be zero"
    )
    text = "invalid channel definition: challenge must be between 86400 and 604800 seconds"
    assert await refused(good, {**d, "challenge": 3600}) == text
    assert await refused(good, {**d, "challenge": 604801}) == text
    assert await refused({**good, "asset": "doge"}, d) == "asset doge is not supported"
    other_token = creation_state(ALICE, deposit("10"), d, token=BOB.address)
    assert await refused(other_token, d) == (
        f"token {BOB.address} is not the usdc token on blockchain 31337"
    )
    other_chain = creation_state(ALICE, deposit("10"), d, chain=1)
    assert await refused(other_chain, d) == "asset usdc is not supported on blockchain 1"
    d7 = {**d, "approved_sig_validators": "0x07"}
    assert await refused(creation_state(ALICE, deposit("10"), d7), d7) == (
        "invalid channel definition: unsupported signature validators [2]"
    )
    foreign_node = creation_state(ALICE, deposit("10"), d, node=BOB.address)
    assert await refused(foreign_node, d) == "invalid channel definition: home channel id mismatch"
    assert await refused(good, {**d, "nonce": str(int(d["nonce"]) + 1)}) == (
        "invalid channel definition: home channel id mismatch"
    )
    finalize_first = creation_state(ALICE, deposit("0.5"), d)
    finalize_first["transition"]["type"] = 200
    assert await refused(finalize_first, d) == (
        "invalid state transition: transition 200 cannot open a channel"
    )
    tampered = {**good, "home_ledger": {**good["home_ledger"], "user_balance": "11"}}
    assert (await refused(tampered, d)).startswith("invalid state transition: home ledger mismatch")
    wrong_version = creation_state(ALICE, deposit("10"), d)
    wrong_version["version"] = "2"
    assert (await refused(wrong_version, d)).startswith("invalid state transition: version")
    overdraw = creation_state(ALICE, withdraw("1"), d, sign=False)
    assert await refused(overdraw, d) == (
        "invalid state transition: user balance cannot be negative"
    )
    too_precise = creation_state(ALICE, deposit("0.0000001"), d, sign=False)
    assert await refused(too_precise, d) == (
        "invalid state transition: amount exceeds the asset's 6 decimals"
    )
    forged = {**good, "user_sig": creation_state(BOB, deposit("10"), d)["user_sig"]}
    assert (await refused(forged, d)).startswith("invalid incoming state user signature: ")
    assert await refused({k: v for k, v in good.items() if k != "user_sig"}, d) == (
        "missing incoming state user signature"
    )
    assert await c.error(RC, {"state": good}) == "failed to parse parameters"
    assert await c.error(RC, {"state": {"id": 1}, "channel_definition": d}) == (
        "failed to parse state: invalid transition"
    )
    # the good one passes; a second channel for the same wallet and asset does not (the
    # first one is not closed on chain: Nitronode v1.4.1's text)
    await c.ok(RC, {"state": good, "channel_definition": d})
    d2 = definition()
    again = creation_state(ALICE, deposit("1"), d2)
    assert await refused(again, d2) == (
        "existing channel is not yet closed on-chain; wait for settlement before opening a new "
        "channel"
    )


async def test_submit_state_rules(client: V1Client) -> None:
    c = client
    assert await c.error(
        SUBMIT,
        {"state": advance(ALICE, creation_state(ALICE, deposit("1"), definition()), deposit("1"))},
    ) == ("no home channel found for this wallet and asset")
    s1 = await _opened(c)
    # the escrows and the migration are ours (node/escrows.py, node/migrations.py; Nitronode
    # v1.4.1 answers "transition is not supported yet"): judged as states
    for kind in (120, 20, 110, 21, 100, 101):
        state = {
            **advance(ALICE, s1, deposit("1")),
            "transition": {"type": kind, "tx_id": "0x", "account_id": "0x", "amount": "1"},
        }
        assert (await c.error(SUBMIT, {"state": state})).startswith("invalid state transition")
    for kind in (31, 41, 40, 0):
        state = {
            **advance(ALICE, s1, deposit("1")),
            "transition": {"type": kind, "tx_id": "0x", "account_id": "0x", "amount": "1"},
        }
        assert await c.error(SUBMIT, {"state": state}) == (
            f"invalid state transition: transition {kind} cannot be submitted"
        )
    # an acknowledgement of a state the user already signed
    assert await c.error(SUBMIT, {"state": advance(ALICE, s1, ACK)}) == (
        "invalid state transition: current state is already acknowledged"
    )
    assert await c.error(
        SUBMIT, {"state": advance(ALICE, s1, send(BOB.address, "101"), sign=False)}
    ) == ("invalid state transition: user balance cannot be negative")
    assert await c.error(SUBMIT, {"state": advance(ALICE, s1, send(ALICE.address, "1"))}) == (
        "invalid state transition: cannot transfer to self"
    )
    assert await c.error(SUBMIT, {"state": advance(ALICE, s1, send("bob", "1"))}) == (
        "invalid state transition: receiver is not a wallet address"
    )
    zero = advance(ALICE, s1, deposit("1"))
    zero["transition"]["amount"] = "0"
    assert (await c.error(SUBMIT, {"state": zero})).startswith("invalid state transition:")
    skipped = advance(ALICE, advance(ALICE, s1, deposit("1")), deposit("1"))
    assert (await c.error(SUBMIT, {"state": skipped})).startswith(
        "invalid state transition: version mismatch: expected="
    )
    forged = advance(BOB, s1, deposit("1"))
    assert await c.error(SUBMIT, {"state": forged}) == (
        "invalid incoming state user signature: signature is not from the user wallet"
    )
    assert await c.error(SUBMIT, {"state": "nope"}) == "failed to parse state"
    # finalize is accepted and closes the channel; nothing after it on that channel
    s2 = advance(ALICE, s1, FINALIZE)
    await c.ok(SUBMIT, {"state": s2})
    assert await c.error(
        SUBMIT, {"state": advance(ALICE, s2, send(BOB.address, "1"), sign=False)}
    ) == ("no home channel found for this wallet and asset")


async def test_channel_session_keys(client: V1Client) -> None:
    """A state signed through a registered session key (validator 1) is accepted; an
    unregistered, out-of-scope or unapproved one is not."""
    c = client
    session = CAROL
    s1 = await _opened(c)
    key_state = {
        "user_address": ALICE.address,
        "session_key": session.address,
        "version": "1",
        "assets": [ASSET],
        "expires_at": "4102444800",
    }
    user_sig, key_sig = sign_channel_session_key_state(key_state, ALICE, session)
    assert key_sig is not None
    registration = {
        **key_state,
        "user_sig": "0x" + user_sig.hex(),
        "session_key_sig": "0x" + key_sig.hex(),
    }
    meta = channel_session_key_metadata_hash(ALICE.address, 1, [ASSET], 4102444800)

    def via_key(state: dict, metadata: bytes = meta) -> dict:
        signed = dict(state)
        signed["user_sig"] = (
            "0x"
            + session_key_state_signature(
                pack_state(state, lambda c, t: 6), session, metadata, user_sig
            ).hex()
        )
        return signed

    s2 = via_key(advance(ALICE, s1, send(BOB.address, "1")))
    assert await c.error(SUBMIT, {"state": s2}) == (
        "invalid incoming state user signature: session key is not registered"
    )
    wrong = {**registration, "version": "2"}
    assert await c.error("channels.v1.submit_session_key_state", {"state": wrong}) == (
        "invalid session key state: version must be 1"
    )
    forged = {**registration, "session_key_sig": registration["user_sig"]}
    assert await c.error("channels.v1.submit_session_key_state", {"state": forged}) == (
        "invalid session key state signature: session_key_sig is not from session_key"
    )
    assert await c.ok("channels.v1.submit_session_key_state", {"state": registration}) == {}
    listed = await c.ok("channels.v1.get_last_key_states", {"user_address": ALICE.address})
    assert listed["states"] == [registration] and listed["metadata"]["total_count"] == 1
    await c.ok(SUBMIT, {"state": s2})
    other = channel_session_key_metadata_hash(ALICE.address, 1, ["eth"], 4102444800)
    s3 = via_key(advance(ALICE, s2, send(BOB.address, "1")), other)
    assert (await c.error(SUBMIT, {"state": s3})).startswith(
        "invalid incoming state user signature"
    )
    # a channel that did not approve validator 1 refuses session-key signatures
    b1 = await _opened(c, BOB, bitmap="0x01")
    b2 = dict(advance(BOB, b1, send(ALICE.address, "1")))
    b2["user_sig"] = s2["user_sig"]
    assert await c.error(SUBMIT, {"state": b2}) == (
        "invalid incoming state user signature: the channel does not approve session keys"
    )


async def test_app_session_rules(client: V1Client) -> None:
    c = client
    create = "app_sessions.v1.create_app_session"
    base = {
        "application_id": "game",
        "participants": [{"wallet_address": ALICE.address, "signature_weight": 1}],
        "quorum": 1,
        "nonce": "1",
    }
    assert await c.error(
        create,
        {
            "definition": {**base, "application_id": "Bad App"},
            "session_data": "",
            "quorum_sigs": [],
        },
    ) == ("invalid app session definition: application_id must match ^[a-z0-9_-]{1,66}$")
    assert await c.error(
        create, {"definition": {**base, "quorum": 2}, "session_data": "", "quorum_sigs": []}
    ) == ("invalid app session definition: quorum exceeds the total weight")
    many = [{"wallet_address": "0x" + f"{i + 1:040x}", "signature_weight": 1} for i in range(33)]
    assert await c.error(
        create,
        {"definition": {**base, "participants": many}, "session_data": "", "quorum_sigs": []},
    ) == ("invalid app session definition: 1 to 32 participants")
    assert await c.error(
        create, {"definition": base, "session_data": "x" * 1025, "quorum_sigs": []}
    ) == ("session_data exceeds 1024 bytes")
    assert (
        await c.error(create, {"definition": base, "session_data": "", "quorum_sigs": []})
        == "quorum not reached"
    )
    bad_sig = await c.error(
        create, {"definition": base, "session_data": "", "quorum_sigs": ["0xa1" + "00" * 65]}
    )
    assert bad_sig.startswith("invalid quorum signature: ")
    outsider = await c.error(
        create,
        {
            "definition": base,
            "session_data": "",
            "quorum_sigs": ["0x" + quorum_signature(create_app_session_hash(base, ""), BOB).hex()],
        },
    )
    assert outsider == "invalid quorum signature: signer is not a participant"
    assert await c.error("app_sessions.v1.get_app_sessions", {}) == (
        "either app_session_id or participant must be provided"
    )


async def test_wire_errors_and_bad_frames(tmp_path: Path) -> None:
    async with NitronodeNode(node_config(tmp_path / "node.sqlite")) as node:
        async with V1Client(node.url) as c:
            # nothing is sent on connect: the first frame the client sees answers its ping
            assert await c.ok("node.v1.ping") == {}
            assert c.unmatched.empty()
            assert await c.error("node.v1.nope") == "unknown method: node.v1.nope"
            assert (
                await c.error("user.v1.get_balances", {"wallet": "me"})
                == "failed to parse parameters"
            )
            v05 = json.dumps({"req": [1, "ping", {}, 1], "sig": []})
            for text in (
                v05,
                "not json",
                "[1,2,3]",
                '[1,1,"node.v1.ping",null,1]',
                '[2,5,"node.v1.ping",{},1]',
            ):
                reply = json.loads(await c.raw(text))
                assert reply[:4] == [4, 0, "", {"error": "invalid message format"}]
                assert isinstance(reply[4], int)
            # a request after bad frames still works: the connection stays up
            assert await c.ok("node.v1.ping") == {}
        async with websockets.connect(node.url, max_size=None) as ws:
            await ws.send("[" + " " * MAX_FRAME_BYTES + "]")
            with pytest.raises(websockets.ConnectionClosed) as closed:
                await ws.recv()
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009


def test_node_key_never_in_config_repr(tmp_path: Path) -> None:
    config = node_config(tmp_path / "x.sqlite")
    assert NODE_KEY.secret_hex()[2:] not in repr(config)
