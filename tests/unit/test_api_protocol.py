"""The pure request parsing and reply shapes of POST /api/settlement (no server)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from settlement_widgets.api.protocol import (
    MAX_BODY_BYTES,
    FaucetRequest,
    Reply,
    V4ContractsRequest,
    faucet_fallback,
    js_string,
    parse_post,
)
from settlement_widgets.api.standalone import is_loopback
from settlement_widgets.errors import FaucetError, FaucetUnavailableError

ADDRESS = "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"


def parse(obj: Any) -> Any:
    return parse_post(json.dumps(obj).encode())


def test_actions_are_recognised() -> None:
    assert parse({"action": "v4:contracts"}) == V4ContractsRequest()
    assert parse({"action": "channel:faucet", "userAddress": ADDRESS.lower()}) == FaucetRequest(
        ADDRESS
    )
    assert parse({"action": "channel:faucet", "userAddress": ADDRESS.upper().replace("0X", "0x")})


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (None, "null"),
        (True, "true"),
        (False, "false"),
        (5, "5"),
        (5.0, "5"),
        (1.5, "1.5"),
        (float("nan"), "NaN"),
        (float("-inf"), "-Infinity"),
        ("x", "x"),
        ([1, "a", None], "1,a,"),
        ([], ""),
        ({"a": 1}, "[object Object]"),
    ],
)
def test_js_string_matches_javascript(value: Any, text: str) -> None:
    assert js_string(value) == text


def test_unknown_action_echo_is_clipped() -> None:
    reply = parse({"action": "x" * 10_000})
    assert isinstance(reply, Reply) and reply.status == 400
    assert len(reply.body["error"]) < 250


@pytest.mark.parametrize("falsy", [None, "", 0, 0.0, False, float("nan")])
def test_falsy_user_address_is_missing(falsy: Any) -> None:
    body = {"action": "channel:faucet", "userAddress": falsy}
    raw = json.dumps(body, allow_nan=True).encode()
    assert parse_post(raw) == Reply(400, {"error": "Missing userAddress"})


def test_body_limit_is_checked_before_parsing() -> None:
    reply = parse_post(b" " * (MAX_BODY_BYTES + 1))
    assert isinstance(reply, Reply) and reply.status == 413
    assert parse_post(b" " * MAX_BODY_BYTES) == Reply(400, {"error": "Invalid request"})


def test_fallback_messages_name_the_cause() -> None:
    http = faucet_fallback(FaucetError("Failed to send tokens.", status=500))
    down = faucet_fallback(FaucetUnavailableError("the faucet at u timed out: no answer"))
    assert http.status == down.status == 200
    assert http.body["status"] == "fallback"
    assert "HTTP 500: Failed to send tokens." in http.body["message"]
    assert "timed out" in down.body["message"]
    assert "\u2014" in http.body["message"]  # the original's em dash, kept
    long = faucet_fallback(FaucetError("e" * 10_000, status=502))
    assert len(long.body["message"]) < 500


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.1.2.3", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        ("LOCALHOST", True),
        ("0.0.0.0", False),
        ("::", False),
        ("192.0.2.10", False),
        ("example.org", False),
        ("localhost.example.org", False),
        ("", False),
    ],
)
def test_is_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


@given(st.binary(max_size=2000))
def test_parse_post_never_raises_on_bytes(raw: bytes) -> None:
    assert isinstance(parse_post(raw), Reply | FaucetRequest | V4ContractsRequest)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=50),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=30,
)


@given(st.dictionaries(st.sampled_from(["action", "userAddress", "x"]), json_values))
def test_parse_post_answers_every_json_object(obj: dict[str, Any]) -> None:
    result = parse_post(json.dumps(obj).encode())
    if isinstance(result, Reply):
        assert result.status == 400 and set(result.body) == {"error"}
        assert len(result.body["error"]) < 400


def test_deep_nesting_is_answered() -> None:
    # refused before json.loads recurses (see settlement_widgets.json_depth)
    deep = {"action": json.loads("[" * 900 + "]" * 900)}
    assert parse(deep) == Reply(400, {"error": "Invalid request"})
    shallow = {"action": json.loads("[" * 60 + "]" * 60)}
    assert parse(shallow) == Reply(400, {"error": "Unknown action: …"})
