"""The three settlement methods and the configuration body of ``GET /api/settlement``.

Names and JSON shapes follow the JACK dashboard's (``hashpass-tech/jack``) exactly: the wire
keeps camelCase (``chainId``, ``nodeUrl``, ``explorerBase``, ``testnetProofs``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, get_args

from .errors import UnknownOptionError
from .networks import PROTOCOL_V1, Network
from .networks import SEPOLIA as _SEPOLIA

__all__ = [
    "METHOD_IDS",
    "SEPOLIA_CONTRACTS",
    "SETTLEMENT_OPTIONS",
    "SettlementMethod",
    "SettlementOption",
    "network_label",
    "option",
    "settlement_config",
    "settlement_options",
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


#: The options as the JACK dashboard describes them, on Sepolia (Nitrolite v0.5). Kept for
#: JACK parity and old imports; what a card shows on the network in use is
#: :func:`settlement_options` (``settlement_options(SEPOLIA)`` equals this list).
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

#: the channel card's description on Nitrolite v1 (a Nitronode and its ChannelHub contract,
#: where v0.5 has a ClearNode relay and the Custody and Adjudicator contracts)
_CHANNEL_V1_DESCRIPTION = (
    "Off-chain state-channel settlement (ERC-7824, Nitrolite v1) through a Nitronode and "
    "its ChannelHub contract. Off-chain transfers are instant and cost no gas."
)
#: the chains the aggregator bridges between on the local sandbox (its profile's
#: ``extra["aggregator"]``), shown instead of "Multi-chain"
_AGGREGATOR_LOCAL_DESCRIPTION = (
    "Routes from the sandbox's route server (LI.FI's schema), ranked by best rate, then "
    "bridged for real between the sandbox's two chains."
)
_NETWORK_NAMES = {"sepolia": "Sepolia", "sepolia-v1": "Sepolia", "local": "Local sandbox"}


def network_label(network: Network, *, protocol: bool = False) -> str:
    """How a person reads ``network``: ``"Sepolia"``, ``"Local sandbox · chain 31337"``;
    with ``protocol`` the channel protocol is named too (``"Sepolia · Nitrolite v1"``), for
    the one method whose contracts and node depend on it."""
    label = _NETWORK_NAMES.get(network.name, network.name)
    if network.name == "local":
        label = f"{label} · chain {network.chain_id}"
    if protocol:
        label += " · Nitrolite v1" if network.protocol == PROTOCOL_V1 else " · Nitrolite v0.5"
    return label


def _aggregator_chains(network: Network) -> list[int]:
    """The chain ids the sandbox's aggregator bridges between (none off the sandbox)."""
    data = network.extra.get("aggregator")
    if not isinstance(data, dict) or not network.extra.get("lifiUrl"):
        return []
    return [int(c["chainId"]) for c in data.get("chains", ()) if "chainId" in c]


def settlement_options(network: Network) -> list[SettlementOption]:
    """The three options described for ``network``: the network each runs on as a person
    reads it (:func:`network_label`), the channel's protocol (its v1 node and ChannelHub on
    Nitrolite v1) and, on a sandbox that carries the aggregator, its two chains.

    On :data:`~settlement_widgets.networks.SEPOLIA` this is :data:`SETTLEMENT_OPTIONS`, the
    JACK dashboard's own table, so a card never says "Sepolia" on a sandbox."""
    if not isinstance(network, Network):
        from .errors import SettlementValueError

        raise SettlementValueError(
            f"network must be a Network (session.network), got {type(network).__name__}"
        )
    base = {o.id: o for o in SETTLEMENT_OPTIONS}
    chains = _aggregator_chains(network)
    aggregator = base["aggregator"]
    if chains:
        aggregator = SettlementOption(
            id="aggregator",
            label=aggregator.label,
            desc=_AGGREGATOR_LOCAL_DESCRIPTION,
            network=f"Local sandbox · chains {', '.join(map(str, chains))}",
            status=aggregator.status,
        )
    channel = base["channel"]
    channel = SettlementOption(
        id="channel",
        label=channel.label,
        desc=_CHANNEL_V1_DESCRIPTION if network.protocol == PROTOCOL_V1 else channel.desc,
        network=network_label(network, protocol=network.protocol == PROTOCOL_V1),
        status=channel.status,
    )
    v4 = base["v4"]
    v4 = SettlementOption(
        id="v4", label=v4.label, desc=v4.desc, network=network_label(network), status=v4.status
    )
    return [aggregator, channel, v4]


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
    """The body of ``GET /api/settlement`` for ``network``, exactly the JACK dashboard's
    (the endpoint adds ``comparison``: the last comparison published for the network, or
    null; see :mod:`settlement_widgets.api.service`).

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
