"""State/challenge signatures: round trips, eth-account as the reference, clear errors."""

from __future__ import annotations

import eth_abi
import pytest
from erc7824_strategies import (
    ADJUDICATOR,
    BROKER_KEY,
    CHAIN_ID,
    CUSTODY,
    TOKEN,
    USER_KEY,
    channel_ids,
    private_keys,
    secrets,
    states,
)
from eth_account import Account
from eth_account.messages import encode_defunct, encode_typed_data
from eth_hash.auto import keccak
from hypothesis import given, settings
from hypothesis import strategies as st

from settlement_widgets.channel.v0_5.core import (
    STATE_TYPEHASH,
    Allocation,
    Channel,
    EIP712Domain,
    State,
    StateIntent,
    as_private_key,
    challenge_digest,
    channel_id,
    custody_domain,
    packed_challenge,
    packed_state,
    recover_challenge_signer,
    recover_state_signer,
    sign_challenge,
    sign_state,
    state_digest,
    state_eip712_digest,
    state_typed_data,
    verify_challenge_signature,
    verify_state_signature,
)
from settlement_widgets.channel.v0_5.core.eip712 import (
    CHALLENGE_STATE_TYPEHASH,
    as_domain_separator,
)
from settlement_widgets.errors import (
    InvalidAddressError,
    InvalidSignatureError,
    InvalidStateError,
    SettlementValueError,
    UnknownOptionError,
)
from settlement_widgets.keys import SECP256K1_N, PrivateKey
from settlement_widgets.wallet import WalletClient

USER = PrivateKey(USER_KEY)
BROKER = PrivateKey(BROKER_KEY)
DOMAIN = custody_domain(CHAIN_ID, CUSTODY)
CID = channel_id(Channel((USER.address, BROKER.address), ADJUDICATOR, 3600, 1), CHAIN_ID)
STATE = State(
    StateIntent.OPERATE,
    7,
    b"\x01\x02",
    (Allocation(USER.address, TOKEN, 10), Allocation(BROKER.address, TOKEN, 5)),
)


def _hex(sig: bytes) -> str:
    return "0x" + bytes(sig).hex()


def _custody_reference_digest(cid: bytes, state: State, typehash: bytes) -> bytes:
    """Custody.sol's Utils.recoverStateEIP712Signer written with eth_abi, as the reference."""
    allocs = [a.to_abi() for a in state.allocations]
    struct = keccak(
        eth_abi.encode(
            ["bytes32", "bytes32", "uint8", "uint256", "bytes32", "bytes32"],
            [
                typehash,
                cid,
                int(state.intent),
                state.version,
                keccak(state.data),
                keccak(eth_abi.encode(["(address,address,uint256)[]"], [allocs])),
            ],
        )
    )
    return keccak(b"\x19\x01" + DOMAIN.separator + struct)


@settings(max_examples=60, deadline=None)
@given(secret=secrets, cid=channel_ids, state=states())
def test_signatures_equal_eth_account_and_round_trip(
    secret: bytes, cid: bytes, state: State
) -> None:
    key = PrivateKey(secret)
    packed = packed_state(cid, state)
    # raw: eth-account unsafe_sign_hash over keccak(packedState)
    raw = sign_state(cid, state, key)
    assert raw == _hex(Account.unsafe_sign_hash(keccak(packed), secret).signature)
    assert recover_state_signer(cid, state, raw) == key.address
    # EIP-191 over the full packed bytes
    e191 = sign_state(cid, state, key, scheme="eip191")
    assert e191 == _hex(Account.sign_message(encode_defunct(primitive=packed), secret).signature)
    assert recover_state_signer(cid, state, e191, scheme="eip191") == key.address
    # EIP-712, custody encoding, against an eth_abi rendering of the Solidity expression
    e712 = sign_state(cid, state, key, scheme="eip712", domain=DOMAIN)
    digest = _custody_reference_digest(cid, state, STATE_TYPEHASH)
    assert e712 == _hex(Account.unsafe_sign_hash(digest, secret).signature)
    assert recover_state_signer(cid, state, e712, scheme="eip712", domain=DOMAIN) == key.address
    # strict EIP-712 digest equals eth-account's encode_typed_data of state_typed_data
    signable = encode_typed_data(full_message=state_typed_data(cid, state, DOMAIN))
    standard = keccak(b"\x19" + signable.version + signable.header + signable.body)
    assert state_eip712_digest(cid, state, DOMAIN, encoding="eip712") == standard
    # every scheme verifies in the contract's order
    for sig in (raw, e191, e712):
        assert verify_state_signature(cid, state, sig, key.address, domain=DOMAIN)
    assert not verify_state_signature(cid, state, e712, key.address)  # no domain: no EIP-712
    assert not verify_state_signature(
        cid, state, raw, USER.address if key != USER else BROKER.address
    )


@settings(max_examples=40, deadline=None)
@given(key=private_keys, cid=channel_ids, state=states())
def test_challenge_signatures(key: PrivateKey, cid: bytes, state: State) -> None:
    msg = packed_challenge(cid, state)
    raw = sign_challenge(cid, state, key)
    assert challenge_digest(cid, state) == keccak(msg)
    assert recover_challenge_signer(cid, state, raw) == key.address
    e191 = sign_challenge(cid, state, key, scheme="eip191")
    assert recover_address_191(msg, e191) == key.address
    e712 = sign_challenge(cid, state, key, scheme="eip712", domain=DOMAIN)
    assert challenge_digest(cid, state, "eip712", DOMAIN) == _custody_reference_digest(
        cid, state, CHALLENGE_STATE_TYPEHASH
    )
    for sig in (raw, e191, e712):
        assert verify_challenge_signature(cid, state, sig, key.address, domain=DOMAIN)
        # a challenge signature is not a state signature, and vice versa
        assert not verify_state_signature(cid, state, sig, key.address, domain=DOMAIN)
    assert not verify_challenge_signature(
        cid, state, sign_state(cid, state, key), key.address, domain=DOMAIN
    )


def recover_address_191(message: bytes, sig: str) -> str:
    return Account.recover_message(encode_defunct(primitive=message), signature=sig)


def test_key_forms_all_sign_alike() -> None:
    expected = sign_state(CID, STATE, USER)
    wallet = WalletClient(USER)
    local = Account.from_key(USER_KEY)
    for key in (USER, wallet, local, USER_KEY, bytes.fromhex(USER_KEY[2:]), USER_KEY[2:]):
        assert sign_state(CID, STATE, key) == expected  # type: ignore[arg-type]
    assert as_private_key(wallet) is USER


@pytest.mark.parametrize("bad", [None, 42, object(), "0x1234", b"\x00" * 32])
def test_unusable_keys_are_refused(bad: object) -> None:
    with pytest.raises(SettlementValueError):
        sign_state(CID, STATE, bad)  # type: ignore[arg-type]


def test_scheme_and_domain_errors() -> None:
    with pytest.raises(UnknownOptionError, match="did you mean 'eip712'"):
        sign_state(CID, STATE, USER, scheme="eip721")  # type: ignore[arg-type]
    with pytest.raises(SettlementValueError, match="custody domain"):
        sign_state(CID, STATE, USER, scheme="eip712")
    with pytest.raises(SettlementValueError, match="EIP712Domain"):
        state_digest(CID, STATE, "eip712", b"\x00" * 31)
    # a separator read from chain works like the domain object
    sep = "0x" + DOMAIN.separator.hex()
    assert sign_state(CID, STATE, USER, "eip712", sep) == sign_state(
        CID, STATE, USER, "eip712", DOMAIN
    )
    assert as_domain_separator(DOMAIN.separator) == DOMAIN.separator


def _flip_s(sig: str) -> str:
    raw = bytes.fromhex(sig[2:])
    s = int.from_bytes(raw[32:64], "big")
    v = 55 - raw[64]  # 27 <-> 28
    return "0x" + (raw[:32] + (SECP256K1_N - s).to_bytes(32, "big") + bytes([v])).hex()


def test_malformed_signatures_raise_clear_errors() -> None:
    sig = sign_state(CID, STATE, USER)
    high_s = _flip_s(sig)
    # the flipped signature is mathematically valid (eth-account still recovers it) ...
    assert Account._recover_hash(keccak(packed_state(CID, STATE)), signature=high_s) == USER.address
    # ... but not canonical: OpenZeppelin ECDSA reverts on it, and so do we
    with pytest.raises(InvalidSignatureError, match="high s"):
        recover_state_signer(CID, STATE, high_s)
    with pytest.raises(InvalidSignatureError, match="high s"):
        verify_state_signature(CID, STATE, high_s, USER.address)
    with pytest.raises(InvalidSignatureError, match="65 bytes, got 64"):
        recover_state_signer(CID, STATE, sig[:-2])
    with pytest.raises(InvalidSignatureError, match="65 bytes, got 66"):
        recover_state_signer(CID, STATE, sig + "00")
    with pytest.raises(InvalidSignatureError, match="not hex"):
        recover_state_signer(CID, STATE, "0xzz")
    bad_v = sig[:-2] + "1d"
    with pytest.raises(InvalidSignatureError, match="v=29"):
        recover_state_signer(CID, STATE, bad_v)
    # v as 0/1 (the ClearNode accepts both forms) recovers the same signer
    zero_one = sig[:-2] + ("00" if sig.endswith("1b") else "01")
    assert recover_state_signer(CID, STATE, zero_one) == USER.address


def test_wrong_checksum_address_is_refused_everywhere() -> None:
    wrong = USER.address[:2] + USER.address[2:].swapcase()  # mixed case, wrong checksum
    assert wrong.lower() == USER.address.lower() and wrong != USER.address
    with pytest.raises(InvalidAddressError, match="checksum"):
        Allocation(wrong, TOKEN, 1)
    with pytest.raises(InvalidAddressError, match="checksum"):
        Channel((wrong, BROKER.address), ADJUDICATOR, 3600, 1)
    with pytest.raises(InvalidAddressError, match="checksum"):
        verify_state_signature(CID, STATE, sign_state(CID, STATE, USER), wrong)
    with pytest.raises(InvalidAddressError, match="checksum"):
        custody_domain(CHAIN_ID, CUSTODY.swapcase().replace("0X", "0x"))
    # all-lowercase has no checksum to check: accepted and normalised
    assert Allocation(USER.address.lower(), TOKEN.lower(), 1).destination == USER.address


@pytest.mark.parametrize("bad_id", ["0x1234", "9ba0" * 16, "0x" + "zz" * 32, b"\x00" * 31, 12345])
def test_bad_channel_ids(bad_id: object) -> None:
    with pytest.raises(InvalidStateError, match="channel id"):
        packed_state(bad_id, STATE)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad_chain", [0, -1, True, "11155111", 2**256])
def test_bad_chain_ids(bad_chain: object) -> None:
    with pytest.raises(InvalidStateError, match="chain id"):
        channel_id(Channel((USER.address, BROKER.address), ADJUDICATOR, 3600, 1), bad_chain)  # type: ignore[arg-type]


def test_domain_validation_and_fields() -> None:
    d = EIP712Domain(name="x", chain_id=1)
    assert d.types() == [{"name": "name", "type": "string"}, {"name": "chainId", "type": "uint256"}]
    assert d.to_dict() == {"name": "x", "chainId": 1}
    with pytest.raises(SettlementValueError):
        EIP712Domain(name="x", chain_id=-1)
    with pytest.raises(SettlementValueError):
        EIP712Domain(name="x", salt=b"\x00")
    with pytest.raises(UnknownOptionError):
        state_eip712_digest(CID, STATE, DOMAIN, encoding="viem")  # type: ignore[arg-type]


@settings(max_examples=30, deadline=None)
@given(
    salt=st.binary(min_size=32, max_size=32), name=st.text(max_size=20), version=st.text(max_size=5)
)
def test_domain_separator_equals_eth_account(salt: bytes, name: str, version: str) -> None:
    domain = EIP712Domain(name, version, CHAIN_ID, CUSTODY, salt)
    signable = encode_typed_data(full_message=state_typed_data(CID, STATE, domain))
    assert signable.header == domain.separator


@pytest.mark.parametrize("bad", [None, 42, ["0x" + "11" * 20], b"\x11" * 20])
def test_non_string_addresses_get_clear_errors(bad: object) -> None:
    sig = sign_state(CID, STATE, USER)
    with pytest.raises(InvalidAddressError, match="must be a string"):
        verify_state_signature(CID, STATE, sig, bad)  # type: ignore[arg-type]
