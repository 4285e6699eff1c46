"""Starting the aggregator method's node in a local sandbox (``LocalSandbox(aggregator=True)``).

A second chain beside the sandbox's, test USDC, three bridges and a WETH/USDC v4 pool on both
(:mod:`~settlement_widgets.aggregator.node.deploy`), the bridges' relayer and the LI.FI-schema
route server (:mod:`~settlement_widgets.aggregator.node`), wired into the sandbox's HTTP server
(``/lifi/v1``, the second chain's JSON-RPC and explorer) and its profile (``lifiUrl``,
``aggregator``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from ..aggregator.node.deploy import CrossChainDeployment
    from ..aggregator.node.relayer import BridgeRelayer
    from ..aggregator.node.routes import RouteServer
    from ..keys import PrivateKey
    from ..networks import Network
    from ..v4.deploy.stack import V4Deployment
    from ..wallet import WalletClient
    from .chain import Chain
    from .http import SandboxHttpServer

__all__ = ["AggregatorHost", "start_aggregator_node"]


class AggregatorHost(Protocol):
    """What :func:`start_aggregator_node` reads from and sets on the sandbox that hosts the
    node (:class:`~settlement_widgets.sandbox.local.LocalSandbox`)."""

    chain: Chain | None
    chain_backend: str
    http: SandboxHttpServer | None
    token_funding: int
    v4: V4Deployment | None
    bridge_block_time: float
    second_chain: Chain | None
    crosschain: CrossChainDeployment | None
    relayer: BridgeRelayer | None
    route_server: RouteServer | None

    @property
    def wallets(self) -> tuple[WalletClient, ...]: ...


async def start_aggregator_node(
    sb: AggregatorHost, network: Network, base: str, labels: dict[str, str], relayer_key: PrivateKey
) -> Network:
    """Start the second chain, its contracts, the relayer (signing with ``relayer_key``) and
    the route server for ``sb``; returns ``network`` with the aggregator's profile entries.
    Each part is set on ``sb`` as soon as it runs, so ``sb.aclose()`` stops it whatever fails
    later. ``labels`` (the first chain's explorer labels) gains the new contracts."""

    from ..aggregator.node.deploy import SECOND_CHAIN_ID, deploy_crosschain
    from ..aggregator.node.relayer import BridgeRelayer
    from ..aggregator.node.routes import RouteServer
    from .chain import InProcessChain, start_chain
    from .explorer import Explorer
    from .jsonrpc import InProcessJsonRpc

    assert sb.chain is not None and sb.http is not None
    backend = sb.chain_backend if sb.chain_backend in ("inprocess", "anvil") else "inprocess"
    second = await start_chain(backend, chain_id=SECOND_CHAIN_ID)
    sb.second_chain = second
    crosschain = await deploy_crosschain(
        [sb.chain, second],
        relayer=relayer_key.address,
        fund=[w.address for w in sb.wallets],
        fund_amount=sb.token_funding,
        pool_manager=sb.v4.pool_manager if sb.v4 is not None else None,
        modify_liquidity_router=(sb.v4.modify_liquidity_router if sb.v4 is not None else None),
    )
    sb.crosschain = crosschain
    chains = {sb.chain.chain_id: sb.chain, second.chain_id: second}
    second_explorer = f"{network.explorer_base}/chain/{second.chain_id}"
    explorers = {sb.chain.chain_id: network.explorer_base, second.chain_id: second_explorer}
    sb.route_server = RouteServer(chains, crosschain, explorers, block_time=sb.bridge_block_time)
    sb.relayer = BridgeRelayer(chains, crosschain, relayer_key, block_time=sb.bridge_block_time)
    sb.relayer.start()
    chain_labels: dict[str, str] = {}
    for d in crosschain.chains.values():
        named = {d.usdc: "USDC (sandbox)", crosschain.relayer: "bridge relayer"}
        named |= {address: f"{key} bridge" for key, address in d.bridges.items()}
        if d.router is not None and d.weth is not None:
            named |= {d.router: "SandboxRouter", d.weth: "WETH (sandbox)"}
        if d.chain_id == sb.chain.chain_id:
            labels.update(named)
        else:
            chain_labels |= named
            chain_labels |= {w.address: f"dev wallet {i}" for i, w in enumerate(sb.wallets, 1)}
    services = sb.http.services
    services.lifi = sb.route_server
    services.chains[second.chain_id] = (
        InProcessJsonRpc(second) if isinstance(second, InProcessChain) else None,
        Explorer(second.w3, base=f"/explorer/chain/{second.chain_id}", labels=chain_labels),
    )
    aggregator = crosschain.to_json()
    aggregator["chains"] = [
        entry
        | {
            "rpcUrl": (
                chains[entry["chainId"]].rpc_url
                or (network.rpc_url if entry["chainId"] == sb.chain.chain_id
                    else f"{base}/chain/{entry['chainId']}/rpc")
            ),
            "explorerBase": explorers[entry["chainId"]],
        }
        for entry in aggregator["chains"]
    ]  # fmt: skip
    extra = {**network.extra, "lifiUrl": f"{base}/lifi/v1", "aggregator": aggregator}
    return replace(network, extra=extra)
