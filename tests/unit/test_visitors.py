"""The pure parts of a shared sandbox's visitor wallets and of the dashboard's v1 reopen:
what a funding request may ask, what each visitor receives, and the deposit a channel that
cannot open empty gets."""

from __future__ import annotations

import json

import pytest

from settlement_widgets.dashboard.channel_actions import OPEN_DEPOSIT_TRANSFERS, open_deposit
from settlement_widgets.errors import (
    InsufficientBalanceError,
    InvalidAddressError,
    SettlementValueError,
)
from settlement_widgets.sandbox.visitors import (
    MAX_VISITOR_WALLETS,
    VISITOR_GAS_WEI,
    parse_fund_request,
    visitor_grants,
)

A = "0x" + "11" * 20
B = "0x" + "22" * 20
TOKEN = "0x" + "33" * 20


def _body(payload: object) -> bytes:
    return json.dumps(payload).encode()


def test_a_request_names_one_to_eight_distinct_addresses() -> None:
    assert parse_fund_request(_body({"addresses": [A, B]})) == [
        "0x1111111111111111111111111111111111111111",
        "0x2222222222222222222222222222222222222222",
    ]
    for bad in (b"not json", _body([A]), _body({"addresses": []}), _body({"wallets": [A]})):
        with pytest.raises(SettlementValueError):
            parse_fund_request(bad)
    with pytest.raises(SettlementValueError, match="at most"):
        parse_fund_request(_body({"addresses": [A] * (MAX_VISITOR_WALLETS + 1)}))
    with pytest.raises(InvalidAddressError):
        parse_fund_request(_body({"addresses": [A, A]}))
    with pytest.raises(InvalidAddressError):
        parse_fund_request(_body({"addresses": ["0x" + "00" * 20]}))


def test_grants_cover_every_chain_and_token_in_chain_order() -> None:
    aggregator = {
        "chains": [
            {"chainId": 31337, "usdc": "0x" + "44" * 20, "weth": "0x" + "55" * 20},
            {"chainId": 31338, "usdc": "0x" + "66" * 20, "weth": "0x" + "77" * 20},
        ]
    }
    grants = visitor_grants(
        [A, B],
        chain_id=31337,
        channel_token=TOKEN,
        token_funding=5,
        v4_tokens=("0x" + "88" * 20, "0x" + "99" * 20),
        aggregator=aggregator,
    )
    chains = [g.chain_id for g in grants]
    assert chains == sorted(chains), "each chain's grants together, the sandbox's own first"
    for to in (A, B):
        mine = {(g.chain_id, g.token) for g in grants if g.to == to}
        assert mine == {
            (31337, None),
            (31337, TOKEN),
            (31337, "0x" + "88" * 20),
            (31337, "0x" + "99" * 20),
            (31337, "0x" + "44" * 20),
            (31337, "0x" + "55" * 20),
            (31338, None),
            (31338, "0x" + "66" * 20),
            (31338, "0x" + "77" * 20),
        }
    assert {g.amount for g in grants if g.token is None} == {VISITOR_GAS_WEI}
    # no aggregator, no v4: gas and the channel token only
    plain = visitor_grants([A], chain_id=1, channel_token=TOKEN, token_funding=5)
    assert [(g.token, g.amount) for g in plain] == [(None, VISITOR_GAS_WEI), (TOKEN, 5)]


def test_a_channel_that_cannot_open_empty_gets_ten_transfers_or_what_the_wallet_holds() -> None:
    assert open_deposit(10**12, 10**6, "ytest.usd") == OPEN_DEPOSIT_TRANSFERS * 10**6
    assert open_deposit(3 * 10**6, 10**6, "ytest.usd") == 3 * 10**6
    with pytest.raises(InsufficientBalanceError, match=r"no ytest\.usd .* ask the faucet first"):
        open_deposit(0, 10**6, "ytest.usd")
