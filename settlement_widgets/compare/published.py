"""The last comparison published for a network: one JSON file per network, under the
settlement server's home (``<home>/comparisons/<network>.json``).

A kernel measures; the Jupyter server serves (``GET /api/settlement`` carries it as
``comparison``). They are separate processes, so the file is the hand-over: it is written
whole or not at all (:func:`~settlement_widgets.atomic_file.write_atomic`, a rename), after
the comparison was parsed strictly (:func:`~.wire.parse_comparison`), so the server only
ever finds a complete, valid comparison of the network the file is named after. What is
written is the parsed view's canonical JSON, never the caller's bytes.

Which home: a kernel's session has a private ``SETTLEMENT_HOME`` (its stores), so the Jupyter
server exports its own as ``SETTLEMENT_SERVER_HOME`` to the kernels it starts
(:data:`SERVER_HOME_ENV`, set by the server extension); a publication goes there, else to
``SETTLEMENT_HOME`` (a script, or the server's own process).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Final

from ..atomic_file import write_atomic
from ..errors import InvalidNetworkError, StorageError
from .wire import ComparisonView, parse_comparison, strict_loads

__all__ = [
    "COMPARISONS_DIR",
    "SERVER_HOME_ENV",
    "comparison_path",
    "publish_comparison",
    "read_published",
    "server_home",
]

#: the folder under the settlement home that holds the published comparisons
COMPARISONS_DIR: Final = "comparisons"
#: where the Jupyter server that started this process keeps its settlement home
SERVER_HOME_ENV: Final = "SETTLEMENT_SERVER_HOME"


def server_home() -> Path:
    """The settlement home of the Jupyter server this process serves (``$SETTLEMENT_SERVER_HOME``,
    exported to its kernels), else this process's own
    (:func:`~settlement_widgets.networks.settlement_home`)."""
    from ..networks import settlement_home

    env = os.environ.get(SERVER_HOME_ENV)
    return Path(env) if env else settlement_home()


def _network_name(network: Any) -> str:
    """A network's name (a :class:`~settlement_widgets.networks.Network` or its name), only
    one of the known profiles' names: it becomes a file name."""
    from ..networks import NETWORK_NAMES

    name = getattr(network, "name", network)
    if not isinstance(name, str) or name not in NETWORK_NAMES:
        raise InvalidNetworkError(
            f"network must be one of {', '.join(NETWORK_NAMES)} (or a Network), got {network!r}"
        )
    return name


def comparison_path(network: Any, home: os.PathLike[str] | str | None = None) -> Path:
    """Where the comparison of ``network`` is published: ``<home>/comparisons/<name>.json``,
    ``home`` defaulting to :func:`server_home` (the Jupyter server's, which serves it)."""
    root = Path(home) if home is not None else server_home()
    return root / COMPARISONS_DIR / f"{_network_name(network)}.json"


def publish_comparison(
    comparison_json: Any, network: Any, *, home: os.PathLike[str] | str | None = None
) -> ComparisonView:
    """Publish a comparison for ``network``: the server's next ``GET /api/settlement`` carries
    it. ``comparison_json`` is anything :func:`~.wire.parse_comparison` reads (a
    ``Comparison``, its ``to_json()``, JSON text). Raises
    :class:`~settlement_widgets.errors.SettlementValueError` for a malformed comparison and
    :class:`~settlement_widgets.errors.InvalidNetworkError` when it was measured on another
    network; returns the parsed comparison once the file is in place."""
    name = _network_name(network)
    view = parse_comparison(comparison_json)
    if view.network != name:
        raise InvalidNetworkError(
            f"this comparison was measured on {view.network!r}; it cannot be published for {name!r}"
        )
    path = comparison_path(name, home)
    try:
        write_atomic(path, json.dumps(view.to_json(), separators=(",", ":")))
    except OSError as exc:
        raise StorageError(f"could not write the comparison to {path}: {exc}") from exc
    return view


def read_published(
    network: Any, *, home: os.PathLike[str] | str | None = None
) -> ComparisonView | None:
    """The comparison last published for ``network``, or None when there is none. A file
    that does not parse (edited by hand, another version) raises
    :class:`~settlement_widgets.errors.SettlementValueError` saying so; one of another
    network raises :class:`~settlement_widgets.errors.InvalidNetworkError`."""
    name = _network_name(network)
    path = comparison_path(name, home)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StorageError(f"could not read the published comparison {path}: {exc}") from exc
    view = parse_comparison(strict_loads(raw))
    if view.network != name:
        raise InvalidNetworkError(f"{path} holds a comparison of {view.network!r}, not {name!r}")
    return view
