"""Every module path the channel layout moved still imports, warns, and gives the same objects.

The channel method's modules moved to ``settlement_widgets/channel/<version>/<layer>/``; the
old paths stay for one release as thin modules. Each is imported afresh here (out of
``sys.modules``), must raise a :class:`DeprecationWarning` naming the new path, and every
public name must be the very object of the new module; private names are forwarded too.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
import warnings

import pytest

#: old module path -> new module path (under ``settlement_widgets.``)
_MOVED: dict[str, str] = {
    "channel._base": "channel.v0_5.client._base",
    "channel.chain_events": "channel.v0_5.client.chain_events",
    "channel.config": "channel.v0_5.client.config",
    "channel.connection": "channel.v0_5.client.connection",
    "channel.custody": "channel.v0_5.chain.custody",
    "channel.custody_events": "channel.v0_5.chain.custody_events",
    "channel.lifecycle": "channel.v0_5.core.lifecycle",
    "channel.notifications": "channel.v0_5.client.notifications",
    "channel.operations": "channel.v0_5.client.operations",
    "channel.plans": "channel.v0_5.core.plans",
    "channel.provider": "channel.v0_5.client.provider",
    "channel.reading": "channel.v0_5.client.reading",
    "channel.records": "channel.v0_5.core.records",
    "channel.relay_auth": "channel.v0_5.client.relay_auth",
    "channel.relay_client": "channel.v0_5.client.relay_client",
    "channel.relay_connection": "channel.v0_5.client.relay_connection",
    "channel.replies": "channel.v0_5.core.replies",
    "channel.steps": "channel.v0_5.client.steps",
    "channel.store": "channel.v0_5.client.store",
    "channel.store_history": "channel.v0_5.client.store_history",
    "channel.store_ops": "channel.v0_5.client.store_ops",
    "channel.store_rows": "channel.v0_5.client.store_rows",
    "channel.store_schema": "channel.v0_5.client.store_schema",
    "channel.transactions": "channel.v0_5.client.transactions",
    "channel.transfers": "channel.v0_5.client.transfers",
    "channel.write_group": "channel.v0_5.client.write_group",
    "channel_v1": "channel.v1",
    "channel_v1.app_sessions": "channel.v1.client.app_sessions",
    "channel_v1.detect": "channel.detect",
    "channel_v1.hub": "channel.v1.chain.hub",
    "channel_v1.hub_errors": "channel.v1.chain.hub_errors",
    "channel_v1.nonces": "channel.v1.client.nonces",
    "channel_v1.provider": "channel.v1.client.provider",
    "channel_v1.rpc_client": "channel.v1.client.rpc_client",
    "channel_v1.store": "channel.v1.client.store",
    "erc7824": "channel.v0_5.core",
    "erc7824._address_cache": "channel.v0_5.core._address_cache",
    "erc7824.abi": "channel.v0_5.core.abi",
    "erc7824.amounts": "channel.v0_5.core.amounts",
    "erc7824.auth": "channel.v0_5.core.auth",
    "erc7824.eip712": "channel.v0_5.core.eip712",
    "erc7824.ids": "channel.v0_5.core.ids",
    "erc7824.keccak": "channel.v0_5.core.keccak",
    "erc7824.messages": "channel.v0_5.core.messages",
    "erc7824.protocol": "channel.frames",
    "erc7824.resize": "channel.v0_5.core.resize",
    "erc7824.rpc": "channel.v0_5.core.rpc",
    "erc7824.signing": "channel.v0_5.core.signing",
    "erc7824.types": "channel.v0_5.core.types",
    "erc7824.wire_json": "channel.v0_5.core.wire_json",
    "nitrolite_v1": "channel.v1.core",
    "nitrolite_v1.abi": "channel.v1.core.abi",
    "nitrolite_v1.app_sessions": "channel.v1.core.app_sessions",
    "nitrolite_v1.calldata": "channel.v1.core.calldata",
    "nitrolite_v1.client_assets": "channel.v1.core.client_assets",
    "nitrolite_v1.client_calls": "channel.v1.core.client_calls",
    "nitrolite_v1.client_queries": "channel.v1.core.client_queries",
    "nitrolite_v1.client_rpc": "channel.v1.core.client_rpc",
    "nitrolite_v1.client_signers": "channel.v1.core.client_signers",
    "nitrolite_v1.client_vectors": "channel.v1.core.client_vectors",
    "nitrolite_v1.decimals": "channel.v1.core.decimals",
    "nitrolite_v1.ids": "channel.v1.core.ids",
    "nitrolite_v1.lifecycle": "channel.v1.core.lifecycle",
    "nitrolite_v1.rate_limit": "channel.v1.core.rate_limit",
    "nitrolite_v1.responses": "channel.v1.core.responses",
    "nitrolite_v1.rpc_shapes": "channel.v1.core.rpc_shapes",
    "nitrolite_v1.state": "channel.v1.core.state",
    "nitrolite_v1.transitions": "channel.v1.core.transitions",
    "nitrolite_v1.vector_case": "channel.v1.core.vector_case",
    "nitrolite_v1.vectors": "channel.v1.core.vectors",
    "nitrolite_v1.wire": "channel.v1.core.wire",
    "sandbox.deploy_v1": "channel.v1.node.deploy",
    "sandbox.nitronode": "channel.v1.node",
    "sandbox.nitronode.backing": "channel.v1.node.backing",
    "sandbox.nitronode.chain_view": "channel.v1.node.chain_view",
    "sandbox.nitronode.config": "channel.v1.node.config",
    "sandbox.nitronode.handlers": "channel.v1.node.handlers",
    "sandbox.nitronode.ledger": "channel.v1.node.ledger",
    "sandbox.nitronode.process": "channel.v1.node.process",
    "sandbox.nitronode.server": "channel.v1.node.server",
    "sandbox.nitronode.signatures": "channel.v1.node.signatures",
    "sandbox.nitronode.validators": "channel.v1.node.validators",
    "sandbox.relay": "channel.v0_5.node",
    "sandbox.relay.auth": "channel.v0_5.node.auth",
    "sandbox.relay.base": "channel.v0_5.node.base",
    "sandbox.relay.chain_events": "channel.v0_5.node.chain_events",
    "sandbox.relay.channels": "channel.v0_5.node.channels",
    "sandbox.relay.clock": "channel.v0_5.node.clock",
    "sandbox.relay.committer": "channel.node_base.committer",
    "sandbox.relay.config": "channel.v0_5.node.config",
    "sandbox.relay.jwt": "channel.v0_5.node.jwt",
    "sandbox.relay.ledger": "channel.v0_5.node.ledger",
    "sandbox.relay.process": "channel.v0_5.node.process",
    "sandbox.relay.server": "channel.v0_5.node.server",
    "sandbox.relay.service": "channel.v0_5.node.service",
    "sandbox.relay.signer_pool": "channel.v0_5.node.signer_pool",
    "sandbox.relay.transfers": "channel.v0_5.node.transfers",
    "sandbox.relay.watcher": "channel.v0_5.node.watcher",
    "sandbox.relay.wire": "channel.v0_5.node.wire",
}
MOVED = {f"settlement_widgets.{old}": f"settlement_widgets.{new}" for old, new in _MOVED.items()}


#: names an old module gives that now live elsewhere: old path -> {name: new module}
EXTRA: dict[str, dict[str, str]] = {
    "settlement_widgets.channel_v1.detect": {
        "open_channel_provider": "settlement_widgets.channel.factory"
    },
}


def _fresh_import(name: str) -> tuple[object, list[warnings.WarningMessage]]:
    for loaded in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
        if loaded not in MOVED.values():
            del sys.modules[loaded]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        # an import statement compiled as this file: the warning must point at it
        exec(compile(f"import {name}", __file__, "exec"), {})
    return sys.modules[name], caught


@pytest.mark.parametrize("old", sorted(MOVED))
def test_old_path_warns_and_gives_the_same_objects(old: str) -> None:
    new = importlib.import_module(MOVED[old])
    module, caught = _fresh_import(old)
    deprecations = [w for w in caught if issubclass(w.category, DeprecationWarning)]
    assert any(
        MOVED[old] in str(w.message) and old.rsplit(".", 1)[-1] in str(w.message)
        for w in deprecations
    ), [str(w.message) for w in caught]
    assert all(w.filename == __file__ for w in deprecations), [w.filename for w in deprecations]
    names = list(getattr(new, "__all__", []))
    extra = EXTRA.get(old, {})
    assert sorted(names + list(extra)) == sorted(getattr(module, "__all__", [])), old
    for name in names:
        assert getattr(module, name) is getattr(new, name), f"{old}.{name}"
    for name, home in extra.items():
        assert getattr(module, name) is getattr(importlib.import_module(home), name)
    private = [n for n in vars(new) if n.startswith("_") and not n.startswith("__")]
    for name in private[:3]:
        assert getattr(module, name) is getattr(new, name), f"{old}.{name}"


def test_every_old_module_file_is_listed() -> None:
    """A moved module without an old path here would go unchecked."""
    from pathlib import Path

    import settlement_widgets

    root = Path(settlement_widgets.__file__).parent
    shims = set()
    for path in root.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        if "from settlement_widgets._moved import moved" in text:
            rel = path.relative_to(root.parent).with_suffix("")
            parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
            shims.add(".".join(parts))
    assert shims == set(MOVED)


def test_public_names_of_kept_packages_do_not_warn() -> None:
    """``settlement_widgets.channel`` stays: its exports (and the top-level ones) are quiet,
    in a fresh interpreter where no old path was imported before."""
    code = """
import warnings
warnings.simplefilter("error")
from settlement_widgets import ChannelProvider, ChannelProviderV1, open_channel_provider
from settlement_widgets.channel import ChannelClient, ChannelConfig, CustodyClient, StepEvent
from settlement_widgets.channel.v1 import ChannelHubClient
assert ChannelProvider.__module__ == "settlement_widgets.channel.v0_5.client.provider"
assert ChannelProviderV1.__module__ == "settlement_widgets.channel.v1.client.provider"
assert open_channel_provider.__module__ == "settlement_widgets.channel.factory"
assert ChannelConfig.__module__ == "settlement_widgets.channel.v0_5.client.config"
assert CustodyClient.__module__ == "settlement_widgets.channel.v0_5.chain.custody"
assert StepEvent.__module__ == "settlement_widgets.channel.models"
assert ChannelHubClient.__module__ == "settlement_widgets.channel.v1.chain.hub"
import sys
old = [m for m in sys.modules if m.startswith(("settlement_widgets.channel_v1",
       "settlement_widgets.erc7824", "settlement_widgets.nitrolite_v1",
       "settlement_widgets.sandbox.relay", "settlement_widgets.sandbox.nitronode"))]
assert not old, old
"""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
