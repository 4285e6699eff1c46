"""Defer py_ecc's pairing modules until a pairing is computed.

Importing the EVM stack pulls in py_ecc's pairing modules, which compute tables at import
time: ``py_ecc.optimized_bls12_381.optimized_pairing`` (twelve FQ12 powers, ~130 ms warm),
``py_ecc.bls12_381.bls12_381_pairing`` (~65 ms) and ``py_ecc.optimized_bn128.optimized_pairing``
(~20 ms), seconds on a cold machine. Who imports them: py-evm's precompiles
(``eth.precompiles``: the BN254 ecPairing at 0x08 and the BLS12-381 ones at 0x0b..0x11) and
eth-keyfile (for BLS keystores; eth-account imports it). The sandbox and the notebooks never
compute a pairing unless a contract calls those precompiles, so the work is wasted.

Every importer takes just ``pairing`` and ``final_exponentiate`` from them (functions), so
:func:`install` puts a finder first on ``sys.meta_path`` that answers for exactly those three
modules with a stand-in module holding two forwarding functions; on the first call of either,
or the first access to any other attribute, the real module's code runs *in that same module
object* (as ``importlib.util.LazyLoader`` does) and from then on everything is the real thing.
Nothing of py_ecc or py-evm is patched: if a later version imports other names, the stand-in
just loads at import time, as without it.

``SETTLEMENT_EAGER_IMPORTS=1`` leaves imports alone (:func:`install` does nothing).
"""

from __future__ import annotations

import os
import sys
from _thread import RLock
from collections.abc import Callable, Sequence
from importlib.machinery import ModuleSpec, PathFinder
from types import ModuleType
from typing import Any

__all__ = ["DEFERRED_MODULES", "DeferredModule", "install", "installed"]

#: module -> the names its importers take at import time (all functions)
DEFERRED_MODULES: dict[str, tuple[str, ...]] = {
    "py_ecc.optimized_bls12_381.optimized_pairing": ("final_exponentiate", "pairing"),
    "py_ecc.bls12_381.bls12_381_pairing": ("final_exponentiate", "pairing"),
    "py_ecc.optimized_bn128.optimized_pairing": ("final_exponentiate", "pairing"),
}
_ENV = "SETTLEMENT_EAGER_IMPORTS"


class DeferredModule(ModuleType):
    """A module whose code runs on first use (see the module doc)."""

    _deferred_spec: ModuleSpec | None
    _deferred_lock: RLock

    def __getattr__(self, name: str) -> Any:  # only called for names not (yet) defined
        # the import system probes ``__path__`` (a package?) right after importing: a plain
        # module has none, and asking must not load it
        if name == "__path__" or name.startswith("_deferred_"):
            raise AttributeError(name)
        self.load()
        try:
            return self.__dict__[name]
        except KeyError:
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}") from None

    def load(self) -> DeferredModule:
        """Run the real module's code here, once; returns the (now real) module."""
        with self._deferred_lock:
            spec = self.__dict__.get("_deferred_spec")
            if spec is not None:
                self._deferred_spec = None
                try:
                    assert spec.loader is not None
                    spec.loader.exec_module(self)
                except BaseException:
                    self._deferred_spec = spec  # a later access tries again
                    raise
        return self

    @property
    def deferred(self) -> bool:
        """True until the real code has run."""
        return self.__dict__.get("_deferred_spec") is not None


class _Loader:
    def __init__(self, real: ModuleSpec, names: Sequence[str]) -> None:
        self._real = real
        self._names = tuple(names)

    def create_module(self, spec: ModuleSpec) -> ModuleType:
        module = DeferredModule(spec.name)
        module._deferred_spec = self._real
        module._deferred_lock = RLock()  # the C lock: no threading import
        return module

    def exec_module(self, module: ModuleType) -> None:
        assert isinstance(module, DeferredModule)
        if not module.deferred:  # importlib.reload of a loaded module: run the real code again
            assert self._real.loader is not None
            self._real.loader.exec_module(module)
            return
        if self._real.origin is not None:
            module.__file__ = self._real.origin
        for name in self._names:
            module.__dict__[name] = _forwarder(module, name)


def _forwarder(module: DeferredModule, name: str) -> Callable[..., Any]:
    def forward(*args: Any, **kwargs: Any) -> Any:
        return module.load().__dict__[name](*args, **kwargs)

    forward.__name__ = forward.__qualname__ = name
    forward.__module__ = module.__name__
    forward.__doc__ = f"{module.__name__}.{name}, loaded on first call."
    return forward


class _Finder:
    """Answers for :data:`DEFERRED_MODULES` only; every other import goes on as usual."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        names = DEFERRED_MODULES.get(fullname)
        if names is None:
            return None
        real = PathFinder.find_spec(fullname, path)
        if real is None or real.loader is None or not hasattr(real.loader, "exec_module"):
            return None
        spec = ModuleSpec(fullname, _Loader(real, names), origin=real.origin)  # type: ignore[arg-type]
        spec.has_location = False
        return spec

    def invalidate_caches(self) -> None:
        return None


_FINDER = _Finder()


def install() -> bool:
    """Put the finder first on ``sys.meta_path`` (once); False when ``SETTLEMENT_EAGER_IMPORTS``
    is set. Modules already imported stay as they are."""
    if os.environ.get(_ENV, "").strip() not in ("", "0"):
        return False
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
    return True


def installed() -> bool:
    """Whether the finder is on ``sys.meta_path``."""
    return _FINDER in sys.meta_path
