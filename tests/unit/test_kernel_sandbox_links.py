"""A kernel's private sandbox under a server that owns one: registered with the server, its
explorer links become paths under the server (``{explorer}/kernel/<id>``), which a browser on
another machine (Binder) opens; nothing else reaches the server's disk."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from settlement_widgets.networks import SEPOLIA
from settlement_widgets.sandbox.shared import (
    EXPLORER_ENV,
    PROFILE_ENV,
    kernel_sandbox_profile,
    register_kernel_sandbox,
)

PRIVATE = replace(SEPOLIA, name="local", explorer_base="http://127.0.0.1:40203/explorer")


def test_without_a_server_nothing_is_registered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(PROFILE_ENV, raising=False)
    monkeypatch.delenv(EXPLORER_ENV, raising=False)
    assert register_kernel_sandbox(PRIVATE) is None


def test_under_a_server_the_links_are_the_servers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    profile = tmp_path / "sandbox" / "profile.json"
    monkeypatch.setenv(PROFILE_ENV, str(profile))
    monkeypatch.setenv(EXPLORER_ENV, "/user/a/settlement/explorer")
    served = register_kernel_sandbox(PRIVATE)
    assert served is not None
    prefix = "/user/a/settlement/explorer/kernel/"
    assert served.explorer_base.startswith(prefix)
    kernel_id = served.explorer_base.removeprefix(prefix)
    assert served.explorer.tx_url("0x1") == f"{prefix}{kernel_id}/tx/0x1"
    # the server reads back the sandbox's own profile (its loopback explorer: it checks that
    # the sandbox still answers with it)
    assert kernel_sandbox_profile(profile, kernel_id) == json.loads(json.dumps(PRIVATE.to_json()))


@pytest.mark.parametrize("kernel_id", ["../profile", "ABCDEF0123456789", "0" * 15, "x" * 16, ""])
def test_only_registration_ids_are_read(tmp_path: Path, kernel_id: str) -> None:
    profile = tmp_path / "sandbox" / "profile.json"
    profile.parent.mkdir(parents=True)
    profile.write_text(json.dumps(PRIVATE.to_json()))
    assert kernel_sandbox_profile(profile, kernel_id) is None
