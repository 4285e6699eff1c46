"""The compute command on a vector file of the same format with other keys (issue 22: such
files will be used). Every key and address of the published file is swapped for a fresh
one throughout; nothing may fail, and what the outputs claim must hold for the new keys:
each state signature recovers to the new signer over the digest the vector states, and the
state ids and channel ids differ from the published ones (they hash the new wallets)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from eth_keys import keys

from settlement_widgets.channel.v1.core.vectors import compute_document
from settlement_widgets.keys import PrivateKey

PUBLISHED = json.loads(
    (Path(__file__).parent / "data" / "nitrolite-v1-vectors.json").read_text(encoding="utf-8")
)


def _swapped() -> tuple[dict[str, Any], dict[str, str]]:
    """The published file with each role's key and address replaced (every spelling)."""
    text = json.dumps(PUBLISHED)
    new_addresses: dict[str, str] = {}
    for index, (role, entry) in enumerate(sorted(PUBLISHED["meta"]["keys"].items()), start=11):
        key = PrivateKey(bytes([index]) * 32)
        old_secret, old_address = entry["private_key"], entry["address"]
        text = text.replace(old_secret, key.secret_hex())
        for spelling in (old_address, old_address.lower(), old_address.lower()[2:]):
            new = key.address if spelling == old_address else key.address.lower()
            text = text.replace(spelling, new if spelling.startswith("0x") else new[2:])
        new_addresses[role] = key.address
    return json.loads(text), new_addresses


def _recover(digest_hex: str, signature_hex: str) -> str:
    raw = bytes.fromhex(signature_hex.removeprefix("0x"))[1:]  # drop the validator byte
    sig = keys.Signature(raw[:64] + bytes([raw[64] - 27]))
    return sig.recover_public_key_from_msg_hash(bytes.fromhex(digest_hex[2:])).to_checksum_address()


def test_a_file_with_other_keys_computes_and_signs_with_them() -> None:
    document, addresses = _swapped()
    stripped = {
        **document,
        "vectors": {
            group: [{k: v for k, v in vector.items() if k != "outputs"} for vector in vectors]
            for group, vectors in document["vectors"].items()
        },
    }
    out, report = compute_document(stripped)
    assert report.failed == [] and report.unsupported == {}
    assert report.computed == sum(len(v) for v in PUBLISHED["vectors"].values())
    lifecycle = [v for v in out["vectors"]["state_lifecycle"] if "user_sig" in v["outputs"]]
    assert len(lifecycle) >= 12
    for vector, published in zip(
        lifecycle,
        [v for v in PUBLISHED["vectors"]["state_lifecycle"] if "user_sig" in v["outputs"]],
        strict=True,
    ):
        o = vector["outputs"]
        assert o["state_id"] != published["outputs"]["state_id"]
        assert _recover(o["eip191_digest"], o["node_sig"]) == addresses["node"]
        if o["user_sig"]:
            signer = vector["inputs"]["signers"]["user_sig"]
            assert signer in addresses.values()
            assert _recover(o["eip191_digest"], o["user_sig"]) == signer
    frames = out["vectors"]["rpc_client_frames"]
    assert all("error" not in v for v in frames)
