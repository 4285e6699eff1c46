"""Chains for integration tests: every test that takes ``chain`` runs on both backends.

``chain`` is module-scoped and parametrized over the in-process py-evm and a real anvil
(marked ``anvil``), so a test module starts each backend once. Async module-scoped fixtures
live on the module's event loop: modules using them set
``pytestmark = pytest.mark.asyncio(loop_scope="module")``.

``channel_deployment`` deploys Custody, SimpleConsensus and the test token once per module and
backend (dev account 0 deploys and owns them; accounts 1-4 get 1,000,000 test tokens each).
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from settlement_widgets.sandbox import (
    Chain,
    ChannelDeployment,
    deploy_channel_contracts,
    start_chain,
)

CHAIN_BACKENDS = [
    pytest.param("inprocess", id="inprocess"),
    pytest.param("anvil", id="anvil", marks=pytest.mark.anvil),
]


@pytest_asyncio.fixture(scope="module", loop_scope="module", params=CHAIN_BACKENDS)
async def chain(request: pytest.FixtureRequest) -> AsyncIterator[Chain]:
    started = await start_chain(request.param)
    try:
        yield started
    finally:
        await started.aclose()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def channel_deployment(chain: Chain) -> ChannelDeployment:
    return await deploy_channel_contracts(
        chain, chain.wallet(0), fund=chain.addresses[1:5], fund_amount=1_000_000 * 10**6
    )
