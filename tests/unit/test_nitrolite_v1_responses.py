"""Responses parsed as the SDK parses them: optional fields defaulted, unknown ones ignored.

Node builds before v1.4.0 send no ``confirmation_delay_secs`` and no ``enforced``; the SDK
defaults both to 0. A newer node may add fields; the SDK ignores them. A required field
that is missing is still an error.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from settlement_widgets.channel.v1.core.client_calls import V1ClientCore, run_without_suspending
from settlement_widgets.channel.v1.core.responses import parse_balances, parse_node_config
from settlement_widgets.channel.v1.core.rpc_shapes import sdk_balances, sdk_channel
from settlement_widgets.channel.v1.core.wire import Frame, MessageType
from settlement_widgets.channel.v1.core.wire import parse_node_config as wire_parse_node_config
from settlement_widgets.errors import InvalidFrameError

HUB = "0x5dba8515af063db0c243c15ece7b99f91459c7c3"


def _config(**chain_extra: Any) -> dict[str, Any]:
    chain = {"name": "ethereum_sepolia", "blockchain_id": "11155111", "channel_hub_address": HUB}
    return {
        "node_address": "0x5050a4f4b3f9338c3472dcc01a87c76a144b3c9c",
        "node_version": "v1.3.2",
        "supported_sig_validators": "AAE=",
        "blockchains": [{**chain, **chain_extra}],
    }


def test_get_config_without_confirmation_delay_defaults_to_zero() -> None:
    parsed = parse_node_config(_config())
    assert parsed["blockchains"] == [
        {
            "name": "ethereum_sepolia",
            "id": "11155111",
            "channelHubAddress": HUB,
            "blockStep": "0",
            "confirmationDelaySecs": 0,
        }
    ]
    assert wire_parse_node_config is parse_node_config  # one implementation
    assert (
        parse_node_config(_config(confirmation_delay_secs=36))["blockchains"][0][
            "confirmationDelaySecs"
        ]
        == 36
    )
    assert (
        parse_node_config(_config(confirmation_delay_secs=None))["blockchains"][0][
            "confirmationDelaySecs"
        ]
        == 0
    )


def test_get_config_ignores_unknown_fields_and_keeps_the_optional_ones() -> None:
    payload = _config(rpc_url="wss://x", future_flag=True, locking_contract_address=HUB)
    payload["features"] = {"anything": [1, 2]}
    parsed = parse_node_config(payload)
    assert set(parsed) == {"nodeAddress", "nodeVersion", "supportedSigValidators", "blockchains"}
    assert parsed["blockchains"][0]["lockingContractAddress"] == HUB
    assert "rpc_url" not in parsed["blockchains"][0]
    assert parsed["supportedSigValidators"] == [0, 1]


@pytest.mark.parametrize("value", [None, ""])
def test_missing_sig_validators_are_none_as_in_the_sdk(value: Any) -> None:
    payload = _config()
    if value is None:
        del payload["supported_sig_validators"]
    else:
        payload["supported_sig_validators"] = value
    assert parse_node_config(payload)["supportedSigValidators"] == []


@pytest.mark.parametrize(
    ("change", "text"),
    [
        ({"confirmation_delay_secs": "36"}, "confirmation_delay_secs"),
        ({"confirmation_delay_secs": -1}, "confirmation_delay_secs"),
        ({"channel_hub_address": None}, "channel_hub_address"),
        ({"blockchain_id": None}, "blockchain_id"),
    ],
)
def test_required_or_mistyped_fields_are_still_refused(change: dict[str, Any], text: str) -> None:
    payload = _config()
    payload["blockchains"][0].update(change)
    with pytest.raises(InvalidFrameError, match=text):
        parse_node_config(payload)


def test_balances_without_enforced_default_to_zero_and_extras_are_ignored() -> None:
    payload = {
        "balances": [
            {"asset": "yusd", "amount": "12.5"},
            {"asset": "weth", "amount": "1", "enforced": "0.5", "locked": "7"},
        ],
        "next": "cursor",
    }
    assert parse_balances(payload) == [
        {"asset": "yusd", "amount": "12.5", "enforced": "0"},
        {"asset": "weth", "amount": "1", "enforced": "0.5"},
    ]
    assert sdk_balances([{"asset": "yusd", "amount": "12.50"}]) == [
        {"asset": "yusd", "balance": "12.5", "enforced": "0"}
    ]
    with pytest.raises(InvalidFrameError, match="asset"):
        parse_balances({"balances": [{"amount": "1"}]})


def test_the_client_get_balances_defaults_enforced() -> None:
    """Through the client core: a pre-v1.4.0 node's reply reads as the SDK reads it."""

    class Node:
        async def exchange(self, request: Frame) -> Frame:
            payload: Mapping[str, Any] = {"balances": [{"asset": "yusd", "amount": "3"}]}
            return Frame(MessageType.RESPONSE, request.request_id, request.method, payload, 1)

    client = V1ClientCore(Node())
    balances = run_without_suspending(client.get_balances("0x" + "11" * 20))
    assert balances == [{"asset": "yusd", "amount": "3", "enforced": "0"}]


def test_a_channel_status_the_sdk_does_not_know_reads_as_void() -> None:
    channel = {
        "channel_id": "0x" + "01" * 32,
        "user_wallet": "0x" + "11" * 20,
        "asset": "yusd",
        "type": "HOME",
        "blockchain_id": "1",
        "token_address": "0x" + "22" * 20,
        "challenge_duration": 86400,
        "nonce": "1",
        "approved_sig_validators": "0x01",
        "status": "migrating",
        "state_version": "3",
        "new_field": 1,
    }
    parsed = sdk_channel(channel)
    assert (parsed["type"], parsed["status"]) == (1, 0)
    assert "new_field" not in parsed
