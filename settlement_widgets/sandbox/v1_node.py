"""Starting Nitrolite v1 in a local sandbox (``LocalSandbox(protocol="v1")``).

Our ChannelHub on the sandbox's chain, and with ``aggregator=True`` on its second chain too,
each with the node's session-key validator and a vault the node funds; then one Nitronode
over all of them. Nitrolite v1 keeps one balance per wallet and asset across chains: a home
channel may live on either chain, and an off-chain transfer moves value between users whose
channels live on different chains (the node's vault on each chain backs what its users
withdraw there).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from pathlib import Path

    from ..channel.v1.chain.hub import HubChainView
    from ..channel.v1.node import NitronodeNode
    from ..channel.v1.node.deploy import ChannelHubDeployment
    from ..keys import PrivateKey
    from ..networks import Network
    from ..wallet import WalletClient
    from .chain import Chain
    from .deploy import ChannelDeployment
    from .http import SandboxHttpServer

__all__ = ["V1Chain", "V1Host", "add_v1_labels", "deploy_v1", "start_v1_node"]


@dataclass(frozen=True)
class V1Chain:
    """Nitrolite v1 on one sandbox chain: the chain, our hub there, the node's view of it."""

    chain: Chain
    hub: ChannelHubDeployment
    view: HubChainView


class V1Host(Protocol):
    """What these functions read from and set on the sandbox
    (:class:`~settlement_widgets.sandbox.local.LocalSandbox`)."""

    chain: Chain | None
    deployment: ChannelDeployment | None
    hub: ChannelHubDeployment | None
    nitronode: NitronodeNode | None
    http: SandboxHttpServer | None
    broker_liquidity: int
    token_funding: int
    durability: str
    _broker_key: PrivateKey

    data_dir: Path | None

    @property
    def wallets(self) -> tuple[WalletClient, ...]: ...


async def deploy_v1(
    sb: V1Host, chain: Chain, deployer: WalletClient, broker: WalletClient
) -> V1Chain:
    """Our ChannelHub on ``chain``: on the sandbox's first chain with its test token, on the
    second with a test token of the same symbol and decimals minted to the dev wallets; the
    node's session-key validator; the node's vault funded by the broker (the node's key)."""
    from ..channel.v1.chain.hub import ChannelHubClient, HubChainView
    from ..channel.v1.node.deploy import deploy_channel_hub, register_session_key_validator

    assert sb.chain is not None and sb.deployment is not None
    deployment = sb.deployment
    first = chain is sb.chain
    if not first:  # the broker pays its own gas on the second chain
        await deployer.transact(to=broker.address, value=10**18)
    hub = await deploy_channel_hub(
        chain,
        deployer,
        broker.address,
        token=deployment.token if first else None,
        fund=[broker.address] if first else [broker.address, *(w.address for w in sb.wallets)],
        fund_amount=sb.broker_liquidity if first else max(sb.broker_liquidity, sb.token_funding),
        token_symbol=deployment.token_symbol,
    )
    if first:
        sb.hub = hub
    # the node registers its session-key validator (id 1) and the sandbox clock skips the
    # hub's one-day activation delay, so session-key states hold on chain from the start
    await register_session_key_validator(chain, hub, sb._broker_key, broker)
    node_hub = ChannelHubClient(broker, hub.hub)
    if sb.broker_liquidity:
        await node_hub.approve(hub.token, sb.broker_liquidity)
        await node_hub.deposit_to_node(hub.token, sb.broker_liquidity)
    return V1Chain(chain, hub, HubChainView(node_hub))


def add_v1_labels(sb: V1Host, second: V1Chain) -> None:
    """The second chain's explorer names our hub and its token."""
    assert sb.http is not None
    entry = sb.http.services.chains.get(second.chain.chain_id)
    explorer = entry[1] if entry is not None else None
    if explorer is None:  # no explorer served for that chain: nothing to label
        return
    from ..addresses import to_checksum

    symbol = second.hub.token_symbol
    explorer.labels |= {
        to_checksum(second.hub.hub): "ChannelHub",
        to_checksum(second.hub.token): f"{symbol} test token",
    }


async def start_v1_node(sb: V1Host, network: Network, chains: list[V1Chain], base: str) -> Network:
    """One Nitronode over every chain in ``chains`` (ledger in the sandbox's data directory,
    limits: ``NITRONODE_*``); returns ``network`` with the node's URL, and with
    ``extra["v1Chains"]`` describing every chain after the first (see
    :func:`~settlement_widgets.networks.network_on`)."""
    from ..channel.v1.node import NitronodeConfig, NitronodeNode, NodeAsset, NodeChain, NodeToken
    from ..channel.v1.node.config import rate_limits_from_env

    assert sb.deployment is not None and sb.data_dir is not None
    deployment = sb.deployment
    node = NitronodeNode(
        NitronodeConfig(
            db_path=sb.data_dir / "nitronode.sqlite",
            node_key=sb._broker_key,
            chains=tuple(NodeChain(c.chain.chain_id, c.hub.hub) for c in chains),
            assets=(
                NodeAsset(
                    symbol=deployment.token_symbol,
                    decimals=deployment.token_decimals,
                    tokens=tuple(
                        NodeToken(c.chain.chain_id, c.hub.token, deployment.token_decimals)
                        for c in chains
                    ),
                ),
            ),
            durability=sb.durability,
            **rate_limits_from_env(),
        ),
        chain_view=(
            chains[0].view if len(chains) == 1 else {c.chain.chain_id: c.view for c in chains}
        ),
    )
    sb.nitronode = await node.start()
    extra = {
        **network.extra,
        "nodeAddress": sb._broker_key.address,
        "relayV05Url": network.node_url,
    }
    if len(chains) > 1:
        extra["v1Chains"] = [
            {
                "chainId": c.chain.chain_id,
                "channelHub": c.hub.hub,
                "token": c.hub.token,
                "rpcUrl": c.chain.rpc_url or f"{base}/chain/{c.chain.chain_id}/rpc",
                "explorerBase": f"{network.explorer_base}/chain/{c.chain.chain_id}",
            }
            for c in chains[1:]
        ]
    return replace(network, node_url=node.url, extra=extra)
