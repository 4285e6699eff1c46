"""The local sandbox: a chain on this machine with our contracts deployed on it.

``chain`` starts the EVM (in-process py-evm by default, anvil, or any JSON-RPC URL) with funded
deterministic dev accounts; ``deploy`` deploys the ``channel`` contracts (Custody,
SimpleConsensus, a 6-decimal test token) or any compiled artifact. ``LocalSandbox`` runs the
whole local network in-process (chain, contracts, the ``relay`` node, faucet, JSON-RPC and
explorer over HTTP); ``python -m settlement_widgets.sandbox`` runs it as a service.
``crosschain`` is the aggregator's part (``LocalSandbox(aggregator=True)``): a second chain,
bridges with their relayer, pools, and a route server in LI.FI's schema.
"""

from __future__ import annotations

from .chain import (
    BACKENDS,
    DEFAULT_CHAIN_ID,
    DEV_MNEMONIC,
    AnvilChain,
    Chain,
    InProcessChain,
    RpcChain,
    dev_keys,
    find_anvil,
    start_chain,
)
from .deploy import ChannelDeployment, DeployedContract, deploy_channel_contracts, deploy_contract
from .local import LocalSandbox

__all__ = [
    "BACKENDS",
    "DEFAULT_CHAIN_ID",
    "DEV_MNEMONIC",
    "AnvilChain",
    "Chain",
    "ChannelDeployment",
    "DeployedContract",
    "InProcessChain",
    "LocalSandbox",
    "RpcChain",
    "deploy_channel_contracts",
    "deploy_contract",
    "dev_keys",
    "find_anvil",
    "start_chain",
]
