"""``SettlementDashboard`` on a real local sandbox, driven the way a browser drives it: button
clicks (``Button.click()`` runs the same handlers) inside a running event loop, which schedule
the actions as tasks. Every claim is checked against the relay (the recipient's own provider),
the chain (receipts, custody status, token balances) or the v4 adapter."""

from __future__ import annotations

import asyncio
import dataclasses
import re
import socket
import threading
from collections.abc import AsyncIterator

import httpx
import pytest
import pytest_asyncio

from settlement_widgets.channel import ChannelConfig, ChannelProvider
from settlement_widgets.channel.v0_5.core.types import ChannelStatus
from settlement_widgets.contracts import load_artifact
from settlement_widgets.dashboard import SettlementDashboard
from settlement_widgets.sandbox import LocalSandbox
from settlement_widgets.v4 import PoolKey, V4Provider
from settlement_widgets.wallet import WalletClient

pytestmark = pytest.mark.asyncio(loop_scope="module")
U = 10**6


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def sandbox(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[LocalSandbox]:
    async with LocalSandbox(
        wallets=4, data_dir=tmp_path_factory.mktemp("sandbox"), aggregator=True
    ) as sb:
        yield sb


def _board(sb: LocalSandbox, index: int, **kwargs: object) -> SettlementDashboard:
    assert sb.chain is not None
    return SettlementDashboard(
        sb.network,
        sb.wallets[index],
        operator=sb.chain.wallet(0),
        recipient=sb.wallets[3].address,
        **kwargs,  # type: ignore[arg-type]
    )


async def _click(board: SettlementDashboard, action: str) -> None:
    before = len(board.activity)
    board.buttons[action].click()  # type: ignore[index]
    assert board.busy, "a click schedules the action and returns at once"
    assert all(b.disabled for b in board.buttons.values()), "one action at a time"
    await board.wait_idle(timeout=60)
    assert not board.busy
    new = board.activity[before:]
    assert new and all(line.level == "ok" for line in new), new


async def test_channel_actions_open_transfer_close(sandbox: LocalSandbox) -> None:
    board = _board(sandbox, 0)
    recipient = ChannelProvider(ChannelConfig.from_network(sandbox.network), sandbox.wallets[3])
    try:
        start = (await recipient.balances()).get("ytest.usd", 0)
        await _click(board, "faucet")
        assert "faucet: +10 ytest.usd off-chain; balance 10 ytest.usd" in board.activity[-1].text
        await _click(board, "open_channel")
        channel = board.channel
        assert channel is not None and channel.status == "active"
        assert board.panel.channel_id == channel.id and board.panel.channel_status == "active"
        assert board.panel.binding is not None and board.panel.binding.active
        assert board.activity[-1].href == sandbox.network.explorer.tx_url(
            channel.tx_hashes["create"]
        )
        assert board.buttons["open_channel"].disabled and not board.buttons["transfer"].disabled

        await _click(board, "transfer")
        await _click(board, "transfer")
        assert (await recipient.balances())["ytest.usd"] == start + 2 * U
        assert "gas 0; balance 8 ytest.usd" in board.activity[-1].text

        await _click(board, "close_channel")
        closed = board.channel
        assert closed is not None and closed.status == "final"
        assert board.panel.channel_status == "final"
        assert board.panel.settlement_tx == closed.settlement_tx
        assert board.activity[-2].href == sandbox.network.explorer.tx_url(closed.settlement_tx)
        receipt = await sandbox.wallets[0].w3.eth.get_transaction_receipt(closed.settlement_tx)
        assert receipt["status"] == 1
        custody = sandbox.custody(sandbox.wallets[0])
        assert await custody.channel_status(closed.id) == ChannelStatus.VOID
        assert not board.buttons["open_channel"].disabled and board.buttons["transfer"].disabled
        assert board.errors.messages == ()
    finally:
        await recipient.close()
        await board.aclose()


async def test_v4_settles_intents_through_the_policy_hook(sandbox: LocalSandbox) -> None:
    assert sandbox.chain is not None
    solver = sandbox.wallets[2]
    board = _board(sandbox, 1, solver=solver, selected="v4")
    user = V4Provider(sandbox.wallets[1], network=sandbox.network)
    pool = PoolKey.from_json(sandbox.network.extra["v4"]["poolKey"])
    try:
        before = await user.balance_of(pool.currency1)
        await _click(board, "settle_intent")
        await _click(board, "settle_intent")
        received = await user.balance_of(pool.currency1) - before
        assert received > 2 * 95 * 10**18 // 100  # two intents, each at least minAmountOut
        tx = board.panel.settlement_tx
        assert board.panel.provider == "v4" and tx is not None
        assert board.activity[-1].href == sandbox.network.explorer.tx_url(tx)
        receipt = await solver.w3.eth.get_transaction_receipt(tx)
        assert receipt["status"] == 1 and receipt["from"] == solver.address
        # amounts exact, in token units with their symbols (issue 34)
        settled = re.search(
            r"settled: 1 (V4[AB]) sold, (\d+\.\d+) (V4[AB]) received", board.activity[-1].text
        )
        assert settled is not None, board.activity[-1].text
        assert settled.group(1) != settled.group(3)
        # the link opens the sandbox explorer's page of that transaction, events named
        async with httpx.AsyncClient() as http:
            page = await http.get(sandbox.network.explorer.tx_url(tx))
        assert page.status_code == 200
        events = re.findall(r"<h3>(\w+)</h3>", page.text)
        assert {"PolicyChecked", "Swap", "IntentSwapped", "IntentSettled"} <= set(events)
        # another dashboard of the same wallet (another kernel on a shared sandbox) settles
        # its own intents: its first one is not the first one above again
        again = _board(sandbox, 1, solver=solver, selected="v4")
        try:
            await _click(again, "settle_intent")
            assert again.panel.settlement_tx not in (None, tx)
        finally:
            await again.aclose()
    finally:
        await board.aclose()


async def test_the_best_route_is_executed_between_the_sandbox_chains(
    sandbox: LocalSandbox,
) -> None:
    """The aggregator card ranks the sandbox route server's routes, executes the best one
    with the dashboard's wallet and follows it to the other chain: balances move on both."""
    board = _board(sandbox, 1, selected="aggregator")
    a, b = sandbox.chain_ids
    assert sandbox.crosschain is not None
    usdc = {c: sandbox.crosschain.chains[c].usdc for c in (a, b)}
    abi = load_artifact("TestToken").abi
    user_a, user_b = sandbox.wallets_on(a)[1], sandbox.wallets_on(b)[1]

    async def held(wallet: WalletClient, chain: int) -> int:
        token = wallet.w3.eth.contract(address=usdc[chain], abi=abi)  # type: ignore[call-overload]
        return int(await token.functions.balanceOf(wallet.address).call())

    before = (await held(user_a, a), await held(user_b, b))
    try:
        assert board.routes_source == "local"
        await _click(board, "show_routes")
        assert "LOCAL route server on this machine" in board.routes_html
        assert f"100 USDC chain {a} → chain {b} (sandbox chains)" in board.routes_html
        assert board.routes_html.count("</tr>") == 4  # header + 3 bridges
        lines = [line.text for line in board.activity]
        assert (
            lines[0]
            == "3 routes ranked (local route server); best: slowboat, "
            + (lines[0].rsplit(", ", 1)[1])
        )
        assert "worst-case net $" in lines[0]
        done = board.activity[-1]
        assert done.level == "ok", lines
        # the measured time beside the route's estimate, amounts exact with the symbol
        took = re.match(r"DONE/COMPLETED in (\d+\.\d) s \(estimate [0-9.]+ s\): ", done.text)
        assert took is not None, done.text
        assert done.text.endswith(
            f"sent 100 USDC on chain {a}, received 99.95 USDC on chain {b}"
        ), done.text
        assert ">Est. duration</th>" in board.routes_html
        assert ">Measured</th>" in board.routes_html
        assert board.routes_html.count(">not run<") == 2  # the two routes not executed
        assert done.href == sandbox.explorer_tx(b, done.href.rsplit("/", 1)[1])  # type: ignore[union-attr]
        assert [line.text for line in board.activity[1:3]] == [
            f"approve mined on chain {a}",
            f"step mined on chain {a}",
        ]
    finally:
        await board.aclose()
    after = (await held(user_a, a), await held(user_b, b))
    assert before[0] - after[0] == 100 * 10**6
    assert after[1] - before[1] == 99_950_000  # Slowboat's 0.05 % fee


async def test_a_failing_action_is_logged_and_the_buttons_come_back(
    sandbox: LocalSandbox,
) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    broken = dataclasses.replace(
        sandbox.network, faucet_url=f"http://127.0.0.1:{port}/faucet/requestTokens"
    )
    board = SettlementDashboard(broken, sandbox.wallets[2])
    try:
        board.buttons["faucet"].click()
        await board.wait_idle(timeout=60)
        (line,) = board.activity
        assert line.level == "error"
        assert line.text.startswith("Faucet failed: the faucet at http://127.0.0.1:")
        assert "unreachable" in line.text
        assert not board.busy and not board.buttons["faucet"].disabled
        assert board.errors.messages == ()  # a user-facing error, not a bug
    finally:
        await board.aclose()


async def test_clicks_on_a_subshell_thread_run_on_the_dashboards_own_loop(
    sandbox: LocalSandbox,
) -> None:
    """JupyterLab 4.6 with ipykernel 7 delivers button callbacks on subshell threads, each
    with a running loop of its own. The dashboard hands each click to the loop it was built
    on, where its providers (SQLite store, relay socket) live: every action succeeds."""
    board = _board(sandbox, 2)
    home = threading.get_ident()
    ran_on: list[int] = []
    original = board.click

    def recording_click(action: str) -> object:
        ran_on.append(threading.get_ident())
        return original(action)

    board.click = recording_click  # type: ignore[method-assign]

    subshells = [_Subshell(), _Subshell()]  # kernel subshells: long-lived, a loop each
    try:
        for i, action in enumerate(("faucet", "open_channel", "transfer", "close_channel")):
            before = len(board.activity)
            # the handed-over click runs on our loop while this awaits the subshell
            await asyncio.to_thread(subshells[i % 2].click, board, action)
            await board.wait_idle(timeout=60)
            new = board.activity[before:]
            assert new and all(line.level == "ok" for line in new), new
    finally:
        for sub in subshells:
            sub.close()
    assert board.channel is not None and board.channel.status == "final"
    # each click arrived on the subshell thread and ran again on the home thread
    assert len(ran_on) == 8 and set(ran_on[1::2]) == {home} and home not in ran_on[0::2]


class _Subshell:
    """A thread running its own event loop, as ipykernel 7 runs a subshell."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def click(self, board: SettlementDashboard, action: str) -> None:
        async def clicked() -> None:
            board.buttons[action].click()  # type: ignore[index]

        asyncio.run_coroutine_threadsafe(clicked(), self.loop).result(30)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()
