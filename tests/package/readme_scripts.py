"""The README's "Scripts" section as data, and running it: each ```python block there is a
complete script whose first line names the sandbox it runs beside
(``# run beside: settlement-sandbox ...``). Used from the checkout
(``test_readme_scripts.py``) and from installed packages (``test_build_and_install.py``)."""

from __future__ import annotations

import json
import re
import shlex
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"
_BESIDE = "# run beside: "


@dataclass(frozen=True)
class Script:
    sandbox: tuple[str, ...]  # the command line, e.g. ("settlement-sandbox", "--protocol", "v1")
    code: str

    @property
    def name(self) -> str:
        first = next(line for line in self.code.splitlines() if line.startswith("from "))
        return f"{' '.join(self.sandbox[1:]) or 'default'}: {first}"


def readme_scripts() -> list[Script]:
    text = README.read_text()
    start = text.index("\n## Scripts\n")
    section = text[start : text.index("\n## ", start + 1)]
    scripts = []
    for code in re.findall(r"```python\n(.*?)```", section, re.S):
        first = code.splitlines()[0]
        assert first.startswith(_BESIDE), f"a script must name its sandbox first: {first!r}"
        scripts.append(Script(tuple(shlex.split(first.removeprefix(_BESIDE))), code))
    return scripts


def run_beside_sandbox(
    bindir: Path, scripts: list[Script], where: Path, env: dict[str, str]
) -> dict[str, str]:
    """Start each distinct sandbox the scripts name (``bindir``'s console script, its own
    ``SETTLEMENT_HOME`` under ``where``), run its scripts with ``bindir``'s python, stop it;
    returns each script's stdout by name. Fails with the script's stderr when one fails."""
    out: dict[str, str] = {}
    by_sandbox: dict[tuple[str, ...], list[Script]] = {}
    for script in scripts:
        by_sandbox.setdefault(script.sandbox, []).append(script)
    for index, (command, group) in enumerate(by_sandbox.items()):
        home = where / f"home-{index}"
        run_env = {**env, "SETTLEMENT_HOME": str(home)}
        sandbox = subprocess.Popen(
            [str(bindir / command[0]), *command[1:]],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=where, env=run_env,
        )  # fmt: skip
        try:
            assert sandbox.stdout is not None and sandbox.stderr is not None
            line = sandbox.stdout.readline()
            assert line, sandbox.stderr.read()[-3000:]
            assert json.loads(line)["rpcUrl"].startswith("http://127.0.0.1:")
            for script in group:
                path = where / f"script-{len(out)}.py"
                path.write_text(script.code)
                ran = subprocess.run(
                    [str(bindir / "python"), str(path)],
                    capture_output=True, text=True, cwd=where, env=run_env, timeout=600,
                )  # fmt: skip
                assert ran.returncode == 0, f"{script.name}\n{ran.stderr[-3000:]}"
                out[script.name] = ran.stdout
        finally:
            sandbox.send_signal(signal.SIGTERM)
            try:
                code = sandbox.wait(60)
            except subprocess.TimeoutExpired:
                sandbox.kill()
                code = sandbox.wait()
        assert code == 0, f"{' '.join(command)} exited with {code}"
    return out
