"""Ownership notes of v4:contracts from facts (pure), and the recorded-Sepolia fallback."""

from __future__ import annotations

from settlement_widgets.api.ownership import (
    CREATE2_DEPLOYER,
    RECORDED_SEPOLIA_FACTS,
    SOURCE_RECORDED,
    OwnerFact,
    contracts_body,
    ownership_notes,
    redact_url,
)
from settlement_widgets.networks import SEPOLIA

HOOK = "0x" + "33" * 20
EOA = "0x" + "66" * 20


def test_contract_owner_means_no_policies() -> None:
    (note,) = ownership_notes((OwnerFact("policyHook", HOOK, CREATE2_DEPLOYER, True),), "chain")
    assert note["canHoldPolicies"] is False
    assert "CREATE2 deterministic deployer" in note["text"]
    assert "POLICY_MISSING" in note["text"]
    (other,) = ownership_notes((OwnerFact("policyHook", HOOK, EOA, True),), "chain")
    assert other["canHoldPolicies"] is False and "a contract" in other["text"]


def test_account_owner_can_hold_policies() -> None:
    (note,) = ownership_notes((OwnerFact("policyHook", HOOK, EOA, False),), "chain")
    assert note == {
        "contract": "policyHook",
        "address": HOOK,
        "source": "chain",
        "owner": EOA,
        "ownerIsContract": False,
        "canHoldPolicies": True,
        "text": f"PolicyHook owner is {EOA[:10]}...{EOA[-8:]} (an account): it can call "
        "setPolicy, so the hook can hold policies.",
    }


def test_unreadable_owner_is_reported() -> None:
    (note,) = ownership_notes((OwnerFact("settlementAdapter", HOOK, error="boom"),), "chain")
    assert note == {
        "contract": "settlementAdapter",
        "address": HOOK,
        "source": "chain",
        "text": "SettlementAdapter owner could not be read: boom",
    }


async def test_sepolia_without_rpc_uses_the_recorded_facts_marked_as_such() -> None:
    body = await contracts_body(SEPOLIA.with_rpc_url(None))
    assert body["notes"] == ownership_notes(RECORDED_SEPOLIA_FACTS, SOURCE_RECORDED)
    assert SOURCE_RECORDED == "recorded from Sepolia on 2026-02-08"
    assert body["deployer"] == SEPOLIA.deployer


def test_rpc_urls_are_redacted_to_scheme_and_host() -> None:
    assert redact_url("https://eth-sepolia.example/v2/SECRETKEY") == "https://eth-sepolia.example"
    assert redact_url("http://user:pw@127.0.0.1:8545/?key=x") == "http://127.0.0.1:8545"
    assert redact_url("not a url") == "<RPC URL>"
