"""``WalletClient`` closes what it opened: as an async context manager (or by ``aclose()``)
its HTTP session to ``rpc_url`` is closed, so nothing is left for aiohttp to report as an
"Unclosed client session" at exit; a ``w3`` passed in stays open for its owner."""

from __future__ import annotations

import pytest

from settlement_widgets.keys import PrivateKey
from settlement_widgets.sandbox import LocalSandbox
from settlement_widgets.wallet import WalletClient

pytestmark = pytest.mark.slow


def _sessions(wallet: WalletClient) -> list:  # type: ignore[type-arg]
    return [s for _, s in wallet.w3.provider._request_session_manager.session_cache.items()]


async def test_a_wallet_opened_from_a_url_closes_its_session_on_exit() -> None:
    async with LocalSandbox(wallets=1, v4=False) as sb:
        assert sb.network.rpc_url is not None
        async with WalletClient(PrivateKey.generate(), rpc_url=sb.network.rpc_url) as wallet:
            assert await wallet.chain_id() == sb.network.chain_id
            sessions = _sessions(wallet)
            assert sessions and not any(s.closed for s in sessions)
        assert all(s.closed for s in sessions)

        left_open = WalletClient(PrivateKey.generate(), rpc_url=sb.network.rpc_url)
        await left_open.chain_id()
        assert not any(s.closed for s in _sessions(left_open))  # what aclose() is for
        await left_open.aclose()

        async with WalletClient(PrivateKey.generate(), w3=sb.chain.w3) as borrowed:
            await borrowed.chain_id()
        assert await sb.chain.w3.eth.chain_id == sb.network.chain_id  # the owner's, still open
