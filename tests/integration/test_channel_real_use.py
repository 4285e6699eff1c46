"""The channel method used the way people use it: the same script run again and again with
one ``SETTLEMENT_HOME``, operations back to back without sleeps, a history that is the
chain's, and a chain watcher whose failures are seen.

Each run of the script starts a new sandbox: a new chain with the same chain id (31337) and,
with deterministic keys, the same wallet and contract addresses as the last one. A store
keyed by chain id alone mixed the two chains' rows (``UNIQUE constraint failed`` on the
second run); every operation also used to return before the relay reflected it, so the next
one (``close_channel`` after ``create_channel(..., 0)``, ``balances()`` after a close) saw
the relay's old view.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from channel_helpers import ASSET, BACKENDS, U, fresh_wallet, provider, token_balance

from benchmarks.reliability.processes import TcpProxy
from settlement_widgets import ChannelProvider, ChannelStatusPanel, create_local_channel_config
from settlement_widgets.channel import WatcherStatus, request_faucet_tokens
from settlement_widgets.keys import PrivateKey
from settlement_widgets.networks import settlement_home
from settlement_widgets.sandbox import LocalSandbox
from settlement_widgets.wallet import WalletClient

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.slow]


async def _one_run(chain: str) -> list[str]:
    """The issue's script, extended to both create forms; returns the store files it used."""
    async with LocalSandbox(chain=chain, v4=False, wallets=2) as sb:  # default everything
        alice, bob = sb.wallets
        async with ChannelProvider(create_local_channel_config(sb), alice) as pa:
            await request_faucet_tokens(alice.address, sb.network)
            assert await pa.balances() == {ASSET: 10 * U}
            for amount in (0, 5 * U):
                c = await pa.create_channel(sb.broker_address, sb.token, amount)
                await pa.transfer(c.id, 1000, bob.address)
                before = await token_balance(sb, alice.address)
                off_chain = (await pa.balances())[ASSET]
                tx = await pa.close_channel(c.id)
                # right after close_channel: the relay has applied the Closed event
                assert await pa.balances() == {ASSET: 0}
                assert pa.get_channel(c.id).status == "final"
                assert tx.withdrawal is not None and tx.withdrawal.status == 1
                assert await token_balance(sb, alice.address) == before + off_chain
            return sorted(p.name for p in (settlement_home() / "channel").iterdir())


@pytest.mark.parametrize("chain", BACKENDS)
async def test_the_same_script_three_times_in_one_settlement_home(chain: str) -> None:
    stores: list[list[str]] = []
    for _ in range(3):
        stores.append(await _one_run(chain))
    # one store file per chain: each run added its own, none was reused
    sqlite = [[n for n in run if n.endswith(".sqlite")] for run in stores]
    assert [len(run) for run in sqlite] == [1, 2, 3]
    assert len(set(sqlite[-1])) == 3


async def test_a_store_refuses_another_chains_instance(tmp_path: Path) -> None:
    from settlement_widgets.channel import ChannelStore
    from settlement_widgets.errors import ConfigurationError

    wallet = PrivateKey.generate().address
    path = tmp_path / "store.sqlite"
    ChannelStore(path, wallet=wallet, chain_id=31337, chain_instance="sb-aaaa").close()
    with pytest.raises(ConfigurationError, match="chain_instance sb-aaaa, not sb-bbbb"):
        ChannelStore(path, wallet=wallet, chain_id=31337, chain_instance="sb-bbbb")


# --- history is the chain's ---------------------------------------------------------------


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def sandbox(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[LocalSandbox]:
    data = tmp_path_factory.mktemp("sandbox")
    async with LocalSandbox(chain="inprocess", v4=False, wallets=1, data_dir=data) as sb:
        yield sb


async def test_history_lists_each_chain_event_once_in_chain_order(sandbox: LocalSandbox) -> None:
    wallet = await fresh_wallet(sandbox, tokens=30 * U)
    # no background watcher: sync() below replays every event as a late watcher would
    async with provider(sandbox, wallet, watch_interval=None) as p:
        channel = await p.create_channel(sandbox.broker_address, sandbox.token, 6 * U)
        await p.transfer(channel.id, 1, sandbox.broker_address)
        await p.resize(channel.id, 2 * U)
        await p.resize(channel.id, -U)
        await p.withdraw()
        p.store.set_meta("event_block", "0")  # the watcher re-reads the whole chain
        assert await p.sync() == 0  # every event was applied already: nothing changes
        await p.close_channel(channel.id)

        event_names = ("Created", "Resized", "Closed", "Challenged", "Checkpointed")
        custody = sandbox.custody(wallet)
        events = await custody.get_events(0, "latest", names=event_names, channel_id=channel.id)
        chain_rows = [(e.name, e.tx_hash) for e in events]
        assert [n for n, _ in chain_rows] == [
            "Created",
            "Resized",  # the initial amount
            "Resized",  # +2
            "Resized",  # -1
            "Resized",  # settle before closing
            "Closed",
        ]
        frame = p.history(channel.id)
        rows = [
            (str(r.event).split(" ")[0], r.tx_hash)
            for r in frame.itertuples()
            if str(r.event).split(" ")[0] in event_names
        ]
        assert rows == chain_rows
        # each Resized row carries the deltas of its own transaction's event
        resized = [r for r in frame.itertuples() if str(r.event).startswith("Resized")]
        deltas = [e.delta_allocations for e in events if e.name == "Resized"]
        assert [r.event for r in resized] == [f"Resized {list(d)}" for d in deltas]
        # deposits and withdrawals: one row each, with their transaction
        moves = frame[frame["event"].isin(["deposited to custody", "withdrawn to wallet"])]
        assert moves["tx_hash"].is_unique and moves["tx_hash"].notna().all()
        assert list(moves["event"]).count("deposited to custody") == 2


# --- a failing chain watcher is seen -------------------------------------------------------


async def test_a_failing_watcher_is_logged_emitted_shown_and_retried(
    sandbox: LocalSandbox, caplog: pytest.LogCaptureFixture
) -> None:
    assert sandbox.chain is not None and sandbox.network.rpc_url is not None
    port = int(sandbox.network.rpc_url.split(":")[-1].split("/")[0])
    proxy = await TcpProxy(port).start()
    funded = await fresh_wallet(sandbox)
    wallet = WalletClient(funded.key, rpc_url=f"{proxy.url}/rpc")
    statuses: list[WatcherStatus] = []
    failing, healthy = asyncio.Event(), asyncio.Event()

    def on_watcher(status: WatcherStatus) -> None:
        statuses.append(status)
        (healthy if status.ok else failing).set()

    panel = ChannelStatusPanel(network=sandbox.network)
    try:
        async with provider(sandbox, wallet, watch_interval=0.05) as p:
            channel = await p.create_channel(sandbox.broker_address, sandbox.token, 0)
            panel.bind(p, channel.id)
            p.on("watcher", on_watcher)
            caplog.set_level(logging.WARNING, logger="settlement_widgets.channel")
            await proxy.down()
            await asyncio.wait_for(failing.wait(), 30)
            failed = statuses[0]
            assert not failed.ok and failed.failures == 1 and failed.retry_in is not None
            assert failed.error
            assert any("custody watcher failed" in r.getMessage() for r in caplog.records)
            assert "Chain watcher failing" in panel.notice
            await proxy.up()
            await asyncio.wait_for(healthy.wait(), 60)
            assert statuses[-1].ok
            assert panel.notice == ""
    finally:
        await proxy.down()
        # the panel holds the provider and its wallet; ipywidgets keeps every open widget alive,
        # so an unclosed session would surface in whichever later test closes all widgets
        panel.close()
        await wallet.aclose()


async def test_transfers_in_flight_together_share_commits_and_each_is_stored_done(
    sandbox: LocalSandbox,
) -> None:
    """64 ``transfer()`` calls at once (asyncio.gather): each returns its own relay
    transaction, each is stored ``done`` with its history line before it returns, and the
    store writes of one loop turn share a COMMIT (far fewer COMMITs than writes)."""
    alice = await fresh_wallet(sandbox)
    bob = await fresh_wallet(sandbox, tokens=0)
    async with provider(sandbox, alice) as pa:
        channel = await pa.create_channel(sandbox.broker_address, sandbox.token, 5 * U)
        before = (await pa.balances())[ASSET]
        commits, writes = pa._writes.commits, pa._writes.writes

        async def one(i: int) -> int:
            sent = await pa.transfer(channel.id, 1 + i, bob.address)
            row = [t for t in pa.store.transfers(channel.id) if t["relay_tx_id"] == sent.id]
            assert [r["status"] for r in row] == ["done"]  # stored before it returned
            return sent.id

        ids = await asyncio.gather(*(one(i) for i in range(64)))
        assert len(set(ids)) == 64
        assert pa._writes.writes - writes == 128  # a pending and a done write per transfer
        assert pa._writes.commits - commits < 64  # shared: not one COMMIT per write
        history = pa.history(channel.id)
        assert (history["event"] == "transfer sent").sum() == 64
        assert (await pa.balances())[ASSET] == before - sum(1 + i for i in range(64))
        # and one at a time: each transfer writes alone, committed at once
        commits = pa._writes.commits
        await pa.transfer(channel.id, 1, bob.address)
        assert pa._writes.commits - commits == 2
