"""Compute a Nitrolite v1 vector file's outputs with our code, from its inputs alone.

    python -m settlement_widgets.channel.v1.core.vectors compute IN.json OUT.json

``IN.json`` has the reference's layout (``meta`` with the fixed test keys, ``vectors.<group>``
lists of ``{id, description, inputs, outputs?, ...}``); its ``outputs`` may be missing. Every
vector of a group we implement gets ``outputs`` computed by our functions from its ``inputs``
and ``meta``; ``OUT.json`` is the same document with those outputs. A vector of a group we do
not implement yet is written with no ``outputs`` at all (never guessed), it is listed on
stderr, and the command exits with status 3; a vector whose computation fails is written with
``{"error": ...}`` in place of ``outputs`` and the command exits with status 1.

A group function takes ``(inputs, meta)`` or ``(inputs, meta, case)``: ``case`` is the
vector's :class:`.vector_case.VectorCase` (its ``sdk_functions`` and whether
``meta.known_answer_checks`` lists it), from which the function chooses the output shape.
Every output is computed from ``inputs``; ``meta.keys`` are used only where a signature is
asked for.

Each group's function lives with the code it checks (``VECTORS`` in :mod:`.wire`,
:mod:`.decimals`, :mod:`.ids`, :mod:`.transitions`, :mod:`.state`, :mod:`.lifecycle`,
:mod:`.calldata`, :mod:`.app_sessions`, :mod:`.client_calls`); this module only gathers them.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ....errors import SettlementError
from .vector_case import VectorCase, case_of

__all__ = [
    "GROUP_MODULES",
    "ComputeReport",
    "compute_document",
    "compute_vector",
    "groups",
    "main",
]

Compute = Callable[..., dict[str, Any]]
"""``(inputs, meta) -> outputs`` or ``(inputs, meta, case) -> outputs``."""


def _run(
    compute: Compute, inputs: Mapping[str, Any], meta: Mapping[str, Any], case: VectorCase
) -> dict[str, Any]:
    """Call a group function, passing the :class:`VectorCase` to those that take one."""
    if len(inspect.signature(compute).parameters) >= 3:
        return compute(inputs, meta, case)
    return compute(inputs, meta)


def compute_vector(
    compute: Compute, vector: Mapping[str, Any], meta: Mapping[str, Any]
) -> dict[str, Any]:
    """One vector's outputs by the group function ``compute``, from its inputs (and its
    ``sdk_functions`` / known-answer listing, which choose the shape)."""
    return _run(compute, vector["inputs"], meta, case_of(vector, meta))


#: the modules whose ``VECTORS`` tables are gathered, in this order
GROUP_MODULES = (
    "wire",
    "decimals",
    "ids",
    "transitions",
    "state",
    "lifecycle",
    "calldata",
    "app_sessions",
    "client_calls",
)


def groups() -> dict[str, Compute]:
    """Every vector group we compute, to its function."""
    table: dict[str, Compute] = {}
    for name in GROUP_MODULES:
        try:
            module = importlib.import_module(f"{__package__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__package__}.{name}":
                raise  # a module that exists but imports something missing: a bug
            continue
        table.update(getattr(module, "VECTORS", {}))
    return table


class ComputeReport:
    """What :func:`compute_document` did: vectors computed, failed and not implemented."""

    def __init__(self) -> None:
        self.computed = 0
        self.failed: list[str] = []
        self.unsupported: dict[str, int] = {}


def compute_document(
    document: Mapping[str, Any], table: Mapping[str, Compute] | None = None
) -> tuple[dict[str, Any], ComputeReport]:
    """``document`` with every vector's ``outputs`` computed from its ``inputs``."""
    if not isinstance(document, Mapping) or not isinstance(document.get("vectors"), Mapping):
        raise SettlementError("not a vector file: expected an object with 'meta' and 'vectors'")
    table = groups() if table is None else table
    meta = document.get("meta") or {}
    report = ComputeReport()
    out_vectors: dict[str, list[dict[str, Any]]] = {}
    for group, vectors in document["vectors"].items():
        compute = table.get(group)
        written: list[dict[str, Any]] = []
        for vector in vectors:
            entry = {k: v for k, v in vector.items() if k != "outputs"}
            if compute is None:
                report.unsupported[group] = report.unsupported.get(group, 0) + 1
            else:
                try:
                    entry["outputs"] = compute_vector(compute, vector, meta)
                    report.computed += 1
                except Exception as exc:  # reported per vector; the others still run
                    entry["error"] = f"{type(exc).__name__}: {exc}"
                    report.failed.append(str(vector.get("id", group)))
            written.append(entry)
        out_vectors[group] = written
    return {**document, "vectors": out_vectors}, report


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m settlement_widgets.channel.v1.core.vectors")
    sub = p.add_subparsers(dest="command", required=True)
    compute = sub.add_parser("compute", help="compute every vector's outputs from its inputs")
    compute.add_argument("input", type=Path, help="a vector file (outputs may be absent)")
    compute.add_argument("output", type=Path, help="where to write the file with outputs")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        document = json.loads(args.input.read_text(encoding="utf-8"))
        result, report = compute_document(document)
    except (OSError, ValueError, SettlementError) as exc:
        print(f"cannot compute {args.input}: {exc}", file=sys.stderr)
        return 2
    args.output.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"computed {report.computed} vectors into {args.output}", file=sys.stderr)
    for vector_id in report.failed:
        print(f"failed: {vector_id}", file=sys.stderr)
    for group, count in report.unsupported.items():
        print(
            f"not implemented yet: {group} ({count} vectors left without outputs)", file=sys.stderr
        )
    if report.failed:
        return 1
    return 3 if report.unsupported else 0


if __name__ == "__main__":
    sys.exit(main())
