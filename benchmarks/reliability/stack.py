"""The endpoint stack the fuzz, load and security checks share: the sandbox (anvil chain,
contracts, relay, faucet) in one process and the standalone endpoint server in another,
both on loopback, the server serving the sandbox's network with token auth on."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .processes import ApiServer, SandboxProcess

__all__ = ["EndpointStack"]


class EndpointStack:
    """``with EndpointStack(workdir) as stack:`` (blocking start and stop)."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.home = workdir / "home"
        self.sandbox: SandboxProcess | None = None
        self.api: ApiServer | None = None

    def __enter__(self) -> EndpointStack:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.home.mkdir(parents=True, exist_ok=True)
        try:  # both start at once: the server reads the sandbox's profile per request
            self.sandbox = SandboxProcess(self.home, self.workdir / "sandbox.log")
            self.api = ApiServer(self.home, self.workdir / "api.log", self.workdir / "jupyter")
            self.sandbox.start()
            self.api.start()
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        if self.api is not None:
            self.api.stop()
        if self.sandbox is not None:
            self.sandbox.stop()

    @property
    def profile(self) -> dict[str, Any]:
        assert self.sandbox is not None
        return self.sandbox.profile

    @property
    def logs(self) -> list[Path]:
        return [self.workdir / "sandbox.log", self.workdir / "api.log"]
