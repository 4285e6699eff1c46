"""v4:contracts ownership notes read from a real chain (anvil): owner() and owner code."""

from __future__ import annotations

import re
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from settlement_widgets.api.ownership import CREATE2_DEPLOYER, contracts_body
from settlement_widgets.networks import SEPOLIA

pytestmark = pytest.mark.anvil

ANVIL = (
    Path(__file__).resolve().parents[2]
    / "contracts/node_modules/@foundry-rs/anvil-linux-amd64/bin/anvil"
)
EOA = "0x" + "66" * 20
DELEGATED = "0x" + "77" * 20


def returns_address(owner: str) -> str:
    """Runtime code answering every call with ``owner`` (PUSH20 owner, MSTORE, RETURN 32)."""
    return "0x73" + owner[2:].lower() + "60005260206000f3"


@pytest.fixture
def anvil() -> Iterator[str]:
    proc = subprocess.Popen(
        [str(ANVIL), "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        assert proc.stdout is not None
        for line in proc.stdout:  # blocks until anvil says where it listens
            found = re.search(r"Listening on (127\.0\.0\.1:\d+)", line)
            if found:  # keep draining its log so it never blocks on a full pipe
                threading.Thread(target=proc.stdout.read, daemon=True).start()
                yield f"http://{found.group(1)}"
                break
        else:
            pytest.fail("anvil exited without listening")
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def rpc(url: str, method: str, params: list[Any]) -> Any:
    reply = httpx.post(url, json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
    data = reply.json()
    assert "error" not in data, data
    return data["result"]


def net(rpc_url: str, hook: str, adapter: str) -> Any:
    from dataclasses import replace

    contracts = replace(SEPOLIA.contracts, policy_hook=hook, settlement_adapter=adapter)
    return replace(SEPOLIA, name="local", chain_id=31337, contracts=contracts, rpc_url=rpc_url)


async def test_notes_are_read_from_chain(anvil: str) -> None:
    hook, adapter, no_owner = ("0x" + c * 40 for c in "abc")
    assert rpc(anvil, "eth_getCode", [CREATE2_DEPLOYER, "latest"]) != "0x"  # anvil ships it
    rpc(anvil, "anvil_setCode", [hook, returns_address(CREATE2_DEPLOYER)])
    rpc(anvil, "anvil_setCode", [adapter, returns_address(EOA)])
    rpc(anvil, "anvil_setCode", [no_owner, "0x00"])  # STOP: owner() returns nothing

    body = await contracts_body(net(anvil, hook, adapter))
    hook_note, adapter_note = body["notes"]
    assert hook_note["source"] == adapter_note["source"] == "chain"
    assert hook_note["owner"] == CREATE2_DEPLOYER
    assert hook_note["ownerIsContract"] is True
    assert hook_note["canHoldPolicies"] is False
    assert adapter_note["owner"] == "0x6666666666666666666666666666666666666666"
    assert adapter_note["ownerIsContract"] is False

    # an EOA owner (also one delegated with EIP-7702) can hold policies
    rpc(anvil, "anvil_setCode", [DELEGATED, "0xef0100" + "22" * 20])
    rpc(anvil, "anvil_setCode", [hook, returns_address(DELEGATED)])
    hook_note, _ = (await contracts_body(net(anvil, hook, adapter)))["notes"]
    assert hook_note["ownerIsContract"] is False and hook_note["canHoldPolicies"] is True

    body = await contracts_body(net(anvil, hook, no_owner))
    assert "owner() returned no value" in body["notes"][1]["text"]
    assert "owner" not in body["notes"][1]


async def test_unreachable_rpc_is_a_note_and_sepolia_falls_back(closed_port: int) -> None:
    url = f"http://127.0.0.1:{closed_port}/v2/SECRETKEY"
    local = await contracts_body(net(url, "0x" + "aa" * 20, "0x" + "bb" * 20), rpc_timeout=5)
    (note,) = local["notes"]
    assert note["text"].startswith("Ownership not read from chain: cannot read ownership")
    assert "SECRETKEY" not in str(local)
    sepolia = await contracts_body(SEPOLIA.with_rpc_url(url), rpc_timeout=5)
    failure, hook_note, adapter_note = sepolia["notes"]
    assert failure["source"] == "chain"
    assert hook_note["source"] == adapter_note["source"] == "recorded from Sepolia on 2026-02-08"
    assert "SECRETKEY" not in str(sepolia)
