"""The faucet proxy limits each client as well as each address: cycling through fresh
addresses from one Jupyter user does not get around the per-address limit."""

from __future__ import annotations

import json
from typing import Any

import pytest
from tornado.httpclient import HTTPResponse

LoopbackFaucet = Any  # the fixture's type lives in conftest.py


@pytest.fixture
def settlement_traits() -> dict[str, Any]:
    return {
        "network": "local",
        "faucet_timeout": 0.5,
        "faucet_rate_limit": 2,
        "faucet_client_rate_limit": 4,
        "faucet_rate_window": 600.0,
    }


async def faucet(jp_fetch: Any, address: str) -> HTTPResponse:
    return await jp_fetch(
        "api",
        "settlement",
        method="POST",
        body=json.dumps({"action": "channel:faucet", "userAddress": address}),
        raise_error=False,
    )


async def test_cycling_addresses_hits_the_per_client_limit(
    jp_fetch: Any, write_profile: Any, loopback_faucet: LoopbackFaucet
) -> None:
    write_profile(loopback_faucet.url())
    addresses = ["0x" + f"{i:040x}" for i in range(1, 7)]
    codes = [(await faucet(jp_fetch, a)).code for a in addresses[:4]]
    assert codes == [200, 200, 200, 200]  # four fresh addresses: each under its own limit
    limited = await faucet(jp_fetch, addresses[4])  # a fifth fresh one: the client is over
    assert limited.code == 429
    data = json.loads(limited.body)
    assert "from this client" in data["error"] and "at most 4 per client" in data["error"]
    assert int(limited.headers["Retry-After"]) == data["retryAfter"] >= 1
    assert len(loopback_faucet.requests) == 4  # the limited request never went upstream


async def test_the_per_address_limit_still_applies_under_the_client_limit(
    jp_fetch: Any, write_profile: Any, loopback_faucet: LoopbackFaucet
) -> None:
    write_profile(loopback_faucet.url())
    address = "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"
    assert [(await faucet(jp_fetch, address)).code for _ in range(2)] == [200, 200]
    limited = await faucet(jp_fetch, address)
    assert limited.code == 429 and f"for {address}" in json.loads(limited.body)["error"]
