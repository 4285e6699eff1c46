"""Our compiled Custody and SimpleConsensus are ABI-identical to the deployed Nitrolite ones.

The reference list (``data/custody-abi-selectors.txt``) was generated from the
official SDK's CustodyAbi and checked against the deployed source. Every function selector,
event topic and error selector it lists must be in our compiled ABI under the same name, with
the same parameter types (the selector/topic is their hash) and, for Custody, the same
mutability, output types and indexed event parameters. The SDK's stale pre-0.1 adjudicator
line (0x71e73858) is skipped, as the file itself says.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from eth_hash.auto import keccak

from settlement_widgets.contracts import load_artifact

STALE_ADJUDICATOR_SELECTOR = "0x71e73858"


# A copy of shared/reference/custody-abi-selectors.txt travels with the tests (CI has no
# shared folder); when the shared folder is there, the copy must still equal it.
REFERENCE_COPY = Path(__file__).resolve().parent / "data" / "custody-abi-selectors.txt"


def _shared_reference() -> Path | None:
    for parent in Path(__file__).resolve().parents:
        path = parent / "shared" / "reference" / "custody-abi-selectors.txt"
        if path.is_file():
            return path
    return None


def _split_top(params: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in params:
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
            continue
        depth += ch == "("
        depth -= ch == ")"
        cur += ch
    if cur.strip():
        parts.append(cur.strip())
    return parts


def _canonical_type(param: str) -> str:
    """``(uint8 intent, ...)[] candidate`` -> ``(uint8,...)[]``; ``bytes32 indexed id`` ->
    ``bytes32``."""
    param = param.strip()
    if param.startswith("("):
        depth = 0
        for i, ch in enumerate(param):
            depth += ch == "("
            depth -= ch == ")"
            if depth == 0:
                inner = ",".join(_canonical_type(p) for p in _split_top(param[1:i]))
                suffix = re.match(r"(\[\d*\])*", param[i + 1 :])
                return f"({inner}){suffix.group(0) if suffix else ''}"
    return param.split()[0]


def _parse_decl(text: str) -> tuple[str, str, list[str]]:
    """``function name(params) ...`` -> (name, canonical signature, raw param texts)."""
    match = re.match(r"(?:function|event|error)\s+(\w+)\(", text)
    assert match, text
    name = match.group(1)
    start = match.end() - 1
    depth = 0
    for i in range(start, len(text)):
        depth += text[i] == "("
        depth -= text[i] == ")"
        if depth == 0:
            params = _split_top(text[start + 1 : i])
            signature = f"{name}({','.join(_canonical_type(p) for p in params)})"
            return name, signature, params
    raise AssertionError(text)


def _reference() -> dict[str, list[dict[str, Any]]]:
    sections: dict[str, list[dict[str, Any]]] = {"Custody": [], "Adjudicator": []}
    section = None
    for line in REFERENCE_COPY.read_text().splitlines():
        if line.startswith("== "):
            section = line.split()[1]
            continue
        if section is None or not line.strip() or line.startswith(("#", "other")):
            continue
        match = re.match(r"(?:(fn|ev|err)\s+)?(0x[0-9a-f]+)\s+(.*)$", line)
        assert match, line
        kind, selector, rest = match.groups()
        kind = kind or "fn"
        entry: dict[str, Any] = {"kind": kind, "selector": selector, "text": rest}
        entry["name"], entry["signature"], entry["params"] = _parse_decl(rest)
        arrow = rest.rsplit(" -> ", 1)
        if len(arrow) == 2:
            entry["outputs"] = json.loads(arrow[1])
            entry["mutability"] = arrow[0].split()[-1]
        sections[section].append(entry)
    return sections


REFERENCE = _reference()
CUSTODY_LINES = REFERENCE["Custody"]
ADJUDICATOR_LINES = [
    e for e in REFERENCE["Adjudicator"] if e["selector"] != STALE_ADJUDICATOR_SELECTOR
]


def _abi_type(param: dict[str, Any]) -> str:
    t: str = param["type"]
    if t.startswith("tuple"):
        return "(" + ",".join(_abi_type(c) for c in param["components"]) + ")" + t[len("tuple") :]
    return t


def _compiled(contract: str) -> dict[str, dict[str, Any]]:
    """selector/topic (0x-hex) -> ABI item, for every function, event and error."""
    out: dict[str, dict[str, Any]] = {}
    for item in load_artifact(contract).abi:
        if item["type"] not in ("function", "event", "error"):
            continue
        signature = f"{item['name']}({','.join(_abi_type(i) for i in item['inputs'])})"
        digest = keccak(signature.encode())
        key = "0x" + (digest if item["type"] == "event" else digest[:4]).hex()
        out[key] = {**item, "signature": signature}
    return out


def test_reference_file_is_complete() -> None:
    shared = _shared_reference()
    if shared is not None:
        assert shared.read_text() == REFERENCE_COPY.read_text()
    kinds = [e["kind"] for e in CUSTODY_LINES]
    assert (kinds.count("fn"), kinds.count("ev"), kinds.count("err")) == (16, 10, 25)
    assert [e["name"] for e in ADJUDICATOR_LINES] == [
        "adjudicate",
        "compare",
        "getChannelImplDomainSeparator",
        "channelImpl",
        "setChannelImpl",
        "owner",
    ]


@pytest.mark.parametrize("entry", CUSTODY_LINES, ids=lambda e: f"{e['kind']}-{e['name']}")
def test_custody_item_is_present_and_equal(entry: dict[str, Any]) -> None:
    # the reference's own selector is the hash of the signature it prints
    digest = keccak(entry["signature"].encode())
    assert entry["selector"] == "0x" + (digest if entry["kind"] == "ev" else digest[:4]).hex()

    compiled = _compiled("Custody").get(entry["selector"])
    assert compiled is not None, f"{entry['signature']} ({entry['selector']}) missing from Custody"
    assert compiled["name"] == entry["name"]
    assert compiled["signature"] == entry["signature"]
    assert compiled["type"] == {"fn": "function", "ev": "event", "err": "error"}[entry["kind"]]
    if entry["kind"] == "fn":
        assert compiled["stateMutability"] == entry["mutability"]
        assert [o["type"] for o in compiled["outputs"]] == entry["outputs"]
    if entry["kind"] == "ev":
        indexed = [" indexed " in f" {p} " for p in entry["params"]]
        assert [bool(i.get("indexed")) for i in compiled["inputs"]] == indexed


@pytest.mark.parametrize("entry", ADJUDICATOR_LINES, ids=lambda e: e["name"])
def test_simple_consensus_item_is_present_and_equal(entry: dict[str, Any]) -> None:
    assert entry["selector"] == "0x" + keccak(entry["signature"].encode())[:4].hex()
    compiled = _compiled("SimpleConsensus").get(entry["selector"])
    assert compiled is not None, (
        f"{entry['signature']} ({entry['selector']}) missing from SimpleConsensus"
    )
    assert (compiled["type"], compiled["name"], compiled["signature"]) == (
        "function",
        entry["name"],
        entry["signature"],
    )


def test_adjudicate_is_not_view_and_custody_has_no_constructor_arguments() -> None:
    """adjudicate may deploy an ERC-6492 wallet, so it must not be view; the deployed custody
    was created without constructor arguments."""
    adjudicate = _compiled("SimpleConsensus")["0x0c08cabc"]
    assert adjudicate["stateMutability"] == "nonpayable"
    assert [o["type"] for o in adjudicate["outputs"]] == ["bool"]
    constructors = [i for i in load_artifact("Custody").abi if i["type"] == "constructor"]
    assert constructors == [{"type": "constructor", "inputs": [], "stateMutability": "nonpayable"}]
    simple = [i for i in load_artifact("SimpleConsensus").abi if i["type"] == "constructor"]
    assert [(p["name"], p["type"]) for p in simple[0]["inputs"]] == [
        ("owner", "address"),
        ("channelImpl_", "address"),
    ]


def test_custody_runtime_fits_the_contract_size_limit() -> None:
    """EIP-170: 24,576 bytes of runtime code, or the deployment fails on a real chain."""
    runtime = load_artifact("Custody").deployed_bytecode
    assert 0 < (len(runtime) - 2) // 2 <= 24_576
