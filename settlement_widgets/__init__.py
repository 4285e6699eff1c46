"""settlement_widgets: pick one of three settlement methods for a cross-chain intent and run it
for real from Jupyter (LI.FI routes, an ERC-7824 state channel, a Uniswap v4 policy hook).

The public names below are imported lazily (PEP 562), so ``import settlement_widgets`` stays
fast and pulls in web3, pandas or ipywidgets only when a name that needs them is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import _deferred_imports
from ._lazy import lazy_exports

# py_ecc's pairing tables (~0.2 s warm, seconds cold) load when a pairing is computed, not when
# web3 or py-evm is imported (see _deferred_imports)
_deferred_imports.install()

__version__ = "0.1.0"

# name -> submodule that defines it
_EXPORTS: dict[str, str] = {
    # methods and networks
    "SettlementMethod": "methods",
    "SettlementOption": "methods",
    "SETTLEMENT_OPTIONS": "methods",
    "SEPOLIA_CONTRACTS": "methods",
    "settlement_config": "methods",
    "settlement_options": "methods",
    "Network": "networks",
    "SEPOLIA": "networks",
    "get_network": "networks",
    "WalletClient": "wallet",
    "Signer": "signer",
    "BrowserWallet": "widgets.browser_wallet",
    # errors
    "SettlementError": "errors",
    "SettlementValueError": "errors",
    "ConfigurationError": "errors",
    "UnavailableError": "errors",
    "TransactionFailedError": "errors",
    # provider singletons
    "create_sepolia_channel_config": "providers",
    "create_local_channel_config": "providers",
    "init_channel_provider": "providers",
    "get_channel_provider": "providers",
    "reset_channel_provider": "providers",
    "init_v4_provider": "providers",
    "get_v4_provider": "providers",
    "reset_v4_provider": "providers",
    "aggregator_provider": "providers",
    "get_aggregator_provider": "providers",
    # providers
    "ChannelProvider": "channel",
    "ChannelProviderV1": "channel.v1",
    "open_channel_provider": "channel.factory",
    "V4Provider": "v4",
    "AggregatorProvider": "aggregator",
    # widgets
    "SettlementSelector": "widgets",
    "ChannelStatusPanel": "widgets",
    "SettlementDashboard": "dashboard",
    "request_faucet_tokens": "channel",
    "routes_frame": "aggregator",
    "hook_permissions": "v4",
    "sign_intent": "v4",
    "Intent": "v4",
    "PoolKey": "v4",
    # proofs of what this installation settled
    "record_proof": "proofs",
    "list_proofs": "proofs",
    # local sandbox
    "LocalSandbox": "sandbox",
    # which method, when
    "ComparisonIntent": "compare.intent",
    "compare_methods": "compare.run",
}

__all__ = [
    "SEPOLIA",
    "SEPOLIA_CONTRACTS",
    "SETTLEMENT_OPTIONS",
    "AggregatorProvider",
    "BrowserWallet",
    "ChannelProvider",
    "ChannelProviderV1",
    "ChannelStatusPanel",
    "ComparisonIntent",
    "ConfigurationError",
    "Intent",
    "LocalSandbox",
    "Network",
    "PoolKey",
    "SettlementDashboard",
    "SettlementError",
    "SettlementMethod",
    "SettlementOption",
    "SettlementSelector",
    "SettlementValueError",
    "Signer",
    "TransactionFailedError",
    "UnavailableError",
    "V4Provider",
    "WalletClient",
    "__version__",
    "aggregator_provider",
    "compare_methods",
    "create_local_channel_config",
    "create_sepolia_channel_config",
    "get_aggregator_provider",
    "get_channel_provider",
    "get_network",
    "get_v4_provider",
    "hook_permissions",
    "init_channel_provider",
    "init_v4_provider",
    "list_proofs",
    "open_channel_provider",
    "record_proof",
    "request_faucet_tokens",
    "reset_channel_provider",
    "reset_v4_provider",
    "routes_frame",
    "settlement_config",
    "settlement_options",
    "sign_intent",
]


__getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs
    from .aggregator import AggregatorProvider, routes_frame
    from .channel import ChannelProvider, request_faucet_tokens
    from .channel.factory import open_channel_provider
    from .channel.v1 import ChannelProviderV1
    from .compare.intent import ComparisonIntent
    from .compare.run import compare_methods
    from .dashboard import SettlementDashboard
    from .errors import (
        ConfigurationError,
        SettlementError,
        SettlementValueError,
        TransactionFailedError,
        UnavailableError,
    )
    from .methods import (
        SEPOLIA_CONTRACTS,
        SETTLEMENT_OPTIONS,
        SettlementMethod,
        SettlementOption,
        settlement_config,
        settlement_options,
    )
    from .networks import SEPOLIA, Network, get_network
    from .proofs import list_proofs, record_proof
    from .providers import (
        aggregator_provider,
        create_local_channel_config,
        create_sepolia_channel_config,
        get_aggregator_provider,
        get_channel_provider,
        get_v4_provider,
        init_channel_provider,
        init_v4_provider,
        reset_channel_provider,
        reset_v4_provider,
    )
    from .sandbox import LocalSandbox
    from .signer import Signer
    from .v4 import Intent, PoolKey, V4Provider, hook_permissions, sign_intent
    from .wallet import WalletClient
    from .widgets import ChannelStatusPanel, SettlementSelector
    from .widgets.browser_wallet import BrowserWallet


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    """Jupyter server extension entry point: ``/api/settlement`` (settlement_widgets.api)."""
    return [{"module": "settlement_widgets.api.extension"}]
