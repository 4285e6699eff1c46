"""The Nitronode handlers' request parsing: texts, limits, parameter readers and state checks.

Pure helpers shared by the handler modules (:mod:`.handlers`, :mod:`.reads`,
:mod:`.channel_states`, :mod:`.key_states`, :mod:`.app_handlers`); each raises
:class:`~settlement_widgets.errors.RelayError` with the Go node's text.
"""

from __future__ import annotations

import re
import time
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime
from typing import Any, Final

from ....addresses import validate_address
from ....errors import InvalidAddressError, InvalidFrameError, RelayError, SettlementValueError
from ..core.decimals import (
    exact_add,
    parse_decimal,
)
from ..core.ids import state_id
from ..core.rpc_shapes import wire_state
from ..core.transitions import TransitionType

__all__ = ["FAILED_TO_PARSE", "INTERNAL_ERROR", "NOT_SUPPORTED_YET", "Handler"]

#: the Go node's fixed fallback texts (pkg/rpc/context.go, channel_v1 handlers)
FAILED_TO_PARSE: Final = "failed to parse parameters"
NOT_SUPPORTED_YET: Final = "transition is not supported yet"
INTERNAL_ERROR: Final = "an error occurred while processing the request"

_APP_ID = re.compile(r"^[a-z0-9_-]{1,66}$")
_DECIMAL_UINT = re.compile(r"^[0-9]+$")
_MAX_PARTICIPANTS: Final = 32
_MAX_SESSION_DATA: Final = 1024
_DEFAULT_PAGE: Final = 100
_MAX_PAGE: Final = 1000
_KEY_STATES_PAGE: Final = 10
_ZERO_LEDGER: Final = {
    "token_address": "0x0",
    "blockchain_id": "0",
    "user_balance": "0",
    "user_net_flow": "0",
    "node_balance": "0",
    "node_net_flow": "0",
}

T = TransitionType
#: accepted as the first state of a channel (request_creation)
_CREATION_TYPES: Final = frozenset(
    {T.ACKNOWLEDGEMENT, T.HOME_DEPOSIT, T.HOME_WITHDRAWAL, T.TRANSFER_SEND}
)
#: accepted by submit_state
_SUBMIT_TYPES: Final = frozenset(
    {
        T.ACKNOWLEDGEMENT,
        T.HOME_DEPOSIT,
        T.HOME_WITHDRAWAL,
        T.TRANSFER_SEND,
        T.FINALIZE,
        T.MUTUAL_LOCK,
        T.ESCROW_DEPOSIT,
        T.ESCROW_LOCK,
        T.ESCROW_WITHDRAW,
        T.MIGRATE,
        T.MIGRATE_FINALIZE,
    }
)
#: refused by submit_state with the Go node's "not supported yet": none any more (the escrow
#: and migration transitions are ours, beyond v1.4.1: see .escrows and .migrations)
_NOT_YET: Final[frozenset[TransitionType]] = frozenset()
#: transitions whose co-signed state the user takes on chain (creation aside)
_ON_CHAIN: Final = frozenset({T.HOME_DEPOSIT, T.HOME_WITHDRAWAL, T.FINALIZE})
#: app-session intents
_OPERATE, _DEPOSIT, _WITHDRAW, _CLOSE = 0, 1, 2, 3

Handler = Callable[[Mapping[str, Any]], Awaitable[dict[str, Any]]]


def _fail(text: str) -> RelayError:
    return RelayError(text)


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _iso_slow(ms: int) -> str:
    """:func:`_iso` by way of ``datetime`` (the definition; the fast path is tested on it)."""
    return (
        datetime.fromtimestamp(ms / 1000, UTC)
        .isoformat(timespec="milliseconds")
        .replace("+00:00", "Z")
    )


#: below it (2**33 s, the year 2242) ``ms / 1000`` is within half a microsecond of the exact
#: value, so the definition's float rounding lands on the same millisecond as ``divmod``
_ISO_FAST_LIMIT: Final = 2**33 * 1000
#: (second, its ``YYYY-MM-DDTHH:MM:SS`` text): every transaction of one second shares it
_iso_second: tuple[int, str] = (-1, "")


def _iso(ms: int) -> str:
    """Go marshals ``time.Time`` as RFC 3339; milliseconds are what we keep. Each recorded
    transaction stamps one, and building a ``datetime`` per call cost more than the rest of
    the record: the text of the second is kept and the milliseconds appended."""
    global _iso_second
    if not 0 <= ms < _ISO_FAST_LIMIT:
        return _iso_slow(ms)
    second, milli = divmod(ms, 1000)
    if second != _iso_second[0]:
        text = datetime.fromtimestamp(second, UTC).isoformat(timespec="seconds")
        _iso_second = (second, text.removesuffix("+00:00"))
    return f"{_iso_second[1]}.{milli:03d}Z"


# --- parameter parsing ----------------------------------------------------------------------


def _mapping(value: Any, what: str = FAILED_TO_PARSE) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise _fail(what)
    return value


def _text(params: Mapping[str, Any], key: str, *, optional: bool = False) -> str | None:
    value = params.get(key)
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise _fail(FAILED_TO_PARSE)
    return value


def _req_text(params: Mapping[str, Any], key: str) -> str:
    value = _text(params, key)
    assert value is not None
    return value


def _uint(value: Any, *, optional: bool = False, default: int = 0) -> int:
    """A uint64 sent as a decimal string or a JSON integer (the Go side takes both)."""
    if value is None and optional:
        return default
    if isinstance(value, bool):
        raise _fail(FAILED_TO_PARSE)
    if isinstance(value, int) and 0 <= value < 2**64:
        return value
    if isinstance(value, str) and _DECIMAL_UINT.match(value) and int(value) < 2**64:
        return int(value)
    raise _fail(FAILED_TO_PARSE)


def _wallet(value: Any) -> str:
    try:
        return validate_address(value, field="wallet")
    except InvalidAddressError:
        raise _fail(FAILED_TO_PARSE) from None


def _pagination(
    params: Mapping[str, Any], *, default: int = _DEFAULT_PAGE, fixed: int | None = None
) -> tuple[int, int, str]:
    raw = params.get("pagination")
    if raw is None:
        raw = {}
    page = _mapping(raw)
    offset = _uint(page.get("offset"), optional=True)
    limit = fixed if fixed is not None else _uint(page.get("limit"), optional=True, default=default)
    limit = max(1, min(limit or default, _MAX_PAGE))
    sort = page.get("sort") or "desc"
    if sort not in ("asc", "desc"):
        raise _fail(FAILED_TO_PARSE)
    return offset, limit, sort


def _page(items: list[Any], offset: int, limit: int) -> tuple[list[Any], dict[str, int]]:
    total = len(items)
    return items[offset : offset + limit], {
        "page": offset // limit + 1,
        "per_page": limit,
        "total_count": total,
        "page_count": (total + limit - 1) // limit,
    }


_LEDGER_FIELDS: Final = (
    "token_address",
    "blockchain_id",
    "user_balance",
    "user_net_flow",
    "node_balance",
    "node_net_flow",
)


def _parse_state(value: Any) -> dict[str, Any]:
    """A wire ``StateV1`` checked for shape (types, not rules), in the SDK's key order."""
    state = _mapping(value, "failed to parse state")
    try:
        transition = state["transition"]
        if not isinstance(transition, Mapping) or not isinstance(transition.get("type"), int):
            raise InvalidFrameError("transition")
        for key in ("tx_id", "account_id", "amount"):
            if not isinstance(transition.get(key), str):
                raise InvalidFrameError(key)
        for key in ("id", "asset", "user_wallet"):
            if not isinstance(state.get(key), str):
                raise InvalidFrameError(key)
        validate_address(state["user_wallet"], field="user_wallet")
        for key in ("epoch", "version"):
            if not isinstance(state.get(key), str) or not _DECIMAL_UINT.match(state[key]):
                raise InvalidFrameError(key)
        for key in ("home_ledger", "escrow_ledger"):
            ledger = state.get(key)
            if ledger is None and key == "escrow_ledger":
                continue
            if not isinstance(ledger, Mapping) or not all(
                isinstance(ledger.get(f), str) for f in _LEDGER_FIELDS
            ):
                raise InvalidFrameError(key)
            for f in _LEDGER_FIELDS[2:]:
                parse_decimal(ledger[f])
        for key in ("home_channel_id", "escrow_channel_id", "user_sig", "node_sig"):
            if state.get(key) is not None and not isinstance(state[key], str):
                raise InvalidFrameError(key)
        parse_decimal(transition["amount"])
        parsed = wire_state(state)
    except (KeyError, SettlementValueError) as exc:  # InvalidFrameError is one
        raise _fail(
            f"failed to parse state: invalid {exc.args[0] if exc.args else 'state'}"
        ) from None
    # wire_state re-renders the transition amount; keep the text the user signed
    parsed["transition"]["amount"] = transition["amount"]
    return parsed


def _void_state(wallet: str, asset: str) -> dict[str, Any]:
    """The implicit state before a wallet's first one (version 0, empty ledger)."""
    return {
        "id": state_id(wallet, asset, 0, 0),
        "transition": {"type": 0, "tx_id": "", "account_id": "", "amount": "0"},
        "asset": asset,
        "user_wallet": wallet,
        "epoch": "0",
        "version": "0",
        "home_ledger": dict(_ZERO_LEDGER),
    }


def _check_ledger(ledger: Mapping[str, Any], where: str) -> None:
    """Go ``validateLedger``: balances ≥ 0 and balances sum to net flows."""
    user, node = parse_decimal(ledger["user_balance"]), parse_decimal(ledger["node_balance"])
    if user < 0:
        raise _fail(f"invalid state transition: {where} user balance cannot be negative")
    if node < 0:
        raise _fail(f"invalid state transition: {where} node balance cannot be negative")
    flows = exact_add(ledger["user_net_flow"], ledger["node_net_flow"])
    if exact_add(user, node) != flows:
        raise _fail(f"invalid state transition: {where} balances do not match net flows")
