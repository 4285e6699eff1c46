"""The comparison in ``/api/settlement`` through a real (in-process) Jupyter server: GET
carries ``comparison`` (null until one is published for the served network), ``POST
compare:publish`` writes it with JSON errors (400 with the bad field's path, 409 for another
network, 413 too large, 403 without auth, as every route), and the next GET carries what was
published: by the POST, or by a kernel's ``publish_comparison`` (another process in real use,
the file in the server's settlement home)."""

from __future__ import annotations

import json
import os
from typing import Any

import httpx
import pytest
from tornado.httpclient import HTTPResponse

from settlement_widgets.api.protocol import MAX_COMPARISON_BODY_BYTES
from settlement_widgets.compare import comparison_path, parse_comparison, publish_comparison
from settlement_widgets.compare.published import SERVER_HOME_ENV
from settlement_widgets.networks import settlement_home
from tests.comparison_sample import sample_comparison

#: the server serves sepolia (the default): a comparison of it
SEPOLIA_COMPARISON = sample_comparison(network="sepolia")


async def get(jp_fetch: Any, **headers: str) -> HTTPResponse:
    return await jp_fetch("api", "settlement", headers=headers, raise_error=False)


async def publish(jp_fetch: Any, body: Any) -> tuple[int, dict[str, Any]]:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    got = await jp_fetch("api", "settlement", method="POST", body=raw, raise_error=False)
    assert got.headers["Content-Type"].startswith("application/json")
    return got.code, json.loads(got.body)


async def test_get_carries_null_then_what_was_published(jp_fetch: Any) -> None:
    before = await get(jp_fetch)
    assert before.code == 200
    assert json.loads(before.body)["comparison"] is None
    etag = before.headers["Etag"]

    status, answer = await publish(
        jp_fetch, {"action": "compare:publish", "comparison": SEPOLIA_COMPARISON}
    )
    assert (status, answer) == (
        200,
        {
            "status": "ok",
            "network": "sepolia",
            "measuredAt": "2026-11-29T00:40:00+00:00",
            "runs": 2,
        },
    )
    # visible on the very next GET, under a new ETag (a held body is not "not modified")
    after = await get(jp_fetch, **{"If-None-Match": etag})
    assert after.code == 200 and after.headers["Etag"] != etag
    body = json.loads(after.body)
    assert body["comparison"] == parse_comparison(SEPOLIA_COMPARISON).to_json()
    assert set(body) == {"methods", "testnetProofs", "comparison"}
    # in the server's settlement home
    assert (
        json.loads(comparison_path("sepolia", settlement_home()).read_text()) == body["comparison"]
    )


async def test_a_kernels_publication_is_on_the_next_get(jp_fetch: Any) -> None:
    first = await get(jp_fetch)
    assert json.loads(first.body)["comparison"] is None
    # the server told the kernels it starts where it reads publications (their sessions have
    # homes of their own)
    assert os.environ[SERVER_HOME_ENV] == str(settlement_home())
    publish_comparison(SEPOLIA_COMPARISON, "sepolia")  # as a kernel does: only the file
    second = await get(jp_fetch)
    assert json.loads(second.body)["comparison"]["runs"][1]["label"] == "v4 hook"
    assert second.headers["Etag"] != first.headers["Etag"]


@pytest.mark.parametrize(
    ("body", "status", "error"),
    [
        (b"{", 400, "Invalid request"),
        ({"action": "compare:publish"}, 400, "Missing comparison"),
        (
            {"action": "compare:publish", "comparison": {**SEPOLIA_COMPARISON, "cheapest": "x"}},
            400,
            "Invalid comparison: comparison cheapest: 'x' is not the label of any run",
        ),
        (
            {"action": "compare:publish", "comparison": sample_comparison()},
            409,
            "This server serves the 'sepolia' network; the comparison was measured on 'local'",
        ),
        (
            b'{"action": "compare:publish", "comparison": "' + b"x" * MAX_COMPARISON_BODY_BYTES,
            413,
            f"Request body too large: at most {MAX_COMPARISON_BODY_BYTES} bytes",
        ),
    ],
    ids=["bad-json", "missing", "bad-field", "other-network", "too-large"],
)
async def test_publish_errors_are_json_and_change_nothing(
    jp_fetch: Any, body: Any, status: int, error: str
) -> None:
    assert await publish(jp_fetch, body) == (status, {"error": error})
    assert json.loads((await get(jp_fetch)).body)["comparison"] is None
    assert not comparison_path("sepolia", settlement_home()).exists()


async def test_publishing_needs_jupyters_auth(
    jp_fetch: Any, jp_http_port: int, jp_base_url: str
) -> None:
    url = f"http://127.0.0.1:{jp_http_port}{jp_base_url}api/settlement"
    body = {"action": "compare:publish", "comparison": SEPOLIA_COMPARISON}
    async with httpx.AsyncClient() as anon:
        for auth in ({}, {"Authorization": "token nope"}):
            refused = await anon.post(url, json=body, headers=auth)
            # refused by Jupyter before the handler runs (no XSRF token, no valid login)
            assert refused.status_code == 403 and set(refused.json()) == {"error"}
            assert (await anon.get(url, headers=auth)).status_code == 403
    assert not comparison_path("sepolia", settlement_home()).exists()
