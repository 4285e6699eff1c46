"""Fuzzing: hypothesis over the RPC frame parsers and every relay method, schemathesis over
the endpoint's OpenAPI document.

Three targets, one rule: a bad input is refused with a clear error, nothing crashes, nothing
hangs.

- **Parsers**, called directly: ``erc7824.rpc.parse_frame``/``parse_request``/
  ``parse_response`` (the client side) and the relay's ``wire.parse_incoming``. Inputs are
  arbitrary text and bytes, arbitrary JSON, frames with every member of the wrong type, and
  byte-level mutations of valid signed frames. Allowed outcomes: a parsed value or an
  :class:`~settlement_widgets.errors.InvalidFrameError` with a message.
- **A live relay** (its own process) over WebSocket: requests for every method (and
  unknown ones) with fuzzed parameters, signed by an authenticated session key, unsigned,
  signed by strangers, stale or future timestamps, plus raw garbage, on an authenticated and
  an anonymous connection. Every frame must be answered within a bound by a frame signed by
  the broker; a refusal must be an ``error`` frame with a clear message (never the node's
  catch-all ``internal error``); the connection must stay open, the process alive, its log
  free of tracebacks, and the ledger's total unchanged.
- **The endpoint** (the standalone server, token auth) driven by schemathesis from
  ``/api/settlement/openapi.json``, in its positive and negative modes: no 500, every 4xx a
  JSON ``{"error": "…"}`` with a message, every answer conforming to the document.

Hypothesis runs with shrinking off and failures recorded rather than raised, so exactly the
requested number of inputs is tried and counted.
"""

from __future__ import annotations

import json
import random
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from .common import CheckResult

__all__ = ["fuzz_endpoint", "fuzz_parsers", "fuzz_relay", "run_relay_fuzz"]

_UNCLEAR = ("Traceback", "object at 0x", "internal error", "NoneType", "KeyError")


def _settings(n: int) -> Any:
    return settings(
        max_examples=n,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
        derandomize=False,
    )


def _clear(message: Any) -> bool:
    return (
        isinstance(message, str)
        and 0 < len(message) <= 2000
        and not any(u in message for u in _UNCLEAR)
    )


def signed_text(method: Any, params: Any, request_id: Any, timestamp: Any, key: Any | None) -> str:
    """A request frame over exactly these values (floats and all: the builders refuse what
    a hostile client may still send), signed over its compact ``req`` bytes."""
    from settlement_widgets.channel.v0_5.core.rpc import sign_payload

    raw = json.dumps([request_id, method, params, timestamp], separators=(",", ":"))
    sigs = [sign_payload(raw.encode(), key)] if key is not None else []
    return '{"req":' + raw + ',"sig":' + json.dumps(sigs) + "}"


# --- strategies ---------------------------------------------------------------------------

_json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=30)
)
json_values = st.recursive(
    _json_scalars,
    lambda inner: (
        st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=10), inner, max_size=5)
    ),
    max_leaves=15,
)
_uint64ish = st.one_of(
    st.integers(min_value=0, max_value=2**64 - 1),
    st.integers(min_value=-(2**66), max_value=2**66),
    _json_scalars,
)
_hex = st.binary(min_size=0, max_size=70).map(lambda b: "0x" + b.hex())
_sigs = st.one_of(
    st.lists(_hex, max_size=3),
    st.lists(st.text(max_size=20), max_size=3),
    json_values,
)


@st.composite
def frames(draw: st.DrawFn) -> str | bytes:
    """Frames for the parsers: garbage, JSON, near-valid structures, mutated valid frames."""
    kind = draw(st.integers(0, 5))
    if kind == 0:
        return draw(st.text(max_size=200))
    if kind == 1:
        return draw(st.binary(max_size=200))
    if kind == 2:
        return json.dumps(draw(json_values))
    if kind in (3, 4):
        key = draw(st.sampled_from(["req", "res", "req", "both", "other"]))
        payload = draw(
            st.one_of(
                st.tuples(_uint64ish, st.text(max_size=15), json_values, _uint64ish).map(list),
                st.lists(json_values, max_size=6),
                json_values,
            )
        )
        frame: dict[str, Any] = {}
        if key in ("req", "both"):
            frame["req"] = payload
        if key in ("res", "both"):
            frame["res"] = payload
        if key == "other":
            frame[draw(st.text(max_size=5))] = payload
        if draw(st.booleans()):
            frame["sig"] = draw(_sigs)
        if draw(st.integers(0, 9)) == 0:
            frame["sid"] = draw(json_values)
        text = json.dumps(frame, separators=(",", ":") if kind == 3 else (", ", ": "))
        return text
    # a signed frame with a byte-level mutation
    from settlement_widgets.keys import PrivateKey

    signer = PrivateKey(draw(st.integers(1, 2**255)).to_bytes(32, "big"))
    text = signed_text(
        draw(st.sampled_from(["transfer", "ping", "get_config", "close_channel"])),
        draw(st.dictionaries(st.text(max_size=8), json_values, max_size=3)),
        draw(st.integers(1, 2**64 - 1)),
        draw(st.integers(10**12, 10**13 - 1)),
        signer,
    )
    data = bytearray(text.encode())
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.integers(0, 2))
        pos = draw(st.integers(0, max(len(data) - 1, 0)))
        if op == 0 and data:
            data[pos] = draw(st.integers(0, 255))
        elif op == 1:
            data[pos:pos] = draw(st.binary(min_size=1, max_size=4))
        elif data:
            del data[pos : pos + draw(st.integers(1, 8))]
    return bytes(data) if draw(st.booleans()) else data.decode("utf-8", "replace")


# --- parsers ------------------------------------------------------------------------------


def fuzz_parsers(n: int, parsers: dict[str, Callable[[Any], Any]] | None = None) -> CheckResult:
    """Feed ``n`` fuzzed frames to each parser (default: the four real ones); failures are
    unexpected exceptions, unclear messages and calls slower than a second (a hang in the
    making)."""
    from settlement_widgets.channel.v0_5.core import rpc
    from settlement_widgets.channel.v0_5.node.wire import parse_incoming
    from settlement_widgets.errors import InvalidFrameError, SettlementError

    result = CheckResult("fuzz: RPC frame parsers")
    began = time.perf_counter()
    parsers = parsers or {
        "rpc.parse_frame": rpc.parse_frame,
        "rpc.parse_request": rpc.parse_request,
        "rpc.parse_response": rpc.parse_response,
        "relay wire.parse_incoming": parse_incoming,
    }
    counts: Counter[str] = Counter()
    crashes: list[str] = []

    @_settings(n)
    @given(frame=frames())
    def run(frame: str | bytes) -> None:
        counts["inputs"] += 1
        for name, parse in parsers.items():
            started = time.perf_counter()
            try:
                parse(frame)
                counts["parsed"] += 1
            except InvalidFrameError as exc:
                counts["refused"] += 1
                if not _clear(str(exc)):
                    crashes.append(f"{name}: unclear message {str(exc)[:100]!r}")
            except SettlementError as exc:
                counts["refused"] += 1
                crashes.append(f"{name}: {type(exc).__name__} is not InvalidFrameError: {exc}")
            except Exception as exc:
                crashes.append(f"{name}: {type(exc).__name__}: {exc!s:.100} on {frame!r:.120}")
            if time.perf_counter() - started > 1.0:
                crashes.append(f"{name}: took over 1 s on {frame!r:.80}")

    run()
    for crash in crashes[:20]:
        result.fail(crash)
    result.metrics = {
        "parser_inputs": counts["inputs"],
        "parser_calls": counts["parsed"] + counts["refused"] + len(crashes),
        "parser_refused": counts["refused"],
        "parser_crashes": len(crashes),
    }
    result.seconds = time.perf_counter() - began
    return result


# --- the live relay -----------------------------------------------------------------------

_METHODS = (
    "ping", "get_config", "get_assets", "get_channels", "get_ledger_transactions",
    "auth_request", "auth_verify", "get_ledger_balances", "get_user_tag", "get_session_keys",
    "transfer", "create_channel", "resize_channel", "close_channel",
)  # fmt: skip
_PARAM_KEYS = (
    "destination", "destination_user_tag", "allocations", "asset", "amount", "account_id",
    "channel_id", "funds_destination", "resize_amount", "allocate_amount", "chain_id", "token",
    "participant", "status", "limit", "offset", "sort", "tx_type", "address", "session_key",
    "application", "allowances", "expires_at", "scope", "challenge", "jwt",
)  # fmt: skip


def _values(addresses: list[str], channel_ids: list[str]) -> st.SearchStrategy[Any]:
    amounts = st.one_of(
        st.sampled_from(["0", "1", "0.000001", "-1", "1e3", "00.1", "1" * 90, "NaN", ""]),
        st.decimals(allow_nan=False, allow_infinity=False, places=8).map(str),
        st.integers(-(2**80), 2**80),
    )
    allocation = st.fixed_dictionaries(
        {
            "asset": st.sampled_from(["ytest.usd", "usdc", ""]) | st.text(max_size=8),
            "amount": amounts,
        }
    )
    return st.one_of(
        json_values,
        st.sampled_from(addresses),
        st.sampled_from(channel_ids),
        amounts,
        st.lists(allocation | json_values, max_size=3),
        st.integers(0, 2**64),
    )


@st.composite
def relay_requests(
    draw: st.DrawFn, keys: dict[str, Any], values: st.SearchStrategy[Any]
) -> tuple[str, bytes | str, int | None]:
    """(connection name, frame, request id or None for garbage)."""
    from settlement_widgets.channel.v0_5.core.rpc import now_ms

    conn = draw(st.sampled_from(["authed"] * 4 + ["anon"]))
    if draw(st.integers(0, 9)) == 0:
        raw = draw(frames())
        return conn, raw, None
    known = st.sampled_from(_METHODS)
    method = draw(st.one_of(known, known, known, known, st.text(min_size=1, max_size=12)))
    params = draw(
        st.dictionaries(
            st.sampled_from(_PARAM_KEYS) | st.text(max_size=6),
            values,
            max_size=5,
        )
    )
    request_id = draw(st.integers(1, 2**64 - 1))
    stamp = draw(st.sampled_from(["fresh"] * 6 + ["stale", "future", "short"]))
    timestamp = {
        "fresh": now_ms(),
        "stale": now_ms() - 120_000,
        "future": now_ms() + 3_600_000,
        "short": draw(st.integers(0, 10**12)),
    }[stamp]
    signer = draw(st.sampled_from(["session"] * 6 + ["none", "stranger", "wallet", "garbage"]))
    frame = signed_text(method, params, request_id, timestamp, keys.get(signer))
    if signer == "garbage":
        frame = frame[: frame.rindex('"sig":')] + '"sig":' + json.dumps(draw(_sigs)) + "}"
    return conn, frame, request_id


_NOTIFICATIONS = frozenset({"assets", "bu", "tr", "cu", "channels", "asu"})


class _SyncConn:
    """A blocking WebSocket connection (hypothesis drives examples synchronously)."""

    def __init__(self, url: str, broker: str) -> None:
        from websockets.sync.client import connect

        self.url, self.broker = url, broker
        # entered as a context manager (websockets 17 deprecates bare use); close() exits it
        # no keepalive pings: their payloads come from `random` in a background thread,
        # which hypothesis would see as generation using global randomness
        self.ws = connect(
            url, compression=None, max_size=1 << 22, open_timeout=20, ping_interval=None
        ).__enter__()
        self.reconnects = 0

    def exchange(self, frame: bytes | str, request_id: int | None, timeout: float) -> Any:
        """Send ``frame``; the first reply to it (an id match, or an id-0 ``error`` frame)."""
        from settlement_widgets.channel.v0_5.core.rpc import parse_response

        self.ws.send(frame)
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("no reply")
            text = self.ws.recv(timeout=remaining)
            reply = parse_response(text).verify(self.broker)
            if request_id is not None:
                if reply.request_id == request_id or (
                    reply.request_id == 0 and reply.method == "error"
                ):
                    return reply
            elif reply.method == "error" or reply.method not in _NOTIFICATIONS:
                return reply  # raw input: its id is whatever the relay could read

    def login(self, wallet: Any, session: Any) -> None:
        from settlement_widgets.channel.v0_5.core.auth import AuthPolicy

        policy = AuthPolicy(
            wallet.address, session.address, "reliability fuzz",
            (("ytest.usd", "1000"),),  # type: ignore[arg-type]
            int(time.time()) + 3600, "console",
        )  # fmt: skip
        req = policy.request(request_id=1)
        challenge = self.exchange(req.to_frame(), 1, 20)
        token = challenge.result["challenge_message"]
        verify = policy.verify_request(token, wallet, request_id=2)
        reply = self.exchange(verify.to_frame(), 2, 20)
        if not reply.result.get("success"):
            raise RuntimeError(f"fuzz login failed: {reply.result}")

    def close(self) -> None:
        self.ws.close()


def fuzz_relay(url: str, broker: str, n: int, *, wallet: Any, timeout: float = 10.0) -> CheckResult:
    """``n`` fuzzed frames against the relay at ``url`` (blocking: run it in a thread).
    ``wallet`` is a key with an off-chain balance, logged in through a session key."""
    from settlement_widgets.keys import PrivateKey

    result = CheckResult("fuzz: relay methods over WebSocket")
    began = time.perf_counter()
    session, stranger = PrivateKey.generate(), PrivateKey.generate()
    from .common import secrets

    secrets.add_key(session, "fuzz session key")
    secrets.add_key(stranger, "fuzz stranger key")
    keys = {"session": session, "stranger": stranger, "wallet": wallet}
    rng = random.Random(7)
    addresses = [
        wallet.address,
        stranger.address,
        session.address,
        "0x" + "00" * 20,
        "0x" + rng.randbytes(20).hex(),
        wallet.address.lower(),
    ]
    channel_ids = ["0x" + rng.randbytes(32).hex(), "0x" + "00" * 32, "0x1234"]
    conns = {"authed": _SyncConn(url, broker), "anon": _SyncConn(url, broker)}
    conns["authed"].login(wallet, session)
    counts: Counter[str] = Counter()
    errors: Counter[str] = Counter()
    methods: Counter[str] = Counter()
    problems: list[str] = []
    latencies: list[float] = []

    def check(item: tuple[str, bytes | str, int | None]) -> None:
        name, frame, request_id = item
        conn = conns[name]
        counts["inputs"] += 1
        if request_id is not None:
            method = json.loads(frame)["req"][1]
            if method in _METHODS:
                methods[method] += 1
        started = time.perf_counter()
        try:
            reply = conn.exchange(frame, request_id, timeout)
        except TimeoutError:
            problems.append(f"no answer within {timeout:g} s to {frame!r:.120}")
            counts["hangs"] += 1
            return
        except Exception as exc:  # the connection dropped, or a frame that does not verify
            problems.append(f"{type(exc).__name__}: {exc!s:.120} after {frame!r:.120}")
            counts["dropped"] += 1
            conns[name] = _SyncConn(url, broker)
            if name == "authed":
                conns[name].login(wallet, session)
            return
        latencies.append(time.perf_counter() - started)
        if reply.method == "error":
            counts["refused"] += 1
            message = reply.result.get("error") if isinstance(reply.result, dict) else None
            errors[str(message).split(":")[0][:60]] += 1
            if message == "internal error":
                counts["internal_errors"] += 1
                problems.append(f"internal error on {frame!r:.160}")
            elif not _clear(message):
                problems.append(f"unclear refusal {message!r:.100} to {frame!r:.100}")
        else:
            counts["answered"] += 1

    @_settings(n)
    @given(item=relay_requests(keys, _values(addresses, channel_ids)))
    def run(item: tuple[str, bytes | str, int | None]) -> None:
        check(item)

    try:
        run()
        # hypothesis favours the first entries of sampled_from: every method the random run
        # did not reach still gets one well-formed, freshly signed frame, so coverage of all
        # relay methods is a property of the check rather than of chance
        from settlement_widgets.channel.v0_5.core.rpc import now_ms

        for request_id, method in enumerate(sorted(set(_METHODS) - set(methods)), start=1):
            check(("authed", signed_text(method, {}, request_id, now_ms(), session), request_id))
    finally:
        for conn in conns.values():
            conn.close()
    for problem in problems[:20]:
        result.fail(problem)
    missing = sorted(set(_METHODS) - set(methods))
    result.expect(not missing, f"relay methods never fuzzed: {missing}")
    result.metrics = {
        "relay_inputs": counts["inputs"],
        "relay_methods_covered": len(methods),
        "relay_refused": counts["refused"],
        "relay_answered": counts["answered"],
        "relay_hangs": counts["hangs"],
        "relay_dropped_connections": counts["dropped"],
        "relay_internal_errors": counts["internal_errors"],
        "relay_crashes": counts["hangs"] + counts["dropped"] + counts["internal_errors"],
        "relay_distinct_refusals": len(errors),
        "relay_top_refusals": dict(errors.most_common(8)),
    }
    from .common import ms, percentile

    result.metrics["relay_p99_ms"] = ms(percentile(latencies, 99))
    result.seconds = time.perf_counter() - began
    return result


async def run_relay_fuzz(workdir: Path, n: int) -> CheckResult:
    """Start a relay process, fuzz it with ``n`` frames, then check it is alive, answers, its
    log holds no traceback and its ledger's total did not change."""
    import asyncio
    import contextlib
    import sqlite3

    from settlement_widgets.channel.v0_5.node.config import DEFAULT_FAUCET_SEED_UNITS
    from settlement_widgets.keys import PrivateKey

    from .common import free_port, secrets
    from .processes import RelayProcess

    workdir.mkdir(parents=True, exist_ok=True)
    wallet = PrivateKey.generate()
    secrets.add_key(wallet, "fuzz wallet key")
    relay = RelayProcess(
        workdir / "relay.sqlite",
        port=free_port(),
        faucet_account=wallet.address,
        log_path=workdir / "relay.log",
        durability="normal",
    )
    await relay.start()
    try:
        result = await asyncio.to_thread(
            fuzz_relay, relay.url, relay.broker_address, n, wallet=wallet
        )
        result.expect(await relay.alive(), "the relay process died during fuzzing")
        code = await relay.stop()
        result.expect(code == 0, f"the relay did not stop cleanly after fuzzing: exit {code}")
    finally:
        await relay.kill()
    log = relay.log_path.read_text(errors="replace")
    result.expect("Traceback" not in log, f"the relay logged a traceback: {log[-1500:]}")
    with contextlib.closing(sqlite3.connect(f"file:{relay.db}?mode=ro", uri=True)) as conn:
        total = sum(int(a) for (a,) in conn.execute("SELECT amount FROM balances"))
    result.expect(
        total == DEFAULT_FAUCET_SEED_UNITS,
        f"fuzzing changed the ledger's total: {total} != {DEFAULT_FAUCET_SEED_UNITS}",
    )
    result.metrics["relay_ledger_conserved"] = total == DEFAULT_FAUCET_SEED_UNITS
    return result


# --- the endpoint -------------------------------------------------------------------------


def fuzz_endpoint(base: str, endpoint: str, auth: dict[str, str], n: int) -> CheckResult:
    """schemathesis over the live endpoint: ``n`` cases per operation and mode (blocking)."""
    import schemathesis
    from schemathesis.generation.modes import GenerationMode

    result = CheckResult("fuzz: endpoint (schemathesis)")
    began = time.perf_counter()
    import httpx

    # the live document, read with the token (from_url would leave out the operation that
    # serves the document itself)
    document = httpx.get(endpoint + "/openapi.json", headers=auth, timeout=30).json()
    schema = schemathesis.openapi.from_dict(document)
    counts: Counter[str] = Counter()
    statuses: Counter[int] = Counter()
    problems: list[str] = []
    operations = [op.ok() for op in schema.get_all_operations()]  # type: ignore[union-attr]
    from schemathesis.specs.openapi.checks import positive_data_acceptance

    # A JSON Schema pattern cannot say "mixed case only with a valid EIP-55 checksum" (the
    # document says it in words), so schema-valid addresses may rightly get a 400.
    excluded = [positive_data_acceptance]

    def check(case: Any, mode: GenerationMode) -> None:
        counts["inputs"] += 1
        label = case.operation.label
        # every 8th case keeps the credentials schemathesis made up (none, or a random
        # token): it must be refused; the others carry the real token, so the inputs reach
        # the handlers instead of stopping at authentication
        anonymous = counts["inputs"] % 8 == 0
        if not anonymous:
            case.headers = {
                k: v for k, v in (case.headers or {}).items() if k.lower() != "authorization"
            }
            if isinstance(case.query, dict):
                case.query.pop("token", None)
        try:
            response = case.call(base_url=base, headers=None if anonymous else auth, timeout=30)
        except Exception as exc:
            counts["transport_errors"] += 1
            problems.append(f"{label}: {type(exc).__name__}: {exc!s:.100}")
            return
        status = response.status_code
        statuses[status] += 1
        if anonymous:
            counts["anonymous"] += 1
            if status != 403:
                problems.append(f"{label} without a valid token -> {status}, not 403")
                counts["auth_bypass"] += 1
        if status == 500:
            counts["500"] += 1
        if status >= 500:
            counts["5xx"] += 1
            problems.append(f"{label} -> {status}: {response.text[:200]!r} for {case.body!r:.100}")
        if 400 <= status < 600:
            try:
                body = response.json()
            except ValueError:
                body = None
            if not isinstance(body, dict) or not _clear(body.get("error")):
                counts["unclear"] += 1
                problems.append(
                    f"{label} -> {status} without a clear JSON error: {response.text[:120]!r}"
                )
        if mode is GenerationMode.POSITIVE or status < 400:
            try:
                case.validate_response(response, headers=auth, excluded_checks=excluded)
            except (Exception, BaseExceptionGroup) as exc:
                counts["schema_violations"] += 1
                problems.append(f"{label}: {str(exc)[:300]}")

    for operation in operations:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            strategy = operation.as_strategy(generation_mode=mode)

            @_settings(n)
            @given(case=strategy)
            def run(case: Any) -> None:
                check(case, mode)  # noqa: B023 - run() is called in this iteration

            run()
    for problem in sorted(set(problems))[:20]:
        result.fail(problem)
    result.metrics = {
        "endpoint_inputs": counts["inputs"],
        "endpoint_operations": len(operations),
        "endpoint_500s": counts["500"],
        "endpoint_5xx": counts["5xx"],
        "endpoint_unclear_errors": counts["unclear"],
        "endpoint_schema_violations": counts["schema_violations"],
        "endpoint_transport_errors": counts["transport_errors"],
        "endpoint_anonymous_inputs": counts["anonymous"],
        "endpoint_auth_bypasses": counts["auth_bypass"],
        "endpoint_operation_labels": sorted(op.label for op in operations),
        "endpoint_statuses": {str(k): v for k, v in sorted(statuses.items())},
    }
    result.seconds = time.perf_counter() - began
    return result
