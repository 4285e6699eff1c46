"""/api/settlement through a real (in-process) Jupyter server with the extension loaded, on the
default network (sepolia): config body, auth, base_url, bad input, v4 notes, OpenAPI."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from tornado.httpclient import HTTPResponse

from settlement_widgets.api.protocol import MAX_BODY_BYTES
from settlement_widgets.methods import settlement_config
from settlement_widgets.networks import SEPOLIA

ADDRESS = "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"


def body(response: HTTPResponse) -> Any:
    assert response.headers["Content-Type"].startswith("application/json")
    return json.loads(response.body)


async def post(jp_fetch: Any, payload: Any, **kwargs: Any) -> HTTPResponse:
    data = payload if isinstance(payload, bytes | str) else json.dumps(payload)
    return await jp_fetch(
        "api", "settlement", method="POST", body=data, raise_error=False, **kwargs
    )


@pytest.mark.parametrize("jp_base_url", ["/", "/jp/pre%20fix/"])
async def test_get_is_the_settlement_config_under_base_url(
    jp_fetch: Any, jp_base_url: str, jp_http_port: int
) -> None:
    response = await jp_fetch("api", "settlement")
    assert response.code == 200
    expected = {**settlement_config("sepolia"), "comparison": None}  # none published
    got = body(response)
    assert {k: v for k, v in got.items() if k != "testnetProofs"} == {
        k: v for k, v in expected.items() if k != "testnetProofs"
    }
    # the proof paths as the spec writes them, under this server's base_url
    assert got["testnetProofs"] == {
        method: jp_base_url.rstrip("/") + path for method, path in expected["testnetProofs"].items()
    }
    async with httpx.AsyncClient() as client:
        token = response.request.headers["Authorization"]
        for path in got["testnetProofs"].values():  # each can be fetched as given
            proofs = await client.get(
                f"http://127.0.0.1:{jp_http_port}{path}", headers={"Authorization": token}
            )
            assert proofs.status_code == 200, (path, proofs.text)
    if jp_base_url != "/":  # the route moved with the prefix
        async with httpx.AsyncClient() as client:
            token = response.request.headers["Authorization"]
            bare = await client.get(
                f"http://127.0.0.1:{jp_http_port}/api/settlement",
                headers={"Authorization": token},
            )
        assert bare.status_code == 404


async def test_requests_without_a_token_are_refused(
    jp_fetch: Any, jp_http_port: int, jp_base_url: str, jp_serverapp: Any
) -> None:
    url = f"http://127.0.0.1:{jp_http_port}{jp_base_url}api/settlement"
    token = jp_serverapp.identity_provider.token
    async with httpx.AsyncClient() as client:
        for method, path in [
            ("GET", ""),
            ("POST", ""),
            ("GET", "/proofs/channel"),
            ("GET", "/openapi.json"),
        ]:
            kwargs: dict[str, Any] = (
                {"json": {"action": "v4:contracts"}} if method == "POST" else {}
            )
            refused = await client.request(method, url + path, **kwargs)
            assert refused.status_code == 403, (method, path)
            assert "error" in refused.json()
            wrong = await client.request(
                method, url + path, headers={"Authorization": "token nope"}, **kwargs
            )
            assert wrong.status_code == 403
        # the token in the query string, and in the header without XSRF, are accepted
        assert (await client.get(url, params={"token": token})).status_code == 200
        ok = await client.post(
            url, json={"action": "v4:contracts"}, headers={"Authorization": f"token {token}"}
        )
        assert ok.status_code == 200
        # a cookie-only (browser) POST without the XSRF header is refused
        login = await client.get(url, params={"token": token})
        assert login.status_code == 200
        cookie_only = await client.post(url, json={"action": "v4:contracts"})
        assert cookie_only.status_code == 403


@pytest.mark.parametrize(
    ("payload", "status", "error"),
    [
        (b"{not json", 400, "Invalid request"),
        (b"", 400, "Invalid request"),
        (b"\xff\xfe", 400, "Invalid request"),
        ("null", 400, "Invalid request"),
        ("[1, 2]", 400, "Invalid request"),
        ('"channel:faucet"', 400, "Invalid request"),
        ("[" * 100_00 + "]" * 100_00, 400, "Invalid request"),
        ({}, 400, "Unknown action: undefined"),
        ({"action": "yellow:faucet"}, 400, "Unknown action: yellow:faucet"),
        ({"action": None}, 400, "Unknown action: null"),
        ({"action": 5}, 400, "Unknown action: 5"),
        ({"action": {"a": 1}}, 400, "Unknown action: [object Object]"),
        ({"action": "channel:faucet"}, 400, "Missing userAddress"),
        ({"action": "channel:faucet", "userAddress": ""}, 400, "Missing userAddress"),
        ({"action": "channel:faucet", "userAddress": None}, 400, "Missing userAddress"),
    ],
)
async def test_bad_input_gets_its_status_and_json_error(
    jp_fetch: Any, payload: Any, status: int, error: str
) -> None:
    response = await post(jp_fetch, payload)
    assert response.code == status
    assert body(response) == {"error": error}


@pytest.mark.parametrize(
    ("address", "fragment"),
    [
        ("0x1234", "40 hex digits"),
        ("0x" + "g" * 40, "40 hex digits"),
        (ADDRESS.replace("a", "A", 1), "checksum"),
        (123, "must be a string"),
        (["0x" + "ab" * 20], "must be a string"),
        ("0x" + "ab" * 20 + "00" * 100, "string of 242 characters"),
    ],
)
async def test_invalid_user_address_is_400_with_a_clear_message(
    jp_fetch: Any, address: Any, fragment: str
) -> None:
    response = await post(jp_fetch, {"action": "channel:faucet", "userAddress": address})
    assert response.code == 400
    message = body(response)["error"]
    assert message.startswith("Invalid userAddress")
    assert fragment in message
    assert len(message) < 400


async def test_body_over_64_kib_is_413(jp_fetch: Any) -> None:
    padding = "x" * (MAX_BODY_BYTES + 1)
    response = await post(jp_fetch, {"action": "v4:contracts", "pad": padding})
    assert response.code == 413
    assert "too large" in body(response)["error"]
    just_under = {"action": "v4:contracts", "pad": "x" * (MAX_BODY_BYTES - 100)}
    assert (await post(jp_fetch, just_under)).code == 200


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("PUT", ("api", "settlement")),
        ("DELETE", ("api", "settlement")),
        ("PATCH", ("api", "settlement")),
        ("POST", ("api", "settlement", "proofs", "channel")),
        ("POST", ("api", "settlement", "openapi.json")),
    ],
)
async def test_wrong_method_is_405_json(jp_fetch: Any, method: str, path: tuple[str, ...]) -> None:
    kwargs = {"body": "{}"} if method in ("PUT", "PATCH", "POST") else {}
    response = await jp_fetch(*path, method=method, raise_error=False, **kwargs)
    assert response.code == 405
    assert body(response) == {"error": "Method Not Allowed"}
    assert "GET" in response.headers["Allow"]


async def test_v4_contracts_without_rpc_uses_recorded_sepolia_facts(jp_fetch: Any) -> None:
    response = await post(jp_fetch, {"action": "v4:contracts"})
    assert response.code == 200
    data = body(response)
    sepolia = settlement_config("sepolia")["methods"]["v4"]["contracts"]
    assert data["status"] == "ok"
    assert data["contracts"] == sepolia
    assert data["deployer"] == SEPOLIA.deployer
    hook, adapter = data["notes"]
    assert {hook["source"], adapter["source"]} == {"recorded from Sepolia on 2026-02-08"}
    assert hook["contract"] == "policyHook"
    assert hook["owner"] == "0x4e59b44847b379578588920cA78FbF26c0B4956C"
    assert hook["canHoldPolicies"] is False
    assert "cannot hold policies" in hook["text"]
    assert adapter["owner"] == SEPOLIA.deployer
    assert adapter["ownerIsContract"] is False


async def test_local_network_without_sandbox_profile_is_a_json_503(
    jp_fetch: Any, jp_serverapp: Any, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SETTLEMENT_PROFILE", str(tmp_path / "absent.json"))
    jp_serverapp.web_app.settings["settlement_service"].network_name = "local"
    response = await jp_fetch("api", "settlement", raise_error=False)
    assert response.code == 503
    assert "no local sandbox profile" in body(response)["error"]
    response = await post(jp_fetch, {"action": "channel:faucet", "userAddress": ADDRESS})
    assert response.code == 503


async def test_openapi_document_describes_the_routes(jp_fetch: Any, jp_base_url: str) -> None:
    doc = body(await jp_fetch("api", "settlement", "openapi.json"))
    assert doc["openapi"].startswith("3.")
    assert doc["servers"] == [{"url": jp_base_url.rstrip("/") or "/"}]
    assert set(doc["paths"]) == {
        "/api/settlement",
        "/api/settlement/proofs/{method}",
        "/api/settlement/openapi.json",
    }
    post_responses = doc["paths"]["/api/settlement"]["post"]["responses"]
    assert {"200", "400", "403", "413", "429"} <= set(post_responses)
    # every $ref resolves
    text = json.dumps(doc)
    for name in {part.split('"')[0] for part in text.split('"#/components/schemas/')[1:]}:
        assert name in doc["components"]["schemas"], name
