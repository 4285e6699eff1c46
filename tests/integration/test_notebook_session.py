"""The notebook helpers for real: a local session (sandbox + profile in a private home), the
standalone endpoint as a subprocess reading that sandbox over loopback JSON-RPC, the Sepolia
server from the built-in profile, and how they fail."""

from __future__ import annotations

import os
from pathlib import Path

import httpx
import pytest

from settlement_widgets.errors import ConfigurationError, InvalidNetworkError, UnavailableError
from settlement_widgets.methods import settlement_config
from settlement_widgets.networks import SEPOLIA, get_network
from settlement_widgets.notebook import open_session, start_api_server
from settlement_widgets.widgets.browser_wallet import BrowserWallet

pytestmark = pytest.mark.slow


async def test_local_session_and_endpoint_process(_isolated_settlement_home: Path) -> None:
    session = await open_session("local", progress=False)
    try:
        net = session.network
        # the session's own SETTLEMENT_HOME, with the profile other processes read
        assert os.environ["SETTLEMENT_HOME"] == str(session.home)
        assert session.home != _isolated_settlement_home
        assert get_network("local").to_json() == net.to_json()
        assert session.operator.address == net.deployer
        assert session.user.address == session.wallets[0].address != session.operator.address
        assert await session.user.w3.eth.get_balance(session.user.address) > 0  # type: ignore[arg-type]
        assert "local sandbox" in repr(session)

        api = await start_api_server(net)
        try:
            assert api.running and api.network == "local"
            assert api.url.startswith("http://127.0.0.1:") and "token" not in api.url
            assert (await api.get()).json() == {**settlement_config(net), "comparison": None}
            body = (await api.post({"action": "v4:contracts"})).json()
            assert body["contracts"]["policyHook"] == net.contracts.policy_hook
            hook = next(n for n in body["notes"] if n["contract"] == "policyHook")
            # read by the other process from the sandbox's chain, through the profile's rpcUrl
            assert (hook["source"], hook["owner"], hook["canHoldPolicies"]) == (
                "chain",
                net.deployer,
                True,
            )
            bad = await api.post(b"{nope")
            assert (bad.status_code, bad.json()) == (400, {"error": "Invalid request"})
            async with httpx.AsyncClient() as anonymous:  # no token: refused
                assert (await anonymous.get(api.url)).status_code == 403
            assert api._token not in repr(api) and api._token not in api.log()
            assert "<token>" in api.log()
        finally:
            await api.stop()
        assert not api.running
        await api.stop()  # twice is harmless
    finally:
        await session.aclose()
    assert os.environ["SETTLEMENT_HOME"] == str(_isolated_settlement_home)
    assert not session.home.exists()
    await session.aclose()  # twice is harmless


async def test_sepolia_endpoint_process_serves_the_spec_body() -> None:
    api = await start_api_server("sepolia")
    try:
        assert api.network == "sepolia"
        assert (await api.get()).json() == {**settlement_config("sepolia"), "comparison": None}
        body = (await api.post({"action": "v4:contracts"})).json()
        assert body["deployer"] == SEPOLIA.deployer
        assert {n["source"] for n in body["notes"]} == {"recorded from Sepolia on 2026-02-08"}
    finally:
        await api.stop()


async def test_the_endpoint_process_is_never_given_the_wallet_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The endpoint signs nothing: the key (from this process or from ``env``) and API keys
    stay out of its environment, which the kernel shows in /proc/<pid>/environ."""
    secret = "0x" + "5a" * 32  # a made-up key: never funded anywhere
    monkeypatch.setenv("SETTLEMENT_PRIVATE_KEY", secret)
    monkeypatch.setenv("LIFI_API_KEY", "made-up-api-key")
    api = await start_api_server("sepolia", env={"PRIVATE_KEY": secret, "KEEP_ME": "1"})
    try:
        environ = Path(f"/proc/{api.process.pid}/environ").read_bytes().split(b"\0")
        names = {item.split(b"=", 1)[0].decode() for item in environ if item}
        assert "KEEP_ME" in names and "SETTLEMENT_HOME" in names  # the rest is inherited
        assert not names & {"SETTLEMENT_PRIVATE_KEY", "PRIVATE_KEY", "LIFI_API_KEY"}
        assert secret.encode() not in b"\0".join(environ)
        assert (await api.get()).status_code == 200
    finally:
        await api.stop()


async def test_a_server_that_cannot_start_is_reported(tmp_path: Path) -> None:
    shadow = tmp_path / "shadow" / "settlement_widgets"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise SystemExit('broken install for the test')\n")
    # PYTHONSAFEPATH: `python -m` must not put the working directory (the repo) first
    env = {"PYTHONPATH": str(shadow.parent), "PYTHONSAFEPATH": "1"}
    with pytest.raises(
        UnavailableError, match=r"(?s)exited with code 1 .*broken install for the test"
    ):
        await start_api_server("local", env=env, timeout=60)


async def test_unknown_network_is_refused_before_starting_anything() -> None:
    with pytest.raises(InvalidNetworkError, match="mainnet"):
        await start_api_server("mainnet")
    with pytest.raises(InvalidNetworkError, match="mainnet"):
        await open_session("mainnet")


async def test_sepolia_session_needs_rpc_url_and_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SEPOLIA_RPC_URL", raising=False)
    with pytest.raises(ConfigurationError, match="SEPOLIA_RPC_URL"):
        await open_session("sepolia")
    monkeypatch.setenv("SEPOLIA_RPC_URL", "http://127.0.0.1:9/")
    with pytest.raises(ConfigurationError, match="SETTLEMENT_PRIVATE_KEY"):
        await open_session("sepolia", wallet="key")
    # without a key, the browser's wallet is the way in (it connects when a page shows it)
    keyless = await open_session("sepolia")
    assert isinstance(keyless.user, BrowserWallet) and keyless.operator is keyless.user
    assert keyless.user.target_chain["chainId"] == hex(keyless.network.chain_id)
    assert "browser wallet (not connected)" in repr(keyless)
    await keyless.aclose()
    monkeypatch.setenv("SETTLEMENT_PRIVATE_KEY", "0x" + "11" * 32)
    session = await open_session("sepolia")
    assert session.sandbox is None and session.operator is session.user
    assert session.network.rpc_url == "http://127.0.0.1:9/"
    assert ("11" * 32) not in repr(session)
    await session.aclose()
