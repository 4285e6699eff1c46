"""The package's shape, read from the source (issue 33): no module over 600 lines, no import
circle, no I/O under a ``core/`` folder, and ``errors.py`` at the bottom of the graph.

The import graph is built from the AST of every module under ``settlement_widgets/`` (the
compiled ``_artifacts/`` excluded), without importing anything. What counts as an import:

* ``import a.b`` is an arrow to ``a.b``; ``from a import b`` is an arrow to the module ``a.b``
  when that is a module of the package, else to ``a`` (a name defined in ``a/__init__.py``).
  Relative imports are resolved against the importing module's package.
* Imports under ``if TYPE_CHECKING:`` never count: they are not executed.
* For **circles**, only imports executed when the module itself is imported count (module
  level, including ``try``/``if`` blocks there, and class bodies). An import inside a function
  runs when the function is called, after every module involved has finished loading, so it
  cannot produce a half-initialised module; it is the standard way to let a lower layer reach
  a higher one on demand (e.g. a factory that picks a provider). Those deferred arrows are
  still checked by the ``core/`` rule below.
* For the **core I/O rule** every import counts, deferred ones included: a ``core/`` module
  must not reach I/O even when one of its functions is called.
* The parent packages that Python initialises on the way to ``a.b.c`` (``a``, ``a.b``) are not
  arrows: the rule is about what a module names, not about what ``__init__`` files re-export.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "settlement_widgets"
PACKAGE_DIR = ROOT / PACKAGE
MAX_LINES = 600

# Modules (stdlib or third party) that open sockets, files of a database, processes or servers.
# A prefix matches itself and its submodules ("http.client" matches "http.client.x").
IO_MODULES = (
    "aiohttp",
    "asyncio",
    "eth_tester",
    "http.client",
    "http.server",
    "httpx",
    "multiprocessing",
    "requests",
    "selectors",
    "socket",
    "socketserver",
    "sqlite3",
    "ssl",
    "subprocess",
    "tornado",
    "urllib.request",
    "urllib3",
    "web3",
    "websockets",
)


@dataclass
class Module:
    name: str
    path: Path
    is_package: bool
    lines: int
    # package modules imported when the module loads, and on top of those, deferred ones
    eager: set[str] = field(default_factory=set)
    deferred: set[str] = field(default_factory=set)
    # outside modules (dotted names as written), eager and deferred
    external: set[str] = field(default_factory=set)


def _module_name(path: Path) -> tuple[str, bool]:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    is_package = parts[-1] == "__init__"
    if is_package:
        parts.pop()
    return ".".join(parts), is_package


def _source_files() -> Iterator[Path]:
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        if "_artifacts" in path.relative_to(PACKAGE_DIR).parts:
            continue
        yield path


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.Module) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Every executed import statement, with whether it runs at import time (True) or only
    when a function is called (False); ``if TYPE_CHECKING:`` bodies are left out."""

    def walk(node: ast.AST, eager: bool) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import | ast.ImportFrom):
                yield child, eager
            elif isinstance(child, ast.If) and _is_type_checking(child.test):
                for other in child.orelse:
                    yield from walk(ast.Module(body=[other], type_ignores=[]), eager)
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                yield from walk(child, False)
            else:
                yield from walk(child, eager)

    yield from walk(tree, True)


def _resolve(module: Module, node: ast.Import | ast.ImportFrom, names: set[str]) -> list[str]:
    """Dotted names the statement imports: package modules where they are modules, else the
    module the name comes from; outside modules as written."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:
        base = module.name.split(".")
        if not module.is_package:
            base.pop()
        base = base[: len(base) - (node.level - 1)]
        source = ".".join([*base, node.module] if node.module else base)
    else:
        source = node.module or ""
    targets = []
    for alias in node.names:
        candidate = f"{source}.{alias.name}"
        targets.append(candidate if candidate in names else source)
    return targets


def _load() -> dict[str, Module]:
    modules: dict[str, Module] = {}
    trees: dict[str, ast.Module] = {}
    for path in _source_files():
        name, is_package = _module_name(path)
        text = path.read_text(encoding="utf-8")
        modules[name] = Module(name, path, is_package, len(text.splitlines()))
        trees[name] = ast.parse(text, filename=str(path))
    names = set(modules)
    for name, module in modules.items():
        for node, eager in _imports(trees[name]):
            for target in _resolve(module, node, names):
                if target == PACKAGE or target.startswith(PACKAGE + "."):
                    if target == name:
                        continue
                    # an unknown package name is an attribute of the nearest known module
                    while target not in names and "." in target:
                        target = target.rsplit(".", 1)[0]
                    (module.eager if eager else module.deferred).add(target)
                else:
                    module.external.add(target)
    return modules


MODULES = _load()


def _rel(module: Module) -> str:
    return str(module.path.relative_to(ROOT))


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each as a sorted
    list; a circle of any length shows up as the component that holds it."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    def visit(start: str) -> None:
        nonlocal counter
        # iterative, so a deep graph cannot hit the recursion limit
        work: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def _is_core(module: Module) -> bool:
    """Inside a package folder named ``core`` (the folder's own ``__init__`` included)."""
    parts = module.name.split(".")
    folders = parts if module.is_package else parts[:-1]
    return "core" in folders[1:]


def _is_io(external: str) -> bool:
    return any(external == banned or external.startswith(banned + ".") for banned in IO_MODULES)


def _io_path(start: str) -> list[str] | None:
    """The shortest chain of imports (eager or deferred) from ``start`` to an I/O module, ending
    with that outside module's name; None when there is none."""
    seen = {start}
    queue: list[list[str]] = [[start]]
    while queue:
        chain = queue.pop(0)
        module = MODULES[chain[-1]]
        io = sorted(name for name in module.external if _is_io(name))
        if io:
            return [*chain, io[0]]
        for target in sorted(module.eager | module.deferred):
            if target not in seen:
                seen.add(target)
                queue.append([*chain, target])
    return None


def test_the_graph_sees_the_package() -> None:
    """Guards the checks below against reading nothing: the package, its errors module and
    known arrows are found."""
    assert len(MODULES) > 100
    assert "settlement_widgets.errors" in MODULES
    assert any(m.eager for m in MODULES.values())
    assert "websockets" in {name.split(".")[0] for m in MODULES.values() for name in m.external}


def test_no_module_exceeds_600_lines() -> None:
    too_long = sorted(
        (module.lines, _rel(module)) for module in MODULES.values() if module.lines > MAX_LINES
    )
    assert not too_long, f"modules over {MAX_LINES} lines (split them): " + ", ".join(
        f"{path} ({lines})" for lines, path in too_long
    )


def test_no_import_circle() -> None:
    graph = {name: set(module.eager) for name, module in MODULES.items()}
    circles = _cycles(graph)
    assert not circles, "import circles (module-level imports): " + "; ".join(
        " <-> ".join(circle) for circle in circles
    )


def test_core_modules_import_no_io() -> None:
    offenders = []
    for module in sorted(MODULES.values(), key=lambda m: m.name):
        if _is_core(module):
            chain = _io_path(module.name)
            if chain is not None:
                offenders.append(" -> ".join(chain))
    assert not offenders, "core/ modules reaching I/O: " + "; ".join(offenders)


def test_errors_imports_nothing_of_the_package() -> None:
    """errors.py sits under every other module; even a TYPE_CHECKING import is an arrow up."""
    tree = ast.parse(MODULES["settlement_widgets.errors"].path.read_text(encoding="utf-8"))
    imported = [
        node.module or "."
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        and (node.level or (node.module or "").split(".")[0] == PACKAGE)
    ] + [
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
        if alias.name.split(".")[0] == PACKAGE
    ]
    assert not imported, f"settlement_widgets/errors.py imports the package: {imported}"


def test_the_checks_catch_what_they_are_for() -> None:
    """The helpers on a made-up graph: a circle, a chain to I/O, a core folder."""
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []
    assert _is_io("urllib.request") and _is_io("web3.contract") and not _is_io("urllib.parse")
    assert _is_core(Module("settlement_widgets.channel.v1.core.ids", Path(), False, 0))
    assert _is_core(Module("settlement_widgets.channel.v1.core", Path(), True, 0))
    assert not _is_core(Module("settlement_widgets.channel.v1.client", Path(), True, 0))
    assert not _is_core(Module("settlement_widgets.core_things", Path(), False, 0))
