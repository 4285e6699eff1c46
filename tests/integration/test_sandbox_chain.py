"""The sandbox chain and deployment, on the in-process EVM and on anvil."""

from __future__ import annotations

import os

import pytest

from settlement_widgets.contracts import load_artifact
from settlement_widgets.errors import (
    ChainUnavailableError,
    SettlementValueError,
    TransactionFailedError,
)
from settlement_widgets.sandbox import (
    AnvilChain,
    Chain,
    ChannelDeployment,
    deploy_contract,
    dev_keys,
    start_chain,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")

ANVIL_ACCOUNT_0 = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"
ANVIL_ACCOUNT_9 = "0xa0Ee7A142d267C1f36714E4a8F75612F20a79720"


async def test_one_chain_id_and_the_anvil_dev_accounts(chain: Chain) -> None:
    assert chain.chain_id == 31337
    assert await chain.w3.eth.chain_id == 31337
    assert len(chain.accounts) == 10
    assert chain.addresses[0] == ANVIL_ACCOUNT_0 and chain.addresses[9] == ANVIL_ACCOUNT_9
    assert chain.accounts == dev_keys(10)
    for address in chain.addresses:
        assert await chain.w3.eth.get_balance(address) >= 9_000 * 10**18
    assert (chain.rpc_url is None) == (chain.backend == "inprocess")


async def test_time_travel_and_mine(chain: Chain) -> None:
    before = await chain.timestamp()
    after = await chain.time_travel(3601)
    assert after >= before + 3601
    assert await chain.timestamp() == after

    number = await chain.block_number()
    assert await chain.mine(2) == number + 2
    with pytest.raises(SettlementValueError):
        await chain.time_travel(-1)


async def test_snapshot_revert_restores_state_and_wallet_nonces(chain: Chain) -> None:
    sender, receiver = chain.wallet(8), chain.addresses[9]
    balance = await chain.w3.eth.get_balance(receiver)
    snapshot = await chain.snapshot()
    await sender.transact(to=receiver, value=10**18)
    await sender.transact(to=receiver, value=10**18)
    assert await chain.w3.eth.get_balance(receiver) == balance + 2 * 10**18

    await chain.revert(snapshot)

    assert await chain.w3.eth.get_balance(receiver) == balance
    # the wallet's cached nonce was reset, so it can send again at once
    receipt = await sender.transact(to=receiver, value=5)
    assert receipt["status"] == 1
    assert await chain.w3.eth.get_balance(receiver) == balance + 5


async def test_channel_deployment(chain: Chain, channel_deployment: ChannelDeployment) -> None:
    dep = channel_deployment
    assert dep.chain_id == chain.chain_id and dep.deployer == chain.addresses[0]
    for address in (dep.custody, dep.adjudicator, dep.token):
        assert len(await chain.w3.eth.get_code(address)) > 0
    assert [c.name for c in dep.contracts] == ["Custody", "SimpleConsensus", "TestToken"]
    assert all(c.gas_used > 0 for c in dep.contracts)
    assert dep.to_json()["custody"] == dep.custody

    token = chain.w3.eth.contract(address=dep.token, abi=load_artifact("TestToken").abi)
    assert await token.functions.decimals().call() == 6
    assert await token.functions.symbol().call() == "ytest.usd"
    assert await token.functions.owner().call() == dep.deployer
    assert await token.functions.balanceOf(chain.addresses[1]).call() == 1_000_000 * 10**6
    assert await token.functions.balanceOf(chain.addresses[5]).call() == 0

    # only the deployer mints
    outsider = chain.wallet(5)
    with pytest.raises(TransactionFailedError) as caught:
        await outsider.transact(
            token.functions.mint(outsider.address, 1), abis=[load_artifact("TestToken").abi]
        )
    assert caught.value.error_name == "OwnableUnauthorizedAccount"


async def test_deploy_contract_with_constructor_arguments(chain: Chain) -> None:
    deployed = await deploy_contract(chain.wallet(0), "ChannelTestWallet", chain.addresses[3])
    wallet = chain.w3.eth.contract(
        address=deployed.address, abi=load_artifact("ChannelTestWallet").abi
    )
    assert await wallet.functions.owner().call() == chain.addresses[3]
    assert deployed.tx_hash.startswith("0x") and len(deployed.tx_hash) == 66


async def test_bad_backends_are_refused() -> None:
    with pytest.raises(SettlementValueError):
        await start_chain("geth")
    with pytest.raises(SettlementValueError):
        await start_chain("inprocess", chain_id=0)
    with pytest.raises(ChainUnavailableError):
        await start_chain("http://127.0.0.1:1")


@pytest.mark.anvil
async def test_anvil_is_stopped_by_aclose() -> None:
    chain = await start_chain("anvil", chain_id=31338)
    assert isinstance(chain, AnvilChain)
    assert (
        chain.chain_id == 31338 and chain.rpc_url and chain.rpc_url.startswith("http://127.0.0.1:")
    )
    pid = chain.pid
    os.kill(pid, 0)  # running
    await chain.aclose()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


async def test_one_wallet_per_account(chain: Chain) -> None:
    assert chain.wallet(1) is chain.wallet(1)
    assert chain.wallet_for(chain.accounts[1]) is chain.wallet(1)
    assert chain.wallet(1).address == chain.addresses[1]
    with pytest.raises(SettlementValueError):
        chain.wallet(10)


async def test_the_latest_block_follows_every_change_of_the_head(chain: Chain) -> None:
    """The Nitronode's raw head read (and, on the in-process chain, the provider's cached
    answer for "latest") agrees with web3's full read after a transaction, a mined block,
    a time jump and a revert, including a revert followed by a different block at the
    height of the one it replaced."""
    from settlement_widgets.channel.v1.node.chain_view import latest_block

    async def agree() -> dict[str, object]:
        raw, full = await latest_block(chain.w3), await chain.w3.eth.get_block("latest")
        assert raw == {
            "number": full["number"],
            "hash": bytes(full["hash"]),
            "timestamp": full["timestamp"],
        }
        return dict(raw)

    sender, receiver = chain.wallet(7), chain.addresses[9]
    first = await agree()
    snapshot = await chain.snapshot()
    await sender.transact(to=receiver, value=1)
    replaced = await agree()
    assert replaced["number"] == first["number"] + 1  # type: ignore[operator]
    await chain.mine(1)
    assert (await agree())["number"] == first["number"] + 2  # type: ignore[operator]
    await chain.time_travel(60)
    assert (await agree())["timestamp"] >= first["timestamp"] + 60  # type: ignore[operator]

    await chain.revert(snapshot)
    assert await agree() == first
    await sender.transact(to=receiver, value=2)
    again = await agree()
    assert again["number"] == replaced["number"] and again["hash"] != replaced["hash"]
