"""``compare:publish`` and the ``comparison`` of ``GET /api/settlement``, without a server:
the pure POST parser (400 with the field's path, 413 by size, the larger limit only for a
comparison) and the service (409 for another network; a publication, here or by another
process, is what the next GET carries; a file that does not read is served as none)."""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path
from typing import Any

import pytest

from settlement_widgets.api.protocol import (
    MAX_BODY_BYTES,
    MAX_COMPARISON_BODY_BYTES,
    FaucetRequest,
    PublishRequest,
    Reply,
    parse_post,
)
from settlement_widgets.api.service import SettlementService
from settlement_widgets.compare import comparison_path, parse_comparison, publish_comparison
from tests.comparison_sample import sample_comparison, sample_run

HOUR_NS = 3600 * 10**9


def post(body: Any) -> PublishRequest | Reply | Any:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    return parse_post(raw)


def error(reply: Any) -> tuple[int, str]:
    assert isinstance(reply, Reply), reply
    return reply.status, reply.body["error"]


def test_a_valid_publish_body_is_parsed() -> None:
    request = post({"action": "compare:publish", "comparison": sample_comparison()})
    assert isinstance(request, PublishRequest)
    assert request.comparison == parse_comparison(sample_comparison())


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"action": "compare:publish"}, (400, "Missing comparison")),
        ({"action": "compare:publish", "comparison": None}, (400, "Missing comparison")),
        ({"action": "compare:publish", "comparison": "{}"}, (400, "Invalid comparison: expected")),
        (
            {"action": "compare:publish", "comparison": sample_comparison(), "network": "x"},
            (400, "Unknown field for compare:publish: network"),
        ),
        (
            {"action": "compare:publish", "comparison": sample_comparison(version=0)},
            (400, "Invalid comparison: comparison version: expected 1"),
        ),
        (
            b'{"action": "compare:publish", "comparison": {}, "comparison": {}}',
            (400, "Invalid comparison: comparison: the key 'comparison' appears twice"),
        ),
    ],
)
def test_bad_publish_bodies_are_400_naming_what_is_wrong(body: Any, expected: Any) -> None:
    status, message = error(post(body))
    assert status == expected[0] and message.startswith(expected[1]), message


def test_a_bad_field_deep_inside_is_named_by_its_path() -> None:
    bad = sample_comparison()
    bad["runs"][1]["txs"][0]["payer"] = "nobody"
    status, message = error(post({"action": "compare:publish", "comparison": bad}))
    assert status == 400 and "runs[1].txs[0].payer" in message


def big_comparison(size: int) -> dict[str, Any]:
    """A valid comparison of about ``size`` bytes of JSON (a run with many transactions)."""
    per_tx = len(json.dumps(sample_run("v4", "x", [1], 1.0)["txs"][0]))
    run = sample_run("v4", "many", [21_000] * (size // per_tx), 1.0)
    return sample_comparison(runs=[run], cheapest="many", fastest="many", unavailable={})


def test_only_a_comparison_may_be_larger_than_64_kib() -> None:
    comparison = big_comparison(200_000)
    body = json.dumps({"action": "compare:publish", "comparison": comparison}).encode()
    assert MAX_BODY_BYTES < len(body) < MAX_COMPARISON_BODY_BYTES
    assert isinstance(parse_post(body), PublishRequest)
    # another action of that size is refused, as before, even when it is valid JSON
    padded = {"action": "channel:faucet", "userAddress": "0x" + "ab" * 20, "pad": "x" * 70_000}
    assert error(post(padded))[0] == 413
    assert error(post(b" " * (MAX_BODY_BYTES + 1)))[0] == 413
    assert isinstance(
        post({"action": "channel:faucet", "userAddress": "0x" + "ab" * 20}), FaucetRequest
    )
    # and nothing beyond the comparison's limit is even parsed
    huge = b'{"action": "compare:publish", "comparison": "' + b"x" * MAX_COMPARISON_BODY_BYTES
    status, message = error(parse_post(huge + b'"}'))
    assert status == 413 and str(MAX_COMPARISON_BODY_BYTES) in message


async def test_publish_then_get_carries_it_and_another_network_is_409(tmp_path: Path) -> None:
    service = SettlementService(network="sepolia", home=tmp_path)
    first = await service.config_document("/")
    assert json.loads(first.body)["comparison"] is None
    assert service.cached_config("/") is first

    local = parse_comparison(sample_comparison())
    refused = await service.publish(local)
    assert refused.status == 409
    assert refused.body["error"] == (
        "This server serves the 'sepolia' network; the comparison was measured on 'local'"
    )
    assert not comparison_path("sepolia", tmp_path).exists()
    assert service.cached_config("/") is first  # nothing changed

    ours = parse_comparison(sample_comparison(network="sepolia"))
    answer = await service.publish(ours)
    assert answer.status == 200
    assert answer.body == {
        "status": "ok",
        "network": "sepolia",
        "measuredAt": "2026-11-29T00:40:00+00:00",
        "runs": 2,
    }
    # the publication is visible as soon as it is acknowledged
    assert service.cached_config("/") is None
    doc = await service.config_document("/")
    assert json.loads(doc.body)["comparison"] == ours.to_json()
    assert doc.etag != first.etag


def age(path: Path) -> None:
    stamp = time.time_ns() - HOUR_NS
    os.utime(path, ns=(stamp, stamp))


async def test_a_publication_by_another_process_is_seen_by_the_next_get(tmp_path: Path) -> None:
    service = SettlementService(network="sepolia", home=tmp_path)
    empty = await service.config_document("/")
    assert service.cached_config("/") is empty
    # a kernel publishes (no call into this service): the file appears
    publish_comparison(sample_comparison(network="sepolia"), "sepolia", home=tmp_path)
    assert service.cached_config("/") is None
    age(comparison_path("sepolia", tmp_path))  # an old file: its stamp can be trusted
    doc = await service.config_document("/")
    assert json.loads(doc.body)["comparison"]["network"] == "sepolia"
    assert service.cached_config("/") is doc
    # published again (a new file renamed over the old one)
    again = sample_comparison(network="sepolia", measuredAt="2026-11-29T01:00:00Z")
    publish_comparison(again, "sepolia", home=tmp_path)
    assert service.cached_config("/") is None
    doc2 = await service.config_document("/")
    assert json.loads(doc2.body)["comparison"]["measuredAt"] == "2026-11-29T01:00:00Z"
    # a file just written is not trusted: the next GET reads it again
    assert service.cached_config("/") is None
    # and removed: gone from the next GET
    age(comparison_path("sepolia", tmp_path))
    doc3 = await service.config_document("/")
    assert service.cached_config("/") is doc3
    comparison_path("sepolia", tmp_path).unlink()
    assert service.cached_config("/") is None
    assert json.loads((await service.config_document("/")).body)["comparison"] is None


async def test_a_file_that_does_not_read_is_served_as_none(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = comparison_path("sepolia", tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(sample_comparison()))  # a local comparison under sepolia's name
    service = SettlementService(network="sepolia", home=tmp_path)
    with caplog.at_level(logging.WARNING, logger="settlement_widgets.api.service"):
        doc = await service.config_document("/")
    assert json.loads(doc.body)["comparison"] is None
    assert "ignoring the published comparison" in caplog.text
