"""Hook flags from addresses, the policy decision table, pool keys and CREATE2 salt mining."""

from __future__ import annotations

import pytest
from eth_hash.auto import keccak
from hypothesis import given, settings
from hypothesis import strategies as st

from settlement_widgets.errors import InvalidAddressError, InvalidAmountError, SettlementValueError
from settlement_widgets.networks import SEPOLIA
from settlement_widgets.v4 import (
    HOOK_FLAGS,
    Intent,
    Policy,
    PoolKey,
    create2_address,
    effective_min,
    evaluate_policy,
    exact_input_swap,
    explain_reason,
    hook_permissions,
    mine_hook_salt,
    reason_code,
    reason_name,
)
from settlement_widgets.v4.client.provider import DETERMINISTIC_PROXY_RUNTIME, classify_owner_code
from settlement_widgets.v4.core.pool import MAX_SQRT_PRICE, MIN_SQRT_PRICE

SEPOLIA_HOOK = SEPOLIA.contracts.policy_hook
A = "0x1111111111111111111111111111111111111111"
B = "0x2222222222222222222222222222222222222222"


def test_sepolia_hook_is_before_swap_only() -> None:
    perms = hook_permissions(SEPOLIA_HOOK)
    assert list(perms) == list(HOOK_FLAGS)
    assert len(perms) == 14
    assert [name for name, on in perms.items() if on] == ["beforeSwap"]


def test_every_flag_bit() -> None:
    for name, bit in HOOK_FLAGS.items():
        address = "0x" + f"{(1 << 20) | bit:040x}"
        assert [n for n, on in hook_permissions(address).items() if on] == [name]
    assert not any(hook_permissions("0x" + "00" * 19 + "00").values())
    # bit 14 and above are outside the mask
    assert not any(hook_permissions("0x" + f"{1 << 14:040x}").values())
    with pytest.raises(InvalidAddressError):
        hook_permissions("0x8080")


def test_reason_names() -> None:
    assert reason_name(b"\x00" * 32) == "OK"
    assert reason_name(keccak(b"POLICY_MISSING")) == "POLICY_MISSING"
    # the constants of the deployed ``JACKPolicyHook``
    assert reason_code("POLICY_MISSING").hex() == (
        "93ee933a9bf318778e1f78f93e323fd5ed0997896f1c8b2fdeca629907eda67e"
    )
    assert reason_code("POLICY_EXPIRED").hex() == (
        "b9cb725a84b96679b65acf09d49e0200a2239ef1b2a4490f5e7c7d344c38be5e"
    )
    assert reason_code("SLIPPAGE_EXCEEDED").hex() == (
        "d9edc390fd21fd889b8222e240f2ca232b2d0b33d8294ec0af40b51cd3a18efd"
    )
    assert reason_name("0x" + "ab" * 32) == "0x" + "ab" * 32
    assert "setPolicy" in explain_reason("POLICY_MISSING")
    with pytest.raises(SettlementValueError, match="known"):
        reason_code("NOPE")
    with pytest.raises(SettlementValueError):
        reason_name(b"\x00")


def test_decision_table() -> None:
    # the original's Foundry test: min 90, ref 100, 500 bps -> bound max(90, 95) = 95
    policy = Policy(90, 100, 1_000, 500, A, True)
    assert policy.effective_min == 95
    assert evaluate_policy(policy, 94, now=1_000) == (False, "SLIPPAGE_EXCEEDED")
    assert evaluate_policy(policy, 95, now=1_000) == (True, "OK")
    # a deadline equal to now is still valid; one second later it is not
    assert evaluate_policy(policy, 95, now=1_001) == (False, "POLICY_EXPIRED")
    assert evaluate_policy(None, 10**30, now=0) == (False, "POLICY_MISSING")
    assert evaluate_policy(Policy(0, 0, 0, 0, A, False), 1, now=0) == (False, "POLICY_MISSING")
    # the minimum wins over a loose slippage bound, and bounds floor
    assert effective_min(99, 100, 500) == 99
    assert effective_min(0, 101, 500) == 95  # 101 * 0.95 = 95.95 -> 95
    assert effective_min(0, 100, 10_000) == 0
    with pytest.raises(InvalidAmountError):
        effective_min(0, 100, 10_001)
    with pytest.raises(InvalidAmountError):
        evaluate_policy(policy, -1, now=0)


@settings(max_examples=100, deadline=None)
@given(
    min_out=st.integers(0, 2**128),
    ref=st.integers(0, 2**128),
    bps=st.integers(0, 10_000),
    quoted=st.integers(0, 2**129),
)
def test_bound_is_tight(min_out: int, ref: int, bps: int, quoted: int) -> None:
    bound = effective_min(min_out, ref, bps)
    policy = Policy(min_out, ref, 10, bps, A, True)
    assert evaluate_policy(policy, quoted, now=10)[0] is (quoted >= bound)
    assert bound >= min_out and bound <= max(min_out, ref)


def test_pool_key_and_swap() -> None:
    hook = SEPOLIA_HOOK
    key = PoolKey.for_tokens(B, A, fee=3000, tick_spacing=60, hooks=hook)
    assert (key.currency0, key.currency1) == (A, B)
    assert (
        key.pool_id
        == "0x"
        + keccak(
            bytes.fromhex(
                "00" * 12
                + A[2:]
                + "00" * 12
                + B[2:]
                + f"{3000:064x}"
                + f"{60:064x}"
                + "00" * 12
                + hook[2:].lower()
            )
        ).hex()
    )
    with pytest.raises(SettlementValueError, match="sorted"):
        PoolKey(B, A, 3000, 60, hook)
    with pytest.raises(SettlementValueError, match="fee"):
        PoolKey(A, B, 1_000_001, 60, hook)
    with pytest.raises(SettlementValueError, match="tickSpacing"):
        PoolKey(A, B, 3000, 0, hook)
    sell_a = Intent("0x" + "01" * 32, B, A, B, 10, 9, 0)
    assert exact_input_swap(sell_a, key).as_abi() == (True, -10, MIN_SQRT_PRICE + 1)
    sell_b = Intent("0x" + "01" * 32, B, B, A, 10, 9, 0)
    assert exact_input_swap(sell_b, key).as_abi() == (False, -10, MAX_SQRT_PRICE - 1)
    other = Intent("0x" + "01" * 32, B, A, "0x" + "33" * 20, 10, 9, 0)
    with pytest.raises(SettlementValueError, match="does not trade"):
        exact_input_swap(other, key)
    assert PoolKey.from_json(key.to_json()) == key


def test_create2_and_salt_mining() -> None:
    # EIP-1014 example 2: deployer 0xdeadbeef..., salt 0, init code 0x00
    assert (
        create2_address("0xdeadbeef00000000000000000000000000000000", 0, keccak(b"\x00"))
        == "0xB928f69Bb1D91Cd65274e3c79d8986362984fDA3"
    )
    found = mine_hook_salt(A, keccak(b"init"), 0x0080)
    assert found.address == create2_address(A, found.salt, keccak(b"init"))
    assert int(found.address, 16) & 0x3FFF == 0x0080
    # the first such salt: none below it qualifies
    prefix, code_hash = b"\xff" + bytes.fromhex(A[2:]), keccak(b"init")
    for salt in range(found.salt):
        digest = keccak(prefix + salt.to_bytes(32, "big") + code_hash)
        assert int.from_bytes(digest[30:], "big") & 0x3FFF != 0x0080
    assert found.attempts == found.salt + 1


def test_owner_classification() -> None:
    assert classify_owner_code(b"") == "eoa"
    assert classify_owner_code(bytes.fromhex("ef0100") + bytes(20)) == "eoa"  # EIP-7702
    assert classify_owner_code(DETERMINISTIC_PROXY_RUNTIME) == "create2-factory"
    # PUSH1 0xf1 is data, not a CALL
    assert classify_owner_code(bytes.fromhex("60f100")) == "contract-without-calls"
    assert classify_owner_code(bytes.fromhex("6000f1")) == "contract"
    assert classify_owner_code(bytes.fromhex("f4")) == "contract"
