"""The OpenAPI document loads in schemathesis and describes the bodies the service produces."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import pytest
import schemathesis

from settlement_widgets.api.openapi import openapi_document
from settlement_widgets.api.ownership import contracts_body
from settlement_widgets.api.protocol import faucet_fallback, parse_post
from settlement_widgets.compare import parse_comparison
from settlement_widgets.errors import FaucetError
from settlement_widgets.methods import settlement_config
from settlement_widgets.networks import SEPOLIA
from settlement_widgets.proofs import list_proofs, record_proof
from tests.comparison_sample import sample_comparison

DOC = openapi_document("/prefix/")


def _nullable(node: Any) -> Any:
    """OpenAPI 3.0 ``nullable`` -> JSON Schema ``anyOf [..., null]``."""
    if isinstance(node, dict):
        node = {k: _nullable(v) for k, v in node.items()}
        if node.pop("nullable", False):
            return {"anyOf": [node, {"type": "null"}]}
        return node
    if isinstance(node, list):
        return [_nullable(v) for v in node]
    return node


def check(name: str, body: Any) -> None:
    components = _nullable(DOC["components"])
    schema = {**components["schemas"][name], "components": components}
    jsonschema.Draft7Validator(schema).validate(body)


def test_schemathesis_loads_every_operation() -> None:
    schema = schemathesis.openapi.from_dict(DOC)
    labels = {op.ok().label for op in schema.get_all_operations()}
    assert labels == {
        "GET /api/settlement",
        "POST /api/settlement",
        "GET /api/settlement/proofs/{method}",
        "GET /api/settlement/openapi.json",
    }
    assert DOC["servers"] == [{"url": "/prefix"}]
    assert openapi_document("/")["servers"] == [{"url": "/"}]


async def test_produced_bodies_match_their_schemas(tmp_path: Path) -> None:
    check("Config", {**settlement_config("sepolia"), "comparison": None})
    check("Config", {**settlement_config("sepolia"), "comparison": sample_comparison()})
    check("PublishRequest", {"action": "compare:publish", "comparison": sample_comparison()})
    check("Comparison", parse_comparison(sample_comparison()).to_json())
    check("Contracts", await contracts_body(SEPOLIA.with_rpc_url(None)))
    check("FaucetFallback", faucet_fallback(FaucetError("x", status=503)).body)
    check("FaucetOk", {"status": "ok", "faucet": {"success": True}})
    for raw in (b"{", b"{}", b'{"action":"channel:faucet"}'):
        check("Error", parse_post(raw).body)  # type: ignore[union-attr]
    db = tmp_path / "p.sqlite"
    tx = "0x" + "ab" * 32
    record_proof(
        "channel", SEPOLIA, 11155111, "close", "on-chain", tx, SEPOLIA.explorer.tx_url(tx), path=db
    )
    check("Proofs", list_proofs("channel", SEPOLIA, path=db))
    check("Proofs", list_proofs("v4", "local", path=db))  # chainId null
    check("FaucetRequest", {"action": "channel:faucet", "userAddress": "0x" + "ab" * 20})


def test_schemas_reject_wrong_shapes() -> None:
    with pytest.raises(jsonschema.ValidationError):
        check("Proofs", {"method": "channel", "network": "local", "chainId": 1, "proofs": [{}]})
    with pytest.raises(jsonschema.ValidationError):
        check("Config", {"methods": {}})
