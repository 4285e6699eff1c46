"""No known answers in the package: every output is computed from the vector's inputs.

Known answers (the upstream test constants) live in the published vector file, which the
tests compare our outputs with; the package must not carry them, or on other inputs it
would report the upstream case's answer. The compute command chooses a vector's output
shape from its ``sdk_functions`` and ``meta.known_answer_checks``, never from its values.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

from settlement_widgets.channel.v1.core.vectors import compute_document

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "settlement_widgets"
DATA = Path(__file__).resolve().parent / "data" / "nitrolite-v1-vectors.json"
PUBLISHED: dict[str, Any] = json.loads(DATA.read_text())
SOURCE_SUFFIXES = {".py", ".json", ".js", ".ts", ".sol", ".txt", ".md", ".toml", ".cfg"}


def _output_texts() -> str:
    texts: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, str):
            texts.append(value.lower())
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    for vectors in PUBLISHED["vectors"].values():
        for vector in vectors:
            walk(vector.get("outputs", {}))
    return "\n".join(texts)


def _sources() -> list[Path]:
    return [p for p in sorted(PACKAGE.rglob("*")) if p.is_file() and p.suffix in SOURCE_SUFFIXES]


def test_no_long_hex_constant_of_the_vector_outputs_is_in_the_package() -> None:
    outputs = _output_texts()
    long_hex = re.compile(r"[0-9a-fA-F]{64,}")
    found = [
        f"{path.relative_to(ROOT)}: {match.group(0)[:24]}…"
        for path in _sources()
        for match in long_hex.finditer(path.read_text(encoding="utf-8", errors="replace"))
        if match.group(0).lower() in outputs
    ]
    assert found == []


def test_no_known_answer_table_is_defined_in_the_package() -> None:
    # a module-level name that says it holds known answers (_PACK_STATE_KAT, _KAT_UPDATE,
    # KNOWN_HOME_CHANNEL_IDS, _KNOWN_ANSWERS ...); unrelated KNOWN_TOKENS-style names pass
    table = re.compile(
        r"^_?(?:[A-Z0-9_]*_)?(?:KAT|KNOWN_ANSWERS?|KNOWN_[A-Z0-9_]*_IDS)(?:_[A-Z0-9_]*)?"
        r"\s*(?::[^=\n]*)?=",
        re.MULTILINE,
    )
    found = [
        f"{path.relative_to(ROOT)}: {match.group(0).strip()}"
        for path in _sources()
        if path.suffix == ".py"
        for match in table.finditer(path.read_text(encoding="utf-8"))
    ]
    assert found == []


def _stripped(document: dict[str, Any]) -> dict[str, Any]:
    return {
        **document,
        "vectors": {
            group: [{k: v for k, v in vector.items() if k != "outputs"} for vector in vectors]
            for group, vectors in document["vectors"].items()
        },
    }


def _computed(document: dict[str, Any], vector_id: str) -> dict[str, Any]:
    out, report = compute_document(_stripped(document))
    assert report.failed == []
    group = vector_id.rsplit("-", 1)[0]
    vector = next(v for v in out["vectors"][group] if v["id"] == vector_id)
    outputs: dict[str, Any] = vector["outputs"]
    return outputs


def test_known_answer_fields_follow_the_inputs_not_the_upstream_case() -> None:
    """Change the inputs of every known-answer vector: the expected fields are the new
    inputs' answers (they used to be the upstream constants, with ``kat_match`` false)."""
    document = copy.deepcopy(PUBLISHED)
    vectors = document["vectors"]
    vectors["state_packing_kat"][0]["inputs"]["state"]["version"] = "25"
    vectors["channel_id"][0]["inputs"]["nonce"] = "43"
    vectors["escrow_channel_id"][0]["inputs"]["state_version"] = "43"
    vectors["channel_session_key"][1]["inputs"]["metadata_hash"] = "0x" + "ab" * 32
    vectors["app_session"][0]["inputs"]["session_data"] = '{"cart":"other"}'
    vectors["app_session"][1]["inputs"]["definition"]["nonce"] = "123456790"
    vectors["app_session"][2]["inputs"]["update"]["version"] = "4"
    vectors["app_session_key"][0]["inputs"]["state"]["version"] = "2"
    checks = [
        ("state_packing_kat-001", "packed_state", "expected_packed_state"),
        ("channel_id-001", "home_channel_id", "expected_kat"),
        ("escrow_channel_id-001", "escrow_channel_id", "expected_kat"),
        ("channel_session_key-002", "packed", "expected_kat"),
        ("app_session-001", "result", "expected_kat"),
        ("app_session-002", "result", "expected_kat"),
        ("app_session-003", "result", "expected_kat"),
        ("app_session_key-001", "hash", "expected_kat"),
    ]
    published = {v["id"]: v["outputs"] for vs in PUBLISHED["vectors"].values() for v in vs}
    for vector_id, result, expected in checks:
        ours = _computed(document, vector_id)
        assert ours[result] != published[vector_id][result], vector_id
        assert ours[expected] == ours[result], vector_id
        assert ours["kat_match"] is True, vector_id


def test_the_output_shape_comes_from_sdk_functions_and_the_known_answer_list() -> None:
    document = copy.deepcopy(PUBLISHED)
    # not listed as a known-answer check any more: the same inputs, no known-answer fields
    document["meta"]["known_answer_checks"] = [
        c for c in document["meta"]["known_answer_checks"] if c["id"] != "channel_id-001"
    ]
    assert set(_computed(document, "channel_id-001")) == {
        "channel_metadata",
        "abi_encoded_definition",
        "keccak256",
        "home_channel_id",
    }
    # an app-session vector that names only generateAppSessionIDV1 gets the bare id, even
    # with session data present in its inputs
    vector = document["vectors"]["app_session"][3]
    vector["sdk_functions"] = ["generateAppSessionIDV1"]
    ours = _computed(document, "app_session-004")
    assert set(ours) == {"result"}
    assert ours["result"] == PUBLISHED["vectors"]["app_session"][3]["outputs"]["app_session_id"]
