"""The ``sepolia-v1`` twin: our ChannelHub, validators and ``yusd`` token at the public v1
sandbox's Sepolia addresses, our Nitronode and the v1 faucet on loopback, and the
environment a ``sepolia-v1`` user sets pointing at it. A user's channel lifecycle runs twice
in a row on the same twin and the same store, as a user running it again the next day would.

anvil only: the twin is anvil (its chain id, interval mining, and code set at fixed
addresses), as the v0.5 twin is."""

from __future__ import annotations

import asyncio
import json
import signal
import stat
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
import pytest_asyncio

from settlement_widgets.chain_clock import chain_time, wait_for_chain_time
from settlement_widgets.channel.detect import detect_node_protocol
from settlement_widgets.channel.v1 import ChannelProviderV1
from settlement_widgets.channel.v1.chain.hub import ChannelHubClient
from settlement_widgets.contracts import load_artifact
from settlement_widgets.keys import PrivateKey
from settlement_widgets.networks import SEPOLIA_V1, get_network
from settlement_widgets.sandbox.local import mint_test_token
from settlement_widgets.sandbox.twin_v1 import (
    BASE_SEPOLIA_CHAIN_ID,
    BASE_SEPOLIA_V1_DEPLOYMENT,
    SEPOLIA_V1_DEPLOYMENT,
    SepoliaV1Twin,
)
from settlement_widgets.wallet import WalletClient

pytestmark = [pytest.mark.anvil, pytest.mark.asyncio(loop_scope="module")]
U = 10**6
D = SEPOLIA_V1_DEPLOYMENT
B = BASE_SEPOLIA_V1_DEPLOYMENT


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def twin() -> AsyncIterator[SepoliaV1Twin]:
    async with SepoliaV1Twin() as running:
        yield running


@pytest.fixture
def user_env(
    twin: SepoliaV1Twin, monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, str]:
    """The process environment of a ``sepolia-v1`` user on the twin (one home per module, so
    the stores persist from one test to the next like a user's)."""
    env = twin.env()
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    home = Path(tmp_path_factory.getbasetemp()) / "sepolia-v1-user"
    monkeypatch.setenv("SETTLEMENT_HOME", str(home))
    return env


async def test_our_v1_contracts_sit_at_the_public_sandboxs_addresses(twin: SepoliaV1Twin) -> None:
    assert twin.chain is not None and twin.contracts is not None
    w3 = twin.chain.w3
    assert await w3.eth.chain_id == SEPOLIA_V1.chain_id == 11155111
    assert D.channel_hub == SEPOLIA_V1.contracts.channel_hub
    moved = twin.contracts.moved
    assert {target for _, target in moved.values()} == {
        D.channel_hub, D.ecdsa_validator, D.session_key_validator, D.token,
    }  # fmt: skip
    for deployed, target in moved.values():
        assert await w3.eth.get_code(target) and not await w3.eth.get_code(deployed)
    # constructed as deployed there: (defaultSigValidator, node), the validator at its address
    hub = w3.eth.contract(address=D.channel_hub, abi=load_artifact("ChannelHub").abi)
    assert await hub.functions.NODE().call() == twin.node_address
    assert await hub.functions.DEFAULT_SIG_VALIDATOR().call() == D.ecdsa_validator
    assert await hub.functions.VERSION().call() == 1
    assert await hub.functions.getNodeBalance(D.token).call() == twin.node_liquidity
    # the node's session-key validator is registered, and active (on Sepolia: for long)
    reader = ChannelHubClient(twin.chain.wallet(0), D.channel_hub)
    validator, registered_at = await reader.get_node_validator(1)
    assert validator == D.session_key_validator
    assert await chain_time(w3) >= registered_at + await reader.validator_activation_delay()
    token = w3.eth.contract(address=D.token, abi=load_artifact("TestToken").abi)
    assert await token.functions.symbol().call() == "yusd"
    assert await token.functions.decimals().call() == D.token_decimals == 6
    assert await token.functions.balanceOf(twin.user_address).call() == twin.user_tokens


async def test_the_users_environment_points_the_sepolia_v1_profile_at_the_twin(
    twin: SepoliaV1Twin, user_env: dict[str, str]
) -> None:
    assert user_env["SETTLEMENT_NETWORK"] == "sepolia-v1"
    network = get_network()
    assert network == twin.network and network.name == "sepolia-v1"
    assert network.protocol == "nitrolite-v1" and network.token is None  # learnt from the node
    assert network.contracts == SEPOLIA_V1.contracts
    assert network.node_url == user_env["SETTLEMENT_RELAY_URL"].strip()
    assert network.node_url.startswith("ws://127.0.0.1:")
    assert network.explorer.tx_url("0xab") == "https://sepolia.etherscan.io/tx/0xab"
    wallet = WalletClient.from_env(network)
    assert wallet.address == twin.user_address
    async with ChannelProviderV1(network, wallet) as provider:
        await provider.connect()  # checks the node serves this chain with this hub
        assert provider.asset == "yusd" and provider.decimals == 6
        assert provider.token == D.token and provider.node_address == twin.node_address
    secret = user_env["SETTLEMENT_PRIVATE_KEY"].removeprefix("0x")
    assert secret not in repr(twin) and secret not in repr(wallet)
    await wallet.aclose()


async def test_base_sepolia_has_the_same_contracts_at_the_same_addresses(
    twin: SepoliaV1Twin,
) -> None:
    assert twin.base_chain is not None and twin.base_contracts is not None
    w3 = twin.base_chain.w3
    assert await w3.eth.chain_id == B.chain_id == BASE_SEPOLIA_CHAIN_ID == 84532
    assert (B.channel_hub, B.token, B.session_key_validator) == (
        D.channel_hub, D.token, D.session_key_validator,
    )  # fmt: skip
    for deployed, target in twin.base_contracts.moved.values():
        assert await w3.eth.get_code(target) and not await w3.eth.get_code(deployed)
    hub = w3.eth.contract(address=B.channel_hub, abi=load_artifact("ChannelHub").abi)
    assert await hub.functions.NODE().call() == twin.node_address
    assert await hub.functions.DEFAULT_SIG_VALIDATOR().call() == B.ecdsa_validator
    assert await hub.functions.getNodeBalance(B.token).call() == twin.node_liquidity
    reader = ChannelHubClient(twin.base_chain.wallet(0), B.channel_hub)
    validator, registered_at = await reader.get_node_validator(1)
    assert validator == B.session_key_validator
    assert await chain_time(w3) >= registered_at + await reader.validator_activation_delay()
    token = w3.eth.contract(address=B.token, abi=load_artifact("TestToken").abi)
    assert await token.functions.decimals().call() == B.token_decimals == 6
    assert await token.functions.balanceOf(twin.user_address).call() == twin.user_tokens


async def test_the_node_serves_both_chains_and_a_provider_runs_on_each(
    twin: SepoliaV1Twin, user_env: dict[str, str]
) -> None:
    network = get_network()
    assert user_env["BASE_SEPOLIA_RPC_URL"].startswith("http://127.0.0.1:")
    assert network.chain_ids() == (11155111, 84532)
    base = network.on_chain(84532)
    assert base == twin.network.on_chain(84532)  # the twin's profile is the user's
    assert base.rpc_url == user_env["BASE_SEPOLIA_RPC_URL"] and base.token is None
    assert base.explorer.tx_url("0xab") == "https://sepolia.basescan.org/tx/0xab"
    wallet = WalletClient.from_env(network)
    base_wallet = WalletClient.from_env(base)
    try:
        async with ChannelProviderV1(network, wallet) as home:
            config = await home.client.get_config()
            served = {
                int(c["id"]): (c["channelHubAddress"].lower(), int(c["confirmationDelaySecs"]))
                for c in config["blockchains"]
            }
            assert served == {
                11155111: (D.channel_hub.lower(), 36),
                84532: (B.channel_hub.lower(), 4),
            }
            (asset,) = [a for a in await home.client.get_assets() if a["symbol"] == "yusd"]
            tokens = {
                int(t["blockchain_id"]): (t["address"], int(t["decimals"])) for t in asset["tokens"]
            }
            assert tokens == {11155111: (D.token, 6), 84532: (B.token, 6)}
        # a provider on Base Sepolia: checks the node's hub there, learns the token there
        async with ChannelProviderV1(base, base_wallet) as there:
            assert there.network.chain_id == 84532 and await base_wallet.w3.eth.chain_id == 84532
            assert there.token == B.token and there.decimals == 6
            assert await there.hub.token_balance(B.token) == twin.user_tokens
    finally:
        await wallet.aclose()
        await base_wallet.aclose()


async def test_a_deposit_from_base_sepolia_credits_a_sepolia_home_channel(
    twin: SepoliaV1Twin, user_env: dict[str, str]
) -> None:
    """deposit_from on the twin's chains: the escrow on Base Sepolia and the credit at home
    wait out each chain's confirmation delay in real blocks, then the node finalizes the
    escrow to its vault there (our node's transition: Yellow's v1.4.1 refuses it)."""
    assert twin.chain is not None and twin.base_chain is not None and twin.nitronode
    network = get_network()
    key = PrivateKey.generate()
    for chain, token in ((twin.chain, D.token), (twin.base_chain, B.token)):
        await chain.request("anvil_setBalance", key.address, hex(10**18))
        await mint_test_token(chain.wallet(0), token, key.address, 3 * U)
    wallet = WalletClient(key, rpc_url=network.rpc_url)
    base_hub = ChannelHubClient(twin.base_chain.wallet(0), B.channel_hub)
    base_vault = await base_hub.get_node_balance(B.token)
    try:
        async with ChannelProviderV1(network, wallet) as provider:
            channel = await provider.create_channel(provider.node_address, "yusd", 2 * U)
            tx = await provider.deposit_from(84532, U, channel_id=channel.id)
            assert tx.explorer_url == f"https://sepolia.basescan.org/tx/{tx.hash}"
            assert await provider.balances() == {"yusd": 3 * U}
            assert await base_hub.token_balance(B.token, key.address) == 2 * U
            await twin.nitronode.settled()
            assert await base_hub.get_node_balance(B.token) == base_vault + U
            await provider.close_channel(channel.id)
            # 3 - 2 deposited at home, + 3 paid out at home; nothing more left Base Sepolia
            assert await provider.hub.token_balance(D.token) == 4 * U
            assert await base_hub.token_balance(B.token, key.address) == 2 * U
    finally:
        await wallet.aclose()


async def test_the_faucet_pays_an_off_chain_v1_transfer(
    twin: SepoliaV1Twin, user_env: dict[str, str]
) -> None:
    network = get_network()
    assert twin.chain is not None
    newcomer = WalletClient(PrivateKey.generate(), w3=twin.chain.w3)
    async with httpx.AsyncClient() as http:
        answer = await http.post(network.faucet_url, json={"userAddress": newcomer.address})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["success"] is True and (body["amount"], body["asset"]) == ("10", "yusd")
    async with ChannelProviderV1(network, newcomer) as provider:
        assert await provider.balances() == {"yusd": 10 * U}  # no channel, nothing on chain
        assert await provider.hub.token_balance(D.token, newcomer.address) == 0


async def test_a_channel_lifecycle_twice_in_a_row(
    twin: SepoliaV1Twin, user_env: dict[str, str]
) -> None:
    network = get_network()
    recipient_key = PrivateKey.generate()
    recipient = recipient_key.address
    wallet = WalletClient.from_env(network)
    seen: list[str] = []
    try:
        for run in (1, 2):
            async with ChannelProviderV1(network, wallet) as provider:
                hub = provider.hub
                before = await hub.token_balance(D.token)
                channel = await provider.create_channel(provider.node_address, "yusd", 5 * U)
                data = await hub.get_channel_data(channel.id)
                assert data.status == "OPERATING" and data.locked_funds == 5 * U
                assert channel.id.startswith("0x01") and channel.id not in seen
                sent = await provider.transfer(channel.id, U, recipient)
                assert sent.amount == U
                closing = await provider.close_channel(channel.id)
                data = await hub.get_channel_data(channel.id)
                assert data.status == "CLOSED" and data.locked_funds == 0
                assert closing.explorer_url == f"https://sepolia.etherscan.io/tx/{closing.hash}"
                assert await hub.token_balance(D.token) == before - U, f"run {run}"
                assert provider.get_channel(channel.id).status == "final"
                seen.append(channel.id)
        # both runs' transfers reached the recipient's off-chain balance on the node
        receiver = WalletClient(recipient_key, w3=wallet.w3)
        async with ChannelProviderV1(network, receiver) as provider:
            assert await provider.balances() == {"yusd": 2 * U}
    finally:
        await wallet.aclose()
    assert len(set(seen)) == 2


async def test_a_day_of_chain_time_passes_in_real_blocks(twin: SepoliaV1Twin) -> None:
    # the node's shortest challenge period: waited out, not time-travelled
    assert twin.chain is not None
    w3 = twin.chain.w3
    start_block, start = await w3.eth.block_number, await chain_time(w3)
    reached = await wait_for_chain_time(w3, start + 86400, poll_interval=0.2, timeout=120)
    assert reached >= start + 86400
    assert await w3.eth.block_number - start_block >= 86400 // twin.seconds_per_block


async def test_the_cli_starts_the_v1_twin_and_never_prints_the_key(tmp_path: Path) -> None:
    env_file = tmp_path / "twin.env"
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "settlement_widgets.sandbox", "--twin", "sepolia-v1",
        "--env-file", str(env_file),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert process.stdout is not None and process.stderr is not None
    try:
        line = await asyncio.wait_for(process.stdout.readline(), 120)
        shown = json.loads(line)
        ready = (await asyncio.wait_for(process.stderr.readline(), 30)).decode()
        assert "SETTLEMENT_NETWORK=sepolia-v1 at it" in ready and str(env_file) in ready
        assert shown["SETTLEMENT_NETWORK"] == "sepolia-v1" and "SETTLEMENT_PRIVATE_KEY" not in shown
        assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
        exported = dict(
            row.removeprefix("export ").split("=", 1) for row in env_file.read_text().splitlines()
        )
        assert exported["SETTLEMENT_RELAY_URL"] == shown["SETTLEMENT_RELAY_URL"]
        # what the file exports is a working sepolia-v1 profile: the node answers as v1
        seen = await detect_node_protocol(exported["SETTLEMENT_RELAY_URL"])
        assert seen.kind == "nitrolite-v1"
        secret = exported["SETTLEMENT_PRIVATE_KEY"].removeprefix("0x")
        assert len(secret) == 64 and secret not in line.decode() + ready
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGTERM)
        out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 0 and not env_file.exists()
    assert "PRIVATE_KEY=" not in (out + err).decode()
