"""Serve the in-process chain as standard Ethereum JSON-RPC, so other processes can use it.

The in-process EVM (eth-tester) speaks its own dialect: snake_case keys, integers, and
web3's formatting middleware in between. :class:`InProcessJsonRpc` puts that middleware's
request/result formatters (``web3.providers.eth_tester.middleware``) around the provider and
writes the results the way a node does on the wire (hex quantities, 0x data, camelCase), so a
notebook kernel, the endpoint or a node script points ``AsyncHTTPProvider``/viem at
``<sandbox>/rpc`` and cannot tell it from anvil. ``evm_increaseTime``/``evm_mine``/
``evm_snapshot``/``evm_revert`` map onto the chain's own time travel and snapshots, as
``RpcChain`` uses them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from ..addresses import ZERO_ADDRESS
from ..errors import SettlementError

if TYPE_CHECKING:
    from .chain import InProcessChain

__all__ = ["InProcessJsonRpc", "to_wire"]

_INVALID_REQUEST: Final = -32600
_METHOD_NOT_FOUND: Final = -32601
_INVALID_PARAMS: Final = -32602
_INTERNAL: Final = -32603
_CALL_LIKE: Final = frozenset({"eth_call", "eth_estimateGas", "eth_createAccessList"})
_SNAKE = re.compile(r"_([a-z])")
#: DATA fields eth-tester returns as integers
_DATA_WIDTH: Final = {"logsBloom": 256}


def _camel(key: str) -> str:
    return _SNAKE.sub(lambda m: m.group(1).upper(), key) if "_" in key else key


def to_wire(value: Any, key: str | None = None) -> Any:
    """web3/eth-tester values as JSON-RPC: ints as hex quantities, bytes as 0x data."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        width = _DATA_WIDTH.get(key or "")
        if width is not None:
            return "0x" + value.to_bytes(width, "big").hex()
        return hex(value)
    if isinstance(value, bytes | bytearray):
        return "0x" + bytes(value).hex()
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            name = _camel(str(k))
            out[name] = to_wire(v, name)
        return out
    if isinstance(value, list | tuple):
        return [to_wire(v, key) for v in value]
    return str(value)


def _error(request_id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


class InProcessJsonRpc:
    """JSON-RPC 2.0 (single and batch) over an :class:`~.chain.InProcessChain`."""

    def __init__(self, chain: InProcessChain) -> None:
        from web3.providers.eth_tester.middleware import request_formatters, result_formatters

        self._chain = chain
        self._default_from = chain.addresses[0] if chain.addresses else ZERO_ADDRESS
        self._request_formatters: dict[str, Any] = {
            str(k): v for k, v in request_formatters.items()
        }
        self._result_formatters: dict[str, Any] = {
            str(k): v for k, v in (result_formatters or {}).items()
        }

    async def handle(self, payload: Any) -> Any:
        """Answer a decoded JSON-RPC payload (a request object or a batch list)."""
        if isinstance(payload, list):
            if not payload:
                return _error(None, _INVALID_REQUEST, "empty batch")
            return [await self._one(item) for item in payload]
        return await self._one(payload)

    async def _one(self, request: Any) -> dict[str, Any]:
        if not isinstance(request, dict) or not isinstance(request.get("method"), str):
            return _error(None, _INVALID_REQUEST, "invalid request: expected {method, params}")
        request_id = request.get("id")
        method: str = request["method"]
        params = request.get("params", [])
        if params is None:
            params = []
        if not isinstance(params, list):
            return _error(request_id, _INVALID_PARAMS, "params must be an array")
        try:
            result = await self._call(method, params)
        except _RpcFailure as failure:
            return _error(request_id, failure.code, failure.message, failure.data)
        except Exception as exc:  # the chain's own error, reported like a node does
            return _error(request_id, _INTERNAL, f"{type(exc).__name__}: {exc}")
        return {"jsonrpc": "2.0", "id": request_id, "result": result}

    async def _call(self, method: str, params: list[Any]) -> Any:
        chain = self._chain
        if method == "evm_increaseTime":
            seconds = _quantity(params[0] if params else 0)
            await chain.time_travel(seconds)
            return hex(seconds)
        if method == "evm_mine":
            await chain.mine(1)
            return "0x0"
        if method == "evm_snapshot":
            return hex(int(await chain.snapshot()))
        if method == "evm_revert":
            try:
                await chain.revert(_quantity(params[0]))
            except Exception:
                return False
            return True
        if (
            method in _CALL_LIKE
            and params
            and isinstance(params[0], dict)
            and "from" not in params[0]
        ):
            # eth-tester insists on a funded sender; web3's in-process default is account 0
            params = [{**params[0], "from": self._default_from}, *params[1:]]
        formatter = self._request_formatters.get(method)
        if formatter is not None:
            params = formatter(params)
        response = await chain.w3.provider.make_request(method, params)  # type: ignore[arg-type]
        error = response.get("error")
        if error:
            if isinstance(error, dict):
                raise _RpcFailure(
                    int(error.get("code", _INTERNAL)), str(error.get("message")), error.get("data")
                )
            raise _RpcFailure(_INTERNAL, str(error))
        result = response.get("result")
        if method.startswith("eth_") and "Unknown RPC Endpoint" in str(result):
            raise _RpcFailure(_METHOD_NOT_FOUND, f"method {method} is not supported")
        formatter = self._result_formatters.get(method)
        if formatter is not None:
            result = formatter(result)
        if method in ("net_version", "web3_clientVersion"):
            return str(result)
        return to_wire(result)


class _RpcFailure(SettlementError):
    """A JSON-RPC error object to answer with."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


def _quantity(value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        try:
            return int(value, 16) if value.startswith("0x") else int(value)
        except ValueError:
            pass
    raise _RpcFailure(_INVALID_PARAMS, f"expected a quantity, got {value!r}")
