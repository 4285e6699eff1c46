"""request_faucet_tokens against loopback upstreams: the faucet contract, and one distinct
error per failure (closed port, slow, 503, not JSON, not an object, oversized)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest

from settlement_widgets.channel.faucet import MAX_FAUCET_RESPONSE_BYTES, request_faucet_tokens
from settlement_widgets.channel.v0_5.client.config import ChannelConfig
from settlement_widgets.errors import (
    ConfigurationError,
    FaucetError,
    FaucetUnavailableError,
    InvalidAddressError,
    SettlementValueError,
)

ADDRESS = "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"


async def test_ok_returns_the_faucet_json(loopback_faucet: Any) -> None:
    reply = await request_faucet_tokens(ADDRESS.lower(), faucet_url=loopback_faucet.url())
    assert reply["success"] is True
    assert reply["destination"] == ADDRESS
    assert reply["amount"] == "10" and reply["asset"] == "ytest.usd"
    (sent,) = loopback_faucet.requests
    assert json.loads(sent["body"]) == {"userAddress": ADDRESS}
    assert sent["contentType"] == "application/json"


async def test_network_profile_and_config_objects_choose_the_url(
    loopback_faucet: Any, write_profile: Any
) -> None:
    network = write_profile(loopback_faucet.url())
    assert (await request_faucet_tokens(ADDRESS, "local"))["success"] is True
    assert (await request_faucet_tokens(ADDRESS, network))["success"] is True
    config = ChannelConfig.from_network(network)
    assert (await request_faucet_tokens(ADDRESS, config))["success"] is True
    assert len(loopback_faucet.requests) == 3


async def test_a_given_client_is_reused_and_left_open(loopback_faucet: Any) -> None:
    async with httpx.AsyncClient() as client:
        await request_faucet_tokens(ADDRESS, faucet_url=loopback_faucet.url(), client=client)
        await request_faucet_tokens(ADDRESS, faucet_url=loopback_faucet.url(), client=client)
        assert not client.is_closed


async def test_invalid_address_is_refused_before_sending(loopback_faucet: Any) -> None:
    for bad in ("0x123", ADDRESS.replace("a", "A", 1), 42, None):
        with pytest.raises(InvalidAddressError):
            await request_faucet_tokens(bad, faucet_url=loopback_faucet.url())  # type: ignore[arg-type]
    assert loopback_faucet.requests == []


async def test_bad_settings_are_refused(loopback_faucet: Any) -> None:
    with pytest.raises(SettlementValueError):
        await request_faucet_tokens(ADDRESS, faucet_url=loopback_faucet.url(), timeout=0)
    with pytest.raises(ConfigurationError):
        await request_faucet_tokens(ADDRESS, faucet_url="file:///etc/passwd")
    assert loopback_faucet.requests == []


async def test_closed_port_is_unreachable(closed_port: int) -> None:
    url = f"http://127.0.0.1:{closed_port}/faucet/requestTokens"
    with pytest.raises(FaucetUnavailableError, match="unreachable"):
        await request_faucet_tokens(ADDRESS, faucet_url=url, timeout=5)


async def test_slow_faucet_times_out(loopback_faucet: Any) -> None:
    with pytest.raises(FaucetUnavailableError, match=r"timed out: no answer within 0\.3 s"):
        await request_faucet_tokens(ADDRESS, faucet_url=loopback_faucet.url("slow"), timeout=0.3)
    loopback_faucet.release()


async def test_non_2xx_keeps_status_and_upstream_error(loopback_faucet: Any) -> None:
    with pytest.raises(FaucetError) as caught:
        await request_faucet_tokens(ADDRESS, faucet_url=loopback_faucet.url("unavailable"))
    assert caught.value.status == 503
    assert caught.value.message == "Faucet service is currently unavailable."


async def test_non_json_body_is_unavailable(loopback_faucet: Any) -> None:
    with pytest.raises(FaucetUnavailableError, match="HTTP 200 with a body that is not JSON"):
        await request_faucet_tokens(ADDRESS, faucet_url=loopback_faucet.url("not-json"))


class _Odd(BaseHTTPRequestHandler):
    """Answers that are JSON but not a faucet object, oversized, or a redirect."""

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path == "/list":
            body = b"[1, 2, 3]"
        elif self.path == "/huge":
            body = b'{"x": "' + b"a" * MAX_FAUCET_RESPONSE_BYTES + b'"}'
        elif self.path == "/redirect":
            self.send_response(307)
            self.send_header("Location", "http://127.0.0.1:1/elsewhere")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        else:
            body = b"<h1>teapot</h1>"
            self.send_response(418)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def odd_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Odd)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
    thread.join(timeout=10)


async def test_json_that_is_not_an_object_is_unavailable(odd_server: str) -> None:
    with pytest.raises(FaucetUnavailableError, match="not an object"):
        await request_faucet_tokens(ADDRESS, faucet_url=odd_server + "/list")


async def test_oversized_answer_is_cut_off(odd_server: str) -> None:
    with pytest.raises(FaucetUnavailableError, match="more than"):
        await request_faucet_tokens(ADDRESS, faucet_url=odd_server + "/huge")


async def test_redirects_are_not_followed(odd_server: str) -> None:
    with pytest.raises(FaucetError) as caught:
        await request_faucet_tokens(ADDRESS, faucet_url=odd_server + "/redirect")
    assert caught.value.status == 307


async def test_non_json_error_uses_the_reason_phrase(odd_server: str) -> None:
    with pytest.raises(FaucetError) as caught:
        await request_faucet_tokens(ADDRESS, faucet_url=odd_server + "/teapot")
    assert caught.value.status == 418
    assert caught.value.message == "I'm a Teapot"
