"""The running sandbox's profile file, and links into its explorer.

``LocalSandbox(write_profile=True)`` (and ``python -m settlement_widgets.sandbox``) write the
sandbox's :class:`~settlement_widgets.networks.Network` to
``$SETTLEMENT_HOME/sandbox/profile.json``, where ``networks.get_network("local")`` and the
Jupyter server extension read it; a sandbox removes it on close unless another has replaced
it since.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

from ..networks import Network, settlement_home

__all__ = ["default_profile_path", "explorer_tx", "remove_profile", "write_profile"]


def explorer_tx(network: Network, chain_id: int, tx_hash: str) -> str:
    """The explorer page of ``tx_hash`` on ``chain_id`` for a sandbox profile: the first
    chain's under ``explorer_base``, another chain's under ``{explorer_base}/chain/<id>``."""
    base = network.explorer_base
    if chain_id != network.chain_id:
        base = f"{base}/chain/{chain_id}"
    return f"{base}/tx/{tx_hash}"


def default_profile_path() -> Path:
    return settlement_home() / "sandbox" / "profile.json"


def write_profile(network: Network, path: Path | None = None) -> Path:
    """Write ``network``'s profile where ``networks.get_network("local")`` reads it."""
    from ..atomic_file import write_atomic

    return write_atomic(
        path or default_profile_path(), json.dumps(network.to_json(), indent=2) + "\n"
    )


def remove_profile(path: Path, network: Network | None) -> None:
    """Remove a profile we wrote, unless another sandbox has replaced it since."""
    try:
        current = json.loads(path.read_text())
    except (OSError, ValueError):
        return
    if network is not None and current == network.to_json():
        with contextlib.suppress(OSError):
            path.unlink()
