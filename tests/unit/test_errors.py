"""One exception tree: package code never raises bare ValueError/TypeError/Exception."""

from __future__ import annotations

import ast
from pathlib import Path

import settlement_widgets
from settlement_widgets import errors

PACKAGE = Path(settlement_widgets.__file__).parent
FORBIDDEN = {"ValueError", "TypeError", "Exception", "RuntimeError", "KeyError"}


def _bare_raises(source: str) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Raise) and node.exc is not None:
            exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if isinstance(exc, ast.Name) and exc.id in FORBIDDEN:
                found.append((node.lineno, exc.id))
    return found


def test_detector_catches_bare_raises() -> None:
    assert _bare_raises("raise ValueError('x')\nraise TypeError\n") == [
        (1, "ValueError"),
        (2, "TypeError"),
    ]
    assert _bare_raises("raise SettlementValueError('x')") == []


def test_package_raises_only_tree_errors() -> None:
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for line, name in _bare_raises(path.read_text()):
            # __reduce__ refusing pickling is the documented TypeError contract of pickle
            if (
                name == "TypeError"
                and "cannot be pickled" in path.read_text().splitlines()[line - 1]
            ):
                continue
            offenders.append(f"{path.relative_to(PACKAGE)}:{line} raises bare {name}")
    assert offenders == []


def test_tree_shape() -> None:
    for name in errors.__all__:
        cls = getattr(errors, name)
        assert issubclass(cls, errors.SettlementError), name
    assert issubclass(errors.InvalidAddressError, ValueError)
    assert issubclass(errors.SettlementTimeoutError, TimeoutError)
    err = errors.TransactionFailedError("x", error_name="InvalidState", error_args=(1,))
    assert err.error_name == "InvalidState" and err.error_args == (1,)
