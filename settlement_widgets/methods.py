"""The three settlement methods and the configuration body of ``GET /api/settlement``.

Names and JSON shapes follow the JACK dashboard's (``hashpass-tech/jack``) exactly: the wire
keeps camelCase (``chainId``, ``nodeUrl``, ``explorerBase``, ``testnetProofs``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, get_args

from .errors import UnknownOptionError
from .networks import SEPOLIA as _SEPOLIA

__all__ = [
    "METHOD_IDS",
    "SEPOLIA_CONTRACTS",
    "SETTLEMENT_OPTIONS",
    "SettlementMethod",
    "SettlementOption",
    "option",
    "settlement_config",
    "validate_method",
]

SettlementMethod = Literal["aggregator", "channel", "v4"]
METHOD_IDS: tuple[SettlementMethod, ...] = get_args(SettlementMethod)


@dataclass(frozen=True)
class SettlementOption:
    """One card of the selector."""

    id: SettlementMethod
    label: str
    desc: str
    network: str
    status: Literal["live", "demo"]

    def to_json(self) -> dict[str, str]:
        return {
            "id": self.id,
            "label": self.label,
            "desc": self.desc,
            "network": self.network,
            "status": self.status,
        }


SETTLEMENT_OPTIONS: list[SettlementOption] = [
    SettlementOption(
        id="aggregator",
        label="LI.FI Cross-Chain",
        desc="Routes through a bridge aggregator with best-rate discovery.",
        network="Multi-chain",
        status="live",
    ),
    SettlementOption(
        id="channel",
        label="Yellow Network",
        desc=(
            "Off-chain state-channel settlement (ERC-7824) through a sandbox relay node. "
            "Off-chain transfers are instant and cost no gas."
        ),
        network="Sepolia",
        status="demo",
    ),
    SettlementOption(
        id="v4",
        label="Uniswap v4 Hook",
        desc=(
            "On-chain, policy-enforced settlement through a policy hook contract and a "
            "settlement adapter contract."
        ),
        network="Sepolia",
        status="demo",
    ),
]

#: The deployed Sepolia contracts (JACK's ``SEPOLIA_CONTRACTS``), EIP-55 checksummed, in the
#: same camelCase shape. Read from :data:`settlement_widgets.networks.SEPOLIA`, where the
#: addresses are written down once.
SEPOLIA_CONTRACTS: dict[str, dict[str, str]] = {
    "channel": {
        "custody": _SEPOLIA.contracts.custody,
        "adjudicator": _SEPOLIA.contracts.adjudicator,
    },
    "v4": {
        "policyHook": _SEPOLIA.contracts.policy_hook,
        "settlementAdapter": _SEPOLIA.contracts.settlement_adapter,
        "poolManager": _SEPOLIA.contracts.pool_manager,
    },
}

AGGREGATOR_DESCRIPTION = "Routes through a bridge aggregator with best-rate discovery."


def validate_method(method: object) -> SettlementMethod:
    """Return ``method`` if it is a settlement method id, else raise with the valid ones."""
    if isinstance(method, str) and method in METHOD_IDS:
        return method  # type: ignore[return-value]
    import difflib

    hint = difflib.get_close_matches(str(method), METHOD_IDS, n=1)
    extra = f" (did you mean {hint[0]!r}?)" if hint else ""
    raise UnknownOptionError(
        f"unknown settlement method {method!r}{extra}; valid methods: {', '.join(METHOD_IDS)}"
    )


def option(method: SettlementMethod) -> SettlementOption:
    """The :class:`SettlementOption` of ``method``."""
    method = validate_method(method)
    return next(o for o in SETTLEMENT_OPTIONS if o.id == method)


def settlement_config(network: Any = None) -> dict[str, Any]:
    """The exact body of ``GET /api/settlement`` for ``network``.

    ``network`` is a :class:`~settlement_widgets.networks.Network`, a network name, or None
    for :func:`~settlement_widgets.networks.get_network`'s choice.
    """
    from .networks import PROTOCOL_V05, Network, get_network

    net: Network = network if isinstance(network, Network) else get_network(network)
    c = net.contracts
    channel: dict[str, Any] = {
        "status": "demo",
        "network": net.name,
        "chainId": net.chain_id,
        "contracts": {"custody": c.custody, "adjudicator": c.adjudicator},
        "nodeUrl": net.node_url,
        "faucetUrl": net.faucet_url,
    }
    if net.protocol != PROTOCOL_V05:
        # the JACK dashboard's body is v0.5's; a v1 network says so and names its ChannelHub
        channel["protocol"] = net.protocol
        channel["contracts"] = {"channelHub": c.channel_hub}
    return {
        "methods": {
            "aggregator": {"status": "live", "description": AGGREGATOR_DESCRIPTION},
            "channel": channel,
            "v4": {
                "status": "demo",
                "network": net.name,
                "chainId": net.chain_id,
                "contracts": {
                    "policyHook": c.policy_hook,
                    "settlementAdapter": c.settlement_adapter,
                    "poolManager": c.pool_manager,
                },
                "explorerBase": net.explorer_base,
            },
        },
        "testnetProofs": {
            "channel": "/api/settlement/proofs/channel",
            "v4": "/api/settlement/proofs/v4",
        },
    }
