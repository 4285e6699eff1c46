"""Validating a transfer request and shaping it for LI.FI (pure).

Bad input is refused here, before anything is sent: amounts must be positive ``int`` in the
token's smallest units (the original's floats and decimal strings lost precision), the
sender must be a real address (LI.FI rejects the zero address the original sent, code 1011),
chains are ids or a few well-known names, tokens are addresses or a few well-known symbols.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ...addresses import ZERO_ADDRESS, validate_address
from ...errors import InvalidAmountError, SettlementValueError, UnknownOptionError

__all__ = [
    "CHAIN_IDS",
    "KNOWN_TOKENS",
    "ORDERS",
    "TransferRequest",
    "resolve_chain",
    "resolve_token",
]

#: Chain names LI.FI serves, by the names people type (ids are always accepted).
CHAIN_IDS: Mapping[str, int] = {
    "ethereum": 1,
    "eth": 1,
    "mainnet": 1,
    "optimism": 10,
    "opt": 10,
    "bsc": 56,
    "gnosis": 100,
    "dai": 100,
    "polygon": 137,
    "pol": 137,
    "base": 8453,
    "arbitrum": 42161,
    "arb": 42161,
    "avalanche": 43114,
    "ava": 43114,
}

_NATIVE = ZERO_ADDRESS
#: Token symbols resolved without a network call: {chain_id: {SYMBOL: address}}.
KNOWN_TOKENS: Mapping[int, Mapping[str, str]] = {
    1: {
        "ETH": _NATIVE,
        "USDC": "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48",
        "WETH": "0xC02aaA39b223FE8D0A0e5C4F27eAD9083C756Cc2",
    },
    10: {
        "ETH": _NATIVE,
        "USDC": "0x0b2C639c533813f4Aa9D7837CAf62653d097Ff85",
        "WETH": "0x4200000000000000000000000000000000000006",
    },
    137: {
        "USDC": "0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359",
        "WETH": "0x7ceB23fD6bC0adD59E62ac25578270cFf1b9f619",
    },
    8453: {
        "ETH": _NATIVE,
        "USDC": "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
        "WETH": "0x4200000000000000000000000000000000000006",
    },
    42161: {
        "ETH": _NATIVE,
        "USDC": "0xaf88d065e77c8cC2239327C5EDb3A432268e5831",
        "WETH": "0x82aF49447D8a07e3bd95BD0d56f35241523fBab1",
    },
}

#: Route orders LI.FI accepts (RECOMMENDED and SAFEST are deprecated upstream).
ORDERS = ("CHEAPEST", "FASTEST")


def _suggest(word: str, options: list[str]) -> str:
    close = difflib.get_close_matches(word, options, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def resolve_chain(chain: object, *, field: str = "chain") -> int:
    """A chain id from an int id or a known name (``"arbitrum"`` -> 42161)."""
    if isinstance(chain, bool):
        raise SettlementValueError(f"{field} must be a chain id or name, got {chain!r}")
    if isinstance(chain, int):
        if chain <= 0:
            raise SettlementValueError(f"{field} must be a positive chain id, got {chain}")
        return chain
    if isinstance(chain, str):
        name = chain.strip().lower()
        if name.isdigit() and int(name) > 0:
            return int(name)
        if name in CHAIN_IDS:
            return CHAIN_IDS[name]
        raise UnknownOptionError(
            f"unknown {field} {chain!r}{_suggest(name, sorted(CHAIN_IDS))}; pass a chain id "
            f"(names known offline: {', '.join(sorted(CHAIN_IDS))})"
        )
    raise SettlementValueError(f"{field} must be a chain id or name, got {type(chain).__name__}")


def resolve_token(token: object, chain_id: int, *, field: str = "token") -> str:
    """A token address from an address or a symbol known offline (``"USDC"`` on 42161)."""
    if not isinstance(token, str):
        raise SettlementValueError(f"{field} must be a token address or symbol string")
    if token.startswith("0x"):
        return validate_address(token, field=field)
    symbols = KNOWN_TOKENS.get(chain_id, {})
    symbol = token.strip().upper()
    if symbol in symbols:
        return symbols[symbol]
    raise UnknownOptionError(
        f"unknown {field} {token!r} on chain {chain_id}{_suggest(symbol, sorted(symbols))}; "
        f"pass the token address (known offline here: {', '.join(sorted(symbols)) or 'none'}; "
        "`await provider.tokens([chain_id])` lists LI.FI's tokens)"
    )


def _amount(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidAmountError(
            f"from_amount must be an int in the token's smallest units "
            f"(100 USDC = 100_000_000), got {type(value).__name__} {value!r}"
        )
    if value <= 0:
        raise InvalidAmountError(f"from_amount must be greater than zero, got {value}")
    if value >= 2**256:
        raise InvalidAmountError("from_amount does not fit in uint256")
    return value


@dataclass(frozen=True)
class TransferRequest:
    """A validated "send this, receive that" request, ready for ``/quote`` or ``/routes``."""

    from_chain: int
    to_chain: int
    from_token: str
    to_token: str
    from_amount: int
    from_address: str
    to_address: str | None = None
    slippage: float | None = None
    order: str | None = None

    @classmethod
    def build(
        cls,
        from_chain: object,
        to_chain: object,
        from_token: object,
        to_token: object,
        from_amount: object,
        from_address: object,
        *,
        to_address: object = None,
        slippage: object = None,
        order: object = None,
    ) -> TransferRequest:
        """Validate every argument; raise a clear error from the tree on the first bad one."""
        fc = resolve_chain(from_chain, field="from_chain")
        tc = resolve_chain(to_chain, field="to_chain")
        if slippage is not None and (
            isinstance(slippage, bool)
            or not isinstance(slippage, int | float)
            or not 0 < slippage < 1
        ):
            raise SettlementValueError(
                f"slippage is a fraction between 0 and 1 (0.005 = 0.5 %), got {slippage!r}"
            )
        if order is not None:
            if not isinstance(order, str) or order.upper() not in ORDERS:
                raise UnknownOptionError(
                    f"unknown order {order!r}{_suggest(str(order).upper(), list(ORDERS))}; "
                    f"use one of {', '.join(ORDERS)}"
                )
            order = order.upper()
        return cls(
            from_chain=fc,
            to_chain=tc,
            from_token=resolve_token(from_token, fc, field="from_token"),
            to_token=resolve_token(to_token, tc, field="to_token"),
            from_amount=_amount(from_amount),
            from_address=validate_address(from_address, field="from_address", allow_zero=False),
            to_address=(
                None
                if to_address is None
                else validate_address(to_address, field="to_address", allow_zero=False)
            ),
            slippage=None if slippage is None else float(slippage),
            order=order,
        )

    def quote_params(self, integrator: str | None) -> dict[str, str]:
        """Query parameters of ``GET /quote``."""
        params = {
            "fromChain": str(self.from_chain),
            "toChain": str(self.to_chain),
            "fromToken": self.from_token,
            "toToken": self.to_token,
            "fromAmount": str(self.from_amount),
            "fromAddress": self.from_address,
        }
        if self.to_address:
            params["toAddress"] = self.to_address
        if self.slippage is not None:
            params["slippage"] = repr(self.slippage)
        if self.order:
            params["order"] = self.order
        if integrator:
            params["integrator"] = integrator
        return params

    def routes_body(self, integrator: str | None) -> dict[str, Any]:
        """JSON body of ``POST /advanced/routes``."""
        body: dict[str, Any] = {
            "fromChainId": self.from_chain,
            "toChainId": self.to_chain,
            "fromTokenAddress": self.from_token,
            "toTokenAddress": self.to_token,
            "fromAmount": str(self.from_amount),
            "fromAddress": self.from_address,
        }
        if self.to_address:
            body["toAddress"] = self.to_address
        options: dict[str, Any] = {}
        if integrator:
            options["integrator"] = integrator
        if self.slippage is not None:
            options["slippage"] = self.slippage
        if self.order:
            options["order"] = self.order
        if options:
            body["options"] = options
        return body
