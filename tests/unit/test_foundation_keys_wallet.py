"""Keys and wallets: fast coincurve path equals eth-account, secrets never shown."""

from __future__ import annotations

import pickle

import pytest
from eth_account import Account
from eth_hash.auto import keccak
from hypothesis import given, settings
from hypothesis import strategies as st

from settlement_widgets.addresses import checksum_from_bytes, short, to_checksum, validate_address
from settlement_widgets.errors import (
    ConfigurationError,
    InvalidAddressError,
    InvalidSignatureError,
    SettlementValueError,
)
from settlement_widgets.keys import SECP256K1_N, PrivateKey, recover_address
from settlement_widgets.wallet import WalletClient, is_connection_error

KEY = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80"
ADDRESS = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"


@settings(max_examples=60, deadline=None)
@given(secret=st.integers(min_value=1, max_value=SECP256K1_N - 1), msg=st.binary(max_size=64))
def test_sign_hash_equals_eth_account(secret: int, msg: bytes) -> None:
    raw = secret.to_bytes(32, "big")
    key = PrivateKey(raw)
    digest = keccak(msg)
    ours = key.sign_hash(digest)
    reference = Account.unsafe_sign_hash(digest, raw)
    assert ours == bytes(reference.signature)
    assert key.address == Account.from_key(raw).address
    assert recover_address(digest, ours) == key.address


def test_signature_validation() -> None:
    key = PrivateKey(KEY)
    digest = keccak(b"x")
    sig = key.sign_hash(digest)
    with pytest.raises(InvalidSignatureError, match="65 bytes"):
        recover_address(digest, sig[:64])
    s = int.from_bytes(sig[32:64], "big")
    high = sig[:32] + (SECP256K1_N - s).to_bytes(32, "big") + bytes((55 - sig[64],))
    with pytest.raises(InvalidSignatureError, match="high s"):
        recover_address(digest, high)
    with pytest.raises(InvalidSignatureError, match="recovery id"):
        recover_address(digest, sig[:64] + b"\x05")
    # v as 0/1 is accepted like the ClearNode does
    assert recover_address(digest, sig[:64] + bytes((sig[64] - 27,))) == ADDRESS


def test_keys_never_shown() -> None:
    wallet = WalletClient(KEY)
    secret_hex = KEY[2:]
    for text in (repr(wallet), str(wallet), repr(wallet.key), str(wallet.key), f"{wallet}"):
        assert secret_hex not in text.lower()
        assert ADDRESS in text
    with pytest.raises(TypeError):
        pickle.dumps(wallet)
    with pytest.raises(TypeError):
        pickle.dumps(wallet.key)


def test_bad_keys_are_clear_errors() -> None:
    for bad in ("0x1234", "zz" * 32, "0x" + "00" * 32, (SECP256K1_N).to_bytes(32, "big")):
        with pytest.raises(SettlementValueError):
            PrivateKey(bad)


def test_wallet_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigurationError, match="SETTLEMENT_PRIVATE_KEY"):
        WalletClient.from_env()
    monkeypatch.setenv("SETTLEMENT_PRIVATE_KEY", KEY)
    monkeypatch.setenv("SEPOLIA_RPC_URL", "http://127.0.0.1:1")
    wallet = WalletClient.from_env()
    assert wallet.address == ADDRESS and wallet.rpc_url == "http://127.0.0.1:1"
    with pytest.raises(ConfigurationError, match="no chain connection"):
        WalletClient(KEY).w3  # noqa: B018


def test_addresses() -> None:
    assert validate_address(ADDRESS.lower()) == ADDRESS
    assert validate_address("0x" + ADDRESS[2:].upper()) == ADDRESS
    bad_checksum = ADDRESS[:2] + ADDRESS[2].swapcase() + ADDRESS[3:]
    with pytest.raises(InvalidAddressError, match="checksum"):
        validate_address(bad_checksum)
    for bad in ("", "0x12", ADDRESS + "00", 12, None, "f39Fd6e51aad88F6F4ce6aB8827279cffFb92266"):
        with pytest.raises(InvalidAddressError):
            validate_address(bad)
    assert short("0x" + "ab" * 32) == "0xabababab...abababab"
    assert short("short") == "short"


def test_one_eip55_implementation_agrees_with_eth_utils() -> None:
    from eth_utils import to_checksum_address

    for raw in (bytes(20), bytes(range(20)), bytes.fromhex(ADDRESS[2:])):
        text = "0x" + raw.hex()
        assert checksum_from_bytes(raw) == to_checksum(text) == to_checksum_address(text)
    assert PrivateKey(KEY).address == ADDRESS
    with pytest.raises(InvalidAddressError):
        checksum_from_bytes(b"\x00" * 19)


def test_is_connection_error() -> None:
    import aiohttp
    from web3.exceptions import ProviderConnectionError

    for exc in (
        ConnectionRefusedError(),
        OSError("no route"),
        aiohttp.ClientConnectionError(),
        ProviderConnectionError("down"),
    ):
        assert is_connection_error(exc)
    for exc in (ValueError("revert"), KeyError("x")):
        assert not is_connection_error(exc)


async def test_a_wallet_closes_only_the_connection_it_opened() -> None:
    own = WalletClient(PrivateKey.generate(), rpc_url="http://127.0.0.1:9")
    opened = own.w3
    await own.aclose()
    assert own.w3 is not opened  # reconnects from rpc_url if used again
    given_w3 = opened
    borrowed = WalletClient(PrivateKey.generate(), w3=given_w3)
    await borrowed.aclose()
    assert borrowed.w3 is given_w3  # the caller's connection stays the caller's
    await own.aclose()
