"""/api/settlement on the ``local`` network through a real (in-process) Jupyter server: the faucet
proxy against a loopback faucet and misbehaving upstreams, the rate limit, and proofs."""

from __future__ import annotations

import json
from typing import Any

import pytest
from tornado.httpclient import HTTPResponse

from settlement_widgets.api.handlers import with_base_url
from settlement_widgets.methods import settlement_config
from settlement_widgets.proofs import record_proof

LoopbackFaucet = Any  # the fixture's type lives in conftest.py
LOCAL_CHAIN_ID = 31337  # conftest.local_network's chain id
ADDRESS = "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"
TX = "0x" + "ab" * 32


def addr(i: int) -> str:
    return "0x" + f"{i:040x}"


@pytest.fixture
def settlement_traits() -> dict[str, Any]:
    return {
        "network": "local",
        "faucet_timeout": 0.5,
        "faucet_rate_limit": 3,
        "faucet_rate_window": 600.0,
    }


def body(response: HTTPResponse) -> Any:
    assert response.headers["Content-Type"].startswith("application/json")
    return json.loads(response.body)


async def faucet(jp_fetch: Any, address: str) -> HTTPResponse:
    return await jp_fetch(
        "api",
        "settlement",
        method="POST",
        body=json.dumps({"action": "channel:faucet", "userAddress": address}),
        raise_error=False,
    )


async def test_get_serves_the_local_profile(
    jp_fetch: Any, write_profile: Any, jp_base_url: str
) -> None:
    network = write_profile("http://127.0.0.1:9/faucet/requestTokens")
    response = await jp_fetch("api", "settlement")
    assert body(response) == {
        **with_base_url(settlement_config(network), jp_base_url),
        "comparison": None,
    }
    assert body(response)["methods"]["channel"]["faucetUrl"] == network.faucet_url


async def test_faucet_ok_passes_the_upstream_json_through(
    jp_fetch: Any, write_profile: Any, loopback_faucet: LoopbackFaucet
) -> None:
    write_profile(loopback_faucet.url())
    response = await faucet(jp_fetch, ADDRESS.lower())
    assert response.code == 200
    assert body(response) == {
        "status": "ok",
        "faucet": {
            "success": True,
            "message": "Tokens sent successfully",
            "txId": "1",
            "amount": "10",
            "asset": "ytest.usd",
            "destination": ADDRESS,
        },
    }
    (sent,) = loopback_faucet.requests
    assert sent["path"] == "/faucet/requestTokens"
    assert sent["contentType"] == "application/json"
    assert json.loads(sent["body"]) == {"userAddress": ADDRESS}  # checksummed, nothing else


async def test_request_data_cannot_choose_the_upstream(
    jp_fetch: Any, write_profile: Any, loopback_faucet: LoopbackFaucet
) -> None:
    write_profile(loopback_faucet.url())
    payload = {
        "action": "channel:faucet",
        "userAddress": ADDRESS,
        "faucetUrl": "http://127.0.0.1:1/evil",
        "url": "http://127.0.0.1:1/evil",
    }
    response = await jp_fetch(
        "api", "settlement", method="POST", body=json.dumps(payload), raise_error=False
    )
    assert body(response)["status"] == "ok"
    assert [r["path"] for r in loopback_faucet.requests] == ["/faucet/requestTokens"]


async def test_each_faucet_failure_has_its_own_fallback_message(
    jp_fetch: Any, write_profile: Any, loopback_faucet: LoopbackFaucet, closed_port: int
) -> None:
    cases = {
        "closed port": f"http://127.0.0.1:{closed_port}/faucet/requestTokens",
        "slow": loopback_faucet.url("slow"),
        "503": loopback_faucet.url("unavailable"),
        "not JSON": loopback_faucet.url("not-json"),
    }
    messages = {}
    for i, (cause, url) in enumerate(cases.items()):
        write_profile(url)
        response = await faucet(jp_fetch, addr(i + 1))
        assert response.code == 200, cause
        data = body(response)
        assert set(data) == {"status", "message"}, cause
        assert data["status"] == "fallback", cause
        messages[cause] = data["message"]
    loopback_faucet.release()
    assert len(set(messages.values())) == 4
    assert "unreachable" in messages["closed port"]
    assert "timed out" in messages["slow"] and "0.5 s" in messages["slow"]
    assert "HTTP 503" in messages["503"]
    assert "Faucet service is currently unavailable." in messages["503"]
    assert "not JSON" in messages["not JSON"]


async def test_faucet_rate_limit_per_address_is_429_with_retry_after(
    jp_fetch: Any, write_profile: Any, loopback_faucet: LoopbackFaucet
) -> None:
    write_profile(loopback_faucet.url())
    for _ in range(3):
        assert body(await faucet(jp_fetch, ADDRESS))["status"] == "ok"
    limited = await faucet(jp_fetch, ADDRESS.lower())  # same address, other spelling
    assert limited.code == 429
    retry_after = int(limited.headers["Retry-After"])
    assert 1 <= retry_after <= 600
    data = body(limited)
    assert data["retryAfter"] == retry_after
    assert ADDRESS in data["error"]
    assert len(loopback_faucet.requests) == 3  # the limited request never went upstream
    other = await faucet(jp_fetch, addr(7))
    assert body(other)["status"] == "ok"


CLIENT_LIMITED = {
    "network": "local",
    "faucet_timeout": 0.5,
    "faucet_rate_limit": 2,
    "faucet_client_rate_limit": 4,
    "faucet_rate_window": 600.0,
}


@pytest.mark.parametrize("settlement_traits", [CLIENT_LIMITED])
async def test_cycling_addresses_hits_the_per_client_faucet_limit(
    jp_fetch: Any, write_profile: Any, loopback_faucet: LoopbackFaucet
) -> None:
    """Fresh addresses from one client do not get around the per-address limit."""
    write_profile(loopback_faucet.url())
    codes = [(await faucet(jp_fetch, addr(i))).code for i in range(1, 5)]
    assert codes == [200, 200, 200, 200]  # four fresh addresses: each under its own limit
    limited = await faucet(jp_fetch, addr(5))  # a fifth fresh one: the client is over
    assert limited.code == 429
    data = body(limited)
    assert "from this client" in data["error"] and "at most 4 per client" in data["error"]
    assert int(limited.headers["Retry-After"]) == data["retryAfter"] >= 1
    assert len(loopback_faucet.requests) == 4  # the limited request never went upstream


@pytest.mark.parametrize("settlement_traits", [CLIENT_LIMITED])
async def test_the_per_address_limit_still_applies_under_the_client_limit(
    jp_fetch: Any, write_profile: Any, loopback_faucet: LoopbackFaucet
) -> None:
    write_profile(loopback_faucet.url())
    assert [(await faucet(jp_fetch, ADDRESS)).code for _ in range(2)] == [200, 200]
    limited = await faucet(jp_fetch, ADDRESS)
    assert limited.code == 429 and f"for {ADDRESS}" in body(limited)["error"]


async def test_v4_contracts_on_local_without_rpc_says_so(jp_fetch: Any, write_profile: Any) -> None:
    network = write_profile("http://127.0.0.1:9/faucet/requestTokens")
    response = await jp_fetch(
        "api", "settlement", method="POST", body='{"action":"v4:contracts"}', raise_error=False
    )
    data = body(response)
    assert data["contracts"]["policyHook"] == network.contracts.policy_hook
    assert data["deployer"] == network.deployer
    assert data["notes"] == [{"source": "configuration", "text": "No RPC URL: ownership not read."}]


async def test_proofs_endpoint_lists_recorded_steps_of_this_network(
    jp_fetch: Any, write_profile: Any
) -> None:
    network = write_profile("http://127.0.0.1:9/faucet/requestTokens")
    url = network.explorer.tx_url(TX)
    record_proof("channel", "local", LOCAL_CHAIN_ID, "auth", "off-chain", data={"ok": True})
    record_proof("channel", "local", LOCAL_CHAIN_ID, "create_channel", "on-chain", TX, url)
    record_proof("channel", "sepolia", 11155111, "create_channel", "on-chain", TX)
    record_proof("channel", "local", 1, "create_channel", "on-chain", TX)  # another chain
    record_proof("v4", "local", LOCAL_CHAIN_ID, "owner_check", "read-only")

    data = body(await jp_fetch("api", "settlement", "proofs", "channel"))
    assert data["method"] == "channel"
    assert data["network"] == "local"
    assert data["chainId"] == LOCAL_CHAIN_ID
    assert [(p["step"], p["type"]) for p in data["proofs"]] == [
        ("auth", "off-chain"),
        ("create_channel", "on-chain"),
    ]
    assert "txHash" not in data["proofs"][0]
    assert data["proofs"][0]["data"] == {"ok": True}
    assert data["proofs"][1]["txHash"] == TX
    assert data["proofs"][1]["explorerUrl"] == url
    v4 = body(await jp_fetch("api", "settlement", "proofs", "v4"))
    assert [p["step"] for p in v4["proofs"]] == ["owner_check"]

    for unknown in ("yellow", "aggregator", "CHANNEL", "%00"):
        response = await jp_fetch("api", "settlement", "proofs", unknown, raise_error=False)
        assert response.code == 404
        assert body(response)["error"].startswith("Unknown proof method")
