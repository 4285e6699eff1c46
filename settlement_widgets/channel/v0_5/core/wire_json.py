"""JSON text exactly as the wire has it: JS-compatible compact output, raw member slices.

Signatures on RPC frames cover the *bytes* of the ``req``/``res`` array (ClearNode
v0.5). So we (a) write that array exactly as JavaScript's ``JSON.stringify`` would, making our
frames byte-identical to the SDK's, and (b) when reading a frame, keep each top-level member's
value as the exact slice of the received text instead of re-serialising it.

Differences from ``json.dumps`` handled here: compact separators; non-ASCII text kept as is;
object keys that look like array indices ("0", "1", ...) come first in ascending order, as in
JS objects; floats, NaN and non-string keys are refused (the protocol has none, and their text
differs between JS and Python).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from json.decoder import JSONDecodeError
from typing import Any

import orjson

from ....errors import InvalidFrameError

__all__ = ["dumps", "loads_members"]

_INDEX_KEY = re.compile(r"^(?:0|[1-9][0-9]{0,9})$")
_MAX_INDEX = 2**32 - 2
_WS = re.compile(r"[ \t\n\r]*")
_scanstring: Any = json.decoder.scanstring  # type: ignore[attr-defined]  # C-accelerated


def _reject_constant(name: str) -> Any:
    raise InvalidFrameError(f"frame contains {name}, which is not valid JSON")


_DECODER = json.JSONDecoder(parse_constant=_reject_constant, strict=True)
_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def _is_index(key: str) -> bool:
    return _INDEX_KEY.match(key) is not None and int(key) <= _MAX_INDEX


def _normalise(value: Any) -> Any:
    """Reject what JS would write differently and order index-like keys like a JS object.

    Returns ``value`` itself when nothing needs changing (the common case: no copy)."""
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return value
    if kind is dict or kind is list:  # exact types: orjson writes them as json.dumps does
        return _normalise_container(value)
    if isinstance(value, str | int):  # subclasses: written as their base type
        return value
    if isinstance(value, float):
        raise InvalidFrameError(
            f"wire values must not be floats ({value!r}): send integers or decimal strings"
        )
    if isinstance(value, Mapping):
        return _normalise_mapping(value)
    if isinstance(value, list | tuple):
        return [_normalise(item) for item in value]
    raise InvalidFrameError(f"cannot put a {type(value).__name__} into a JSON frame")


def _normalise_container(value: dict[Any, Any] | list[Any]) -> Any:
    if type(value) is list:
        out_list: list[Any] | None = None
        for i, item in enumerate(value):
            norm = _normalise(item)
            if norm is not item and out_list is None:
                out_list = list(value[:i])
            if out_list is not None:
                out_list.append(norm)
        return value if out_list is None else out_list
    assert isinstance(value, dict)
    for key, item in value.items():
        if type(key) is not str or (key[:1].isdigit() and _is_index(key)):
            return _normalise_mapping(value)
        if _normalise(item) is not item:
            return _normalise_mapping(value)
    return value


def _normalise_mapping(value: Mapping[Any, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    indexed: list[tuple[int, str]] = []
    for key, item in value.items():
        if not isinstance(key, str):
            raise InvalidFrameError(f"JSON object keys must be strings, got {key!r}")
        if _is_index(key):
            indexed.append((int(key), key))
        out[key] = _normalise(item)
    if indexed:
        first = {k: out[k] for _, k in sorted(indexed)}
        first.update((k, v) for k, v in out.items() if k not in first)
        return first
    return out


def dumps(value: Any) -> str:
    """Compact JSON text equal to JavaScript's ``JSON.stringify(value)``.

    Written by orjson, whose output for strings, 64-bit integers, ``None``/booleans, lists
    and ``dict`` is the same text as ``json.dumps(separators=(",", ":"), ensure_ascii=False)``
    (the tests compare both on every control character and random Unicode); the stdlib
    encoder takes what orjson refuses (integers beyond 64 bits, lone surrogates, mapping
    types it does not know). About 10x cheaper on a signing client's hot path.
    """
    norm = _normalise(value)
    try:
        return orjson.dumps(norm).decode()
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        pass
    text = _ENCODER.encode(norm)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidFrameError(
            "text contains a lone surrogate, which UTF-8 cannot carry"
        ) from None
    return text


def _not_json(text: str, exc: JSONDecodeError | None = None) -> InvalidFrameError:
    where = f": {exc.msg} at character {exc.pos}" if exc is not None else ""
    return InvalidFrameError(f"frame is not valid JSON{where}")


def loads_members(text: str) -> list[tuple[str, Any, int, int]]:
    """Parse a JSON object and return ``(key, value, start, end)`` for each top-level member.

    ``text[start:end]`` is the member's value exactly as received. Raises
    :class:`InvalidFrameError` for invalid JSON, a non-object, or a repeated top-level key
    (an ambiguous frame: which ``req`` did the signer mean?).
    """
    n = len(text)
    idx = _WS.match(text, 0).end()  # type: ignore[union-attr]
    if idx >= n or text[idx] != "{":
        try:
            _DECODER.decode(text)
        except JSONDecodeError as exc:
            raise _not_json(text, exc) from None
        raise InvalidFrameError("frame must be a JSON object ({...})")
    members: list[tuple[str, Any, int, int]] = []
    seen: set[str] = set()
    try:
        idx = _WS.match(text, idx + 1).end()  # type: ignore[union-attr]
        if text[idx] == "}":
            idx += 1
        else:
            while True:
                if text[idx] != '"':
                    raise _not_json(text, JSONDecodeError("expected a string key", text, idx))
                key, idx = _scanstring(text, idx + 1, True)
                idx = _WS.match(text, idx).end()  # type: ignore[union-attr]
                if text[idx] != ":":
                    raise _not_json(text, JSONDecodeError("expected ':'", text, idx))
                start = _WS.match(text, idx + 1).end()  # type: ignore[union-attr]
                value, end = _DECODER.raw_decode(text, start)
                if key in seen:
                    raise InvalidFrameError(f"frame repeats the key {key!r}")
                seen.add(key)
                members.append((key, value, start, end))
                idx = _WS.match(text, end).end()  # type: ignore[union-attr]
                if text[idx] == ",":
                    idx = _WS.match(text, idx + 1).end()  # type: ignore[union-attr]
                    continue
                if text[idx] == "}":
                    idx += 1
                    break
                raise _not_json(text, JSONDecodeError("expected ',' or '}'", text, idx))
    except JSONDecodeError as exc:
        raise _not_json(text, exc) from None
    except IndexError:
        raise _not_json(text, JSONDecodeError("unexpected end of text", text, n)) from None
    if _WS.match(text, idx).end() != n:  # type: ignore[union-attr]
        raise _not_json(text, JSONDecodeError("extra data after the object", text, idx))
    return members
