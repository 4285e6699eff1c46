"""The EIP-712 Policy: hand-rolled digest == eth-account's, sign/recover, input errors."""

from __future__ import annotations

import pytest
from erc7824_strategies import CHALLENGE_UUID, SESSION_KEY, USER_KEY, addresses, private_keys
from eth_account import Account
from eth_account.messages import encode_typed_data
from hypothesis import given, settings
from hypothesis import strategies as st

from settlement_widgets.channel.v0_5.core import (
    Allowance,
    AuthPolicy,
    auth_digest,
    auth_typed_data,
    parse_request,
    recover_auth_signer,
    sign_auth,
)
from settlement_widgets.errors import InvalidAddressError, InvalidAmountError, SettlementValueError
from settlement_widgets.keys import PrivateKey
from settlement_widgets.wallet import WalletClient

USER = PrivateKey(USER_KEY)
SESSION = PrivateKey(SESSION_KEY)

allowances = st.lists(
    st.tuples(
        st.text(min_size=1, max_size=10),
        st.from_regex(r"\A[0-9]{1,6}(\.[0-9]{1,6})?\Z"),
    ),
    max_size=3,
)


@settings(max_examples=80, deadline=None)
@given(
    key=private_keys,
    session=addresses,
    challenge=st.text(max_size=40),
    scope=st.text(max_size=10),
    expires=st.integers(min_value=0, max_value=2**64 - 1),
    allow=allowances,
    app=st.text(min_size=1, max_size=12),
)
def test_digest_and_signature_equal_eth_account(
    key: PrivateKey,
    session: str,
    challenge: str,
    scope: str,
    expires: int,
    allow: list[tuple[str, str]],
    app: str,
) -> None:
    typed = auth_typed_data(challenge, scope, key.address, session, expires, allow, app)
    signable = encode_typed_data(full_message=typed)
    ours = sign_auth(key, challenge, scope, session, expires, allow, app)
    ref = Account.sign_message(signable, key.secret_hex()).signature
    assert ours == "0x" + bytes(ref).hex()
    assert Account.recover_message(signable, signature=ours) == key.address
    assert (
        recover_auth_signer(ours, challenge, scope, key.address, session, expires, allow, app)
        == key.address
    )
    # any change to what the relay stored breaks the signature
    assert (
        recover_auth_signer(ours, challenge + "x", scope, key.address, session, expires, allow, app)
        != key.address
    )


def test_policy_flow_and_checks() -> None:
    policy = AuthPolicy(
        USER.address, SESSION.address, "Test app", [("ytest.usd", "100")], 1_900_000_000, "console"
    )
    assert policy.allowances == (Allowance("ytest.usd", "100"),)
    req = policy.verify_request(CHALLENGE_UUID, WalletClient(USER), request_id=2, timestamp=3)
    parsed = parse_request(req.to_frame())
    assert parsed.params == {"challenge": CHALLENGE_UUID}
    assert policy.recover(CHALLENGE_UUID, parsed.sigs[0]) == USER.address
    # the session key must not sign the policy: the relay would reject it
    with pytest.raises(SettlementValueError, match="main wallet signs the policy"):
        policy.sign(CHALLENGE_UUID, SESSION)
    assert auth_digest(
        CHALLENGE_UUID,
        "console",
        USER.address,
        SESSION.address,
        1_900_000_000,
        [Allowance("ytest.usd", "100")],
        "Test app",
    ) == policy.digest(CHALLENGE_UUID)


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"wallet": "0xF39fd6e51aad88F6F4ce6aB8827279cffFb92266"}, InvalidAddressError, "checksum"),
        ({"session_key": "0x1234"}, InvalidAddressError, "40 hex digits"),
        ({"allowances": [("usd", "1e2")]}, InvalidAmountError, "decimal string"),
        ({"allowances": [("usd", 100)]}, InvalidAmountError, "decimal string"),
        ({"allowances": [("", "1")]}, SettlementValueError, "symbol"),
        ({"allowances": ["usd"]}, SettlementValueError, "allowance is"),
        ({"expires_at": -1}, SettlementValueError, "Unix seconds"),
        ({"expires_at": 2**64}, SettlementValueError, "Unix seconds"),
        ({"expires_at": 1.5}, SettlementValueError, "Unix seconds"),
        ({"application": ""}, SettlementValueError, "domain name"),
        ({"scope": None}, SettlementValueError, "scope"),
    ],
)
def test_policy_input_errors(
    kwargs: dict[str, object], error: type[Exception], message: str
) -> None:
    base: dict[str, object] = {
        "wallet": USER.address,
        "session_key": SESSION.address,
        "application": "app",
        "allowances": [],
        "expires_at": 1,
        "scope": "s",
    }
    base.update(kwargs)
    with pytest.raises(error, match=message):
        AuthPolicy(**base)  # type: ignore[arg-type]
