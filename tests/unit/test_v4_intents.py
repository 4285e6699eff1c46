"""EIP-712 intents: the deployed adapter's verified vector, eth-account as the reference."""

from __future__ import annotations

import pytest
from eth_account.messages import encode_typed_data
from eth_hash.auto import keccak
from hypothesis import given, settings
from hypothesis import strategies as st

from settlement_widgets.errors import (
    ConfigurationError,
    InvalidAddressError,
    InvalidAmountError,
    InvalidSignatureError,
    SettlementValueError,
)
from settlement_widgets.keys import PrivateKey
from settlement_widgets.v4 import (
    INTENT_TYPEHASH,
    SEPOLIA_ADAPTER_DOMAIN,
    Eip712Domain,
    Intent,
    domain_separator,
    intent_digest,
    intent_id,
    intent_struct_hash,
    recover_intent_signer,
    sign_intent,
)
from settlement_widgets.wallet import WalletClient

# ``hashpass-tech/jack``: the on-chain hashIntent result in the v4 proof
VECTOR = Intent(
    id=intent_id("jack-demo-intent-hash"),
    user="0x114d72D97Aa9C413A1ba3f0Cd37F439D668EA1aD",
    token_in="0xfFf9976782d46CC05630D1f6eBAb18b2324d6B14",
    token_out="0x1c7D4B196Cb0C7B01d743Fbc6116a902379C7238",
    amount_in=10**18,
    min_amount_out=2 * 10**9,
    deadline=1770579045,
)
USER_KEY = PrivateKey("0x" + "42" * 32)


def _reference_digest(intent: Intent, domain: Eip712Domain) -> bytes:
    signable = encode_typed_data(full_message=intent.typed_data(domain))
    return keccak(b"\x19" + signable.version + signable.header + signable.body)


def test_sepolia_vector() -> None:
    assert INTENT_TYPEHASH.hex() == (
        "53cc930a8fdaaeaa4f5fe6da8cce90368dbd1b970895e2662d54de67dc99f928"
    )
    assert domain_separator(SEPOLIA_ADAPTER_DOMAIN).hex() == (
        "913927e40451c55907b52221e622ffb104ff0afe894bcac07f199da869022990"
    )
    assert intent_struct_hash(VECTOR).hex() == (
        "7ccd609e1cb2cec575d18d3061e413c45d5bc93dc9bb217f8e6fce64ef0bd689"
    )
    assert intent_digest(VECTOR, SEPOLIA_ADAPTER_DOMAIN).hex() == (
        "e76f5bd1033bbeab9427b8b35d3ec02c0948625bdb0f2b3891d0f3d2a42592d8"
    )
    assert _reference_digest(VECTOR, SEPOLIA_ADAPTER_DOMAIN) == intent_digest(
        VECTOR, SEPOLIA_ADAPTER_DOMAIN
    )


def test_signature_is_not_hashed_and_domain_matters() -> None:
    signed = VECTOR.with_signature(b"\x01" * 65)
    assert intent_digest(signed, SEPOLIA_ADAPTER_DOMAIN) == intent_digest(
        VECTOR, SEPOLIA_ADAPTER_DOMAIN
    )
    ours = Eip712Domain(
        "SettlementAdapter", "1", 11155111, SEPOLIA_ADAPTER_DOMAIN.verifying_contract
    )
    assert intent_digest(VECTOR, ours) != intent_digest(VECTOR, SEPOLIA_ADAPTER_DOMAIN)


addresses = st.binary(min_size=20, max_size=20).map(lambda b: "0x" + b.hex())
uint = st.integers(min_value=0, max_value=2**256 - 1)


@settings(max_examples=40, deadline=None)
@given(
    raw_id=st.binary(min_size=32, max_size=32),
    tokens=st.lists(addresses, min_size=2, max_size=2, unique=True),
    amount_in=st.integers(min_value=1, max_value=2**256 - 1),
    min_out=uint,
    deadline=uint,
    name=st.text(max_size=20),
    chain_id=st.integers(min_value=1, max_value=2**64),
    contract=addresses,
)
def test_digest_equals_eth_account(
    raw_id: bytes,
    tokens: list[str],
    amount_in: int,
    min_out: int,
    deadline: int,
    name: str,
    chain_id: int,
    contract: str,
) -> None:
    intent = Intent(raw_id, USER_KEY.address, tokens[0], tokens[1], amount_in, min_out, deadline)
    domain = Eip712Domain(name, "1", chain_id, contract)
    assert intent_digest(intent, domain) == _reference_digest(intent, domain)


def test_sign_and_recover() -> None:
    intent = Intent(intent_id("x"), USER_KEY.address, VECTOR.token_in, VECTOR.token_out, 5, 4, 10)
    signed = sign_intent(intent, USER_KEY, SEPOLIA_ADAPTER_DOMAIN)
    assert signed.signature is not None and len(signed.signature_bytes) == 65
    assert recover_intent_signer(signed, SEPOLIA_ADAPTER_DOMAIN) == USER_KEY.address
    # a wallet and a hex secret sign identically (deterministic RFC 6979 signatures)
    wallet = WalletClient(USER_KEY)
    assert sign_intent(intent, wallet, SEPOLIA_ADAPTER_DOMAIN) == signed
    assert sign_intent(intent, USER_KEY.secret_hex(), SEPOLIA_ADAPTER_DOMAIN) == signed
    # the user's signature recovers to someone else under another domain
    other = Eip712Domain("SettlementAdapter", "1", 1, SEPOLIA_ADAPTER_DOMAIN.verifying_contract)
    assert recover_intent_signer(signed, other) != USER_KEY.address
    with pytest.raises(InvalidSignatureError, match="only the user"):
        sign_intent(intent, PrivateKey("0x" + "43" * 32), SEPOLIA_ADAPTER_DOMAIN)
    with pytest.raises(InvalidSignatureError, match="not signed"):
        recover_intent_signer(intent, SEPOLIA_ADAPTER_DOMAIN)


def test_intent_validation() -> None:
    good = {
        "id": VECTOR.id,
        "user": VECTOR.user,
        "token_in": VECTOR.token_in,
        "token_out": VECTOR.token_out,
        "amount_in": 1,
        "min_amount_out": 0,
        "deadline": 0,
    }
    assert Intent(**{**good, "id": bytes(32)}).id == "0x" + "00" * 32
    assert Intent(**{**good, "user": VECTOR.user.lower()}).user == VECTOR.user
    bad: list[tuple[dict[str, object], type[Exception]]] = [
        ({"id": "0x1234"}, SettlementValueError),
        ({"id": "zz" * 32}, SettlementValueError),
        ({"user": "0x0000000000000000000000000000000000000000"}, InvalidAddressError),
        ({"token_in": "0x114D72d97Aa9C413A1ba3f0Cd37F439D668EA1aD"}, InvalidAddressError),
        ({"token_out": VECTOR.token_in}, SettlementValueError),
        ({"amount_in": 0}, InvalidAmountError),
        ({"amount_in": 1.5}, InvalidAmountError),
        ({"min_amount_out": -1}, InvalidAmountError),
        ({"deadline": 2**256}, InvalidAmountError),
        ({"amount_in": True}, InvalidAmountError),
        ({"signature": "0xnothex"}, InvalidSignatureError),
    ]
    for change, error in bad:
        with pytest.raises(error):
            Intent(**{**good, **change})  # type: ignore[arg-type]


def test_domain_from_erc5267() -> None:
    result = (
        b"\x0f",
        "SettlementAdapter",
        "1",
        1337,
        SEPOLIA_ADAPTER_DOMAIN.verifying_contract,
        b"\x00" * 32,
        [],
    )
    domain = Eip712Domain.from_erc5267(result)
    assert domain == Eip712Domain(
        "SettlementAdapter", "1", 1337, SEPOLIA_ADAPTER_DOMAIN.verifying_contract
    )
    with pytest.raises(ConfigurationError, match="0x1f"):
        Eip712Domain.from_erc5267((b"\x1f", *result[1:]))
    with pytest.raises(ConfigurationError, match="shape"):
        Eip712Domain.from_erc5267(("x",))
    with pytest.raises(SettlementValueError):
        Eip712Domain("n", "1", 0, SEPOLIA_ADAPTER_DOMAIN.verifying_contract)


def test_to_json_is_exact() -> None:
    data = VECTOR.to_json()
    assert data["amountIn"] == "1000000000000000000"
    assert data["id"] == "0x" + keccak(b"jack-demo-intent-hash").hex()
    assert data["signature"] is None
