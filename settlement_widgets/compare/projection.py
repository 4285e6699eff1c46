"""A measured comparison projected onto another network's profile, assumptions beside it.

The sandbox measures what a method does: its transactions' gas, the blocks it waited for
(one per transaction, plus the confirmations a bridge's relayer waited for), its off-chain
round trips. A public network changes the price of gas, the time of a block and the
confirmations a careful receiver waits for; the projection applies those to the measured
figures:

- ``projected_cost_native_wei`` = measured gas x the profile's gas price (the same contracts
  use the same gas on any EVM chain);
- ``projected_cost_usd`` = that x the profile's native price, when the profile has one;
- ``projected_chain_seconds`` = (measured blocks + the profile's confirmations) x its block
  time; ``projected_seconds`` adds the measured off-chain seconds (node round trips on
  loopback: a lower bound, and a wall-clock figure that varies from run to run).

Every projected column is prefixed ``projected_``; the measured figures they start from are
prefixed ``measured_``; :attr:`Projection.assumptions` lists the profile's values and where
they came from. A profile is either stated (:data:`SEPOLIA_PROFILE`,
:data:`MAINNET_LIKE_PROFILE`: assumptions, named as such) or read from a chain
(:func:`profile_from_chain`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from ..errors import SettlementValueError
from .result import Comparison

if TYPE_CHECKING:
    import pandas as pd
    from web3 import AsyncWeb3

__all__ = [
    "MAINNET_LIKE_PROFILE",
    "SEPOLIA_PROFILE",
    "NetworkProfile",
    "Projection",
    "profile_from_chain",
    "project",
]


@dataclass(frozen=True)
class NetworkProfile:
    """What a projection assumes of a network; ``source`` says where each value came from."""

    name: str
    block_time_seconds: float
    gas_price_wei: int
    confirmations: int
    native_usd: float | None
    source: str

    def __post_init__(self) -> None:
        if not self.block_time_seconds > 0:
            raise SettlementValueError(
                f"block_time_seconds must be positive, got {self.block_time_seconds!r}"
            )
        if isinstance(self.gas_price_wei, bool) or not isinstance(self.gas_price_wei, int):
            raise SettlementValueError(f"gas_price_wei must be an int, got {self.gas_price_wei!r}")
        if self.gas_price_wei < 0 or self.confirmations < 0:
            raise SettlementValueError("gas_price_wei and confirmations must be >= 0")


#: Sepolia as assumed when no RPC is at hand: 12 s slots (the beacon chain's slot time), a
#: 2 gwei gas price and 2 confirmations (assumptions: read the live values with
#: :func:`profile_from_chain`); a test coin has no USD price
SEPOLIA_PROFILE = NetworkProfile(
    name="sepolia",
    block_time_seconds=12.0,
    gas_price_wei=2 * 10**9,
    confirmations=2,
    native_usd=None,
    source=(
        "assumed: 12 s slots (the beacon chain's), 2 gwei, 2 confirmations; test ETH has no price"
    ),
)
#: a mainnet-like profile, every value an assumption to replace with today's
MAINNET_LIKE_PROFILE = NetworkProfile(
    name="mainnet-like",
    block_time_seconds=12.0,
    gas_price_wei=20 * 10**9,
    confirmations=12,
    native_usd=None,
    source="assumed: 12 s slots, 20 gwei, 12 confirmations; give native_usd for USD costs",
)


async def profile_from_chain(
    w3: AsyncWeb3, name: str, *, confirmations: int = 2, window: int = 100,
    native_usd: float | None = None,
) -> NetworkProfile:  # fmt: skip
    """The profile of the chain behind ``w3``, read from it: the gas price it quotes
    (``eth_gasPrice``) and the mean block time over the last ``window`` blocks."""
    head = int(await w3.eth.block_number)
    first = max(0, head - window)
    if head == first:
        raise SettlementValueError(f"the chain has too few blocks ({head}) to time them")
    t_head = int((await w3.eth.get_block(head))["timestamp"])
    t_first = int((await w3.eth.get_block(first))["timestamp"])
    gas_price = int(await w3.eth.gas_price)
    block_time = (t_head - t_first) / (head - first)
    if block_time <= 0:
        raise SettlementValueError(
            f"blocks {first}..{head} share one timestamp: no block time to read from them"
        )
    return NetworkProfile(
        name=name,
        block_time_seconds=round(block_time, 3),
        gas_price_wei=gas_price,
        confirmations=confirmations,
        native_usd=native_usd,
        source=(
            f"read from the chain at block {head}: eth_gasPrice, mean block time of blocks "
            f"{first}..{head}; {confirmations} confirmations assumed"
            + ("" if native_usd is not None else "; no USD price given")
        ),
    )


@dataclass(frozen=True)
class Projection:
    """Projected rows (:attr:`frame`) and the assumptions they rest on."""

    frame: pd.DataFrame
    assumptions: dict[str, Any]

    def __repr__(self) -> str:
        return (
            f"Projection(profile={self.assumptions['profile']!r}, rows={len(self.frame)}, "
            f"source={self.assumptions['source']!r})"
        )


def project(comparison: Comparison, profile: NetworkProfile) -> Projection:
    """``comparison``'s runs on ``profile`` (see the module docstring)."""
    import pandas as pd

    if not isinstance(profile, NetworkProfile):
        raise SettlementValueError(
            f"profile must be a NetworkProfile, got {type(profile).__name__}"
        )
    rows = []
    for run in comparison.runs:
        cost = run.gas_used * profile.gas_price_wei
        off_chain = run.phase_seconds["payments"] if run.method == "channel" else 0.0
        chain_seconds = (run.blocks + profile.confirmations) * profile.block_time_seconds
        rows.append(
            {
                "label": run.label,
                "method": run.method,
                "payments": run.payments,
                "measured_gas_used": run.gas_used,
                "measured_blocks": run.blocks,
                "measured_off_chain_seconds": off_chain,
                "projected_cost_native_wei": cost,
                "projected_cost_usd": (
                    cost / 10**18 * profile.native_usd if profile.native_usd is not None else None
                ),
                "projected_chain_seconds": chain_seconds,
                "projected_seconds": chain_seconds + off_chain,
                "projected_dispute_window_seconds": run.dispute_window_seconds,
            }
        )
    frame = pd.DataFrame(rows)
    assumptions = {
        "profile": profile.name,
        **{k: v for k, v in asdict(profile).items() if k != "name"},
        "gas": "each run's measured gas, unchanged (the same contracts on another EVM chain)",
        "time": "(measured blocks + confirmations) x block time + measured off-chain seconds",
        "bridge delay": "the route's confirmations, counted in the blocks the relayer waited for",
        "measured on": comparison.network,
        "measured at": comparison.measured_at,
    }
    frame.attrs.update({"kind": "projection", "assumptions": assumptions})
    return Projection(frame=frame, assumptions=assumptions)
