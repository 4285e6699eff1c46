"""Start-up costs: the local sandbox, ``import settlement_widgets``, and each notebook.

Each is measured in a fresh interpreter, because what a user waits for is the first time:
cached modules and a warm disk cache would flatter the numbers.

- Sandbox: ``LocalSandbox().start()`` in-process (chain, contracts from the chain snapshot
  or deployed, funding, relay, faucet/HTTP server). Reported cold (first start in a new
  interpreter, including the lazy imports of web3/py-evm it triggers) and warm (a second
  start in the same interpreter), plus the import of ``settlement_widgets.sandbox`` itself.
- Sandbox as a process (:func:`sandbox_start_times`): from spawning ``python -m
  settlement_widgets.sandbox`` (default options, as a user types it) to its profile line on
  stdout, warm (median) and cold, beside the first cell of a walkthrough notebook.
- ``import settlement_widgets``: median of several fresh interpreters.
- Notebooks: ``pytest --nbval`` on each notebook, exactly as ``make notebooks`` runs them.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from .procs import REPO

__all__ = [
    "COLD_METHOD",
    "NotebookResult",
    "SandboxStartTimes",
    "SandboxStartup",
    "import_time",
    "notebook_command",
    "notebook_first_cell",
    "notebook_times",
    "sandbox_process_start",
    "sandbox_start_times",
    "sandbox_startup",
]

_SANDBOX_SCRIPT = r"""
import asyncio, json, time
t0 = time.perf_counter()
from settlement_widgets.sandbox import LocalSandbox
t1 = time.perf_counter()

async def main():
    a = time.perf_counter()
    sb = LocalSandbox()
    await sb.start()
    b = time.perf_counter()
    await sb.aclose()
    c = time.perf_counter()
    sb = LocalSandbox()
    await sb.start()
    d = time.perf_counter()
    await sb.aclose()
    print(json.dumps({"import_s": t1 - t0, "cold_s": b - a, "warm_s": d - c}))

asyncio.run(main())
"""

_IMPORT_SCRIPT = (
    "import time; t = time.perf_counter(); import settlement_widgets; "
    "print(time.perf_counter() - t)"
)


async def _python(code: str, timeout: float, env: dict[str, str] | None = None) -> str:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        code,
        cwd=str(REPO),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise
    if proc.returncode != 0:
        raise RuntimeError(err.decode(errors="replace")[-1500:])
    return out.decode().strip().splitlines()[-1]


@dataclass
class SandboxStartup:
    cold_s: float
    warm_s: float
    import_s: float


async def sandbox_startup(timeout: float = 300.0) -> SandboxStartup:
    values = json.loads(await _python(_SANDBOX_SCRIPT, timeout))
    return SandboxStartup(values["cold_s"], values["warm_s"], values["import_s"])


async def import_time(runs: int = 5) -> tuple[float, list[float]]:
    """Median and all samples of ``import settlement_widgets`` in fresh interpreters."""
    samples = [float(await _python(_IMPORT_SCRIPT, 120)) for _ in range(runs)]
    return statistics.median(samples), samples


@dataclass
class NotebookResult:
    name: str
    seconds: float
    passed: bool
    summary: str


def notebook_command(notebook: Path) -> list[str]:
    """``make notebooks``' nbval run (the Makefile's ``NBVAL`` with ``--notebook-probes``:
    our plugin, the sanitize rules, each notebook's checks) for one notebook."""
    return [
        sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
        "-p", "tests.nbval.plugin", "--nbval", "--nbval-current-env",
        "--nbval-sanitize-with", str(REPO / "tests" / "nbval" / "sanitize.cfg"),
        "--notebook-probes", str(notebook),
    ]  # fmt: skip


async def notebook_times(
    folder: Path | None = None, timeout: float = 900.0
) -> list[NotebookResult]:
    """Run every notebook under nbval (``make notebooks``' command), one pytest each."""
    folder = folder or REPO / "notebooks"
    results: list[NotebookResult] = []
    for notebook in sorted(folder.glob("*.ipynb")):
        args = notebook_command(notebook)
        t0 = time.perf_counter()
        proc = await asyncio.create_subprocess_exec(
            *args,
            cwd=str(REPO),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        try:
            out, _ = await asyncio.wait_for(proc.communicate(), timeout)
            text = out.decode(errors="replace").strip().splitlines()
            summary = text[-1] if text else ""
        except TimeoutError:
            proc.kill()
            await proc.wait()
            summary = f"timed out after {timeout:.0f} s"
        results.append(
            NotebookResult(
                notebook.name, time.perf_counter() - t0, proc.returncode == 0, summary[-200:]
            )
        )
    return results


# --- the sandbox as a process, and a notebook's first cell ----------------------------------

#: how the cold figure is approximated (no root: the machine's caches cannot be dropped)
COLD_METHOD = (
    "first start after the chain snapshot is rebuilt into a fresh directory (as after "
    "`make contracts`), with every file of the standard library, site-packages, the package "
    "and the snapshot advised out of the page cache (posix_fadvise DONTNEED); pages mapped "
    "by running processes (the interpreter, shared libraries) may stay cached"
)
#: the flags the Jupyter server starts its shared sandbox with (sandbox/shared.py, make lab)
LAB_ARGS = ("--deterministic", "--aggregator", "--wallets", "8")
_DEPLOYING = "deploying the contracts instead"  # the snapshot fallback's log line

_CELL_SCRIPT = r"""
import ast, asyncio, json, time
with open(NOTEBOOK) as f:
    notebook = json.load(f)
cell = next(c for c in notebook["cells"] if c["cell_type"] == "code")
code = compile("".join(cell["source"]), "<cell 1>", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
namespace = {"__name__": "__main__"}

async def main():
    t = time.perf_counter()
    result = eval(code, namespace)
    if asyncio.iscoroutine(result):
        await result
    took = time.perf_counter() - t
    session = namespace.get("session")
    if session is not None:
        await session.aclose()
    return took

print(json.dumps({"cell_s": asyncio.run(main())}))
"""


@dataclass
class SandboxStartTimes:
    """Start-up of the local sandbox, seconds.

    ``sandbox_start_process_s``: spawn of ``python -m settlement_widgets.sandbox`` (default
    options) to its profile line on stdout, median of warm runs (``..._samples_s``), and
    ``..._source`` whether those runs resumed the chain snapshot or deployed.
    ``sandbox_start_process_cold_s``: the same, cold (:data:`COLD_METHOD`);
    ``..._nobytecode_s``: first start with no ``.pyc`` anywhere (an empty
    ``PYTHONPYCACHEPREFIX``: every module compiled from source, a pessimistic cold).
    ``..._no_snapshot_s``: warm median with ``--no-snapshot`` (the deployment transactions
    sent, as before snapshots). ``..._lab_s``: warm median with the Jupyter server's flags
    (:data:`LAB_ARGS`: deterministic, aggregator, 8 wallets).
    ``notebook_first_cell_s``: the first code cell of ``notebooks/03_channel_lifecycle.ipynb``
    (imports and ``await open_session()``) in a fresh interpreter.
    ``inprocess_cold_s``/``inprocess_warm_s``/``inprocess_import_s``: :func:`sandbox_startup`
    (``LocalSandbox().start()`` first and second in one interpreter, the sandbox import);
    ``import_s``: ``import settlement_widgets``, median.
    """

    sandbox_start_process_s: float
    sandbox_start_process_samples_s: list[float]
    sandbox_start_process_source: str
    sandbox_start_process_cold_s: float | None
    sandbox_start_process_nobytecode_s: float | None
    sandbox_start_process_no_snapshot_s: float | None
    sandbox_start_process_lab_s: float | None
    notebook_first_cell_s: float | None
    inprocess_cold_s: float
    inprocess_warm_s: float
    inprocess_import_s: float
    import_s: float
    cold_method: str = COLD_METHOD
    notes: list[str] = field(default_factory=list)


async def sandbox_process_start(
    args: tuple[str, ...] = (), *, env: dict[str, str] | None = None, timeout: float = 300.0
) -> tuple[float, str]:
    """Seconds from spawning ``python -m settlement_widgets.sandbox *args`` to its profile
    line on stdout, and ``"snapshot"`` or ``"deployed"`` (its log says which); the process is
    then stopped with SIGTERM, as Ctrl-C would."""
    with tempfile.TemporaryDirectory(prefix="sw-bench-home-") as home:
        child_env = {**(env or os.environ), "SETTLEMENT_HOME": home}
        t0 = time.perf_counter()
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "settlement_widgets.sandbox", *args,
            cwd=str(REPO), stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=child_env,
        )  # fmt: skip
        assert proc.stdout is not None and proc.stderr is not None
        try:
            line = await asyncio.wait_for(proc.stdout.readline(), timeout)
            took = time.perf_counter() - t0
        finally:
            if proc.returncode is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    await asyncio.wait_for(proc.wait(), 60)
                except TimeoutError:
                    proc.kill()
                    await proc.wait()
        errors = (await proc.stderr.read()).decode(errors="replace")
    if not line.strip().startswith(b"{"):
        raise RuntimeError(f"the sandbox printed no profile: {errors[-1500:]}")
    return took, "deployed" if _DEPLOYING in errors else "snapshot"


async def notebook_first_cell(
    notebook: Path | None = None, *, env: dict[str, str] | None = None, timeout: float = 300.0
) -> float:
    """Seconds the first code cell of ``notebook`` (default: 03, the channel lifecycle) takes
    in a fresh interpreter: its imports and ``await open_session()`` (a private sandbox)."""
    path = notebook or REPO / "notebooks" / "03_channel_lifecycle.ipynb"
    with tempfile.TemporaryDirectory(prefix="sw-bench-home-") as home:
        child_env = {**(env or os.environ), "SETTLEMENT_HOME": home, "MPLBACKEND": "agg"}
        child_env.pop("SETTLEMENT_SHARED_PROFILE", None)  # a private sandbox, as nbval has
        script = f"NOTEBOOK = {str(path)!r}\n" + _CELL_SCRIPT
        return float(json.loads(await _python(script, timeout, env=child_env))["cell_s"])


async def _median_start(args: tuple[str, ...], runs: int) -> tuple[float, list[float], str]:
    await sandbox_process_start(args)  # a warm-up (it also saves a missing snapshot)
    samples, sources = [], set()
    for _ in range(runs):
        took, source = await sandbox_process_start(args)
        samples.append(took)
        sources.add(source)
    return statistics.median(samples), samples, "/".join(sorted(sources))


async def _cold_start(notes: list[str]) -> tuple[float | None, float | None]:
    """First start after a snapshot rebuild with the page cache advised empty, and first
    start without bytecode caches (see :class:`SandboxStartTimes`)."""
    from .page_cache import evict, python_start_files

    cold = nobytecode = None
    with tempfile.TemporaryDirectory(prefix="sw-bench-snapshots-") as snapshots:
        env = {**os.environ, "SETTLEMENT_SNAPSHOTS": snapshots}
        build = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "settlement_widgets.sandbox.snapshot", "--no-anvil",
            cwd=str(REPO), env=env,
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        _, err = await build.communicate()
        if build.returncode != 0:
            notes.append(f"cold: the snapshot build failed: {err.decode()[-300:]}")
            return None, None
        files = evict(python_start_files(REPO / "settlement_widgets", Path(snapshots)))
        cold, source = await sandbox_process_start(env=env)
        notes.append(f"cold: {files} files advised out of the page cache; start from {source}")
        with tempfile.TemporaryDirectory(prefix="sw-bench-pycache-") as pycache:
            nobytecode, source = await sandbox_process_start(
                env={**env, "PYTHONPYCACHEPREFIX": pycache}
            )
            notes.append(f"no bytecode: start from {source}")
    return cold, nobytecode


async def sandbox_start_times(
    runs: int = 5,
    *,
    cold: bool = True,
    notebook: bool = True,
    lab: bool = True,
    no_snapshot: bool = True,
) -> SandboxStartTimes:
    """Every start-up figure of :class:`SandboxStartTimes` (about a minute on two cores).
    Turn parts off with ``cold``, ``notebook``, ``lab``, ``no_snapshot``."""
    notes: list[str] = []
    warm, samples, source = await _median_start((), runs)
    cold_s = nobytecode_s = None
    if cold:
        cold_s, nobytecode_s = await _cold_start(notes)
    no_snapshot_s = lab_s = None
    if no_snapshot:
        no_snapshot_s = (await _median_start(("--no-snapshot",), max(1, runs // 2)))[0]
    if lab:
        lab_s, _, lab_source = await _median_start(LAB_ARGS, max(1, runs // 2))
        notes.append(f"lab: the main chain from {lab_source}, the aggregator's deployed")
    cell_s = None
    if notebook:
        with contextlib.suppress(RuntimeError):  # a notebook without its optional deps
            cell_s = await notebook_first_cell()
        if cell_s is None:
            notes.append("notebook: the first cell failed (pip install -e '.[notebooks]')")
    inprocess = await sandbox_startup()
    import_s, _ = await import_time()
    return SandboxStartTimes(
        sandbox_start_process_s=warm,
        sandbox_start_process_samples_s=samples,
        sandbox_start_process_source=source,
        sandbox_start_process_cold_s=cold_s,
        sandbox_start_process_nobytecode_s=nobytecode_s,
        sandbox_start_process_no_snapshot_s=no_snapshot_s,
        sandbox_start_process_lab_s=lab_s,
        notebook_first_cell_s=cell_s,
        inprocess_cold_s=inprocess.cold_s,
        inprocess_warm_s=inprocess.warm_s,
        inprocess_import_s=inprocess.import_s,
        import_s=import_s,
        notes=notes,
    )
