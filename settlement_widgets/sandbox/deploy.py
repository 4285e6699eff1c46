"""The sandbox's deployment names, from where each now lives.

:func:`deploy_contract` (any compiled artifact) is :mod:`settlement_widgets.deployment`'s;
:func:`deploy_channel_contracts` (Custody, SimpleConsensus, the test token) is the v0.5
channel node's (:mod:`settlement_widgets.channel.v0_5.node.deploy`). This module keeps
exporting them under their sandbox names, which stay public.
"""

from __future__ import annotations

from ..channel.v0_5.node.deploy import ChannelDeployment, deploy_channel_contracts
from ..deployment import (
    DEFAULT_TOKEN_NAME,
    DEFAULT_TOKEN_SYMBOL,
    DeployedContract,
    deploy_contract,
)

__all__ = [
    "DEFAULT_TOKEN_NAME",
    "DEFAULT_TOKEN_SYMBOL",
    "ChannelDeployment",
    "DeployedContract",
    "deploy_channel_contracts",
    "deploy_contract",
]
