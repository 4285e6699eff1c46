"""``GET /api/settlement`` is pre-serialised and revalidatable, through a real (in-process)
Jupyter server with the extension: a strong ETag and ``Cache-Control: private, no-cache`` on
the spec's exact body, 304 without a body for a matching ``If-None-Match``, authentication
and authorization before any of it, a new ETag when the sandbox profile changes, errors as
JSON. The standalone server runs the same handler: ``test_standalone_get_cache.py``."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from jupyter_server.auth import Authorizer
from tornado.httpclient import HTTPResponse

import settlement_widgets.methods as methods
from settlement_widgets.api.handlers import with_base_url
from settlement_widgets.methods import settlement_config

ANCIENT_NS = time.time_ns() - 3600 * 10**9


async def get(jp_fetch: Any, **headers: str) -> HTTPResponse:
    return await jp_fetch("api", "settlement", headers=headers, raise_error=False)


@pytest.mark.parametrize("jp_base_url", ["/", "/jp/pre%20fix/"])
async def test_the_body_is_the_spec_bytes_with_etag_and_cache_control(
    jp_fetch: Any, jp_base_url: str
) -> None:
    response = await get(jp_fetch)
    assert response.code == 200
    assert response.headers["Content-Type"].startswith("application/json")
    # byte for byte what the handler wrote before it was pre-serialised
    expected = {**with_base_url(settlement_config("sepolia"), jp_base_url), "comparison": None}
    assert response.body == json.dumps(expected).encode()
    etag = response.headers["Etag"]
    assert etag.startswith('"') and etag.endswith('"') and len(etag) > 20  # strong
    assert response.headers["Cache-Control"] == "private, no-cache"
    again = await get(jp_fetch)
    assert again.body == response.body and again.headers["Etag"] == etag


async def test_a_matching_if_none_match_is_304_without_a_body(jp_fetch: Any) -> None:
    etag = (await get(jp_fetch)).headers["Etag"]
    for header in (etag, "W/" + etag, f'"stale", {etag}', "*"):
        revalidated = await get(jp_fetch, **{"If-None-Match": header})
        assert revalidated.code == 304, header
        assert revalidated.body == b""
        assert revalidated.headers["Etag"] == etag
        assert revalidated.headers["Cache-Control"] == "private, no-cache"
        assert "Content-Type" not in revalidated.headers


async def test_a_stale_if_none_match_gets_the_body(jp_fetch: Any) -> None:
    fresh = await get(jp_fetch)
    stale = await get(jp_fetch, **{"If-None-Match": '"0123456789abcdef"'})
    assert stale.code == 200
    assert stale.body == fresh.body
    assert stale.headers["Etag"] == fresh.headers["Etag"]


async def test_authentication_comes_before_the_etag(
    jp_fetch: Any, jp_http_port: int, jp_base_url: str
) -> None:
    etag = (await get(jp_fetch)).headers["Etag"]
    url = f"http://127.0.0.1:{jp_http_port}{jp_base_url}api/settlement"
    async with httpx.AsyncClient() as anon:
        for auth in ({}, {"Authorization": "token nope"}):
            refused = await anon.get(url, headers={"If-None-Match": etag, **auth})
            assert refused.status_code == 403, auth
            assert refused.json() == {"error": "Forbidden"}
            assert "Etag" not in refused.headers


class NoSettlementReads(Authorizer):
    """Authenticated users may not read the settlement resource."""

    def is_authorized(self, handler: Any, user: Any, action: str, resource: str) -> bool:
        return resource != "settlement"


async def test_authorization_comes_before_the_etag(
    jp_fetch: Any, jp_serverapp: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    etag = (await get(jp_fetch)).headers["Etag"]
    settings = jp_serverapp.web_app.settings
    monkeypatch.setitem(settings, "authorizer", NoSettlementReads(parent=jp_serverapp))
    refused = await get(jp_fetch, **{"If-None-Match": etag})
    assert refused.code == 403
    assert "not authorized to read" in json.loads(refused.body)["error"]


@pytest.fixture
def profile(write_profile: Any, tmp_path: Path) -> Any:
    """``profile(faucet_port)``: (re)write the local sandbox profile as the sandbox does (a
    new file renamed over the old one), its mtime an hour back (a settled file)."""
    path = tmp_path / "profile.json"
    fresh = tmp_path / "profile.new"

    def write(port: int) -> None:
        network = write_profile(f"http://127.0.0.1:{port}/faucet/requestTokens")
        fresh.write_text(json.dumps(network.to_json()))
        os.utime(fresh, ns=(ANCIENT_NS, ANCIENT_NS))
        os.replace(fresh, path)

    return write


async def test_a_restarted_sandbox_changes_the_etag_and_the_body(
    jp_fetch: Any, jp_serverapp: Any, profile: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    profile(9)
    jp_serverapp.web_app.settings["settlement_service"].network_name = "local"
    builds: list[Any] = []
    real = methods.settlement_config
    monkeypatch.setattr(methods, "settlement_config", lambda n: builds.append(n) or real(n))

    first = await get(jp_fetch)
    assert first.code == 200
    assert json.loads(first.body)["methods"]["channel"]["faucetUrl"].startswith(
        "http://127.0.0.1:9/"
    )
    again = await get(jp_fetch, **{"If-None-Match": first.headers["Etag"]})
    assert again.code == 304
    assert len(builds) == 1  # the settled profile was not read again

    profile(10)  # the sandbox restarted on other ports
    changed = await get(jp_fetch, **{"If-None-Match": first.headers["Etag"]})
    assert changed.code == 200
    assert changed.headers["Etag"] != first.headers["Etag"]
    assert json.loads(changed.body)["methods"]["channel"]["faucetUrl"].startswith(
        "http://127.0.0.1:10/"
    )
    assert (await get(jp_fetch, **{"If-None-Match": changed.headers["Etag"]})).code == 304


async def test_errors_stay_json_and_carry_no_etag(
    jp_fetch: Any, jp_serverapp: Any, profile: Any, tmp_path: Path
) -> None:
    profile(9)
    jp_serverapp.web_app.settings["settlement_service"].network_name = "local"
    ok = await get(jp_fetch)
    (tmp_path / "profile.json").unlink()  # the sandbox stopped and removed its profile
    gone = await get(jp_fetch, **{"If-None-Match": ok.headers["Etag"]})
    assert gone.code == 503
    assert gone.headers["Content-Type"].startswith("application/json")
    assert "no local sandbox profile" in json.loads(gone.body)["error"]
    assert "Etag" not in gone.headers
    profile(9)  # back, with the same body: the old ETag holds again
    assert (await get(jp_fetch, **{"If-None-Match": ok.headers["Etag"]})).code == 304
