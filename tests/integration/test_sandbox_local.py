"""``LocalSandbox`` in-process: the network profile, funded wallets, the faucet's HTTP contract,
the chain served over JSON-RPC to other clients, and the local explorer."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
import pytest_asyncio
from relay_helpers import RelayTestClient, relay_config
from web3 import AsyncHTTPProvider, AsyncWeb3

from settlement_widgets.channel.v0_5.core import get_config_message
from settlement_widgets.channel.v0_5.node import RelayNode
from settlement_widgets.contracts import load_artifact
from settlement_widgets.errors import UnknownOptionError
from settlement_widgets.keys import PrivateKey
from settlement_widgets.networks import get_network
from settlement_widgets.sandbox import LocalSandbox
from settlement_widgets.sandbox.chain import RpcChain
from settlement_widgets.sandbox.faucet import Faucet, FaucetConfig
from settlement_widgets.sandbox.http import SandboxHttpServer
from settlement_widgets.sandbox.local import sandbox_key, write_profile
from settlement_widgets.wallet import WalletClient

pytestmark = pytest.mark.asyncio(loop_scope="module")

FUNDING = 1_000_000 * 10**6


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def sandbox() -> AsyncIterator[LocalSandbox]:
    async with LocalSandbox(wallets=3) as sb:
        yield sb


async def test_profile_points_at_running_services_with_deployed_contracts(
    sandbox: LocalSandbox,
) -> None:
    network = sandbox.network
    assert network.name == "local" and network.chain_id == 31337
    assert sandbox.broker_address == sandbox_key("broker").address  # deterministic
    w3 = sandbox.chain.w3 if sandbox.chain is not None else None
    assert w3 is not None
    c = network.contracts
    for address in (c.custody, c.adjudicator, c.policy_hook, c.settlement_adapter, c.pool_manager):
        assert len(await w3.eth.get_code(address)) > 0, address
    assert network.token == sandbox.token and len(await w3.eth.get_code(sandbox.token)) > 0
    v4 = network.extra["v4"]
    assert len(v4["tokens"]) == 2 and v4["poolKey"]["hooks"] == c.policy_hook
    assert network.extra["brokerAddress"] == sandbox.broker_address
    write_profile(network)  # where get_network("local") reads it ($SETTLEMENT_HOME is per test)
    assert get_network("local") == network
    assert network.node_url.startswith("ws://127.0.0.1:")
    assert network.rpc_url is not None and network.rpc_url.startswith("http://127.0.0.1:")
    async with httpx.AsyncClient() as http:
        served = (await http.get(f"{sandbox.http_url}/profile.json")).json()
    assert served == json.loads(json.dumps(network.to_json()))
    async with RelayTestClient(sandbox.relay_url, sandbox.broker_address) as c:
        config = await c.call(get_config_message())
        assert config.result["networks"][0]["custody_address"] == network.contracts.custody


async def test_wallets_have_gas_and_test_tokens(sandbox: LocalSandbox) -> None:
    assert len(sandbox.wallets) == 3
    token = load_artifact("TestToken")
    for wallet in sandbox.wallets:
        assert await wallet.w3.eth.get_balance(wallet.address) > 10**18
        erc20 = wallet.w3.eth.contract(address=sandbox.token, abi=token.abi)
        assert await erc20.functions.balanceOf(wallet.address).call() == FUNDING


async def test_faucet_has_the_public_faucets_contract(sandbox: LocalSandbox) -> None:
    wallet = sandbox.wallets[1]
    relay = sandbox.relay
    assert relay is not None and relay.ledger is not None
    async with RelayTestClient(sandbox.relay_url, sandbox.broker_address) as c:
        await c.authenticate(wallet.key, PrivateKey.generate())
        async with httpx.AsyncClient() as http:
            ok = await http.post(sandbox.faucet_url, json={"userAddress": wallet.address.lower()})
            assert ok.status_code == 200
            assert ok.headers["access-control-allow-origin"] == "*"
            body = ok.json()
            assert set(body) == {"success", "message", "txId", "amount", "asset", "destination"}
            assert body["success"] is True
            assert body["message"] == "Tokens sent successfully"
            assert (body["amount"], body["asset"]) == ("10", "ytest.usd")
            assert body["destination"] == wallet.address  # checksummed
            assert body["txId"].isdigit()
            update = await c.notification("tr")
            assert update.result["transactions"][0]["id"] == int(body["txId"])
            await c.notification(
                "bu",
                lambda f: f.result["balance_updates"] == [{"asset": "ytest.usd", "amount": "10"}],
            )
            before = dict(relay.ledger.balances)
            bad_format = "Invalid request format. Expected JSON with 'userAddress' field."
            cases = {
                "not json": (b"{nope", 400, bad_format),
                "no field": (b'{"address": "0x00"}', 400, bad_format),
                "bad address": (b'{"userAddress": "0x1234"}', 400, "Invalid address format."),
            }
            for name, (raw, status, error) in cases.items():
                reply = await http.post(
                    sandbox.faucet_url, content=raw, headers={"Content-Type": "application/json"}
                )
                assert (name, reply.status_code, reply.json()) == (name, status, {"error": error})
            assert dict(relay.ledger.balances) == before
            preflight = await http.options(sandbox.faucet_url)
            assert preflight.status_code == 204
            info = (await http.get(sandbox.faucet_url.replace("requestTokens", "info"))).json()
            assert info == {
                "asset": "ytest.usd",
                "amount": "10",
                "available": True,
                "cooldownSeconds": 0.0,
            }


async def test_faucet_cooldown_and_unavailability(tmp_path: Path) -> None:
    payer = PrivateKey.generate().address
    user = PrivateKey.generate().address
    clock = [1000.0]
    async with RelayNode(relay_config(tmp_path / "relay.sqlite", faucet_account=payer)) as node:
        faucet = Faucet(node, payer, FaucetConfig(cooldown_seconds=60), clock=lambda: clock[0])
        broke = Faucet(node, user, FaucetConfig())  # an account with nothing in it
        offline = Faucet(None, payer, FaucetConfig())
        servers = [SandboxHttpServer(faucet=f) for f in (faucet, broke, offline)]
        urls = [f"{s.start()}/faucet/requestTokens" for s in servers]
        try:
            async with httpx.AsyncClient() as http:
                body = {"userAddress": user}
                assert (await http.post(urls[0], json=body)).status_code == 200
                clock[0] += 59
                limited = await http.post(urls[0], json=body)
                assert limited.status_code == 429
                assert limited.headers["retry-after"] == "1"
                assert "Try again in 1 s" in limited.json()["error"]
                other = await http.post(
                    urls[0], json={"userAddress": PrivateKey.generate().address}
                )
                assert other.status_code == 200  # the cooldown is per address
                clock[0] += 1
                assert (await http.post(urls[0], json=body)).status_code == 200
                assert node.ledger is not None
                assert node.ledger.balance(user, "ytest.usd") == 20_000_000
                unavailable = await http.post(urls[1], json={"userAddress": payer})
                assert (unavailable.status_code, unavailable.json()) == (
                    503,
                    {"error": "Faucet service is currently unavailable."},
                )
                down = await http.post(urls[2], json=body)
                assert (down.status_code, down.json()) == (
                    503,
                    {"error": "Failed to connect to Clearnode."},
                )
        finally:
            for server in servers:
                await server.aclose()


async def test_other_processes_reach_the_chain_over_json_rpc(sandbox: LocalSandbox) -> None:
    url = sandbox.rpc_url
    assert url is not None
    w3 = AsyncWeb3(AsyncHTTPProvider(url))
    assert await w3.eth.chain_id == 31337
    block = await w3.eth.get_block("latest")
    assert block["number"] == await w3.eth.block_number
    # a wallet over HTTP signs, sends and waits like against any node
    remote = WalletClient(sandbox.wallets[2].key, rpc_url=url)
    token = load_artifact("TestToken")
    erc20 = remote.w3.eth.contract(address=sandbox.token, abi=token.abi)
    receiver = PrivateKey.generate().address
    receipt = await remote.transact(erc20.functions.transfer(receiver, 1234), abis=[token.abi])
    assert receipt["status"] == 1
    assert await erc20.functions.balanceOf(receiver).call() == 1234
    assert sandbox.chain is not None
    assert await sandbox.chain.block_number() == receipt["blockNumber"]  # the same chain
    async with httpx.AsyncClient() as http:
        batch = await http.post(
            url,
            json=[
                {"jsonrpc": "2.0", "id": 1, "method": "eth_chainId", "params": []},
                {"jsonrpc": "2.0", "id": 2, "method": "eth_noSuchMethod", "params": []},
            ],
        )
    first, second = batch.json()
    assert first == {"jsonrpc": "2.0", "id": 1, "result": "0x7a69"}
    assert second["id"] == 2 and second["error"]["code"] == -32601
    # time travel from another process, as RpcChain does it against anvil
    rpc_chain = await RpcChain.connect(url)
    before = await rpc_chain.timestamp()
    snapshot = await rpc_chain.snapshot()
    assert await rpc_chain.time_travel(3600) >= before + 3600
    await rpc_chain.revert(snapshot)
    assert await rpc_chain.timestamp() < before + 3600
    await rpc_chain.aclose()
    await w3.provider.disconnect()
    await remote.w3.provider.disconnect()


async def test_explorer_pages_read_the_chain_and_escape_everything(sandbox: LocalSandbox) -> None:
    assert sandbox.deployment is not None
    custody_tx = sandbox.deployment.contracts[0].tx_hash
    explorer = sandbox.network.explorer
    async with httpx.AsyncClient() as http:
        page = await http.get(explorer.tx_url(custody_tx))
        assert page.status_code == 200
        assert page.headers["content-type"].startswith("text/html")
        assert "success" in page.text and "Custody" in page.text
        holder = await http.get(explorer.address_url(sandbox.wallets[0].address))
        assert holder.status_code == 200
        assert "dev wallet 1" in holder.text and "ytest.usd (wallet)" in holder.text
        missing = await http.get(explorer.tx_url("0x" + "ab" * 32))
        assert missing.status_code == 404
        hostile = await http.get(explorer.address_url("<img src=x onerror=alert(1)>"))
        assert hostile.status_code == 400
        assert "<img" not in hostile.text and "&lt;img src=x onerror=alert(1)&gt;" in hostile.text
        index = await http.get(f"{sandbox.http_url}/explorer/")
        assert index.status_code == 200 and "Custody" in index.text


async def test_unknown_options_are_refused() -> None:
    with pytest.raises(UnknownOptionError, match="did you mean 'wallets'"):
        LocalSandbox(walets=2)
