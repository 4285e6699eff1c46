"""Interop with the official SDK (``@erc7824/nitrolite`` 0.5.3, viem 2.39.3) under node.

``oracle.js`` runs the SDK as a long-lived JSON-lines process; hypothesis drives it with
random channels, states, keys and frame inputs, and our code must agree byte for byte:
channel ids, packed states, hashes, raw / EIP-191 state and challenge signatures, the JSON
text of every request frame, the EIP-712 auth signature; SDK frames parse here and their
signatures verify; our server frames parse in the SDK.

``make test`` installs the SDK (``npm ci`` in tests/interop); without it these tests fail.
"""

from __future__ import annotations

import json
import queue
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from settlement_widgets.addresses import to_checksum
from settlement_widgets.channel.v0_5.core import (
    Allocation,
    AuthPolicy,
    Channel,
    State,
    StateIntent,
    auth_verify_jwt_message,
    challenge_hash,
    channel_id,
    close_channel_message,
    create_channel_message,
    error_response,
    get_assets_message,
    get_channels_message,
    get_config_message,
    get_ledger_balances_message,
    get_session_keys_message,
    get_user_tag_message,
    make_response,
    notification,
    packed_challenge,
    packed_state,
    parse_request,
    ping_message,
    resize_channel_message,
    revoke_session_key_message,
    sign_challenge,
    sign_state,
    state_hash,
    transfer_message,
)
from settlement_widgets.channel.v0_5.core.wire_json import dumps
from settlement_widgets.keys import SECP256K1_N, PrivateKey
from settlement_widgets.networks import SEPOLIA

pytestmark = pytest.mark.interop

HERE = Path(__file__).resolve().parent
SDK_PACKAGE = HERE / "node_modules" / "@erc7824" / "nitrolite" / "package.json"
ANSWER_TIMEOUT = 60.0
JS_SAFE = 2**53 - 1


class Oracle:
    """The node process; ``call`` sends one command and waits (bounded) for its answer."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            ["node", str(HERE / "oracle.js")],
            cwd=HERE,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.next_id = 0
        ready = self._answer()
        assert ready == {"id": 0, "ok": True, "result": "ready"}

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def _answer(self) -> dict[str, Any]:
        try:
            line = self.lines.get(timeout=ANSWER_TIMEOUT)
        except queue.Empty:
            pytest.fail(f"the SDK oracle did not answer within {ANSWER_TIMEOUT} s")
        if line is None:
            err = self.proc.stderr.read() if self.proc.stderr else ""
            pytest.fail(f"the SDK oracle exited: {err[-2000:]}")
        return json.loads(line)  # type: ignore[no-any-return]

    def call(self, op: str, **args: Any) -> Any:
        self.next_id += 1
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"id": self.next_id, "op": op, **args}) + "\n")
        self.proc.stdin.flush()
        answer = self._answer()
        assert answer["id"] == self.next_id
        if not answer["ok"]:
            raise AssertionError(f"SDK {op} failed: {answer['error']}")
        return answer["result"]

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)


@pytest.fixture(scope="module")
def oracle() -> Iterator[Oracle]:
    if shutil.which("node") is None:
        pytest.fail("node is not installed: the interop tests need Node 20 (run `make test`)")
    if not SDK_PACKAGE.exists():
        pytest.fail(
            "the official SDK is not installed in tests/interop/node_modules: run `make test` "
            "(or `make interop-deps`, i.e. `npm ci` in tests/interop)"
        )
    version = json.loads(SDK_PACKAGE.read_text())["version"]
    assert version == "0.5.3", f"tests/interop has @erc7824/nitrolite {version}, expected 0.5.3"
    o = Oracle()
    yield o
    o.close()


# --- strategies ---------------------------------------------------------------------------

secrets = st.integers(min_value=1, max_value=SECP256K1_N - 1).map(lambda v: v.to_bytes(32, "big"))
addresses = st.binary(min_size=20, max_size=20).map(lambda b: to_checksum("0x" + b.hex()))
nonzero_addresses = addresses.filter(lambda a: int(a, 16) != 0)
uint64s = st.integers(min_value=0, max_value=2**64 - 1)
uint256s = st.one_of(
    st.integers(min_value=0, max_value=2**64), st.integers(min_value=0, max_value=2**256 - 1)
)
allocations = st.builds(Allocation, addresses, addresses, uint256s)
js_ints = st.integers(min_value=0, max_value=JS_SAFE)
timestamps = st.integers(min_value=10**12, max_value=10**13 - 1)
texts = st.text(min_size=1, max_size=16)
decimal_strings = st.from_regex(r"\A(0|[1-9][0-9]{0,8})(\.[0-9]{1,8})?\Z")


@st.composite
def channels(draw: st.DrawFn) -> Channel:
    a = draw(nonzero_addresses)
    b = draw(nonzero_addresses.filter(lambda x: x != a))
    return Channel((a, b), draw(nonzero_addresses), draw(uint64s), draw(uint64s))


@st.composite
def states(draw: st.DrawFn) -> State:
    return State(
        draw(st.sampled_from(list(StateIntent))),
        draw(uint256s),
        draw(st.binary(max_size=160)),
        tuple(draw(st.lists(allocations, max_size=3))),
    )


def _channel_json(ch: Channel) -> dict[str, Any]:
    return {
        "participants": list(ch.participants),
        "adjudicator": ch.adjudicator,
        "challenge": str(ch.challenge),
        "nonce": str(ch.nonce),
    }


def _state_json(s: State) -> dict[str, Any]:
    return {
        "intent": int(s.intent),
        "version": str(s.version),
        "data": "0x" + s.data.hex(),
        "allocations": [
            {"destination": a.destination, "token": a.token, "amount": str(a.amount)}
            for a in s.allocations
        ],
    }


SLOW = settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


# --- ids, hashes, signatures --------------------------------------------------------------


@SLOW
@given(channel=channels(), chain=st.integers(min_value=1, max_value=2**256 - 1))
def test_channel_ids_agree(oracle: Oracle, channel: Channel, chain: int) -> None:
    assert oracle.call("channel_id", channel=_channel_json(channel), chainId=str(chain)) == (
        channel_id(channel, chain)
    )


@SLOW
@given(channel=channels(), chain=js_ints.filter(bool), state=states(), secret=secrets)
def test_states_hashes_and_signatures_agree(
    oracle: Oracle, channel: Channel, chain: int, state: State, secret: bytes
) -> None:
    key = PrivateKey(secret)
    cid = channel_id(channel, chain)
    sdk = oracle.call("state", channelId=cid, state=_state_json(state))
    assert sdk["packed"] == "0x" + packed_state(cid, state).hex()
    assert sdk["hash"] == state_hash(cid, state)
    assert sdk["challengePacked"] == "0x" + packed_challenge(cid, state).hex()
    assert sdk["challengeHash"] == challenge_hash(cid, state)
    for scheme in ("raw", "eip191"):
        sigs = oracle.call(
            "sign_state",
            channelId=cid,
            state=_state_json(state),
            key=key.secret_hex(),
            scheme=scheme,
        )
        assert sigs["state"] == sign_state(cid, state, key, scheme=scheme)  # type: ignore[arg-type]
        assert sigs["challenge"] == sign_challenge(cid, state, key, scheme=scheme)  # type: ignore[arg-type]


# --- JSON text ------------------------------------------------------------------------------

index_like_keys = st.sampled_from(["0", "1", "7", "10", "01", "4294967294", "4294967295", "-1"])
json_values = st.recursive(
    st.one_of(
        st.none(), st.booleans(), st.integers(min_value=-JS_SAFE, max_value=JS_SAFE), st.text()
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.one_of(st.text(max_size=6), index_like_keys), inner, max_size=5),
    ),
    max_leaves=15,
)


@SLOW
@given(value=json_values)
def test_compact_json_equals_js_stringify(oracle: Oracle, value: Any) -> None:
    ours = dumps(value)
    assert oracle.call("stringify", text=json.dumps(value)) == ours


# --- frames -----------------------------------------------------------------------------------


@st.composite
def frame_inputs(draw: st.DrawFn) -> dict[str, Any]:
    resize = draw(st.one_of(st.none(), st.integers(min_value=-(2**200), max_value=2**200)))
    allocate = draw(st.integers(min_value=-(2**200), max_value=2**200))
    if not resize and not allocate:
        allocate = 1
    return {
        "ids": draw(st.lists(js_ints, min_size=16, max_size=16)),
        "timestamps": draw(st.lists(timestamps, min_size=16, max_size=16)),
        "session": PrivateKey(draw(secrets)),
        "wallet": PrivateKey(draw(secrets)),
        "accountId": draw(st.one_of(st.just(""), texts)),
        "chainId": draw(js_ints.filter(bool)),
        "token": draw(addresses),
        "channelId": "0x" + draw(st.binary(min_size=32, max_size=32)).hex(),
        "resizeAmount": resize,
        "allocateAmount": allocate,
        "destination": draw(addresses),
        "allocations": [
            {"asset": asset, "amount": amount}
            for asset, amount in draw(st.lists(st.tuples(texts, decimal_strings), max_size=3))
        ],
        "userTag": draw(texts),
        "application": draw(texts),
        "scope": draw(st.text(max_size=10)),
        "expiresAt": draw(js_ints),
        "allowances": [
            {"asset": asset, "amount": amount}
            for asset, amount in draw(st.lists(st.tuples(texts, decimal_strings), max_size=3))
        ],
        "challenge": draw(texts),
        "jwt": draw(texts),
        "status": draw(st.one_of(st.just(""), texts)),
    }


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(inp=frame_inputs())
def test_request_frames_are_byte_identical_and_verify(oracle: Oracle, inp: dict[str, Any]) -> None:
    session: PrivateKey = inp["session"]
    wallet: PrivateKey = inp["wallet"]
    sdk = oracle.call(
        "frames",
        **{
            k: v
            for k, v in inp.items()
            if k not in {"session", "wallet", "resizeAmount", "allocateAmount"}
        },
        resizeAmount=None if inp["resizeAmount"] is None else str(inp["resizeAmount"]),
        allocateAmount=str(inp["allocateAmount"]),
        sessionKey=session.secret_hex(),
        sessionAddress=session.address,
        walletKey=wallet.secret_hex(),
        wallet=wallet.address,
    )
    i, t = inp["ids"], inp["timestamps"]
    policy = AuthPolicy(
        wallet.address,
        session.address,
        inp["application"],
        tuple((a["asset"], a["amount"]) for a in inp["allowances"]),
        inp["expiresAt"],
        inp["scope"],
    )
    ours = {
        "get_ledger_balances": get_ledger_balances_message(
            session, inp["accountId"] or None, request_id=i[0], timestamp=t[0]
        ),
        "create_channel": create_channel_message(
            session, inp["chainId"], inp["token"], request_id=i[1], timestamp=t[1]
        ),
        "resize_channel": resize_channel_message(
            session,
            inp["channelId"],
            inp["destination"],
            resize_amount=inp["resizeAmount"],
            allocate_amount=inp["allocateAmount"],
            request_id=i[2],
            timestamp=t[2],
        ),
        "close_channel": close_channel_message(
            session, inp["channelId"], inp["destination"], request_id=i[3], timestamp=t[3]
        ),
        "transfer": transfer_message(
            session,
            inp["allocations"],
            destination=inp["destination"],
            request_id=i[4],
            timestamp=t[4],
        ),
        "transfer_tag": transfer_message(
            session,
            inp["allocations"],
            destination_user_tag=inp["userTag"],
            request_id=i[5],
            timestamp=t[5],
        ),
        "ping": ping_message(request_id=i[6], timestamp=t[6]),
        "get_config": get_config_message(request_id=i[7], timestamp=t[7]),
        "auth_request": policy.request(request_id=i[8], timestamp=t[8]),
        "auth_verify": policy.verify_request(
            inp["challenge"], wallet, request_id=i[9], timestamp=t[9]
        ),
        "auth_verify_jwt": auth_verify_jwt_message(inp["jwt"], request_id=i[10], timestamp=t[10]),
        "revoke_session_key": revoke_session_key_message(
            session, session.address, request_id=i[11], timestamp=t[11]
        ),
        "get_user_tag": get_user_tag_message(session, request_id=i[12], timestamp=t[12]),
        "get_session_keys": get_session_keys_message(session, request_id=i[13], timestamp=t[13]),
        "get_channels": get_channels_message(
            wallet.address, inp["status"] or None, request_id=i[14], timestamp=t[14]
        ),
        "get_assets": get_assets_message(inp["chainId"], request_id=i[15], timestamp=t[15]),
    }
    assert set(ours) == set(sdk)
    for name, req in ours.items():
        assert req.to_frame() == sdk[name], name
        parsed = parse_request(sdk[name])
        assert parsed.raw == req.raw, name
        assert parsed.params == req.params, name
        if name == "auth_verify":
            assert policy.recover(inp["challenge"], parsed.sigs[0]) == wallet.address
        elif parsed.sigs:
            assert parsed.signers() == (session.address,), name
            assert parsed.is_signed_by(session.address)


# --- our server frames in the SDK's parser ------------------------------------------------------


@SLOW
@given(rid=js_ints, message=st.text(min_size=1, max_size=40), ts=timestamps, key=secrets)
def test_our_error_frames_parse_in_the_sdk(
    oracle: Oracle, rid: int, message: str, ts: int, key: bytes
) -> None:
    frame = error_response(rid, message, timestamp=ts, key=PrivateKey(key)).to_frame()
    parsed = oracle.call("parse_response", frame=frame)
    assert (parsed["method"], parsed["requestId"], parsed["timestamp"]) == ("error", rid, ts)
    assert parsed["params"] == {"error": message}


def test_our_config_and_notification_frames_parse_in_the_sdk(oracle: Oracle) -> None:
    broker = PrivateKey(b"\x01" * 32)
    config = make_response(
        48,
        "get_config",
        {
            "broker_address": broker.address,
            "networks": [
                {
                    "chain_id": 11155111,
                    "name": "ethereum_sepolia",
                    "custody_address": SEPOLIA.contracts.custody,
                    "adjudicator_address": SEPOLIA.contracts.adjudicator,
                }
            ],
        },
        timestamp=1_700_000_000_060,
        key=broker,
    )
    parsed = oracle.call("parse_response", frame=config.to_frame())
    assert parsed["params"]["brokerAddress"] == broker.address
    assert parsed["signatures"] == list(config.sigs)
    bu = notification(
        "bu",
        {"balance_updates": [{"asset": "ytest.usd", "amount": "10"}]},
        timestamp=1_700_000_000_080,
        key=broker,
    )
    parsed = oracle.call("parse_response", frame=bu.to_frame())
    assert parsed["requestId"] == 0
    assert parsed["params"] == {"balanceUpdates": [{"asset": "ytest.usd", "amount": "10"}]}
