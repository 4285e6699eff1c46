"""Start-up costs: the local sandbox, ``import settlement_widgets``, and each notebook.

Each is measured in a fresh interpreter, because what a user waits for is the first time:
cached modules and a warm disk cache would flatter the numbers.

- Sandbox: ``LocalSandbox().start()`` in-process (chain in py-evm, contract deployment,
  funding, relay, faucet/HTTP server). Reported cold (first start in a new interpreter,
  including the lazy imports of web3/py-evm it triggers) and warm (a second start in the
  same interpreter), plus the import of ``settlement_widgets.sandbox`` itself.
- ``import settlement_widgets``: median of several fresh interpreters.
- Notebooks: ``pytest --nbval`` on each notebook, exactly as ``make notebooks`` runs them.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from .procs import REPO

__all__ = [
    "NotebookResult",
    "SandboxStartup",
    "import_time",
    "notebook_times",
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


async def _python(code: str, timeout: float) -> str:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        code,
        cwd=str(REPO),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
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


async def notebook_times(
    folder: Path | None = None, timeout: float = 900.0
) -> list[NotebookResult]:
    """Run every notebook under nbval (``make notebooks``' command), one pytest each."""
    folder = folder or REPO / "notebooks"
    results: list[NotebookResult] = []
    for notebook in sorted(folder.glob("*.ipynb")):
        args = [
            sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
            "--nbval", "--nbval-current-env",
        ]  # fmt: skip
        sanitize = folder / "nbval_sanitize.cfg"
        if sanitize.exists():
            args += ["--nbval-sanitize-with", str(sanitize)]
        args.append(str(notebook))
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
