"""Chain snapshots: a sandbox resumed from one is the chain a deployment gives (same blocks,
logs, addresses, code, storage, balances and nonces, and so the same next transaction), it
settles channels and v4 intents, a random broker is funded on top, and a missing, stale or
broken snapshot falls back to deploying (and is rebuilt).

Every test uses its own snapshot directory (``SETTLEMENT_SNAPSHOTS``), so nothing here reads
or writes the snapshots ``make contracts`` built.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import logging
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from channel_helpers import ASSET, U, fresh_wallet, provider, token_balance

from settlement_widgets.channel import request_faucet_tokens
from settlement_widgets.channel.v0_5.chain.custody import CustodyClient
from settlement_widgets.contracts import load_artifact
from settlement_widgets.sandbox import LocalSandbox
from settlement_widgets.sandbox.chain import InProcessChain
from settlement_widgets.sandbox.local import sandbox_key
from settlement_widgets.sandbox.snapshot import ENV_DIR, build_snapshot, find_snapshot, key_for
from settlement_widgets.v4 import Intent, V4Provider, intent_id

pytestmark = pytest.mark.asyncio(loop_scope="module")

OPTIONS: dict[str, Any] = {"wallets": 2}  # v4 on: the whole deployment phase
TIMINGS = ("salt_search_seconds", "deploy_seconds")  # how long it took, not what it made


@pytest.fixture(scope="module")
def snapshots(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A snapshot directory of this module's own, for every sandbox started here."""
    folder = tmp_path_factory.mktemp("snapshots")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(ENV_DIR, str(folder))
        yield folder


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def built(snapshots: Path) -> Path:
    plan = LocalSandbox(**OPTIONS).provision_plan()
    record = await build_snapshot("inprocess", plan, sandbox_key("broker"), snapshots)
    assert record.parent == snapshots
    return snapshots


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def loaded(built: Path) -> AsyncIterator[LocalSandbox]:
    async with LocalSandbox(**OPTIONS) as sb:
        yield sb


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def deployed(built: Path) -> AsyncIterator[LocalSandbox]:
    async with LocalSandbox(**OPTIONS, snapshot=False) as sb:
        yield sb


def _pyevm(sb: LocalSandbox) -> Any:
    assert isinstance(sb.chain, InProcessChain)
    return sb.chain.tester.backend.chain


def _addresses(sb: LocalSandbox) -> list[str]:
    """Every account the deployment phase touched."""
    assert sb.deployment is not None and sb.v4 is not None and sb.chain is not None
    v4 = sb.v4
    return [
        sb.chain.addresses[0],
        *(w.address for w in sb.wallets),
        sb.broker_address,
        sb.deployment.custody,
        sb.deployment.adjudicator,
        sb.deployment.token,
        v4.pool_manager,
        v4.modify_liquidity_router,
        v4.swap_router,
        v4.token0,
        v4.token1,
        v4.hook_deployer,
        v4.hook,
        v4.adapter,
    ]


# --- a loaded sandbox is a deployed one ------------------------------------------------------


async def test_a_loaded_sandbox_is_the_chain_a_deployment_gives(
    loaded: LocalSandbox, deployed: LocalSandbox
) -> None:
    assert (loaded.started_from, deployed.started_from) == ("snapshot", "deployed")
    assert loaded.deployment == deployed.deployment  # addresses, and each creation tx
    assert loaded.v4 is not None and deployed.v4 is not None
    no_timing = dict.fromkeys(TIMINGS, 0.0)
    assert dataclasses.replace(loaded.v4, **no_timing) == dataclasses.replace(
        deployed.v4, **no_timing
    )
    # the same state root: every account, its balance, nonce, code and all of its storage
    a, b = _pyevm(loaded).get_canonical_head(), _pyevm(deployed).get_canonical_head()
    assert (a.block_number, a.state_root, a.gas_used, a.base_fee_per_gas) == (
        b.block_number,
        b.state_root,
        b.gas_used,
        b.base_fee_per_gas,
    )
    # ...and the same, read through JSON-RPC as any client would
    w3a, w3b = loaded.wallets[0].w3, deployed.wallets[0].w3
    for address in _addresses(loaded):
        assert await w3a.eth.get_code(address) == await w3b.eth.get_code(address), address
        assert await w3a.eth.get_balance(address) == await w3b.eth.get_balance(address), address
        assert await w3a.eth.get_transaction_count(address) == await w3b.eth.get_transaction_count(
            address
        ), address
        for slot in range(12):
            assert await w3a.eth.get_storage_at(address, slot) == await w3b.eth.get_storage_at(
                address, slot
            ), (address, slot)
    # the history is there too: receipts of the deployment and the custody's logs
    assert loaded.deployment is not None
    for contract in loaded.deployment.contracts:
        ra = await w3a.eth.get_transaction_receipt(contract.tx_hash)  # type: ignore[arg-type]
        rb = await w3b.eth.get_transaction_receipt(contract.tx_hash)  # type: ignore[arg-type]
        assert (ra["status"], ra["gasUsed"], ra["contractAddress"], ra["blockNumber"]) == (
            rb["status"],
            rb["gasUsed"],
            rb["contractAddress"],
            rb["blockNumber"],
        )
    custody = loaded.deployment.custody
    logs = [
        await w3.eth.get_logs({"address": custody, "fromBlock": 0, "toBlock": "latest"})
        for w3 in (w3a, w3b)
    ]
    assert logs[0] and [(x["transactionHash"], x["topics"], x["data"]) for x in logs[0]] == [
        (x["transactionHash"], x["topics"], x["data"]) for x in logs[1]
    ]  # the broker's Deposited
    # the next transaction: same nonce, same gas price (the base fee goes on from the same
    # head), same hash
    hashes = []
    for sb in (loaded, deployed):
        sender, recipient = sb.wallets
        abi = load_artifact("TestToken").abi
        token = sender.w3.eth.contract(address=sb.token, abi=abi)  # type: ignore[call-overload]
        receipt = await sender.transact(token.functions.transfer(recipient.address, 7 * U))
        hashes.append(receipt["transactionHash"])
    assert hashes[0] == hashes[1]


async def test_a_resumed_chain_is_moved_to_the_present(loaded: LocalSandbox) -> None:
    """A snapshot built yesterday gives a chain of today: its own genesis (chains are told
    apart by it), "now" read from the latest block is now, and nothing else moves."""
    from settlement_widgets.sandbox import pyevm_database

    chain = _pyevm(loaded)
    database = pyevm_database.dump(chain)
    head = chain.get_canonical_head()
    genesis = chain.get_canonical_block_header_by_number(0)
    tomorrow = genesis.timestamp + 86_400
    resumed = pyevm_database.restore(type(chain), database, now=tomorrow)
    moved = [resumed.get_canonical_block_header_by_number(n) for n in range(head.block_number + 1)]
    before = [chain.get_canonical_block_header_by_number(n) for n in range(head.block_number + 1)]
    assert moved[0].timestamp == tomorrow and moved[0].hash != genesis.hash
    for old, new in zip(before, moved, strict=True):
        assert new.timestamp == old.timestamp + 86_400 and new.hash != old.hash
        assert (new.block_number, new.state_root, new.transaction_root, new.receipt_root) == (
            old.block_number,
            old.state_root,
            old.transaction_root,
            old.receipt_root,
        )
    assert all(b.parent_hash == a.hash for a, b in itertools.pairwise(moved))
    assert resumed.get_canonical_head() == moved[-1]
    assert resumed.header.timestamp > moved[-1].timestamp  # the next block comes after it
    last = resumed.get_canonical_block_by_number(head.block_number)
    assert [t.hash for t in last.transactions] == [
        t.hash for t in chain.get_canonical_block_by_number(head.block_number).transactions
    ]
    # never moved backwards
    kept = pyevm_database.restore(type(chain), database, now=genesis.timestamp)
    assert kept.get_canonical_head().hash == head.hash


# --- it settles -------------------------------------------------------------------------------


async def test_a_v4_intent_settles_on_a_loaded_sandbox(loaded: LocalSandbox) -> None:
    assert loaded.v4 is not None and loaded.chain is not None
    v4 = loaded.v4
    operator = V4Provider(loaded.chain.wallet(0), network=loaded.network)
    user = loaded.wallets[0]
    await operator.set_authorized_solver(loaded.chain.addresses[0])
    abi = load_artifact("V4TestToken").abi
    token0 = operator.wallet.w3.eth.contract(address=v4.token0, abi=abi)  # type: ignore[call-overload]
    await operator.wallet.transact(token0.functions.mint(user.address, 10**18))
    user_v4 = V4Provider(user, network=loaded.network)
    await user_v4.approve_adapter(v4.token0)
    now = int((await user.w3.eth.get_block("latest"))["timestamp"])
    intent = Intent(
        id=intent_id("snapshot"),
        user=user.address,
        token_in=v4.token0,
        token_out=v4.token1,
        amount_in=10**18,
        min_amount_out=9 * 10**17,
        deadline=now + 3600,
    )
    await operator.register_policy(intent.id, intent.min_amount_out, now + 600)
    signed = await user_v4.sign_intent(intent)
    tx = await operator.settle_intent(signed, v4.pool_key, 99 * 10**16)
    assert tx.status == 1 and tx.event("IntentSettled") is not None
    assert await user_v4.balance_of(v4.token1) >= intent.min_amount_out


async def test_a_random_broker_is_funded_on_top_and_channels_work(built: Path) -> None:
    """``deterministic=False`` (the CLI's default): the snapshot, then the broker's funding."""
    async with LocalSandbox(**OPTIONS, deterministic=False) as sb:
        assert sb.started_from == "snapshot"
        assert sb.broker_address != sandbox_key("broker").address
        assert sb.deployment is not None and sb.chain is not None
        custody = CustodyClient(sb.chain.wallet(0), sb.deployment.custody)
        plan = sb.provision_plan()
        assert await custody.balance(sb.token, sb.broker_address) == plan.broker_liquidity
        assert await sb.chain.w3.eth.get_balance(sb.broker_address) > 99 * 10**18
        fixed = LocalSandbox(**OPTIONS).provision_plan()
        assert dataclasses.replace(plan, broker=fixed.broker) == fixed

        alice = await fresh_wallet(sb, tokens=20 * U)
        bob = await fresh_wallet(sb, tokens=0)
        async with provider(sb, alice) as pa, provider(sb, bob) as pb:
            await request_faucet_tokens(alice.address, sb.network)
            channel = await pa.create_channel(sb.broker_address, sb.token, 5 * U)
            assert channel.participants == (alice.address, sb.broker_address)
            await pa.transfer(channel.id, 2 * U, bob.address)
            assert await pb.balances() == {ASSET: 2 * U}
            before = await token_balance(sb, alice.address)
            tx = await pa.close_channel(channel.id)
            assert tx.receipt["status"] == 1
            assert await token_balance(sb, alice.address) == before + 13 * U


# --- what falls back ----------------------------------------------------------------------------


async def test_missing_then_stale_then_broken_snapshots_deploy_and_are_rebuilt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    folder = tmp_path / "snapshots"
    monkeypatch.setenv(ENV_DIR, str(folder))
    options = {"wallets": 1, "v4": False}
    key = key_for("inprocess", LocalSandbox(**options).provision_plan())
    caplog.set_level(logging.INFO, logger="settlement_widgets.sandbox.snapshot.start")

    async with LocalSandbox(**options) as sb:  # missing: deploys, saves
        assert sb.started_from == "deployed"
        reference = sb.deployment
    assert "no chain snapshot yet" in caplog.text
    assert find_snapshot(folder, key)[1] == "found"
    async with LocalSandbox(**options) as sb:
        assert sb.started_from == "snapshot" and sb.deployment == reference

    record_path = folder / f"{key.name}.json"
    record = json.loads(record_path.read_text())
    record_path.write_text(json.dumps({**record, "key": "0" * 64}))  # built from other inputs
    assert find_snapshot(folder, key)[1] == "stale"
    async with LocalSandbox(**options) as sb:
        assert sb.started_from == "deployed" and sb.deployment == reference
    assert find_snapshot(folder, key)[1] == "found"  # rebuilt

    state = folder / f"{key.name}.state"
    state.write_bytes(state.read_bytes()[:-1] + b"\x00")  # not the state recorded
    async with LocalSandbox(**options) as sb:
        assert sb.started_from == "deployed" and sb.deployment == reference
        assert await sb.wallets[0].w3.eth.get_code(reference.custody)  # type: ignore[union-attr]
    async with LocalSandbox(**options) as sb:
        assert sb.started_from == "snapshot"


async def test_an_unwritable_directory_still_deploys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    monkeypatch.setenv(ENV_DIR, str(blocker / "snapshots"))
    caplog.set_level(logging.WARNING, logger="settlement_widgets.sandbox.snapshot.start")
    async with LocalSandbox(wallets=1, v4=False) as sb:
        assert sb.started_from == "deployed"
        assert sb.relay is not None and sb.network.contracts.custody
    assert "cannot save the chain snapshot" in caplog.text


async def test_snapshot_false_never_reads_or_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV_DIR, str(tmp_path / "snapshots"))
    async with LocalSandbox(wallets=1, v4=False, snapshot=False) as sb:
        assert sb.started_from == "deployed"
    assert not (tmp_path / "snapshots").exists()


# --- anvil ------------------------------------------------------------------------------------


@pytest.mark.anvil
async def test_anvil_resumes_the_chain_a_deployment_gives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV_DIR, str(tmp_path))
    options = {"chain": "anvil", "wallets": 2}
    plan = LocalSandbox(**options).provision_plan()
    await build_snapshot("anvil", plan, sandbox_key("broker"), tmp_path)
    heads = []
    async with LocalSandbox(**options) as loaded, LocalSandbox(**options, snapshot=False) as fresh:
        assert (loaded.started_from, fresh.started_from) == ("snapshot", "deployed")
        assert loaded.deployment == fresh.deployment
        for sb in (loaded, fresh):
            block = await sb.wallets[0].w3.eth.get_block("latest")
            heads.append((block["number"], block["gasUsed"], block["baseFeePerGas"]))
        # not the state roots: anvil's state holds every block hash (the EIP-2935 history
        # contract), and block hashes differ between any two deployments
        assert heads[0] == heads[1]
        w3a, w3b = loaded.wallets[0].w3, fresh.wallets[0].w3
        for address in _addresses(loaded):
            assert await w3a.eth.get_code(address) == await w3b.eth.get_code(address)
            assert await w3a.eth.get_balance(address) == await w3b.eth.get_balance(address)
            assert await w3a.eth.get_transaction_count(
                address
            ) == await w3b.eth.get_transaction_count(address)
            for slot in range(12):
                assert await w3a.eth.get_storage_at(address, slot) == await w3b.eth.get_storage_at(
                    address, slot
                ), (address, slot)
        # the relay serves it like any other
        alice = await fresh_wallet(loaded, tokens=10 * U)
        async with provider(loaded, alice) as pa:
            channel = await pa.create_channel(loaded.broker_address, loaded.token, 5 * U)
            tx = await pa.close_channel(channel.id)
            assert tx.receipt["status"] == 1


@pytest.mark.anvil
async def test_anvil_over_a_left_relay_ledger_deploys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every anvil resumed from one snapshot has its genesis; a relay ledger tells chains apart
    by it, so over a ledger left by an earlier sandbox the chain is deployed (a genesis of
    its own, for the relay to compare), as without snapshots."""
    monkeypatch.setenv(ENV_DIR, str(tmp_path / "snapshots"))
    data = tmp_path / "data"
    options = {"chain": "anvil", "wallets": 1, "v4": False, "data_dir": data}
    async with LocalSandbox(**options) as first:
        assert first.started_from == "deployed"  # no snapshot yet: deploys and saves one
    async with LocalSandbox(**{**options, "data_dir": tmp_path / "other"}) as second:
        assert second.started_from == "snapshot"
    third = LocalSandbox(**options)
    try:
        await third.start()
    except Exception as exc:  # the relay refusing the ledger (unless both anvils started
        assert "follows another chain" in str(exc)  # within one second: same genesis time)
    finally:
        await third.aclose()
    assert third.started_from == "deployed"
