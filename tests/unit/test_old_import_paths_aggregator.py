"""The aggregator's and v4's old module paths keep working for one release.

Issue 33 laid both methods out by layer (``aggregator/{core,client,node}``, with the route
server, bridges and relayer moved from ``sandbox/crosschain``, and ``v4/{core,chain,client,
deploy}``). Every module path that existed before still imports and hands back the very same
objects, and warns with a :class:`DeprecationWarning` naming the new path. Two old paths
became public packages of the new layout (``aggregator.client``, ``v4.deploy``): they keep
the old module's public names and do not warn. The package itself never imports an old path.
"""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: old path -> (the modules that now define its names, the names the old module exported)
MOVED: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "settlement_widgets.aggregator.frame": (
        ("settlement_widgets.aggregator.core.frame",),
        (
            "ROUTE_COLUMNS",
            "ROUTE_TABLE_COLUMNS",
            "routes_frame",
            "routes_styler",
        ),
    ),
    "settlement_widgets.aggregator.models": (
        (
            "settlement_widgets.aggregator.core.models",
            "settlement_widgets.aggregator.core.parse",
        ),
        (
            "STATUS_VALUES",
            "TERMINAL_STATUSES",
            "Action",
            "Chain",
            "Estimate",
            "FeeCost",
            "GasCost",
            "Quote",
            "Route",
            "Status",
            "Step",
            "Token",
            "TransactionInfo",
            "TransactionRequest",
            "parse_chains",
            "parse_quote",
            "parse_routes",
            "parse_status",
            "parse_step",
            "parse_tokens",
        ),
    ),
    "settlement_widgets.aggregator.params": (
        ("settlement_widgets.aggregator.core.params",),
        (
            "CHAIN_IDS",
            "KNOWN_TOKENS",
            "ORDERS",
            "TransferRequest",
            "resolve_chain",
            "resolve_token",
        ),
    ),
    "settlement_widgets.aggregator.plan": (
        ("settlement_widgets.aggregator.core.plan",),
        (
            "ALLOWANCE_SELECTOR",
            "APPROVE_SELECTOR",
            "ExecutionPlan",
            "PlannedTransaction",
            "allowance_calldata",
            "approve_calldata",
            "plan_step",
        ),
    ),
    "settlement_widgets.aggregator.provider": (
        ("settlement_widgets.aggregator.client.provider",),
        (
            "DEFAULT_INTEGRATOR",
            "AggregatorProvider",
            "ProgressCallback",
        ),
    ),
    "settlement_widgets.aggregator.ranking": (
        ("settlement_widgets.aggregator.core.ranking",),
        (
            "NetValue",
            "best",
            "net_value",
            "rank_routes",
        ),
    ),
    "settlement_widgets.aggregator.source": (
        ("settlement_widgets.aggregator.core.source",),
        (
            "DataSource",
            "data_source",
            "is_loopback_host",
        ),
    ),
    "settlement_widgets.aggregator.valuation": (
        ("settlement_widgets.aggregator.core.valuation",),
        (
            "APPROVAL_GAS",
            "NetValue",
            "approval_cost",
            "value_usd",
        ),
    ),
    "settlement_widgets.sandbox.crosschain": (
        ("settlement_widgets.aggregator.node",),
        (
            "BRIDGES",
            "GAS_LIMITS",
            "GAS_UNITS",
            "SECOND_CHAIN_ID",
            "BridgeRelayer",
            "BridgeSpec",
            "ChainDeployment",
            "CrossChainDeployment",
            "LifiError",
            "PendingTransfer",
            "RouteServer",
        ),
    ),
    "settlement_widgets.sandbox.crosschain.deploy": (
        ("settlement_widgets.aggregator.node.deploy",),
        (
            "BRIDGES",
            "SECOND_CHAIN_ID",
            "WETH_PRICE_USDC",
            "BridgeSpec",
            "ChainDeployment",
            "CrossChainDeployment",
            "chain_key",
            "chain_name",
            "deploy_crosschain",
        ),
    ),
    "settlement_widgets.sandbox.crosschain.relayer": (
        ("settlement_widgets.aggregator.node.relayer",),
        (
            "BridgeRelayer",
            "PendingTransfer",
            "transfer_started_topic",
        ),
    ),
    "settlement_widgets.sandbox.crosschain.routes": (
        ("settlement_widgets.aggregator.node.routes",),
        (
            "DEFAULT_SLIPPAGE",
            "GAS_LIMITS",
            "GAS_UNITS",
            "LifiError",
            "RouteServer",
        ),
    ),
    "settlement_widgets.v4.base": (
        ("settlement_widgets.v4.chain.base",),
        (
            "Tx",
            "V4ProviderBase",
            "check_uint",
        ),
    ),
    "settlement_widgets.v4.create2": (
        ("settlement_widgets.v4.core.create2",),
        (
            "CREATE2_DEPLOYER",
            "SaltSearch",
            "create2_address",
            "mine_hook_salt",
        ),
    ),
    "settlement_widgets.v4.events": (
        ("settlement_widgets.v4.chain.events",),
        (
            "DecodedEvent",
            "decode_logs",
            "event_table",
        ),
    ),
    "settlement_widgets.v4.flags": (
        ("settlement_widgets.v4.core.flags",),
        (
            "ALL_HOOK_MASK",
            "BEFORE_SWAP_FLAG",
            "HOOK_FLAGS",
            "flags_of",
            "has_exact_flags",
            "hook_permissions",
        ),
    ),
    "settlement_widgets.v4.inspection": (
        ("settlement_widgets.v4.client.inspection",),
        (
            "DETERMINISTIC_PROXY_RUNTIME",
            "InspectionMixin",
            "OwnerKind",
            "V4Inspection",
            "classify_owner_code",
        ),
    ),
    "settlement_widgets.v4.intents": (
        ("settlement_widgets.v4.core.intents",),
        (
            "EIP712_DOMAIN_TYPEHASH",
            "INTENT_TYPE",
            "INTENT_TYPEHASH",
            "SEPOLIA_ADAPTER_DOMAIN",
            "UINT256_MAX",
            "Eip712Domain",
            "Intent",
            "domain_separator",
            "intent_digest",
            "intent_id",
            "intent_struct_hash",
            "recover_intent_signer",
            "sign_intent",
        ),
    ),
    "settlement_widgets.v4.own_deployment": (
        ("settlement_widgets.v4.deploy.own",),
        (
            "OwnV4Deployment",
            "deploy_own_v4",
            "own_deployments_path",
            "recorded_own_v4",
        ),
    ),
    "settlement_widgets.v4.policy": (
        ("settlement_widgets.v4.core.policy",),
        (
            "BPS_DENOMINATOR",
            "REASON_CODES",
            "REASON_OK",
            "REASON_POLICY_EXPIRED",
            "REASON_POLICY_MISSING",
            "REASON_SLIPPAGE_EXCEEDED",
            "Policy",
            "effective_min",
            "evaluate_policy",
            "explain_reason",
            "reason_code",
            "reason_name",
        ),
    ),
    "settlement_widgets.v4.policy_registration": (
        ("settlement_widgets.v4.client.policy_registration",),
        ("PolicyRegistrationMixin",),
    ),
    "settlement_widgets.v4.pool": (
        ("settlement_widgets.v4.core.pool",),
        (
            "DYNAMIC_FEE_FLAG",
            "MAX_SQRT_PRICE",
            "MIN_SQRT_PRICE",
            "PoolKey",
            "SwapParams",
            "exact_input_swap",
        ),
    ),
    "settlement_widgets.v4.provider": (
        ("settlement_widgets.v4.client.provider",),
        (
            "DETERMINISTIC_PROXY_RUNTIME",
            "OwnerKind",
            "Tx",
            "V4Inspection",
            "V4Provider",
            "classify_owner_code",
        ),
    ),
    "settlement_widgets.v4.reverts": (
        ("settlement_widgets.v4.chain.reverts",),
        (
            "LIBRARY_ERRORS",
            "REVERT_HINTS",
            "explain_revert",
        ),
    ),
    "settlement_widgets.v4.settlement": (
        ("settlement_widgets.v4.client.settlement",),
        ("SettlementMixin",),
    ),
}

#: old module paths that are now public packages of the new layout (no warning)
BECAME_PACKAGES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "settlement_widgets.aggregator.client": (
        ("settlement_widgets.aggregator.client.lifi",),
        (
            "API_KEY_HEADER",
            "DEFAULT_BASE_URL",
            "LifiClient",
            "RateLimit",
            "RetryEvent",
            "RetryPolicy",
            "backoff_delay",
            "parse_rate_limit",
            "parse_retry_after",
        ),
    ),
    "settlement_widgets.v4.deploy": (
        ("settlement_widgets.v4.deploy.stack",),
        (
            "POOL_FEE",
            "POOL_SQRT_PRICE_X96",
            "POOL_TICK_SPACING",
            "V4Deployment",
            "deploy_v4",
            "seed_pool",
        ),
    ),
}


def _forget(old: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Drop ``old`` (and modules under it) from ``sys.modules`` so importing runs it again;
    monkeypatch puts the originals back. Only old paths are dropped, so the objects they
    re-export stay the ones every other test holds."""
    for name in [m for m in sys.modules if m == old or m.startswith(old + ".")]:
        if name in MOVED or name == old:
            monkeypatch.delitem(sys.modules, name)


def _same_objects(module: object, new: tuple[str, ...], names: tuple[str, ...]) -> None:
    targets = [importlib.import_module(n) for n in new]
    for name in names:
        owners = [t for t in targets if hasattr(t, name)]
        assert owners, f"{name} is in none of {new}"
        assert getattr(module, name) is getattr(owners[0], name), name
    assert set(names) <= set(module.__all__)  # type: ignore[attr-defined]


@pytest.mark.parametrize("old", sorted(MOVED))
def test_old_path_warns_and_gives_the_same_objects(
    old: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    new, names = MOVED[old]
    _forget(old, monkeypatch)
    with pytest.warns(DeprecationWarning, match=f"{old} moved to {new[0]}"):
        module = importlib.import_module(old)
    _same_objects(module, new, names)


@pytest.mark.parametrize("old", sorted(BECAME_PACKAGES))
def test_old_path_now_a_package_keeps_its_names(old: str) -> None:
    new, names = BECAME_PACKAGES[old]
    _same_objects(importlib.import_module(old), new, names)


def test_the_package_and_the_new_paths_never_warn() -> None:
    """Importing every new module and every public package export, in a fresh interpreter,
    raises no 'moved to' warning: nothing in the package imports an old path."""
    new = sorted({n for table in (MOVED, BECAME_PACKAGES) for n in table.values() for n in n[0]})
    code = textwrap.dedent(
        f"""
        import importlib, warnings
        warnings.filterwarnings("error", message=".* moved to settlement_widgets")
        for name in {new!r}:
            importlib.import_module(name)
        import settlement_widgets, settlement_widgets.aggregator, settlement_widgets.v4
        for package in (settlement_widgets, settlement_widgets.aggregator, settlement_widgets.v4):
            for export in package.__all__:
                getattr(package, export)
        import settlement_widgets.sandbox, settlement_widgets.sandbox.local
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def _imported_modules(source: str, package: list[str]) -> set[str]:
    """Absolute names of the modules ``source`` imports from (relative ones resolved)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def test_package_tests_and_notebooks_use_the_new_paths() -> None:
    """No module of the package (but the shims themselves), no test, benchmark or notebook
    code cell imports an old path."""
    shims = {ROOT / Path(*old.split(".")) for old in MOVED}
    offenders = []
    for folder in ("settlement_widgets", "tests", "benchmarks", "binder"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path.with_suffix("") in shims or path.parent in shims:
                continue
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            package = parts if parts[-1] == "__init__" else parts[:-1]
            package = package[:-1] if package and package[-1] == "__init__" else package
            used = _imported_modules(path.read_text(), package) & set(MOVED)
            offenders += [f"{path.relative_to(ROOT)}: {name}" for name in sorted(used)]
    for notebook in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for cell in json.loads(notebook.read_text())["cells"]:
            if cell["cell_type"] == "code":
                source = "\n".join(
                    line
                    for line in "".join(cell["source"]).splitlines()
                    if not line.lstrip().startswith(("%", "!"))
                )
                used = _imported_modules(source, []) & set(MOVED)
                offenders += [f"{notebook.name}: {name}" for name in sorted(used)]
    assert not offenders
