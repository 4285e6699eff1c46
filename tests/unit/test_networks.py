"""Network profiles, explorer links and get_network()."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from settlement_widgets.errors import ConfigurationError, InvalidAddressError, InvalidNetworkError
from settlement_widgets.networks import SEPOLIA, SEPOLIA_V1, Network, get_network, local

ADDR = [
    "0x5FbDB2315678afecb367f032d93F642f64180aa3",
    "0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512",
    "0x9fE46736679d2D9a65F0992F2272dE9f3c7fa6e0",
    "0xCf7Ed3AccA5a467e9e704C703E8D87F634fB0Fc9",
    "0xDc64a140Aa3E981100a9becA4E685f962f0cF6C9",
]


def _local() -> Network:
    return local(
        chain_id=31337,
        custody=ADDR[0],
        adjudicator=ADDR[1],
        policy_hook=ADDR[2],
        settlement_adapter=ADDR[3],
        pool_manager=ADDR[4],
        node_url="ws://127.0.0.1:9000/ws",
        faucet_url="http://127.0.0.1:9001/faucet/requestTokens",
        explorer_base="http://127.0.0.1:9001/explorer",
        rpc_url="http://127.0.0.1:8545",
    )


def test_sepolia_profile() -> None:
    assert SEPOLIA.chain_id == 11155111
    assert SEPOLIA.explorer.tx_url("0xabc") == "https://sepolia.etherscan.io/tx/0xabc"
    assert (
        SEPOLIA.explorer.address_url(ADDR[0]) == f"https://sepolia.etherscan.io/address/{ADDR[0]}"
    )
    with pytest.raises(AttributeError):
        SEPOLIA.chain_id = 1  # type: ignore[misc]


def test_get_network_default_is_local_and_reads_the_profile(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("SETTLEMENT_NETWORK", raising=False)
    with pytest.raises(ConfigurationError, match=r"python -m settlement_widgets\.sandbox"):
        get_network()
    profile = tmp_path / "profile.json"
    profile.write_text(json.dumps(_local().to_json()))
    monkeypatch.setenv("SETTLEMENT_PROFILE", str(profile))
    net = get_network()
    assert net == _local()
    assert net.name == "local" and net.rpc_url == "http://127.0.0.1:8545"


def test_get_network_sepolia_reads_rpc_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SETTLEMENT_NETWORK", "sepolia")
    monkeypatch.setenv("SEPOLIA_RPC_URL", "http://127.0.0.1:1/rpc")
    net = get_network()
    assert net.name == "sepolia" and net.rpc_url == "http://127.0.0.1:1/rpc"
    assert net.contracts == SEPOLIA.contracts


def test_invalid_network_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SETTLEMENT_NETWORK", "mainnet")
    with pytest.raises(InvalidNetworkError, match="valid networks: local, sepolia, sepolia-v1"):
        get_network()
    with pytest.raises(InvalidNetworkError, match="'goerli'"):
        get_network("goerli")


def test_profile_json_round_trip_and_bad_addresses() -> None:
    net = _local()
    assert Network.from_json(json.loads(json.dumps(net.to_json()))) == net
    data = net.to_json()
    data["contracts"]["custody"] = "0x123"
    with pytest.raises(InvalidAddressError):
        Network.from_json(data)
    with pytest.raises(ConfigurationError):
        Network.from_json({"name": "local"})


def test_sepolia_relay_and_faucet_can_be_pointed_elsewhere(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The variables a user with their own services (or the offline twin) sets: only the
    URLs change; Sepolia's contracts, chain id and explorer stay."""
    from settlement_widgets.channel import ChannelConfig
    from settlement_widgets.networks import SEPOLIA_ENV

    assert set(SEPOLIA_ENV) == {"SEPOLIA_RPC_URL", "SETTLEMENT_RELAY_URL", "SETTLEMENT_FAUCET_URL"}
    monkeypatch.setenv("SEPOLIA_RPC_URL", "http://127.0.0.1:8545")
    monkeypatch.setenv("SETTLEMENT_RELAY_URL", "ws://127.0.0.1:7824/ws")
    monkeypatch.setenv("SETTLEMENT_FAUCET_URL", "http://127.0.0.1:8000/faucet/requestTokens")
    net = get_network("sepolia")
    assert net.rpc_url == "http://127.0.0.1:8545"
    assert net.node_url == "ws://127.0.0.1:7824/ws"
    assert net.faucet_url == "http://127.0.0.1:8000/faucet/requestTokens"
    assert (net.chain_id, net.contracts, net.explorer_base) == (
        SEPOLIA.chain_id,
        SEPOLIA.contracts,
        SEPOLIA.explorer_base,
    )
    config = ChannelConfig.sepolia()
    assert config.node_url == "ws://127.0.0.1:7824/ws"
    assert config.custody == SEPOLIA.contracts.custody


@pytest.mark.parametrize(
    "var,value",
    [
        ("SETTLEMENT_RELAY_URL", "http://127.0.0.1:7824/ws"),
        ("SETTLEMENT_FAUCET_URL", "ws://127.0.0.1/faucet"),
        ("SEPOLIA_RPC_URL", "127.0.0.1:8545"),
    ],
)
def test_a_url_with_the_wrong_scheme_is_named(
    monkeypatch: pytest.MonkeyPatch, var: str, value: str
) -> None:
    monkeypatch.setenv(var, value)
    with pytest.raises(InvalidNetworkError, match=var):
        get_network("sepolia")


def test_unset_or_blank_overrides_leave_sepolia_as_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("SEPOLIA_RPC_URL", "SETTLEMENT_RELAY_URL", "SETTLEMENT_FAUCET_URL"):
        monkeypatch.setenv(var, "  ")
    assert get_network("sepolia") == SEPOLIA


def test_profiles_name_their_channel_protocol() -> None:
    assert SEPOLIA.protocol == "nitrolite-v0.5" and SEPOLIA.contracts.channel_hub is None
    assert _local().protocol == "nitrolite-v0.5"
    assert SEPOLIA_V1.protocol == "nitrolite-v1"
    assert SEPOLIA_V1.chain_id == SEPOLIA.chain_id
    # the reference's v1.3.0 ChannelHub on Sepolia, EIP-55 checksummed
    assert SEPOLIA_V1.contracts.channel_hub == "0x5DBa8515af063Db0c243C15eCE7B99F91459C7C3"
    assert SEPOLIA_V1.node_url == "wss://nitronode-sandbox.yellow.org/v1/ws"
    assert SEPOLIA_V1.faucet_url.endswith("/v1/faucet-app/requestTokens")
    assert SEPOLIA_V1.asset_symbol == "yusd" and SEPOLIA_V1.token is None
    # the v4 contracts are the same chain's
    assert SEPOLIA_V1.contracts.policy_hook == SEPOLIA.contracts.policy_hook


def test_sepolia_v1_by_name_with_the_same_overrides(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEPOLIA_RPC_URL", "http://127.0.0.1:1/rpc")
    monkeypatch.setenv("SETTLEMENT_RELAY_URL", "ws://127.0.0.1:2/v1/ws")
    net = get_network("sepolia-v1")
    assert net.name == "sepolia-v1" and net.protocol == "nitrolite-v1"
    assert net.rpc_url == "http://127.0.0.1:1/rpc" and net.node_url == "ws://127.0.0.1:2/v1/ws"
    assert get_network("sepolia").protocol == "nitrolite-v0.5"


def test_sepolia_v1_reaches_base_sepolia_only_with_its_rpc_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("BASE_SEPOLIA_RPC_URL", raising=False)
    monkeypatch.setenv("SEPOLIA_RPC_URL", "http://127.0.0.1:1/rpc")
    plain = get_network("sepolia-v1")
    assert plain.chain_ids() == (11155111,)
    # the node serves Base Sepolia, but the user has not said how to reach it
    with pytest.raises(InvalidNetworkError, match=r"84532 \(base_sepolia\).*BASE_SEPOLIA_RPC_URL"):
        plain.on_chain(84532)
    with pytest.raises(InvalidNetworkError, match="BASE_SEPOLIA_RPC_URL"):
        SEPOLIA_V1.on_chain(84532)
    with pytest.raises(InvalidNetworkError, match="not on 80002"):
        plain.on_chain(80002)

    monkeypatch.setenv("BASE_SEPOLIA_RPC_URL", " https://base-sepolia.example/rpc ")
    net = get_network("sepolia-v1")
    assert net == plain and net.chain_ids() == (11155111, 84532)
    base = net.on_chain(84532)
    assert (base.chain_id, base.rpc_url) == (84532, "https://base-sepolia.example/rpc")
    # the same hub address as on Sepolia; the token is the node's to name there too
    assert base.contracts.channel_hub == SEPOLIA_V1.contracts.channel_hub and base.token is None
    assert base.node_url == net.node_url and base.protocol == "nitrolite-v1"
    assert base.explorer.tx_url("0xab") == "https://sepolia.basescan.org/tx/0xab"
    assert net.on_chain(11155111) is net and net.rpc_url == "http://127.0.0.1:1/rpc"
    # the v0.5 profile serves no second chain, whatever is set
    assert get_network("sepolia").chain_ids() == (11155111,)
    monkeypatch.setenv("BASE_SEPOLIA_RPC_URL", "base-sepolia.example")
    with pytest.raises(InvalidNetworkError, match="BASE_SEPOLIA_RPC_URL must start with"):
        get_network("sepolia-v1")


def test_sepolia_from_env_reads_a_given_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from settlement_widgets.networks import sepolia_from_env

    monkeypatch.setenv("SEPOLIA_RPC_URL", "http://127.0.0.1:1/rpc")
    given = {"BASE_SEPOLIA_RPC_URL": "ws://127.0.0.1:3"}
    net = sepolia_from_env(SEPOLIA_V1, given)
    assert net.rpc_url is None and net.on_chain(84532).rpc_url == "ws://127.0.0.1:3"
    assert SEPOLIA_V1.chain_ids() == (11155111,)  # the profile itself is not changed


def test_a_v1_profile_round_trips_and_needs_a_channel_hub() -> None:
    net = local(
        chain_id=31337,
        custody=ADDR[0],
        adjudicator=ADDR[1],
        policy_hook=ADDR[2],
        settlement_adapter=ADDR[3],
        pool_manager=ADDR[4],
        node_url="ws://127.0.0.1:9000/v1/ws",
        faucet_url="http://127.0.0.1:9001/faucet/requestTokens",
        explorer_base="http://127.0.0.1:9001/explorer",
        channel_hub=ADDR[0].lower(),
        protocol="nitrolite-v1",
    )
    assert net.contracts.channel_hub == ADDR[0]
    assert Network.from_json(json.loads(json.dumps(net.to_json()))) == net
    # a profile written before v1 reads as v0.5
    old = _local().to_json()
    old.pop("protocol")
    old["contracts"].pop("channelHub")
    assert Network.from_json(old).protocol == "nitrolite-v0.5"
    with pytest.raises(InvalidNetworkError, match="names no ChannelHub"):
        replace(net, contracts=replace(net.contracts, channel_hub=None))
    with pytest.raises(InvalidNetworkError, match="unknown channel protocol 'nitrolite-v2'"):
        replace(net, protocol="nitrolite-v2")
    with pytest.raises(InvalidAddressError):
        replace(net.contracts, channel_hub="0x1234")


def test_the_endpoint_body_says_which_protocol() -> None:
    from settlement_widgets.methods import settlement_config

    v05 = settlement_config(SEPOLIA)["methods"]["channel"]
    assert "protocol" not in v05 and set(v05["contracts"]) == {"custody", "adjudicator"}
    v1 = settlement_config(SEPOLIA_V1)["methods"]["channel"]
    assert v1["protocol"] == "nitrolite-v1"
    assert v1["contracts"] == {"channelHub": SEPOLIA_V1.contracts.channel_hub}
    assert v1["nodeUrl"] == SEPOLIA_V1.node_url
