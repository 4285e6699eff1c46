"""What the v1 tests on both sandbox chains share: the two-chain sandbox, each chain by id,
and funding a wallet on either chain (``LocalSandbox(protocol="v1", aggregator=True)``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from settlement_widgets.contracts import load_artifact
from settlement_widgets.networks import Network
from settlement_widgets.sandbox import LocalSandbox
from settlement_widgets.sandbox.chain import Chain

__all__ = ["SECOND", "chain_of", "fund_on", "two_chain_sandbox"]

#: the sandbox's second chain (the aggregator's), where the v1 hub runs too
SECOND = 31338


@asynccontextmanager
async def two_chain_sandbox(backend: str, data_dir: Path) -> AsyncIterator[LocalSandbox]:
    """A v1 sandbox with its hub, token and Nitronode on both chains (no v4, one wallet)."""
    async with LocalSandbox(
        chain=backend, protocol="v1", aggregator=True, v4=False, wallets=1, data_dir=data_dir
    ) as sandbox:
        yield sandbox


def chain_of(sb: LocalSandbox, chain_id: int) -> Chain:
    """The sandbox's chain with id ``chain_id`` (the first or the second)."""
    chain = sb.chain if chain_id == sb.network.chain_id else sb.second_chain
    assert chain is not None and chain.chain_id == chain_id
    return chain


async def fund_on(sb: LocalSandbox, network: Network, address: str, tokens: int) -> None:
    """Gas and ``tokens`` (none: gas only) of the v1 token on ``network``'s chain for
    ``address``, from the deployer, who owns the token on both chains."""
    deployer = chain_of(sb, network.chain_id).wallet(0)
    await deployer.transact(to=address, value=10**18)
    if tokens:
        abi = load_artifact("TestToken").abi
        token = deployer.w3.eth.contract(address=network.token, abi=abi)  # type: ignore[call-overload]
        await deployer.transact(token.functions.mint(address, tokens), abis=[abi])
