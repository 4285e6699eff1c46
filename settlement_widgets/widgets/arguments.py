"""Argument handling shared by both widgets: unknown keywords and the default network.

traitlets silently ignores keyword arguments that are not traits, so a typo such as
``SettlementSelector(selcted="channel")`` would quietly show the default. We reject it with a
"did you mean" instead (lonboard's habit).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import ConfigurationError, InvalidNetworkError, UnknownOptionError
from ..networks import SEPOLIA, Network, get_network
from .viewmodels import unknown_option_message

__all__ = ["reject_unknown", "resolve_network"]


def reject_unknown(owner: str, kwargs: Mapping[str, Any], valid: Iterable[str]) -> None:
    """Raise :class:`UnknownOptionError` for the first keyword that is not in ``valid``."""
    valid = list(valid)
    for name in kwargs:
        if name not in valid:
            raise UnknownOptionError(unknown_option_message(name, valid, owner))


def resolve_network(network: Network | str | None) -> Network:
    """``network`` itself, a profile by name, or (None) the configured one.

    None means :func:`~settlement_widgets.networks.get_network` when a profile is available
    and Sepolia otherwise: a widget is a view and must open even when no sandbox runs.
    """
    if isinstance(network, Network):
        return network
    if isinstance(network, str):
        return get_network(network)
    if network is not None:
        raise InvalidNetworkError(
            f"network must be a Network, a network name or None, got {type(network).__name__}"
        )
    try:
        return get_network()
    except ConfigurationError:
        return SEPOLIA
