"""Crash safety of the channel provider: what was signed is never lost, what was half-done is
finished by the next provider over the same store.

- A provider in a *separate process* closes a channel and is SIGKILLed after it countersigned
  and persisted a RESIZE or the FINALIZE, before submitting it; a new provider (this process)
  over the same store finishes the close on its first use: the exact state the dead process
  signed lands on chain and the funds reach the wallet.
- The chain goes away between the relay's RESIZE and ``Custody.resize``: the error is
  :class:`ChainUnavailableError`, the store shows the pending operation and the signed state,
  other operations on the channel are refused, and ``recover()`` finishes the close.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sys
from pathlib import Path

import pytest
from channel_helpers import U, dead_port, fresh_wallet, provider, sandbox, token_balance

from settlement_widgets.channel import ChannelStore
from settlement_widgets.channel.v0_5.core.types import ChannelStatus, StateIntent
from settlement_widgets.errors import ChainUnavailableError, ChannelStateError
from settlement_widgets.sandbox import LocalSandbox
from settlement_widgets.wallet import WalletClient

pytestmark = pytest.mark.asyncio(loop_scope="module")
__all__ = ["sandbox"]

CHILD = Path(__file__).with_name("channel_crash_child.py")


@pytest.mark.parametrize(
    ("kill_at", "unsubmitted"),
    [("submit_close", StateIntent.FINALIZE), ("submit_resize", StateIntent.RESIZE)],
    ids=["finalize", "resize"],
)
async def test_a_provider_killed_before_submitting_is_finished_by_the_next_one(
    sandbox: LocalSandbox, tmp_path: Path, kill_at: str, unsubmitted: StateIntent
) -> None:
    wallet = await fresh_wallet(sandbox, tokens=10 * U)
    store_path = tmp_path / "alice.sqlite"
    async with provider(sandbox, wallet, store_path=store_path) as p:
        channel = await p.create_channel(sandbox.broker_address, sandbox.token, 3 * U)
    assert await token_balance(sandbox, wallet.address) == 7 * U

    profile = tmp_path / "profile.json"
    profile.write_text(json.dumps(sandbox.network.to_json()))
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        str(CHILD),
        str(profile),
        str(store_path),
        channel.id,
        kill_at,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(
        child.communicate(wallet.key.secret_hex().encode() + b"\n"), 120
    )
    assert child.returncode == -signal.SIGKILL, err.decode()[-2000:]
    assert out.decode().splitlines()[-1] == f"{kill_at} start"

    # what the dead process left: a running close, its next step, the countersigned state
    with ChannelStore(store_path) as store:
        work = store.pending_work()
        (op,) = work["operations"]
        assert (op["kind"], op["channel_id"], op["status"]) == ("close", channel.id, "running")
        assert op["next_step"] == kill_at
        (left,) = [s for s in store.unsubmitted_states() if s.state.intent == unsubmitted]
        assert left.server_signature and len(left.state.sigs) == 2
        signed_by_the_dead = left.state
    custody = sandbox.custody(wallet)
    assert await custody.channel_status(channel.id) == ChannelStatus.ACTIVE

    recovered: list[object] = []
    fresh = provider(sandbox, wallet, store_path=store_path)
    fresh.on("recovered", recovered.append)
    async with fresh:  # the first use resumes the close
        (done,) = recovered
        assert (done.kind, done.status) == ("close", "done")  # type: ignore[attr-defined]
        closed = fresh.get_channel(channel.id)
        assert closed.status == "final"
        assert "close" in closed.tx_hashes and "withdraw" in closed.tx_hashes
        tx = await fresh._tx(closed.tx_hashes["close"], "submit_close", channel.id)
        assert tx.closed is not None
        if unsubmitted == StateIntent.FINALIZE:  # exactly what the dead process signed
            assert tx.closed.final_state == signed_by_the_dead
        else:
            resized = fresh.store.find_state(channel.id, signed_by_the_dead.version, unsubmitted)
            assert resized is not None and resized.state == signed_by_the_dead
            assert resized.status in ("onchain", "superseded")
        assert tx.closed.final_state.allocations[0].amount == 3 * U
        assert fresh.pending_work()["operations"] == []
        assert fresh.pending_work()["unsubmitted_states"] == []
        phases = [(e["step"], e["phase"]) for e in fresh.store.journal_entries(op["id"])]
        assert (kill_at, "resumed") in phases and (kill_at, "done") in phases
    assert await custody.channel_status(channel.id) == ChannelStatus.VOID
    assert await token_balance(sandbox, wallet.address) == 10 * U  # all of it came back


async def test_chain_down_mid_close_keeps_the_signed_resize_for_recover(
    sandbox: LocalSandbox, tmp_path: Path
) -> None:
    wallet = await fresh_wallet(sandbox, tokens=10 * U)
    store_path = tmp_path / "alice.sqlite"
    async with provider(sandbox, wallet, store_path=store_path) as p:
        channel = await p.create_channel(sandbox.broker_address, sandbox.token, 2 * U)

    offline = WalletClient(wallet.key, rpc_url=f"http://127.0.0.1:{dead_port()}")
    down = provider(sandbox, offline, store_path=store_path, watch_interval=None)
    async with down, contextlib.AsyncExitStack() as stack:
        stack.push_async_callback(offline.w3.provider.disconnect)
        with pytest.raises(ChainUnavailableError, match="cannot reach the chain"):
            await down.close_channel(channel.id)
        work = down.pending_work()
        (op,) = work["operations"]
        assert (op["kind"], op["status"], op["next_step"]) == (
            "close",
            "interrupted",
            "submit_resize",
        )
        (state,) = work["unsubmitted_states"]
        assert (state["intent"], state["version"], state["has_server_signature"]) == (
            "RESIZE",
            2,
            True,
        )
        assert down.get_channel(channel.id).status == "resizing"
        with pytest.raises(ChannelStateError, match="unfinished close"):
            await down.close_channel(channel.id)
        with pytest.raises(ChannelStateError, match="resizing"):
            await down.transfer(channel.id, 1, sandbox.broker_address)

    async with provider(sandbox, wallet, store_path=store_path, auto_recover=False) as up:
        assert up.pending_work()["operations"][0]["status"] == "interrupted"
        (done,) = await up.recover()
        assert (done.kind, done.status) == ("close", "done")
        assert up.get_channel(channel.id).status == "final"
        assert up.pending_work()["operations"] == []
    assert await token_balance(sandbox, wallet.address) == 10 * U
