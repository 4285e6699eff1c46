"""The OpenAPI 3 description of ``/api/settlement``, served at ``…/api/settlement/openapi.json``.

Written by hand from the same facts the handlers implement (the JACK dashboard's endpoint
and the answers this package adds), so a property-based tester such as schemathesis can check the
server against it. Paths are relative to the server's ``base_url`` (the ``servers`` entry).
"""

from __future__ import annotations

from typing import Any

__all__ = ["openapi_document"]

_ADDRESS: dict[str, Any] = {
    "type": "string",
    "pattern": "^0x[0-9a-fA-F]{40}$",
    "description": "20-byte hex address; lowercase, or mixed case with a valid EIP-55 checksum",
}
_TX_HASH: dict[str, Any] = {"type": "string", "pattern": "^0x[0-9a-f]{64}$"}


def _obj(props: dict[str, Any], required: list[str] | None = None, **extra: Any) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        schema["required"] = required
    schema.update(extra)
    return schema


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _json(schema: dict[str, Any], description: str, **extra: Any) -> dict[str, Any]:
    return {
        "description": description,
        "content": {"application/json": {"schema": schema}},
        **extra,
    }


def _schemas() -> dict[str, Any]:
    str_ = {"type": "string"}
    int_ = {"type": "integer"}
    return {
        "Address": _ADDRESS,
        "Error": _obj({"error": str_, "retryAfter": {"type": "integer", "minimum": 1}}, ["error"]),
        "Config": _obj(
            {
                "methods": _obj(
                    {
                        "aggregator": _obj({"status": str_, "description": str_}),
                        "channel": _obj(
                            {
                                "status": str_,
                                "network": str_,
                                "chainId": int_,
                                "contracts": _obj(
                                    {"custody": _ref("Address"), "adjudicator": _ref("Address")}
                                ),
                                "nodeUrl": str_,
                                "faucetUrl": str_,
                            }
                        ),
                        "v4": _obj(
                            {
                                "status": str_,
                                "network": str_,
                                "chainId": int_,
                                "contracts": _ref("V4Contracts"),
                                "explorerBase": str_,
                            }
                        ),
                    },
                    ["aggregator", "channel", "v4"],
                ),
                "testnetProofs": _obj({"channel": str_, "v4": str_}, ["channel", "v4"]),
                "comparison": {
                    "allOf": [_ref("Comparison")],
                    "nullable": True,
                    "description": "The last comparison published for this network, or null",
                },
            },
            ["methods", "testnetProofs", "comparison"],
        ),
        **_comparison_schemas(),
        "V4Contracts": _obj(
            {
                "policyHook": _ref("Address"),
                "settlementAdapter": _ref("Address"),
                "poolManager": _ref("Address"),
            },
            ["policyHook", "settlementAdapter", "poolManager"],
        ),
        "FaucetRequest": _obj(
            {"action": {"type": "string", "enum": ["channel:faucet"]}, "userAddress": _ADDRESS},
            ["action", "userAddress"],
        ),
        "ContractsRequest": _obj(
            {"action": {"type": "string", "enum": ["v4:contracts"]}}, ["action"]
        ),
        "FaucetOk": _obj(
            {"status": {"type": "string", "enum": ["ok"]}, "faucet": {"type": "object"}},
            ["status", "faucet"],
        ),
        "FaucetFallback": _obj(
            {"status": {"type": "string", "enum": ["fallback"]}, "message": str_},
            ["status", "message"],
        ),
        "Note": _obj(
            {
                "source": str_,
                "text": str_,
                "contract": str_,
                "address": _ref("Address"),
                "owner": _ref("Address"),
                "ownerIsContract": {"type": "boolean"},
                "canHoldPolicies": {"type": "boolean"},
            },
            ["source", "text"],
        ),
        "Contracts": _obj(
            {
                "status": {"type": "string", "enum": ["ok"]},
                "contracts": _ref("V4Contracts"),
                "deployer": {**_ADDRESS, "nullable": True},
                "notes": {"type": "array", "items": _ref("Note")},
            },
            ["status", "contracts", "deployer", "notes"],
        ),
        "Proof": _obj(
            {
                "step": str_,
                "type": {"type": "string", "enum": ["on-chain", "off-chain", "read-only"]},
                "txHash": _TX_HASH,
                "explorerUrl": str_,
                "data": {"type": "object"},
                "timestamp": {"type": "string", "format": "date-time"},
            },
            ["step", "type", "data", "timestamp"],
        ),
        "Proofs": _obj(
            {
                "method": {"type": "string", "enum": ["channel", "v4"]},
                "network": str_,
                "chainId": {"type": "integer", "nullable": True},
                "proofs": {"type": "array", "items": _ref("Proof")},
            },
            ["method", "network", "chainId", "proofs"],
        ),
    }


def _comparison_schemas() -> dict[str, Any]:
    """The comparison's wire format, version 1 (``settlement_widgets.compare.wire`` reads
    it; ``docs/api/endpoint.md`` describes it). Every object is closed: unknown fields are
    refused."""
    str_ = {"type": "string"}
    whole = {"type": "integer", "minimum": 0}
    units = {"type": "string", "pattern": "^[0-9]{1,78}$", "description": "base units, exact"}
    seconds = {"type": "number", "minimum": 0}
    method = {"type": "string", "enum": ["channel", "v4", "aggregator"]}

    def closed(props: dict[str, Any]) -> dict[str, Any]:
        return _obj(props, list(props), additionalProperties=False)

    return {
        "ComparisonTx": closed(
            {
                "hash": {"type": "string", "pattern": "^0x[0-9a-fA-F]{64}$"},
                "chainId": {"type": "integer", "minimum": 1},
                "step": str_,
                "gasUsed": whole,
                "effectiveGasPriceWei": whole,
                "payer": _ref("Address"),
                "valueWei": whole,
                "explorerUrl": {"type": "string", "nullable": True},
            }
        ),
        "ComparisonRun": closed(
            {
                "method": method,
                "variant": str_,
                "label": str_,
                "txs": {"type": "array", "items": _ref("ComparisonTx")},
                "gasUsed": {**whole, "description": "the sum of the txs' gasUsed"},
                "costNativeWei": whole,
                "costUsd": {"type": "number", "minimum": 0, "nullable": True},
                "feesBaseUnits": {
                    "type": "object",
                    "additionalProperties": {"type": "string", "pattern": "^-?[0-9]{1,78}$"},
                },
                "receivedBaseUnits": units,
                "wallSeconds": seconds,
                "blocks": whole,
                "signaturePrompts": whole,
                "transactionPrompts": whole,
                "lockedBaseUnits": units,
                "lockedSeconds": seconds,
                "disputeWindowSeconds": {**whole, "nullable": True},
                "trust": str_,
                "ifCounterpartyVanishes": str_,
            }
        ),
        "Comparison": closed(
            {
                "version": {"type": "integer", "enum": [1]},
                "network": str_,
                "measuredAt": {"type": "string", "format": "date-time"},
                "intent": closed(
                    {
                        "amount": {"type": "string", "pattern": r"^[0-9]+(\.[0-9]+)?$"},
                        "asset": str_,
                        "sourceChain": {"type": "integer", "minimum": 1},
                        "destinationChain": {"type": "integer", "minimum": 1},
                        "payments": {"type": "integer", "minimum": 1},
                        "counterparty": str_,
                    }
                ),
                "runs": {"type": "array", "items": _ref("ComparisonRun")},
                "unavailable": {"type": "object", "additionalProperties": str_},
                "cheapest": {**str_, "nullable": True, "description": "a run's label"},
                "fastest": {**str_, "nullable": True, "description": "a run's label"},
            }
        ),
        "PublishRequest": _obj(
            {
                "action": {"type": "string", "enum": ["compare:publish"]},
                "comparison": _ref("Comparison"),
            },
            ["action", "comparison"],
        ),
        "Published": _obj(
            {
                "status": {"type": "string", "enum": ["ok"]},
                "network": str_,
                "measuredAt": {"type": "string", "format": "date-time"},
                "runs": whole,
            },
            ["status", "network", "measuredAt", "runs"],
        ),
    }


def openapi_document(base_url: str = "/") -> dict[str, Any]:
    """The OpenAPI 3.0 document for a server whose ``base_url`` is ``base_url``."""
    err = _ref("Error")
    forbidden = _json(err, "No valid token (or cookie + XSRF header)")
    unavailable = _json(err, "The configured network is not available (e.g. no local sandbox)")
    return {
        "openapi": "3.0.3",
        "info": {
            "title": "settlement_widgets /api/settlement",
            "version": "1",
            "description": (
                "Configuration, faucet proxy, v4 contract ownership and proof log of the "
                "settlement methods. Every error is a JSON object with an `error` field."
            ),
        },
        "servers": [{"url": base_url.rstrip("/") or "/"}],
        "security": [{"token": []}, {"tokenQuery": []}],
        "paths": {
            "/api/settlement": {
                "get": {
                    "operationId": "getSettlementConfig",
                    "summary": (
                        "Methods and contracts of the configured network, and the last "
                        "comparison of the methods published for it"
                    ),
                    "parameters": [
                        {
                            "name": "If-None-Match",
                            "in": "header",
                            "required": False,
                            "schema": {"type": "string"},
                            "description": "The ETag of a body already held: 304 if unchanged",
                        }
                    ],
                    "responses": {
                        "200": {
                            **_json(_ref("Config"), "The configuration body"),
                            "headers": {
                                "ETag": {
                                    "schema": {"type": "string"},
                                    "description": "Strong validator of the body's bytes",
                                },
                                "Cache-Control": {
                                    "schema": {"type": "string"},
                                    "description": "`private, no-cache`: revalidate each use",
                                },
                            },
                        },
                        "304": {"description": "Not modified: the held body is current"},
                        "403": forbidden,
                        "503": unavailable,
                    },
                },
                "post": {
                    "operationId": "postSettlementAction",
                    "summary": (
                        "Run an action: channel:faucet, v4:contracts, or compare:publish "
                        "(the served network's comparison, carried by the next GET)"
                    ),
                    "requestBody": {
                        "required": True,
                        "content": {
                            "application/json": {
                                "schema": {
                                    "oneOf": [
                                        _ref("FaucetRequest"),
                                        _ref("ContractsRequest"),
                                        _ref("PublishRequest"),
                                    ]
                                }
                            }
                        },
                    },
                    "responses": {
                        "200": _json(
                            {
                                "oneOf": [
                                    _ref("FaucetOk"),
                                    _ref("FaucetFallback"),
                                    _ref("Contracts"),
                                    _ref("Published"),
                                ]
                            },
                            "Faucet answer (ok, or fallback when the faucet failed), contracts, "
                            "or the comparison published (visible to the next GET)",
                        ),
                        "400": _json(
                            err,
                            "Invalid request, unknown action, missing or invalid userAddress, "
                            "missing or invalid comparison (the error names the field)",
                        ),
                        "403": forbidden,
                        "409": _json(
                            err, "compare:publish: the comparison was measured on another network"
                        ),
                        "413": _json(
                            err, "Body larger than 64 KiB (1 MiB + 1 KiB for compare:publish)"
                        ),
                        "429": _json(
                            err,
                            "Too many faucet requests for this address",
                            headers={
                                "Retry-After": {
                                    "description": "Seconds to wait",
                                    "schema": {"type": "integer"},
                                }
                            },
                        ),
                        "503": unavailable,
                    },
                },
            },
            "/api/settlement/proofs/{method}": {
                "get": {
                    "operationId": "getSettlementProofs",
                    "summary": "The steps this installation performed with a method",
                    "parameters": [
                        {
                            "name": "method",
                            "in": "path",
                            "required": True,
                            "schema": {"type": "string", "enum": ["channel", "v4"]},
                        }
                    ],
                    "responses": {
                        "200": _json(_ref("Proofs"), "The proof log of the method"),
                        "403": forbidden,
                        "404": _json(err, "Unknown method"),
                        "503": unavailable,
                    },
                },
            },
            "/api/settlement/openapi.json": {
                "get": {
                    "operationId": "getSettlementOpenAPI",
                    "summary": "This document",
                    "responses": {
                        "200": _json({"type": "object"}, "OpenAPI document"),
                        "403": forbidden,
                    },
                }
            },
        },
        "components": {
            "schemas": _schemas(),
            "securitySchemes": {
                "token": {
                    "type": "apiKey",
                    "in": "header",
                    "name": "Authorization",
                    "description": "`token <server token>`",
                },
                "tokenQuery": {"type": "apiKey", "in": "query", "name": "token"},
            },
        },
    }
