"""LI.FI responses as frozen dataclasses, parsed strictly.

The parsers are pure: they take the decoded JSON of one response and either return a value
or raise :class:`~settlement_widgets.errors.AggregatorResponseError` naming the endpoint and
the exact path of the bad field (``routes[1].steps[0].estimate.toAmount is missing``). A
route with a silently defaulted amount would be ranked wrongly, so nothing that feeds the
ranking is ever defaulted.

Field names follow LI.FI's documented schema (``lifinance/types``: ``Route``, ``LiFiStep``,
``Estimate``, ``FeeCost``, ``GasCost``, ``StatusResponse``). Amounts are exact ``int`` in
the token's smallest units (LI.FI sends them as decimal strings; ``int`` keeps uint256
values beyond 2**63 exact); USD values are :class:`~decimal.Decimal`. Fields LI.FI adds
that are not read here are ignored, so a new field in the live API breaks nothing. The
decoded JSON is kept in ``raw`` (excluded from equality) because
``POST /advanced/stepTransaction`` wants the step object back exactly as LI.FI sent it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

from ...addresses import validate_address
from ...errors import AggregatorResponseError, InvalidAddressError
from .valuation import NetValue, value_usd

__all__ = [
    "STATUS_VALUES",
    "TERMINAL_STATUSES",
    "Action",
    "Chain",
    "Estimate",
    "FeeCost",
    "GasCost",
    "Quote",
    "Route",
    "Status",
    "Step",
    "Token",
    "TransactionInfo",
    "TransactionRequest",
    "parse_chains",
    "parse_quote",
    "parse_routes",
    "parse_status",
    "parse_step",
    "parse_tokens",
]

#: Values of ``status`` in ``GET /status`` (LI.FI ``StatusMessage``).
STATUS_VALUES = frozenset({"NOT_FOUND", "INVALID", "PENDING", "DONE", "FAILED"})
#: Statuses after which polling stops.
TERMINAL_STATUSES = frozenset({"DONE", "FAILED"})

#: Native-coin placeholders LI.FI uses as token addresses (no ERC-20 approval needed).
NATIVE_TOKEN_ADDRESSES = frozenset(
    {"0x0000000000000000000000000000000000000000", "0xeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee"}
)


# --- strict readers --------------------------------------------------------------------


class _Ctx:
    """Where a value came from, for error messages: the endpoint and the HTTP status."""

    def __init__(self, source: str, status: int | None = 200) -> None:
        self.source = source
        self.status = status

    def fail(self, path: str, problem: str) -> AggregatorResponseError:
        return AggregatorResponseError(
            f"LI.FI response to {self.source} does not follow LI.FI's documented schema: "
            f"{path} {problem}. The API may have changed or a proxy altered the body; "
            "nothing was ranked or sent.",
            status=self.status,
        )


def _join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def _obj(ctx: _Ctx, value: Any, path: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ctx.fail(path or "the body", f"must be a JSON object, got {_kind(value)}")
    return value


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, str):
        return f"the string {value[:40]!r}"
    if isinstance(value, int | float):
        return f"the number {value!r}"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, Mapping):
        return "an object"
    return type(value).__name__


def _get(ctx: _Ctx, obj: Mapping[str, Any], key: str, path: str, optional: bool) -> Any:
    value = obj.get(key)
    if value is None and not optional:
        where = _join(path, key)
        raise ctx.fail(where, "is missing" if key not in obj else "is null")
    return value


def _str(ctx: _Ctx, obj: Mapping[str, Any], key: str, path: str, *, optional: bool = False) -> Any:
    value = _get(ctx, obj, key, path, optional)
    if value is None:
        return None
    if not isinstance(value, str) or (not value and not optional):
        raise ctx.fail(_join(path, key), f"must be a non-empty string, got {_kind(value)}")
    return value


def _amount(ctx: _Ctx, obj: Mapping[str, Any], key: str, path: str) -> int:
    """A token amount: LI.FI sends a decimal string of digits; an int is tolerated."""
    value = _get(ctx, obj, key, path, False)
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    if isinstance(value, str) and value.isascii() and value.isdigit():
        return int(value)
    raise ctx.fail(
        _join(path, key), f"must be a non-negative integer amount string, got {_kind(value)}"
    )


def _usd(
    ctx: _Ctx, obj: Mapping[str, Any], key: str, path: str, *, optional: bool = False
) -> Decimal | None:
    value = _get(ctx, obj, key, path, optional)
    if value is None:
        return None
    if isinstance(value, int | float | str) and not isinstance(value, bool):
        try:
            parsed = Decimal(str(value))
        except InvalidOperation:
            parsed = None
        if parsed is not None and parsed.is_finite():
            return parsed
    raise ctx.fail(_join(path, key), f"must be a decimal USD value, got {_kind(value)}")


def _int(ctx: _Ctx, obj: Mapping[str, Any], key: str, path: str, *, optional: bool = False) -> Any:
    value = _get(ctx, obj, key, path, optional)
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise ctx.fail(_join(path, key), f"must be an integer, got {_kind(value)}")


def _number(ctx: _Ctx, obj: Mapping[str, Any], key: str, path: str) -> float:
    value = _get(ctx, obj, key, path, False)
    if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
        return float(value)
    raise ctx.fail(_join(path, key), f"must be a non-negative number, got {_kind(value)}")


def _bool(ctx: _Ctx, obj: Mapping[str, Any], key: str, path: str) -> bool:
    value = _get(ctx, obj, key, path, False)
    if not isinstance(value, bool):
        raise ctx.fail(_join(path, key), f"must be true or false, got {_kind(value)}")
    return value


def _list(
    ctx: _Ctx, obj: Mapping[str, Any], key: str, path: str, *, optional: bool = False
) -> list[Any]:
    value = _get(ctx, obj, key, path, optional)
    if value is None:
        return []
    if not isinstance(value, list):
        raise ctx.fail(_join(path, key), f"must be an array, got {_kind(value)}")
    return value


def _hex_int(ctx: _Ctx, obj: Mapping[str, Any], key: str, path: str) -> int | None:
    """``value``/``gasLimit`` in a transaction request: hex string, decimal string or int."""
    value = obj.get(key)
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    if isinstance(value, str):
        try:
            if value.lower().startswith("0x"):
                return int(value, 16) if len(value) > 2 else 0
            if value.isascii() and value.isdigit():
                return int(value)
        except ValueError:
            pass
    raise ctx.fail(_join(path, key), f"must be a hex or decimal quantity, got {_kind(value)}")


# --- values ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Token:
    """A token as LI.FI describes it; ``price_usd`` is None when LI.FI has no price."""

    chain_id: int
    address: str
    symbol: str
    decimals: int
    name: str | None = None
    price_usd: Decimal | None = None
    coin_key: str | None = None

    @property
    def is_native(self) -> bool:
        """True for the chain's native coin (no ERC-20 approval needed)."""
        return self.address.lower() in NATIVE_TOKEN_ADDRESSES

    def units(self, amount: int) -> Decimal:
        """``amount`` (smallest units) in whole tokens, exactly: 99_870_000 USDC -> 99.87."""
        return Decimal(amount).scaleb(-self.decimals)


def _token(ctx: _Ctx, value: Any, path: str) -> Token:
    obj = _obj(ctx, value, path)
    decimals = _int(ctx, obj, "decimals", path)
    if not 0 <= decimals <= 255:
        raise ctx.fail(_join(path, "decimals"), f"must be between 0 and 255, got {decimals}")
    return Token(
        chain_id=_int(ctx, obj, "chainId", path),
        address=_str(ctx, obj, "address", path),
        symbol=_str(ctx, obj, "symbol", path),
        decimals=decimals,
        name=_str(ctx, obj, "name", path, optional=True),
        price_usd=_usd(ctx, obj, "priceUSD", path, optional=True),
        coin_key=_str(ctx, obj, "coinKey", path, optional=True),
    )


@dataclass(frozen=True)
class FeeCost:
    """A fee of one step. ``included`` fees are already deducted from ``toAmount``; the
    others are paid on top (typically in the native coin, as transaction value)."""

    name: str
    amount: int
    amount_usd: Decimal
    included: bool
    token: Token
    percentage: Decimal | None = None
    description: str | None = None


def _fee(ctx: _Ctx, value: Any, path: str) -> FeeCost:
    obj = _obj(ctx, value, path)
    return FeeCost(
        name=_str(ctx, obj, "name", path),
        amount=_amount(ctx, obj, "amount", path),
        amount_usd=_usd(ctx, obj, "amountUSD", path),  # type: ignore[arg-type]
        included=_bool(ctx, obj, "included", path),
        token=_token(ctx, obj.get("token"), _join(path, "token")),
        percentage=_usd(ctx, obj, "percentage", path, optional=True),
        description=_str(ctx, obj, "description", path, optional=True),
    )


@dataclass(frozen=True)
class GasCost:
    """Gas of one step: ``type`` is SEND, APPROVE, FEE or SUM (a total of the others)."""

    type: str
    amount: int
    amount_usd: Decimal
    token: Token
    estimate: int | None = None
    limit: int | None = None
    price: int | None = None


def _gas(ctx: _Ctx, value: Any, path: str) -> GasCost:
    obj = _obj(ctx, value, path)
    return GasCost(
        type=_str(ctx, obj, "type", path),
        amount=_amount(ctx, obj, "amount", path),
        amount_usd=_usd(ctx, obj, "amountUSD", path),  # type: ignore[arg-type]
        token=_token(ctx, obj.get("token"), _join(path, "token")),
        estimate=_amount(ctx, obj, "estimate", path) if obj.get("estimate") is not None else None,
        limit=_amount(ctx, obj, "limit", path) if obj.get("limit") is not None else None,
        price=_amount(ctx, obj, "price", path) if obj.get("price") is not None else None,
    )


@dataclass(frozen=True)
class Action:
    """What a step does: ``from_amount`` of ``from_token`` on one chain to ``to_token``."""

    from_chain_id: int
    to_chain_id: int
    from_token: Token
    to_token: Token
    from_amount: int
    from_address: str | None = None
    to_address: str | None = None
    slippage: float | None = None


def _action(ctx: _Ctx, value: Any, path: str) -> Action:
    obj = _obj(ctx, value, path)
    slippage = obj.get("slippage")
    if slippage is not None and (
        isinstance(slippage, bool) or not isinstance(slippage, int | float)
    ):
        raise ctx.fail(_join(path, "slippage"), f"must be a number, got {_kind(slippage)}")
    return Action(
        from_chain_id=_int(ctx, obj, "fromChainId", path),
        to_chain_id=_int(ctx, obj, "toChainId", path),
        from_token=_token(ctx, obj.get("fromToken"), _join(path, "fromToken")),
        to_token=_token(ctx, obj.get("toToken"), _join(path, "toToken")),
        from_amount=_amount(ctx, obj, "fromAmount", path),
        from_address=_str(ctx, obj, "fromAddress", path, optional=True),
        to_address=_str(ctx, obj, "toAddress", path, optional=True),
        slippage=None if slippage is None else float(slippage),
    )


@dataclass(frozen=True)
class Estimate:
    """LI.FI's estimate of a step: amounts, costs, approval spender and duration (s)."""

    from_amount: int
    to_amount: int
    to_amount_min: int
    approval_address: str
    execution_duration: float
    fee_costs: tuple[FeeCost, ...] = ()
    gas_costs: tuple[GasCost, ...] = ()
    from_amount_usd: Decimal | None = None
    to_amount_usd: Decimal | None = None
    tool: str | None = None


def _estimate(ctx: _Ctx, value: Any, path: str) -> Estimate:
    obj = _obj(ctx, value, path)
    fees = _list(ctx, obj, "feeCosts", path, optional=True)
    gas = _list(ctx, obj, "gasCosts", path, optional=True)
    return Estimate(
        from_amount=_amount(ctx, obj, "fromAmount", path),
        to_amount=_amount(ctx, obj, "toAmount", path),
        to_amount_min=_amount(ctx, obj, "toAmountMin", path),
        approval_address=_str(ctx, obj, "approvalAddress", path),
        execution_duration=_number(ctx, obj, "executionDuration", path),
        fee_costs=tuple(
            _fee(ctx, f, _join(_join(path, "feeCosts"), i)) for i, f in enumerate(fees)
        ),
        gas_costs=tuple(_gas(ctx, g, _join(_join(path, "gasCosts"), i)) for i, g in enumerate(gas)),
        from_amount_usd=_usd(ctx, obj, "fromAmountUSD", path, optional=True),
        to_amount_usd=_usd(ctx, obj, "toAmountUSD", path, optional=True),
        tool=_str(ctx, obj, "tool", path, optional=True),
    )


@dataclass(frozen=True)
class TransactionRequest:
    """The EVM transaction LI.FI prepared for a step; ``value``/``gas_limit`` are ints."""

    to: str
    data: str
    value: int = 0
    chain_id: int | None = None
    gas_limit: int | None = None
    gas_price: int | None = None
    from_address: str | None = None


def _tx_request(ctx: _Ctx, value: Any, path: str) -> TransactionRequest:
    obj = _obj(ctx, value, path)
    to = _str(ctx, obj, "to", path)
    try:
        to = validate_address(to, field=_join(path, "to"))
    except InvalidAddressError as exc:
        raise ctx.fail(_join(path, "to"), f"is not an EVM address ({exc})") from exc
    data = _str(ctx, obj, "data", path)
    body = data[2:] if data.startswith("0x") else None
    if body is None or len(body) % 2 or any(c not in "0123456789abcdefABCDEF" for c in body):
        raise ctx.fail(_join(path, "data"), "must be 0x-prefixed hex bytes")
    return TransactionRequest(
        to=to,
        data=data,
        value=_hex_int(ctx, obj, "value", path) or 0,
        chain_id=_int(ctx, obj, "chainId", path, optional=True),
        gas_limit=_hex_int(ctx, obj, "gasLimit", path),
        gas_price=_hex_int(ctx, obj, "gasPrice", path),
        from_address=_str(ctx, obj, "from", path, optional=True),
    )


@dataclass(frozen=True)
class Step:
    """One step of a route (a LI.FI ``LiFiStep``, or an included sub-step of one)."""

    id: str
    type: str
    tool: str
    action: Action
    estimate: Estimate
    tool_name: str | None = None
    included_steps: tuple[Step, ...] = ()
    transaction_request: TransactionRequest | None = None
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False, repr=False)

    @property
    def tools(self) -> tuple[str, ...]:
        """The tools doing the work: the included steps' tools, else this step's tool."""
        return tuple(s.tool for s in self.included_steps) or (self.tool,)


def _step(ctx: _Ctx, value: Any, path: str) -> Step:
    obj = _obj(ctx, value, path)
    details = obj.get("toolDetails")
    included = _list(ctx, obj, "includedSteps", path, optional=True)
    tx = obj.get("transactionRequest")
    return Step(
        id=_str(ctx, obj, "id", path),
        type=_str(ctx, obj, "type", path),
        tool=_str(ctx, obj, "tool", path),
        action=_action(ctx, obj.get("action"), _join(path, "action")),
        estimate=_estimate(ctx, obj.get("estimate"), _join(path, "estimate")),
        tool_name=details.get("name") if isinstance(details, Mapping) else None,
        included_steps=tuple(
            _step(ctx, s, _join(_join(path, "includedSteps"), i)) for i, s in enumerate(included)
        ),
        transaction_request=(
            None if tx is None else _tx_request(ctx, tx, _join(path, "transactionRequest"))
        ),
        raw=obj,
    )


class _Valued:
    """The USD figures of a route or quote, read from its :meth:`net_value`."""

    def net_value(self) -> NetValue | None:  # pragma: no cover - each value defines it
        raise NotImplementedError

    @property
    def net_usd(self) -> Decimal | None:
        """Headline: ``toAmount`` net of fees paid on top and gas, in USD (None if
        unpriceable)."""
        value = self.net_value()
        return None if value is None else value.net_usd

    @property
    def net_min_usd(self) -> Decimal | None:
        """Worst case: ``toAmountMin`` net of fees paid on top and gas, in USD (None if
        unpriceable). Routes are ranked on it."""
        value = self.net_value()
        return None if value is None else value.net_min_usd

    @property
    def approval_gas_usd(self) -> Decimal | None:
        """The ERC-20 approvals' share of the gas, in USD (None if unpriceable)."""
        value = self.net_value()
        return None if value is None else value.approval_gas_usd


@dataclass(frozen=True)
class Route(_Valued):
    """A route from ``POST /advanced/routes``: one or more steps from one token to another.

    ``rank`` is set by :func:`~settlement_widgets.aggregator.core.ranking.rank_routes` (1 = best);
    ``net_min_usd`` (worst case) is the ranking value and ``net_usd`` the headline (see that
    module for the exact rule).
    """

    id: str
    from_chain_id: int
    to_chain_id: int
    from_token: Token
    to_token: Token
    from_amount: int
    to_amount: int
    to_amount_min: int
    steps: tuple[Step, ...]
    from_amount_usd: Decimal | None = None
    to_amount_usd: Decimal | None = None
    gas_cost_usd: Decimal | None = None
    tags: tuple[str, ...] = ()
    from_address: str | None = None
    to_address: str | None = None
    rank: int | None = None
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False, repr=False)

    @property
    def tools(self) -> tuple[str, ...]:
        return tuple(t for s in self.steps for t in s.tools)

    @property
    def duration(self) -> float:
        """Estimated seconds: the sum of the steps' ``executionDuration``."""
        return sum(s.estimate.execution_duration for s in self.steps)

    @property
    def to_amount_units(self) -> Decimal:
        return self.to_token.units(self.to_amount)

    @property
    def from_amount_units(self) -> Decimal:
        return self.from_token.units(self.from_amount)

    def net_value(self) -> NetValue | None:
        """The USD breakdown the ranking orders by (None if unpriceable)."""
        return value_usd(
            self.steps,
            to_token=self.to_token,
            to_amount=self.to_amount,
            to_amount_min=self.to_amount_min,
            to_amount_usd=self.to_amount_usd,
            gas_cost_usd=self.gas_cost_usd,
        )


@dataclass(frozen=True)
class Quote(_Valued):
    """``GET /quote``: the single best step LI.FI found, with its transaction request."""

    step: Step

    @property
    def id(self) -> str:
        return self.step.id

    @property
    def tool(self) -> str:
        return self.step.tool

    @property
    def action(self) -> Action:
        return self.step.action

    @property
    def estimate(self) -> Estimate:
        return self.step.estimate

    @property
    def to_amount(self) -> int:
        return self.step.estimate.to_amount

    @property
    def to_amount_min(self) -> int:
        return self.step.estimate.to_amount_min

    @property
    def transaction_request(self) -> TransactionRequest | None:
        return self.step.transaction_request

    @property
    def duration(self) -> float:
        return self.step.estimate.execution_duration

    def net_value(self) -> NetValue | None:
        """The USD breakdown of the quote's single step; a quote has no aggregate
        ``gasCostUSD``, so its step's gas costs are summed."""
        estimate = self.step.estimate
        return value_usd(
            (self.step,),
            to_token=self.step.action.to_token,
            to_amount=estimate.to_amount,
            to_amount_min=estimate.to_amount_min,
            to_amount_usd=estimate.to_amount_usd,
            gas_cost_usd=None,
        )


@dataclass(frozen=True)
class TransactionInfo:
    """The ``sending``/``receiving`` side of a transfer in ``GET /status``."""

    chain_id: int
    tx_hash: str | None = None
    tx_link: str | None = None
    amount: int | None = None
    token: Token | None = None
    amount_usd: Decimal | None = None


def _tx_info(ctx: _Ctx, value: Any, path: str) -> TransactionInfo:
    obj = _obj(ctx, value, path)
    token = obj.get("token")
    return TransactionInfo(
        chain_id=_int(ctx, obj, "chainId", path),
        tx_hash=_str(ctx, obj, "txHash", path, optional=True),
        tx_link=_str(ctx, obj, "txLink", path, optional=True),
        amount=_amount(ctx, obj, "amount", path) if obj.get("amount") is not None else None,
        token=None if token is None else _token(ctx, token, _join(path, "token")),
        amount_usd=_usd(ctx, obj, "amountUSD", path, optional=True),
    )


@dataclass(frozen=True)
class Status:
    """``GET /status``: where a transfer is. ``status`` is one of :data:`STATUS_VALUES`."""

    status: str
    substatus: str | None = None
    substatus_message: str | None = None
    tool: str | None = None
    sending: TransactionInfo | None = None
    receiving: TransactionInfo | None = None
    transaction_id: str | None = None
    explorer_link: str | None = None

    @property
    def is_final(self) -> bool:
        return self.status in TERMINAL_STATUSES

    @property
    def done(self) -> bool:
        return self.status == "DONE"

    @property
    def failed(self) -> bool:
        return self.status == "FAILED"


@dataclass(frozen=True)
class Chain:
    """One chain of ``GET /chains``."""

    id: int
    key: str
    name: str
    chain_type: str | None = None
    coin: str | None = None
    mainnet: bool | None = None
    native_token: Token | None = None


# --- response parsers ----------------------------------------------------------------------


def parse_step(data: Any, *, source: str) -> Step:
    """A step object (``POST /advanced/stepTransaction`` answers with one)."""
    return _step(_Ctx(source), data, "")


def _route(ctx: _Ctx, value: Any, path: str) -> Route:
    obj = _obj(ctx, value, path)
    steps = _list(ctx, obj, "steps", path)
    if not steps:
        raise ctx.fail(_join(path, "steps"), "is empty (a route has at least one step)")
    tags = _list(ctx, obj, "tags", path, optional=True)
    if not all(isinstance(t, str) for t in tags):
        raise ctx.fail(_join(path, "tags"), "must be an array of strings")
    return Route(
        id=_str(ctx, obj, "id", path),
        from_chain_id=_int(ctx, obj, "fromChainId", path),
        to_chain_id=_int(ctx, obj, "toChainId", path),
        from_token=_token(ctx, obj.get("fromToken"), _join(path, "fromToken")),
        to_token=_token(ctx, obj.get("toToken"), _join(path, "toToken")),
        from_amount=_amount(ctx, obj, "fromAmount", path),
        to_amount=_amount(ctx, obj, "toAmount", path),
        to_amount_min=_amount(ctx, obj, "toAmountMin", path),
        steps=tuple(_step(ctx, s, _join(_join(path, "steps"), i)) for i, s in enumerate(steps)),
        from_amount_usd=_usd(ctx, obj, "fromAmountUSD", path, optional=True),
        to_amount_usd=_usd(ctx, obj, "toAmountUSD", path, optional=True),
        gas_cost_usd=_usd(ctx, obj, "gasCostUSD", path, optional=True),
        tags=tuple(tags),
        from_address=_str(ctx, obj, "fromAddress", path, optional=True),
        to_address=_str(ctx, obj, "toAddress", path, optional=True),
        raw=obj,
    )


def parse_routes(data: Any, *, source: str) -> list[Route]:
    """``POST /advanced/routes`` -> routes in the order LI.FI sent them (not ranked)."""
    ctx = _Ctx(source)
    obj = _obj(ctx, data, "")
    routes = _list(ctx, obj, "routes", "")
    return [_route(ctx, r, f"routes[{i}]") for i, r in enumerate(routes)]


def parse_quote(data: Any, *, source: str) -> Quote:
    """``GET /quote`` -> :class:`Quote` (a step that must carry ``transactionRequest``)."""
    ctx = _Ctx(source)
    step = _step(ctx, data, "")
    if step.transaction_request is None:
        raise ctx.fail("transactionRequest", "is missing (a quote always carries one)")
    return Quote(step=step)


def parse_status(data: Any, *, source: str) -> Status:
    """``GET /status`` -> :class:`Status`; ``sending`` is required once the transfer is known."""
    ctx = _Ctx(source)
    obj = _obj(ctx, data, "")
    status = _str(ctx, obj, "status", "")
    if status not in STATUS_VALUES:
        raise ctx.fail("status", f"must be one of {sorted(STATUS_VALUES)}, got {status!r}")
    known = status in {"PENDING", "DONE", "FAILED"}
    sending = obj.get("sending")
    if sending is None and known:
        raise ctx.fail("sending", f"is missing (required when status is {status})")
    receiving = obj.get("receiving")
    return Status(
        status=status,
        substatus=_str(ctx, obj, "substatus", "", optional=True),
        substatus_message=_str(ctx, obj, "substatusMessage", "", optional=True),
        tool=_str(ctx, obj, "tool", "", optional=True),
        sending=None if sending is None else _tx_info(ctx, sending, "sending"),
        receiving=None if receiving is None else _tx_info(ctx, receiving, "receiving"),
        transaction_id=_str(ctx, obj, "transactionId", "", optional=True),
        explorer_link=_str(ctx, obj, "lifiExplorerLink", "", optional=True),
    )


def parse_chains(data: Any, *, source: str) -> list[Chain]:
    """``GET /chains`` -> chains."""
    ctx = _Ctx(source)
    obj = _obj(ctx, data, "")
    out = []
    for i, item in enumerate(_list(ctx, obj, "chains", "")):
        path = f"chains[{i}]"
        c = _obj(ctx, item, path)
        native = c.get("nativeToken")
        mainnet = c.get("mainnet")
        out.append(
            Chain(
                id=_int(ctx, c, "id", path),
                key=_str(ctx, c, "key", path),
                name=_str(ctx, c, "name", path),
                chain_type=_str(ctx, c, "chainType", path, optional=True),
                coin=_str(ctx, c, "coin", path, optional=True),
                mainnet=mainnet if isinstance(mainnet, bool) else None,
                native_token=None if native is None else _token(ctx, native, f"{path}.nativeToken"),
            )
        )
    return out


def parse_tokens(data: Any, *, source: str) -> dict[int, list[Token]]:
    """``GET /tokens`` -> ``{chain_id: [Token, ...]}``."""
    ctx = _Ctx(source)
    obj = _obj(ctx, data, "")
    tokens = _obj(ctx, obj.get("tokens"), "tokens")
    out: dict[int, list[Token]] = {}
    for key, items in tokens.items():
        path = f"tokens.{key}"
        if not str(key).isdigit():
            raise ctx.fail(path, "must be keyed by a numeric chain id")
        if not isinstance(items, list):
            raise ctx.fail(path, f"must be an array, got {_kind(items)}")
        out[int(key)] = [_token(ctx, t, f"{path}[{i}]") for i, t in enumerate(items)]
    return out
