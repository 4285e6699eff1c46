"""execute_plan(send=True) on a real in-process EVM: the exact-amount approval and the step
transaction are mined; an existing allowance skips the approval; a wrong chain sends nothing.

LI.FI's contracts do not exist on the in-process chain, so the loopback LI.FI answers with a
quote in LI.FI's schema whose token is a TestERC20 deployed here and whose transaction is a
plain value transfer. The wallet code path is the one a live quote takes.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import pytest
from web3 import AsyncWeb3
from web3.providers.eth_tester import AsyncEthereumTesterProvider

from settlement_widgets.aggregator import AggregatorProvider
from settlement_widgets.contracts import load_artifact
from settlement_widgets.errors import (
    ConfigurationError,
    SettlementValueError,
    TransactionFailedError,
)
from settlement_widgets.wallet import WalletClient
from tests.lifi_synthetic import Fault, LifiTestServer, fixture

SPENDER = "0x2B5AD5c4795c026514f8317c7a215E218DcCD6cF"  # an EOA standing in for LI.FI
RECIPIENT = "0x6813Eb9362372EEF6200f3b1dbC3f819671cBA69"
AMOUNT = 25_000_000


@pytest.fixture
def server() -> Iterator[LifiTestServer]:
    with LifiTestServer() as srv:
        yield srv


async def setup_chain() -> tuple[WalletClient, Any, int]:
    w3 = AsyncWeb3(AsyncEthereumTesterProvider())
    wallet = WalletClient((1).to_bytes(32, "big"), w3=w3)
    artifact = load_artifact("TestERC20")
    factory = w3.eth.contract(abi=artifact.abi, bytecode=artifact.bytecode)
    receipt = await wallet.transact(factory.constructor(10**12))
    token = w3.eth.contract(address=receipt["contractAddress"], abi=artifact.abi)
    return wallet, token, await wallet.chain_id()


def local_quote(chain_id: int, token: str, sender: str, value: int) -> bytes:
    quote = fixture("quote_arb_usdc_to_op_usdc.json")
    action, estimate = quote["action"], quote["estimate"]
    action.update(fromChainId=chain_id, fromAmount=str(AMOUNT), fromAddress=sender)
    action["fromToken"].update(address=token, chainId=chain_id)
    estimate.update(fromAmount=str(AMOUNT), approvalAddress=SPENDER)
    quote["transactionRequest"] = {
        "to": RECIPIENT,
        "data": "0x",
        "value": hex(value),
        "chainId": chain_id,
        "gasLimit": hex(21_000),
        "from": sender,
    }
    return json.dumps(quote).encode()


async def test_send_mines_approval_then_step(server: LifiTestServer) -> None:
    wallet, token, chain_id = await setup_chain()
    w3 = wallet.w3
    body = local_quote(chain_id, token.address, wallet.address, value=12345)
    server.inject("GET", "/quote", Fault(body=body), Fault(body=body))
    provider = AggregatorProvider(base_url=server.url, backoff_base=0.001)
    request = (chain_id, 10, token.address, "USDC", AMOUNT, wallet.address)

    quote = await provider.quote(*request)
    dry = await provider.execute_plan(quote, wallet=wallet)  # a wallet alone sends nothing
    assert not dry.sent and await w3.eth.get_transaction_count(wallet.address) == 1

    before = await w3.eth.get_balance(RECIPIENT)
    plan = await provider.execute_plan(quote, wallet=wallet, send=True)
    approve, step = plan.transactions
    assert approve.tx_hash and step.tx_hash and plan.tx_hashes == (approve.tx_hash, step.tx_hash)
    assert await token.functions.allowance(wallet.address, SPENDER).call() == AMOUNT
    assert await w3.eth.get_balance(RECIPIENT) - before == 12345
    for tx_hash in plan.tx_hashes:
        assert (await w3.eth.get_transaction_receipt(tx_hash))["status"] == 1

    # the allowance now covers the amount: the approval is skipped, only the step is sent
    again = await provider.execute_plan(await provider.quote(*request), wallet=wallet, send=True)
    assert again.transactions[0].tx_hash is None
    assert "skipped" in (again.transactions[0].note or "")
    assert again.transactions[1].tx_hash
    await provider.close()


async def test_wrong_chain_or_wrong_sender_sends_nothing(server: LifiTestServer) -> None:
    wallet, token, chain_id = await setup_chain()
    nonce = await wallet.w3.eth.get_transaction_count(wallet.address)
    provider = AggregatorProvider(base_url=server.url)
    server.inject(
        "GET", "/quote", Fault(body=local_quote(chain_id + 1, token.address, wallet.address, 0))
    )
    quote = await provider.quote(chain_id + 1, 10, token.address, "USDC", AMOUNT, wallet.address)
    with pytest.raises(ConfigurationError, match=f"connected to chain {chain_id}"):
        await provider.execute_plan(quote, wallet=wallet, send=True)
    other = "0x" + "11" * 20
    server.inject("GET", "/quote", Fault(body=local_quote(chain_id, token.address, other, 0)))
    quote = await provider.quote(chain_id, 10, token.address, "USDC", AMOUNT, other)
    with pytest.raises(SettlementValueError, match="built for sender"):
        await provider.execute_plan(quote, wallet=wallet, send=True)
    assert await wallet.w3.eth.get_transaction_count(wallet.address) == nonce
    await provider.close()


def two_step_route(chain_id: int, sender: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A route of two native-coin steps on the local chain, and each step's populated form."""
    data = fixture("routes_arb_usdc_to_op_usdc.json")
    tokens = fixture("tokens.json")
    native = {**tokens["tokens"]["42161"][0], "chainId": chain_id}
    route = copy.deepcopy(data["routes"][2])
    route.update(fromChainId=chain_id, fromToken=native, fromAddress=sender)
    steps, populated = [], []
    for i, value in enumerate((1111, 2222), start=1):
        step = copy.deepcopy(route["steps"][0])
        step["id"] = f"local-step-{i}"
        step["action"].update(fromChainId=chain_id, fromToken=native, fromAddress=sender)
        steps.append(step)
        tx = {"to": RECIPIENT, "data": "0x", "value": hex(value), "chainId": chain_id}
        populated.append({**step, "transactionRequest": {**tx, "gasLimit": hex(21_000)}})
    route["steps"] = steps
    return route, populated


async def test_a_later_step_waits_for_the_previous_one(server: LifiTestServer) -> None:
    wallet, _, chain_id = await setup_chain()
    route, populated = two_step_route(chain_id, wallet.address)
    done = fixture("status_done.json")
    body = json.dumps({"routes": [route], "unavailableRoutes": {}}).encode()
    server.inject("POST", "/advanced/routes", Fault(body=body))
    server.inject(
        "POST",
        "/advanced/stepTransaction",
        *(Fault(body=json.dumps(p).encode()) for p in (populated[0], populated[1], populated[1])),
    )
    server.inject("GET", "/status", Fault(body=json.dumps(done).encode()))
    provider = AggregatorProvider(base_url=server.url, poll_interval=0)
    (local,) = await provider.routes(chain_id, 10, "0x" + "00" * 20, "USDC", AMOUNT, wallet.address)
    plan = await provider.execute_plan(local, wallet=wallet, send=True)
    assert [t.kind for t in plan.transactions] == ["step", "step"]  # native coin: no approval
    first, second = plan.tx_hashes
    (status_req,) = [r for r in server.requests if r.path.endswith("/status")]
    assert status_req.query["txHash"] == [first]
    refresh = [r for r in server.requests if r.path.endswith("/stepTransaction")][-1]
    assert refresh.at >= status_req.at and refresh.json()["id"] == "local-step-2"
    for tx_hash, value in ((first, 1111), (second, 2222)):
        assert (await wallet.w3.eth.get_transaction(tx_hash))["value"] == value
    await provider.close()


async def test_a_failed_step_stops_the_route(server: LifiTestServer) -> None:
    wallet, _, chain_id = await setup_chain()
    route, populated = two_step_route(chain_id, wallet.address)
    failed = {"status": "FAILED", "substatus": "SLIPPAGE_EXCEEDED"}
    failed["sending"] = {"chainId": chain_id, "txHash": "0x" + "00" * 32}  # type: ignore[assignment]
    server.inject("POST", "/advanced/routes", Fault(body=json.dumps({"routes": [route]}).encode()))
    server.inject(
        "POST",
        "/advanced/stepTransaction",
        *(Fault(body=json.dumps(p).encode()) for p in populated),
    )
    server.inject("GET", "/status", Fault(body=json.dumps(failed).encode()))
    provider = AggregatorProvider(base_url=server.url, poll_interval=0)
    (local,) = await provider.routes(chain_id, 10, "0x" + "00" * 20, "USDC", AMOUNT, wallet.address)
    nonce = await wallet.w3.eth.get_transaction_count(wallet.address)
    with pytest.raises(TransactionFailedError, match="FAILED/SLIPPAGE_EXCEEDED") as info:
        await provider.execute_plan(local, wallet=wallet, send=True)
    assert info.value.tx_hash is not None
    assert await wallet.w3.eth.get_transaction_count(wallet.address) == nonce + 1  # step 1 only
    await provider.close()
