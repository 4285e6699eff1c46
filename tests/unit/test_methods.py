"""The method registry and the GET body match the spec field for field."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from settlement_widgets import SEPOLIA, SEPOLIA_CONTRACTS, SETTLEMENT_OPTIONS, settlement_config
from settlement_widgets.addresses import to_checksum
from settlement_widgets.errors import InvalidNetworkError, UnknownOptionError
from settlement_widgets.methods import option, validate_method

# written out by hand from the JACK dashboard (``hashpass-tech/jack``)
EXPECTED_SEPOLIA_BODY = {
    "methods": {
        "aggregator": {
            "status": "live",
            "description": "Routes through a bridge aggregator with best-rate discovery.",
        },
        "channel": {
            "status": "demo",
            "network": "sepolia",
            "chainId": 11155111,
            "contracts": {
                "custody": "0x019B65A265EB3363822f2752141b3dF16131b262",
                "adjudicator": "0x7c7ccbc98469190849BCC6c926307794fDfB11F2",
            },
            "nodeUrl": "wss://clearnet-sandbox.yellow.com/ws",
            "faucetUrl": "https://clearnet-sandbox.yellow.com/faucet/requestTokens",
        },
        "v4": {
            "status": "demo",
            "network": "sepolia",
            "chainId": 11155111,
            "contracts": {
                "policyHook": "0xE8142B1Ff0DA631866fec5771f4291CbCe718080",
                "settlementAdapter": "0xd8f0415b488F2BA18EF14F5C41989EEf90E51D1A",
                "poolManager": "0xE03A1074c86CFeDd5C142C4F04F1a1536e203543",
            },
            "explorerBase": "https://sepolia.etherscan.io",
        },
    },
    "testnetProofs": {
        "channel": "/api/settlement/proofs/channel",
        "v4": "/api/settlement/proofs/v4",
    },
}


def test_settlement_config_sepolia_equals_spec_body() -> None:
    body = settlement_config(SEPOLIA)
    assert body == EXPECTED_SEPOLIA_BODY
    # JSON round trip keeps it identical (no tuples, no non-JSON types)
    assert json.loads(json.dumps(body)) == EXPECTED_SEPOLIA_BODY


def test_settlement_config_by_name() -> None:
    assert settlement_config("sepolia") == EXPECTED_SEPOLIA_BODY


def test_options_order_and_status() -> None:
    assert [o.id for o in SETTLEMENT_OPTIONS] == ["aggregator", "channel", "v4"]
    assert [o.status for o in SETTLEMENT_OPTIONS] == ["live", "demo", "demo"]
    for o in SETTLEMENT_OPTIONS:
        assert set(o.to_json()) == {"id", "label", "desc", "network", "status"}
        assert o.label and o.desc and o.network


def test_sepolia_contracts_are_checksummed() -> None:
    flat = [a for group in SEPOLIA_CONTRACTS.values() for a in group.values()]
    assert len(flat) == 5
    for address in flat:
        assert to_checksum(address) == address
    assert set(SEPOLIA_CONTRACTS["channel"]) == {"custody", "adjudicator"}
    assert set(SEPOLIA_CONTRACTS["v4"]) == {"policyHook", "settlementAdapter", "poolManager"}
    # checked against the addresses written out by hand from the spec, not against SEPOLIA
    for method in ("channel", "v4"):
        assert SEPOLIA_CONTRACTS[method] == EXPECTED_SEPOLIA_BODY["methods"][method]["contracts"]


def test_invalid_network_lists_valid_ones() -> None:
    with pytest.raises(InvalidNetworkError) as info:
        settlement_config("mainnet")
    assert "local" in str(info.value) and "sepolia" in str(info.value)
    assert isinstance(info.value, ValueError)


def test_unknown_method_suggests() -> None:
    with pytest.raises(UnknownOptionError, match="did you mean 'channel'"):
        validate_method("chanel")
    assert option("v4").label == "Uniswap v4 Hook"


def test_public_import_line_from_the_issue() -> None:
    code = (
        "from settlement_widgets import SETTLEMENT_OPTIONS, SEPOLIA_CONTRACTS, settlement_config;"
        "import settlement_widgets, sys;"
        "heavy = [m for m in ('web3', 'pandas', 'ipywidgets') if m in sys.modules];"
        "assert not heavy, heavy"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
