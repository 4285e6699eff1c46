"""``settlement-sandbox`` (the console script of ``settlement_widgets.sandbox.__main__``):
starts, prints a profile whose ``rpcUrl`` answers ``eth_chainId``, serves the relay and the
faucet, writes the profile where ``get_network("local")`` finds it, and exits 0 on SIGTERM."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path

import httpx
import pytest
from relay_helpers import RelayTestClient

from settlement_widgets.channel.v0_5.core import get_config_message
from settlement_widgets.networks import Network

pytestmark = pytest.mark.slow

SCRIPT = Path(sys.executable).parent / "settlement-sandbox"


async def test_cli_prints_a_working_profile_and_stops_cleanly_on_sigterm(
    tmp_path: Path, _isolated_settlement_home: Path
) -> None:
    assert SCRIPT.is_file(), "the console script is not installed (pip install -e .)"
    out = tmp_path / "profile.json"
    proc = await asyncio.create_subprocess_exec(
        str(SCRIPT),
        "--no-v4",
        "--deterministic",
        "--wallets", "2",
        "--profile-out", str(out),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "SETTLEMENT_HOME": str(_isolated_settlement_home)},
    )  # fmt: skip
    try:
        assert proc.stdout is not None and proc.stderr is not None
        line = await asyncio.wait_for(proc.stdout.readline(), 180)
        assert line, (await proc.stderr.read()).decode()[-3000:]
        profile = json.loads(line)
        network = Network.from_json(profile)
        assert json.loads(out.read_text()) == profile
        home_profile = _isolated_settlement_home / "sandbox" / "profile.json"
        assert json.loads(home_profile.read_text()) == profile
        assert network.rpc_url is not None and network.rpc_url.startswith("http://127.0.0.1:")
        async with httpx.AsyncClient() as http:
            chain_id = await http.post(
                network.rpc_url,
                json={"jsonrpc": "2.0", "id": 7, "method": "eth_chainId", "params": []},
            )
            assert chain_id.json() == {"jsonrpc": "2.0", "id": 7, "result": hex(network.chain_id)}
            wallet = profile["extra"]["wallets"][0]
            paid = await http.post(network.faucet_url, json={"userAddress": wallet})
            assert paid.status_code == 200 and paid.json()["destination"] == wallet
        broker = profile["extra"]["brokerAddress"]
        async with RelayTestClient(network.node_url, broker) as client:
            config = await client.call(get_config_message())
            assert config.result["broker_address"] == broker
            assert config.result["networks"][0]["custody_address"] == network.contracts.custody
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(proc.wait(), 60) == 0
        assert not home_profile.exists()  # a stopped sandbox leaves no stale profile behind
        assert out.exists()  # the file asked for is the caller's to keep
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


# --- one sandbox per SETTLEMENT_HOME (issue 34) ----------------------------------------------


async def _start(home: Path) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        str(SCRIPT), "--no-v4", "--deterministic", "--wallets", "1",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "SETTLEMENT_HOME": str(home)},
    )  # fmt: skip


async def _profile_of(proc: asyncio.subprocess.Process) -> dict:
    """The profile line a sandbox prints once it serves (its stderr if it never does)."""
    assert proc.stdout is not None and proc.stderr is not None
    line = await asyncio.wait_for(proc.stdout.readline(), 180)
    assert line, (await proc.stderr.read()).decode()[-3000:]
    return json.loads(line)


async def _refused(home: Path) -> str:
    """Run a second sandbox on ``home``: it must exit 1 at once, print no profile, and say
    why on stderr (returned)."""
    proc = await _start(home)
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 1, (out + err).decode()[-3000:]
    assert out == b""
    return err.decode()


async def _stop(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is None:
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(proc.wait(), 60) == 0


async def test_a_second_sandbox_on_one_home_is_refused_with_the_first_ones_pid_and_url(
    tmp_path: Path, _isolated_settlement_home: Path
) -> None:
    from settlement_widgets.sandbox.shared import profile_answers

    home = _isolated_settlement_home
    home_profile = home / "sandbox" / "profile.json"
    first = await _start(home)
    try:
        profile = await _profile_of(first)
        url = profile["extra"]["httpUrl"]
        said = await _refused(home)
        assert f"pid {first.pid}" in said and url in said, said
        assert "another SETTLEMENT_HOME" in said
        # nothing of the first was touched: its profile is still there and still answers
        assert json.loads(home_profile.read_text()) == profile
        assert await profile_answers(profile)
        # a home whose profile answers with no sandbox of this command holding its lock (an
        # in-kernel LocalSandbox, an older version) is refused too, with the URL it serves
        other = tmp_path / "other-home"
        (other / "sandbox").mkdir(parents=True)
        (other / "sandbox" / "profile.json").write_text(home_profile.read_text())
        said = await _refused(other)
        assert url in said and "pid not known" in said, said
        await _stop(first)
        assert not home_profile.exists()  # the first one's own clean-up, as before
    finally:
        if first.returncode is None:
            first.kill()
            await first.wait()


async def test_a_crashed_sandboxs_home_is_taken_over(_isolated_settlement_home: Path) -> None:
    """SIGKILL leaves a stale profile behind (no clean-up ran) but no lock: the next sandbox
    starts, replaces the profile and serves; its stop removes it."""
    from settlement_widgets.sandbox.shared import profile_answers

    home = _isolated_settlement_home
    home_profile = home / "sandbox" / "profile.json"
    crashed = await _start(home)
    try:
        stale = await _profile_of(crashed)
    finally:
        crashed.kill()
        await crashed.wait()
    assert json.loads(home_profile.read_text()) == stale  # left behind
    assert not await profile_answers(stale)
    second = await _start(home)
    try:
        profile = await _profile_of(second)
        assert profile != stale
        assert json.loads(home_profile.read_text()) == profile
        assert await profile_answers(profile)
        said = await _refused(home)  # and it holds the home in turn
        assert f"pid {second.pid}" in said and profile["extra"]["httpUrl"] in said, said
        await _stop(second)
        assert not home_profile.exists()
    finally:
        if second.returncode is None:
            second.kill()
            await second.wait()
