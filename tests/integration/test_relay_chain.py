"""The relay following the chain: create, deposit, withdraw, close, dispute and checkpoint a
real channel on the sandbox's custody contract, with the ledger effects and channel statuses of
the v0.5 ClearNode, on the in-process EVM and on anvil.

The user side is driven by hand (protocol core + CustodyClient), exactly as a v0.5 client
does it: RPC for the broker-signed state, wallet signature, custody transaction; the relay
indexes the event (``sync_chain`` makes the test wait for it instead of sleeping).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
import pytest_asyncio
from relay_helpers import RelayTestClient

from settlement_widgets.channel.v0_5.chain.custody import CustodyClient
from settlement_widgets.channel.v0_5.core import make_request
from settlement_widgets.channel.v0_5.core import messages as M
from settlement_widgets.channel.v0_5.core.signing import sign_challenge, sign_state
from settlement_widgets.channel.v0_5.core.types import Channel, State, StateIntent
from settlement_widgets.channel.v0_5.node import RelayNode
from settlement_widgets.keys import PrivateKey
from settlement_widgets.sandbox import LocalSandbox
from settlement_widgets.sandbox.local import sandbox_key
from settlement_widgets.wallet import WalletClient

pytestmark = pytest.mark.asyncio(loop_scope="module")

ASSET = "ytest.usd"
U = 10**6


@pytest_asyncio.fixture(
    scope="module",
    loop_scope="module",
    params=[pytest.param("inprocess"), pytest.param("anvil", marks=pytest.mark.anvil)],
)
async def sandbox(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[LocalSandbox]:
    data = tmp_path_factory.mktemp("sandbox")
    async with LocalSandbox(chain=request.param, v4=False, wallets=4, data_dir=data) as sb:
        yield sb


@dataclass
class User:
    """One wallet talking to the relay and the custody contract."""

    sb: LocalSandbox
    wallet: WalletClient
    session: PrivateKey
    client: RelayTestClient
    custody: CustodyClient
    channel_id: str = ""

    async def call(self, req: Any) -> Any:
        reply = await self.client.call(req)
        assert not reply.is_error, reply.error
        return reply.result

    async def synced(self) -> None:
        relay = self.sb.relay
        assert relay is not None
        await relay.sync_chain()

    async def status(self) -> dict[str, Any]:
        channels = await self.call(M.get_channels_message(self.wallet.address))
        (found,) = [c for c in channels["channels"] if c["channel_id"] == self.channel_id]
        return found

    async def balance(self) -> str:
        result = await self.call(M.get_ledger_balances_message(self.session))
        return result["ledger_balances"][0]["amount"]

    async def open(self) -> None:
        reply = await self.call(
            M.create_channel_message(self.session, self.sb.network.chain_id, self.sb.token)
        )
        channel = Channel.from_rpc(reply["channel"])
        state = State.from_rpc(reply["state"])
        self.channel_id = reply["channel_id"]
        signed = state.with_sigs(
            [sign_state(self.channel_id, state, self.wallet.key), reply["server_signature"]]
        )
        tx = await self.custody.create(channel, signed)
        assert tx.channel_id == self.channel_id
        await self.synced()

    async def resize(self, resize_amount: int, allocate_amount: int) -> None:
        reply = await self.call(
            M.resize_channel_message(
                self.session,
                self.channel_id,
                self.wallet.address,
                resize_amount=resize_amount,
                allocate_amount=allocate_amount,
            )
        )
        assert (await self.status())["status"] == "resizing"
        state = State.from_rpc(reply["state"])
        signed = state.with_sigs(
            [sign_state(self.channel_id, state, self.wallet.key), reply["server_signature"]]
        )
        data = await self.custody.get_channel_data(self.channel_id)
        await self.custody.resize(self.channel_id, signed, [data.last_valid_state])
        await self.synced()

    async def close(self) -> State:
        reply = await self.call(
            M.close_channel_message(self.session, self.channel_id, self.wallet.address)
        )
        state = State.from_rpc(reply["state"])
        signed = state.with_sigs(
            [sign_state(self.channel_id, state, self.wallet.key), reply["server_signature"]]
        )
        await self.custody.close(self.channel_id, signed)
        await self.synced()
        return signed


@pytest_asyncio.fixture(loop_scope="module")
async def user(sandbox: LocalSandbox, request: pytest.FixtureRequest) -> AsyncIterator[User]:
    index = {"lifecycle": 0, "funded": 1, "dispute": 2, "checkpoint": 3}[request.param]
    wallet = sandbox.wallets[index]
    session = PrivateKey.generate()
    async with RelayTestClient(sandbox.relay_url, sandbox.broker_address) as client:
        await client.authenticate(wallet.key, session, allowances=((ASSET, "1000"),))
        async with httpx.AsyncClient() as http:
            paid = await http.post(sandbox.faucet_url, json={"userAddress": wallet.address})
            assert paid.status_code == 200
        await client.notification(
            "bu", lambda f: f.result["balance_updates"] == [{"asset": ASSET, "amount": "10"}]
        )
        yield User(sandbox, wallet, session, client, sandbox.custody(wallet))


async def tx_types(user: User) -> list[str]:
    """The wallet's ledger history, oldest first, through the public RPC."""
    listed = await user.call(
        make_request(
            "get_ledger_transactions",
            {"account_id": user.wallet.address, "sort": "asc", "limit": 100},
        )
    )
    return [t["tx_type"] for t in listed["ledger_transactions"]]


@pytest.mark.parametrize("user", ["lifecycle"], indirect=True)
async def test_deposit_and_withdraw_through_a_channel(sandbox: LocalSandbox, user: User) -> None:
    await user.open()
    update = await user.client.notification("cu", lambda f: f.result["status"] == "open")
    assert update.result["channel_id"] == user.channel_id
    assert (await user.status())["amount"] == "0"

    # deposit: custody funds -> unified balance (resize +X / allocate -X)
    await user.custody.approve(user.sb.token, 5 * U)
    await user.custody.deposit(user.sb.token, 5 * U)
    await user.resize(5 * U, -5 * U)
    status = await user.status()
    assert (status["status"], status["amount"], status["version"]) == ("open", "0", 1)
    assert await user.balance() == "15"

    # withdraw: unified balance -> escrow -> the user's custody ledger -> the wallet
    await user.resize(-3 * U, 3 * U)
    assert await user.balance() == "12"
    available = await user.custody.balance(user.sb.token)
    assert available == 3 * U
    before = await user.custody.token_balance(user.sb.token)
    await user.custody.withdraw(user.sb.token, 3 * U)
    assert await user.custody.token_balance(user.sb.token) == before + 3 * U

    await user.close()
    status = await user.status()
    assert (status["status"], status["amount"]) == ("closed", "0")
    assert await user.balance() == "12"
    assert await tx_types(user) == [
        "transfer",  # the faucet
        "deposit",
        "escrow_lock",
        "withdrawal",
    ]


@pytest.mark.parametrize("user", ["funded"], indirect=True)
async def test_a_funded_channel_blocks_transfers_until_closed(
    sandbox: LocalSandbox, user: User
) -> None:
    await user.open()
    await user.resize(0, 4 * U)  # the broker funds the channel from its custody balance
    assert (await user.status())["amount"] == str(4 * U)
    other = PrivateKey.generate().address
    refused = await user.client.call(
        M.transfer_message(user.session, [(ASSET, "1")], destination=other)
    )
    assert refused.error == (
        f"operation denied: non-zero allocation in 1 channel(s) detected owned by wallet "
        f"{user.wallet.address}"
    )
    final = await user.close()
    assert final.allocations[0].amount == 4 * U
    assert await user.custody.balance(user.sb.token) == 4 * U  # paid out on chain...
    assert await user.balance() == "6"  # ...and debited off chain
    sent = await user.call(M.transfer_message(user.session, [(ASSET, "1")], destination=other))
    assert sent["transactions"][0]["amount"] == "1"


@pytest.mark.parametrize("user", ["dispute"], indirect=True)
async def test_a_challenge_freezes_the_wallet_until_the_channel_closes(
    sandbox: LocalSandbox, user: User
) -> None:
    await user.open()
    data = await user.custody.get_channel_data(user.channel_id)
    candidate = data.last_valid_state  # INITIALIZE with both signatures
    signature = sign_challenge(user.channel_id, candidate, user.wallet.key)
    await user.custody.challenge(user.channel_id, candidate, signature)
    await user.synced()
    await user.client.notification("cu", lambda f: f.result["status"] == "challenged")
    wallet = user.wallet.address
    frozen = f"participant {wallet} has challenged channels, cannot execute operation"
    other = PrivateKey.generate().address
    for req in (
        M.transfer_message(user.session, [(ASSET, "1")], destination=other),
        M.resize_channel_message(user.session, user.channel_id, wallet, allocate_amount=1),
        M.close_channel_message(user.session, user.channel_id, wallet),
    ):
        assert (await user.client.call(req)).error == frozen
    assert sandbox.chain is not None
    await sandbox.chain.time_travel(3600 + 1)
    await user.custody.close(user.channel_id, candidate)  # after expiry: any state closes
    await user.synced()
    assert (await user.status())["status"] == "closed"
    sent = await user.call(M.transfer_message(user.session, [(ASSET, "1")], destination=other))
    assert sent["transactions"][0]["to_account"] == other


@pytest.mark.parametrize("user", ["checkpoint"], indirect=True)
async def test_a_checkpoint_clears_a_challenge_and_the_relay_keeps_the_chain_s_version(
    sandbox: LocalSandbox, user: User
) -> None:
    """A v0.5 relay never co-signs OPERATE states, so the test signs them with the broker's key
    (the sandbox's): the challenge and the checkpoint are real custody transactions, and the
    relay learns the versions they carry only from the ``Challenged``/``Checkpointed`` events."""
    relay = sandbox.relay
    assert relay is not None and relay.ledger is not None
    broker = relay.config.broker_key
    assert broker is not None and broker.address == sandbox.broker_address
    await user.open()
    cid = user.channel_id
    allocations = (await user.custody.get_channel_data(cid)).last_valid_state.allocations

    def co_signed(version: int) -> State:
        state = State(StateIntent.OPERATE, version, b"", allocations)
        return state.with_sigs(
            [sign_state(cid, state, user.wallet.key), sign_state(cid, state, broker)]
        )

    disputed = co_signed(1)
    await user.custody.challenge(cid, disputed, sign_challenge(cid, disputed, user.wallet.key))
    await user.synced()
    status = await user.status()
    assert (status["status"], status["version"]) == ("challenged", 1)

    await user.custody.checkpoint(cid, co_signed(2))
    await user.synced()
    status = await user.status()
    assert (status["status"], status["version"], status["amount"]) == ("open", 2, "0")
    update = await user.client.notification(
        "cu", lambda f: f.result["status"] == "open" and f.result["version"] == 2
    )
    assert update.result["channel_id"] == cid
    onchain = (await user.custody.get_channel_data(cid)).last_valid_state
    record = relay.ledger.channels[cid]
    assert (record.version, record.intent, record.state_data, record.allocations) == (
        onchain.version,
        int(StateIntent.OPERATE),
        "0x",
        [(a.destination, a.token, a.amount) for a in onchain.allocations],
    )

    # the relay's next state builds on the checkpointed version, so the custody accepts it
    await user.resize(0, 2 * U)  # RESIZE v3 with the checkpointed state as its proof
    status = await user.status()
    assert (status["status"], status["version"], status["amount"]) == ("open", 3, str(2 * U))
    assert (await user.custody.get_channel_data(cid)).last_valid_state.version == 3
    await user.close()
    assert (await user.status())["status"] == "closed"


async def test_a_restarted_relay_resumes_from_its_database_and_the_chain(
    sandbox: LocalSandbox,
) -> None:
    relay = sandbox.relay
    assert relay is not None and relay.ledger is not None and sandbox.chain is not None
    balances = dict(relay.ledger.balances)
    channels = {cid: (c.status, c.amount, c.version) for cid, c in relay.ledger.channels.items()}
    cursor = relay.ledger.meta["chain_cursor"]
    config = relay.config
    await relay.aclose()
    broker = sandbox.chain.wallet_for(sandbox_key("broker"))
    fresh = RelayNode(config, custody=CustodyClient(broker, config.networks[0].custody))
    sandbox.relay = fresh  # the sandbox closes it
    if sandbox.faucet is not None:
        sandbox.faucet.relay = fresh
    await fresh.start()  # re-reads the chain from its cursor: nothing is applied twice
    assert fresh.ledger is not None
    assert dict(fresh.ledger.balances) == balances
    assert {
        c: (v.status, v.amount, v.version) for c, v in fresh.ledger.channels.items()
    } == channels
    assert fresh.ledger.meta["chain_cursor"] == cursor
    # and it keeps following: a new channel opened now is indexed
    wallet = sandbox.wallets[0]
    session = PrivateKey.generate()
    async with RelayTestClient(fresh.url, fresh.broker_address) as client:
        await client.authenticate(wallet.key, session)
        user = User(sandbox, wallet, session, client, sandbox.custody(wallet))
        await user.open()
        assert (await user.status())["status"] == "open"
    assert len(fresh.ledger.channels) == len(channels) + 1


async def test_a_ledger_refuses_to_follow_another_chain(
    sandbox: LocalSandbox, tmp_path_factory: pytest.TempPathFactory
) -> None:
    from dataclasses import replace

    from settlement_widgets.errors import ConfigurationError
    from settlement_widgets.sandbox import InProcessChain

    relay = sandbox.relay
    assert relay is not None and sandbox.chain is not None
    config = replace(relay.config, db_path=tmp_path_factory.mktemp("other") / "relay.sqlite")
    custody = config.networks[0].custody
    broker = sandbox.chain.wallet_for(sandbox_key("broker"))
    async with RelayNode(config, custody=CustodyClient(broker, custody)):
        pass  # the ledger now follows the sandbox chain
    other = InProcessChain.create()
    stranger = CustodyClient(other.wallet_for(sandbox_key("broker")), custody)
    with pytest.raises(ConfigurationError, match="follows another chain"):
        await RelayNode(config, custody=stranger).start()
