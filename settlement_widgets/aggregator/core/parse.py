"""LI.FI responses parsed strictly into the frozen values of :mod:`.models`.

The parsers are pure: they take the decoded JSON of one response and either return a value
or raise :class:`~settlement_widgets.errors.AggregatorResponseError` naming the endpoint and
the exact path of the bad field (``routes[1].steps[0].estimate.toAmount is missing``). A
route with a silently defaulted amount would be ranked wrongly, so nothing that feeds the
ranking is ever defaulted.

Amounts are read as exact ``int`` from LI.FI's decimal strings and USD values as
:class:`~decimal.Decimal`. Fields LI.FI adds that are not read here are ignored, so a new
field in the live API breaks nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

from ...addresses import validate_address
from ...errors import AggregatorResponseError, InvalidAddressError
from .models import (
    STATUS_VALUES,
    Action,
    Chain,
    Estimate,
    FeeCost,
    GasCost,
    Quote,
    Route,
    Status,
    Step,
    Token,
    TransactionInfo,
    TransactionRequest,
)

__all__ = [
    "parse_chains",
    "parse_quote",
    "parse_routes",
    "parse_status",
    "parse_step",
    "parse_tokens",
]


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
