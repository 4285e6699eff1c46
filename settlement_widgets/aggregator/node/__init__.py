"""The aggregator method's node, started by the local sandbox: two chains, bridges of our
own, and a LI.FI-schema route server, so routes are quoted from chain state and executed for
real.

- :mod:`.deploy`: on both chains test USDC, the three :data:`~.deploy.BRIDGES`
  (``SandboxBridge``: lock on the source, release minus a fee on the destination, refund on
  failure), a WETH/USDC v4 pool and a ``SandboxRouter`` (swap then bridge; deliver with a
  destination swap);
- :mod:`.relayer`: watches ``TransferStarted``, waits for confirmations (producing the
  blocks), releases on the destination (and swaps there when WETH was asked for) or
  refunds on the source;
- :mod:`.routes`: ``/chains``, ``/tokens``, ``/quote``, ``/advanced/routes``,
  ``/advanced/stepTransaction`` and ``/status`` in LI.FI's schema, answered from the chains
  (:class:`~.routes.RouteServer` over :mod:`.route_base`, with :mod:`.route_status` for
  ``/status`` and :mod:`.lifi_schema` for the JSON it writes).

``LocalSandbox(aggregator=True)`` starts all of it
(:mod:`settlement_widgets.sandbox.aggregator_node`); ``AggregatorProvider(base_url=sb.lifi_url)``
uses it with the client code that talks to the live API.
"""

from __future__ import annotations

from .deploy import BRIDGES, SECOND_CHAIN_ID, BridgeSpec, ChainDeployment, CrossChainDeployment
from .lifi_schema import GAS_LIMITS, GAS_UNITS, LifiError
from .relayer import BridgeRelayer, PendingTransfer
from .routes import RouteServer

__all__ = [
    "BRIDGES",
    "GAS_LIMITS",
    "GAS_UNITS",
    "SECOND_CHAIN_ID",
    "BridgeRelayer",
    "BridgeSpec",
    "ChainDeployment",
    "CrossChainDeployment",
    "LifiError",
    "PendingTransfer",
    "RouteServer",
]
