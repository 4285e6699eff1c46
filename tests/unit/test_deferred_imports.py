"""py_ecc's pairing modules load when a pairing is computed, not when the EVM stack is imported
(settlement_widgets._deferred_imports): the stand-in forwards, loads once, then *is* the real
module; the EVM's pairing precompile still answers right; SETTLEMENT_EAGER_IMPORTS=1 opts out.

The import-time checks run in fresh interpreters: this one has imported py_ecc long ago."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from settlement_widgets import _deferred_imports
from settlement_widgets._deferred_imports import DEFERRED_MODULES, DeferredModule

_PROBE = """
import json, sys
import settlement_widgets
import eth_tester, web3, eth_account  # the EVM stack a sandbox imports
state = {name: type(sys.modules[name]).__name__ + (":deferred" if getattr(sys.modules[name],
         "deferred", False) else "") for name in NAMES}
print(json.dumps(state))
"""


def _run(code: str, **env: str) -> str:
    out = subprocess.run(
        [sys.executable, "-c", f"NAMES = {list(DEFERRED_MODULES)!r}\n" + code],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **env},
        check=True,
    )
    return out.stdout.strip().splitlines()[-1]


def test_importing_the_evm_stack_computes_no_pairing_tables() -> None:
    state = json.loads(_run(_PROBE, SETTLEMENT_EAGER_IMPORTS="0"))
    assert state == dict.fromkeys(DEFERRED_MODULES, "DeferredModule:deferred")


def test_eager_imports_leave_the_modules_alone() -> None:
    state = json.loads(_run(_PROBE, SETTLEMENT_EAGER_IMPORTS="1"))
    assert state == dict.fromkeys(DEFERRED_MODULES, "module")


def test_the_evm_pairing_precompile_loads_the_real_module_and_is_right() -> None:
    """ecPairing (0x08) of e(G1, G2) * e(-G1, G2): 1, computed by the real py_ecc."""
    code = textwrap.dedent(
        """
        import asyncio, sys
        from settlement_widgets.sandbox.chain import InProcessChain
        from py_ecc.optimized_bn128 import G1, G2, field_modulus, normalize

        def word(n):
            return int(n).to_bytes(32, "big")

        x1, y1 = (c.n for c in normalize(G1))
        x2, y2 = normalize(G2)
        g2 = word(x2.coeffs[1]) + word(x2.coeffs[0]) + word(y2.coeffs[1]) + word(y2.coeffs[0])
        data = word(x1) + word(y1) + g2 + word(x1) + word(field_modulus - y1) + g2
        module = sys.modules["py_ecc.optimized_bn128.optimized_pairing"]
        before = module.deferred

        async def main():
            chain = InProcessChain.create()
            to = "0x0000000000000000000000000000000000000008"
            return await chain.w3.eth.call({"to": to, "data": "0x" + data.hex()})

        result = asyncio.run(main())
        real = sys.modules["py_ecc.optimized_bn128.optimized_pairing"]
        print(before, module.deferred, real is module, int.from_bytes(result, "big"),
              module.pairing.__code__.co_filename.endswith("optimized_pairing.py"))
        """
    )
    assert _run(code, SETTLEMENT_EAGER_IMPORTS="0") == "True False True 1 True"


@pytest.fixture
def fake_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A module ``fake_pairing_<n>`` on sys.path, registered as deferred, that counts how
    often its body runs."""
    name = f"fake_pairing_{os.getpid()}_{len(sys.modules)}"
    (tmp_path / f"{name}.py").write_text(
        textwrap.dedent(
            """
            import builtins
            builtins.fake_runs = getattr(builtins, "fake_runs", 0) + 1
            TABLE = [i * i for i in range(10)]
            def pairing(a, b):
                return TABLE[a] + b
            def final_exponentiate(x):
                return -x
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(DEFERRED_MODULES, name, ("final_exponentiate", "pairing"))
    monkeypatch.delenv("SETTLEMENT_EAGER_IMPORTS", raising=False)
    assert _deferred_imports.install() and _deferred_imports.installed()
    import builtins

    monkeypatch.setattr(builtins, "fake_runs", 0, raising=False)
    yield name
    sys.modules.pop(name, None)


def test_the_stand_in_forwards_loads_once_and_becomes_the_module(fake_module: str) -> None:
    import builtins
    import importlib

    module = importlib.import_module(fake_module)
    assert isinstance(module, DeferredModule) and module.deferred
    assert not hasattr(module, "__path__") and module.deferred  # the import system's probe
    namespace: dict[str, object] = {}
    exec(f"from {fake_module} import pairing, final_exponentiate", namespace)
    assert module.deferred and builtins.fake_runs == 0  # type: ignore[attr-defined]
    pairing = namespace["pairing"]
    assert callable(pairing) and pairing(3, 1) == 10  # forwarded: loads the real code
    assert not module.deferred and builtins.fake_runs == 1  # type: ignore[attr-defined]
    assert module.TABLE[4] == 16 and module.pairing(2, 0) == 4
    assert namespace["final_exponentiate"](5) == -5  # type: ignore[operator]
    assert builtins.fake_runs == 1  # type: ignore[attr-defined]
    assert sys.modules[fake_module] is module


def test_any_other_attribute_loads_it_too(fake_module: str) -> None:
    import importlib

    module = importlib.import_module(fake_module)
    assert module.deferred
    assert [i * i for i in range(10)] == module.TABLE and not module.deferred
    with pytest.raises(AttributeError):
        _ = module.nothing_here


def test_a_reload_after_loading_runs_the_real_code_again(fake_module: str) -> None:
    import builtins
    import importlib

    module = importlib.import_module(fake_module)
    assert module.pairing(1, 1) == 2 and builtins.fake_runs == 1  # type: ignore[attr-defined]
    assert importlib.reload(module) is module
    assert builtins.fake_runs == 2 and module.pairing(3, 0) == 9  # type: ignore[attr-defined]
