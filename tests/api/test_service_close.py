"""The service closes what it opened: the explorer's aiohttp sessions and the faucet client,
when the server cleans up its extensions and when a restarted sandbox replaces an explorer
(an aiohttp session dropped open warns when collected, in whatever runs then)."""

from __future__ import annotations

from typing import Any

import aiohttp
from web3 import AsyncHTTPProvider, AsyncWeb3

from settlement_widgets.api.service import SettlementService
from settlement_widgets.sandbox.explorer import Explorer


async def _explorer_with_open_session() -> tuple[Explorer, aiohttp.ClientSession]:
    provider = AsyncHTTPProvider("http://127.0.0.1:9")
    session = aiohttp.ClientSession()
    await provider.cache_async_session(session)
    return Explorer(AsyncWeb3(provider)), session


async def test_aclose_closes_every_explorer_session_and_the_faucet_client() -> None:
    service = SettlementService(network="local")
    shared, shared_session = await _explorer_with_open_session()
    kernel, kernel_session = await _explorer_with_open_session()
    service._explorers[None] = shared
    service._kernel_explorers["0123456789abcdef"] = kernel
    await service.aclose()
    assert shared_session.closed and kernel_session.closed
    assert service._explorers == {} and service._kernel_explorers == {}
    await service.aclose()  # twice is harmless


async def test_the_server_closes_the_service_when_it_cleans_up_extensions(
    jp_serverapp: Any,
) -> None:
    service = jp_serverapp.web_app.settings["settlement_service"]
    explorer, session = await _explorer_with_open_session()
    service._explorers[None] = explorer
    await jp_serverapp.cleanup_extensions()
    assert session.closed
