"""Compiled contract artifacts and revert decoding.

``make contracts`` compiles ``contracts/src`` with solc-js (and copies the PoolManager and
test routers from the ``@uniswap/v4-core`` npm package) into ``settlement_widgets/_artifacts``
as ``<Name>.json`` files with ``abi``, ``bytecode`` and ``deployedBytecode`` (and, for a
contract calling external libraries, ``linkReferences``: where each library's address goes,
see :func:`link_bytecode`). Nothing compiled is committed; ``SETTLEMENT_ARTIFACTS`` may point
elsewhere.
"""

from __future__ import annotations

import functools
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import ConfigurationError

__all__ = [
    "Artifact",
    "artifacts_dir",
    "decode_revert",
    "error_selectors",
    "link_bytecode",
    "load_artifact",
]

#: ``{sourceName: {libraryName: [{"start": byte offset, "length": 20}]}}``, as solc reports it
LinkReferences = dict[str, dict[str, list[dict[str, int]]]]


@dataclass(frozen=True)
class Artifact:
    name: str
    abi: list[dict[str, Any]]
    bytecode: str
    deployed_bytecode: str
    #: the external libraries the creation code calls (empty: nothing to link)
    link_references: LinkReferences = field(default_factory=dict)

    @property
    def libraries(self) -> tuple[str, ...]:
        """Names of the libraries to deploy and link before this contract, sorted."""
        return tuple(sorted({lib for libs in self.link_references.values() for lib in libs}))


def link_bytecode(bytecode: str, references: LinkReferences, addresses: dict[str, str]) -> str:
    """``bytecode`` with each library placeholder replaced by the library's address from
    ``addresses`` (by library name). Why offsets rather than a text search: solc's placeholder
    is a hash of the fully qualified name, and the offsets are what it guarantees. A missing
    address raises ``ConfigurationError`` (an unlinked contract would deploy, then revert on
    its first library call)."""
    # the placeholders are not hex (``__$…$__``): patch the text, two characters a byte
    code = list(bytecode.removeprefix("0x"))
    for libs in references.values():
        for name, spots in libs.items():
            address = addresses.get(name)
            if not address:
                raise ConfigurationError(f"library {name} has no address to link")
            raw = address.removeprefix("0x").lower()
            for spot in spots:
                start, length = 2 * spot["start"], 2 * spot["length"]
                if length != len(raw):
                    raise ConfigurationError(f"library {name}: link slot of {length // 2} bytes")
                code[start : start + length] = list(raw)
    linked = "".join(code)
    bytes.fromhex(linked)  # every placeholder filled: what is left is plain hex
    return "0x" + linked


def artifacts_dir() -> Path:
    env = os.environ.get("SETTLEMENT_ARTIFACTS")
    return Path(env) if env else Path(__file__).with_name("_artifacts")


@functools.cache
def load_artifact(name: str) -> Artifact:
    """The compiled artifact ``name`` (e.g. ``"Custody"``, ``"PoolManager"``)."""
    path = artifacts_dir() / f"{name}.json"
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise ConfigurationError(
            f"contract artifact {name!r} not found in {path.parent}: {_rebuild_hint()}"
        ) from None
    return Artifact(
        name=name,
        abi=data["abi"],
        bytecode=data["bytecode"],
        deployed_bytecode=data.get("deployedBytecode", ""),
        link_references=data.get("linkReferences", {}),
    )


def _rebuild_hint() -> str:
    """What brings the artifacts back: ``make contracts`` in a checkout; in an installed
    package (whose wheel carries them) a reinstall, or ``SETTLEMENT_ARTIFACTS``."""
    if os.environ.get("SETTLEMENT_ARTIFACTS"):
        return "SETTLEMENT_ARTIFACTS points at a directory without it"
    if (Path(__file__).parents[1] / "contracts" / "build.js").is_file():
        return "run `make contracts` (it compiles contracts/src with solc-js from npm)"
    return (
        "this installation lacks its compiled contracts; reinstall the package "
        "(`pip install --force-reinstall settlement-widgets`)"
    )


def _signature(item: dict[str, Any]) -> str:
    def typ(inp: dict[str, Any]) -> str:
        t: str = inp["type"]
        if t.startswith("tuple"):
            return "(" + ",".join(typ(c) for c in inp["components"]) + ")" + t[len("tuple") :]
        return t

    return f"{item['name']}({','.join(typ(i) for i in item.get('inputs', []))})"


def error_selectors(abi: list[dict[str, Any]]) -> dict[bytes, tuple[str, list[str]]]:
    """Map of 4-byte selector -> (error name, ABI input types) for every error in ``abi``."""
    from eth_hash.auto import keccak

    out: dict[bytes, tuple[str, list[str]]] = {}
    for item in abi:
        if item.get("type") == "error":
            sig = _signature(item)
            types = sig[sig.index("(") + 1 : -1]
            out[keccak(sig.encode())[:4]] = (item["name"], _split_types(types))
    return out


def _split_types(types: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in types:
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        depth += ch == "("
        depth -= ch == ")"
        cur += ch
    if cur:
        parts.append(cur)
    return parts


_BUILTIN = {
    bytes.fromhex("08c379a0"): ("Error", ["string"]),
    bytes.fromhex("4e487b71"): ("Panic", ["uint256"]),
}


def decode_revert(
    data: bytes | str | None, *abis: list[dict[str, Any]]
) -> tuple[str | None, tuple[Any, ...]]:
    """Decode revert ``data`` into ``(error name, args)`` using the errors of ``abis``.

    Returns ``(None, ())`` when there is no data, and ``("0x<selector>", ())`` for an
    error no ABI declares.
    """
    if data is None:
        return None, ()
    if isinstance(data, str):
        text = data[2:] if data.startswith("0x") else data
        try:
            data = bytes.fromhex(text)
        except ValueError:
            return None, ()
    if len(data) < 4:
        return None, ()
    table = dict(_BUILTIN)
    for abi in abis:
        table.update(error_selectors(abi))
    found = table.get(data[:4])
    if found is None:
        return "0x" + data[:4].hex(), ()
    name, types = found
    from eth_abi import decode

    try:
        args = tuple(decode(types, data[4:])) if types else ()
    except Exception:
        args = ()
    return name, args
