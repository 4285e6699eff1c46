"""LI.FI's JSON as the sandbox's route server writes it: errors, request ids, steps.

The pure half of :mod:`.routes`: the constants the server prices with (gas measured on these
contracts, the default slippage), the error in LI.FI's shape, a parsed request and its
deterministic route ids, and one step's ``action``/``estimate`` object. Nothing here reads a
chain.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import ROUND_DOWN, Decimal
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from .deploy import ChainDeployment


__all__ = [
    "DEFAULT_SLIPPAGE",
    "GAS_LIMITS",
    "GAS_UNITS",
    "RELAY_SECONDS",
    "V4_TOOL",
    "Legs",
    "LifiError",
    "RouteRequest",
    "decimal_str",
    "kind_of",
    "step_json",
    "usd_of",
    "zero_for_one",
]

DEFAULT_SLIPPAGE = 0.005
#: gas of the step transactions as measured on these contracts (a first transfer of a sender:
#: cold storage), and the limit sent with them; a test checks executed transactions stay
#: between the two
GAS_UNITS: Mapping[str, int] = {"cross": 165_000, "swap+cross": 250_000}
GAS_LIMITS: Mapping[str, int] = {"cross": 250_000, "swap+cross": 380_000}
#: what the relayer adds to the confirmations' wait, in seconds, for executionDuration
RELAY_SECONDS = 0.5
_NAMESPACE = uuid.UUID("5f0c6c1e-58f4-4e8e-9a51-3c1f1f7f7a10")


class LifiError(Exception):
    """An error answered in LI.FI's shape: ``{"message": ..., "code": ...}`` with a status."""

    def __init__(self, status: int, message: str, code: int = 1011) -> None:
        super().__init__(message)
        self.status = status
        self.body = {"message": message, "code": code}


def decimal_str(value: Decimal, places: int = 6) -> str:
    q = Decimal(1).scaleb(-places)
    return str(value.quantize(q, rounding=ROUND_DOWN))


@dataclass(frozen=True)
class RouteRequest:
    from_chain: int
    to_chain: int
    from_token: str
    to_token: str
    from_amount: int
    from_address: str
    to_address: str
    slippage: float

    def id_for(self, tool: str) -> str:
        seed = "|".join(
            map(
                str,
                (self.from_chain, self.to_chain, self.from_token.lower(), self.to_token.lower(),
                 self.from_amount, self.from_address.lower(), self.to_address.lower(),
                 self.slippage, tool),
            )
        )  # fmt: skip
        return str(uuid.uuid5(_NAMESPACE, seed))


@dataclass(frozen=True)
class Legs:
    """A request's token kinds on each side, and what reaches the bridge (after the source
    swap, if any) with its floor under the slippage bound ``slip`` (1 - slippage)."""

    from_kind: str
    to_kind: str
    bridged: int
    bridged_min: int
    slip: Decimal


def kind_of(chain: ChainDeployment, token: str) -> str | None:
    """``"usdc"`` or ``"weth"`` for the chain's test tokens, None for anything else."""
    if token.lower() == chain.usdc.lower():
        return "usdc"
    if (
        chain.weth is not None
        and chain.pool_key is not None
        and token.lower() == chain.weth.lower()
    ):
        return "weth"
    return None


def zero_for_one(chain: ChainDeployment, sell: str) -> bool:
    """The v4 swap direction that sells ``sell`` (``"weth"``/``"usdc"``) in the chain's pool."""
    assert chain.pool_key is not None
    selling = chain.weth if sell == "weth" else chain.usdc
    return chain.pool_key.currency0.lower() == str(selling).lower()


def usd_of(amount: int, token: Mapping[str, Any]) -> Decimal:
    price = Decimal(str(token.get("priceUSD") or 0))
    return Decimal(amount).scaleb(-int(token["decimals"])) * price


def step_json(
    step_id: str,
    kind: str,
    tool: str,
    tool_details: Mapping[str, Any],
    *,
    chains: tuple[int, int],
    tokens: tuple[Mapping[str, Any], Mapping[str, Any]],
    amounts: tuple[int, int, int],
    parties: tuple[str | None, str | None],
    slippage: float,
    approval: str | None,
    duration: float,
    fee_costs: list[dict[str, Any]] | None = None,
    gas_costs: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """One LI.FI step (``action`` and ``estimate``): ``amounts`` is (from, to, to minimum),
    ``parties`` (from address, to address)."""
    from_amount, to_amount, to_amount_min = amounts
    return {
        "id": step_id,
        "type": kind,
        "tool": tool,
        "toolDetails": dict(tool_details),
        "action": {
            "fromChainId": chains[0],
            "toChainId": chains[1],
            "fromToken": tokens[0],
            "toToken": tokens[1],
            "fromAmount": str(from_amount),
            "fromAddress": parties[0],
            "toAddress": parties[1],
            "slippage": slippage,
        },
        "estimate": {
            "tool": tool,
            "fromAmount": str(from_amount),
            "toAmount": str(to_amount),
            "toAmountMin": str(to_amount_min),
            "approvalAddress": approval,
            "executionDuration": duration,
            "feeCosts": fee_costs or [],
            "gasCosts": gas_costs or [],
        },
    }


V4_TOOL: Final = {"key": "sandbox-v4", "name": "Uniswap v4 (sandbox pool)", "logoURI": ""}
