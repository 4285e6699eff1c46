"""The aggregator sandbox's deployment as a profile carries it (a kernel of a Jupyter server
rebuilds it from JSON), and the pool's starting price in v4's sqrtPriceX96 form."""

from __future__ import annotations

from decimal import Decimal, getcontext

import pytest

from settlement_widgets.aggregator.node.deploy import (
    BRIDGES,
    WETH_PRICE_USDC,
    ChainDeployment,
    CrossChainDeployment,
    pool_sqrt_price_x96,
)
from settlement_widgets.v4.core.pool import PoolKey

USDC = "0x5FbDB2315678afecb367f032d93F642f64180aa3"
WETH = "0xB7f8BC63BbcaD18155201308C8f3540b07f84F5e"


def deployment() -> CrossChainDeployment:
    key = PoolKey.for_tokens(USDC, WETH, fee=500, tick_spacing=10, hooks="0x" + "00" * 20)
    bridges = {b.key: "0x" + f"{i + 1:040x}" for i, b in enumerate(BRIDGES)}
    a = ChainDeployment(
        31337, "sba", "Sandbox A", USDC, bridges,
        weth=WETH, router="0x" + "aa" * 20, pool_manager="0x" + "bb" * 20, pool_key=key,
    )  # fmt: skip
    b = ChainDeployment(31338, "sbb", "Sandbox B", USDC, {"fastlane": "0x" + "cc" * 20})
    return CrossChainDeployment(chains={31337: a, 31338: b}, relayer="0x" + "dd" * 20)


def test_a_deployment_survives_its_profile_json() -> None:
    original = deployment()
    again = CrossChainDeployment.from_json(original.to_json())
    assert again.chains == original.chains
    assert again.bridges == original.bridges and again.relayer == original.relayer
    assert again.bridge_at(31338, "0x" + "CC" * 20) == "fastlane"
    assert again.bridge_at(31338, USDC) is None and again.bridge_at(1, USDC) is None


def test_the_bridges_offer_a_real_choice() -> None:
    fees = {b.key: (b.fee_bps, b.messaging_fee_wei, b.confirmations) for b in BRIDGES}
    # one cheap and slow, one dear and fast, one with no fee on the amount but a fee on top
    assert fees["slowboat"][0] < fees["fastlane"][0] and fees["slowboat"][2] > fees["fastlane"][2]
    assert fees["tollgate"][0] == 0 and fees["tollgate"][1] > 0


@pytest.mark.parametrize("usdc,weth", [(USDC, WETH), ("0x" + "ff" * 20, USDC)])
def test_pool_price_is_usdc_per_weth_in_key_order(usdc: str, weth: str) -> None:
    getcontext().prec = 60
    sqrt = Decimal(pool_sqrt_price_x96(usdc, weth, WETH_PRICE_USDC)) / Decimal(2**96)
    price = sqrt * sqrt  # currency1 per currency0, smallest units
    if int(usdc, 16) < int(weth, 16):
        usdc_per_weth = Decimal(10**18) / price / Decimal(10**6)
    else:
        usdc_per_weth = price * Decimal(10**18) / Decimal(10**6)
    assert abs(usdc_per_weth - WETH_PRICE_USDC) < Decimal("0.000001")
