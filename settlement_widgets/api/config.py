"""Traitlets configuration of the ``/api/settlement`` endpoint.

Set it like any Jupyter option, e.g. in ``jupyter_server_config.py``::

    c.SettlementConfig.network = "local"
    c.SettlementConfig.faucet_timeout = 5.0

or with ``SETTLEMENT_API_NETWORK=local`` in the server's environment,
or on the command line (``--SettlementConfig.network=local``); the standalone server maps its
``--network`` flag onto the same trait.
"""

from __future__ import annotations

import os
from typing import Any

from traitlets import Bool, Enum, Float, Int, TraitError, Unicode, default, validate
from traitlets.config import Configurable

from ..networks import NETWORK_NAMES

__all__ = ["SettlementConfig"]


class SettlementConfig(Configurable):
    """Options of the settlement endpoint (one instance per server)."""

    network = Enum(
        list(NETWORK_NAMES),
        default_value="sepolia",
        help=(
            "Network whose configuration, faucet and proofs the endpoint serves "
            "(default: $SETTLEMENT_API_NETWORK, else sepolia)."
        ),
    ).tag(config=True)

    @default("network")
    def _default_network(self) -> str:
        # `make lab` and binder/start export SETTLEMENT_API_NETWORK=local so the endpoint
        # inside JupyterLab describes the sandbox the notebooks use; plain installs get sepolia.
        value = os.environ.get("SETTLEMENT_API_NETWORK", "sepolia").strip().lower()
        return value if value in NETWORK_NAMES else "sepolia"

    shared_sandbox = Bool(
        False,
        help=(
            "On the local network, own one sandbox for this server: adopt the running one whose "
            "profile is in $SETTLEMENT_HOME, else start it; kernels, /api/settlement and the "
            "explorer at {base_url}settlement/explorer share it "
            "(default: $SETTLEMENT_SHARED_SANDBOX=1, set by `make lab` and binder/start)."
        ),
    ).tag(config=True)

    @default("shared_sandbox")
    def _default_shared_sandbox(self) -> bool:
        return os.environ.get("SETTLEMENT_SHARED_SANDBOX", "").strip().lower() in ("1", "true")

    rpc_url = Unicode(
        None,
        allow_none=True,
        help="JSON-RPC URL used to read v4 ownership; default: the network's (SEPOLIA_RPC_URL).",
    ).tag(config=True)

    faucet_timeout = Float(10.0, help="Seconds to wait for the faucet.").tag(config=True)

    faucet_rate_limit = Int(5, help="Faucet requests allowed per address per window.").tag(
        config=True
    )

    faucet_client_rate_limit = Int(
        20,
        help="Faucet requests allowed per client (remote address) per window, whatever "
        "addresses it asks for.",
    ).tag(config=True)

    faucet_rate_window = Float(60.0, help="Length of the faucet rate-limit window, s.").tag(
        config=True
    )

    rpc_timeout = Float(5.0, help="Seconds to wait for the chain when reading ownership.").tag(
        config=True
    )

    proofs_path = Unicode(
        None, allow_none=True, help="Proof log (SQLite); default $SETTLEMENT_HOME/proofs.sqlite."
    ).tag(config=True)

    @validate("faucet_timeout", "faucet_rate_window", "rpc_timeout")
    def _positive_seconds(self, proposal: dict[str, Any]) -> float:
        value = float(proposal["value"])
        if not value > 0:
            raise TraitError(f"{proposal['trait'].name} must be positive, got {value}")
        return value

    @validate("faucet_rate_limit", "faucet_client_rate_limit")
    def _positive_limit(self, proposal: dict[str, Any]) -> int:
        value = int(proposal["value"])
        if value < 1:
            raise TraitError(f"{proposal['trait'].name} must be at least 1, got {value}")
        return value
