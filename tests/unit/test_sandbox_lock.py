"""The command-line sandbox's lock on its SETTLEMENT_HOME (issue 34), within one process:
``flock`` locks of two open files conflict even there, so this is the real lock."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from settlement_widgets.errors import ConfigurationError
from settlement_widgets.sandbox.lock import Holder, SandboxLock, refusal_message


def test_a_second_lock_on_one_home_names_the_holder(tmp_path: Path) -> None:
    first, second = SandboxLock(tmp_path), SandboxLock(tmp_path)
    first.acquire()
    try:
        with pytest.raises(ConfigurationError) as starting:
            second.acquire()
        assert f"pid {os.getpid()}" in str(starting.value)
        assert "still starting" in str(starting.value)
        first.publish("http://127.0.0.1:4242")
        with pytest.raises(ConfigurationError) as serving:
            second.acquire()
        assert str(serving.value) == refusal_message(
            tmp_path, Holder(os.getpid(), "http://127.0.0.1:4242")
        )
        assert json.loads(first.path.read_text()) == {
            "pid": os.getpid(),
            "url": "http://127.0.0.1:4242",
        }
    finally:
        first.release()
    # released: the file stays (emptied), and the home is free for the next one
    assert first.path.exists() and first.path.read_text() == ""
    second.acquire()
    second.release()
    second.release()  # idempotent


def test_another_home_is_independent(tmp_path: Path) -> None:
    a, b = SandboxLock(tmp_path / "a"), SandboxLock(tmp_path / "b")
    a.acquire()
    b.acquire()
    a.release()
    b.release()


def test_the_refusal_says_what_to_do() -> None:
    text = refusal_message(Path("/h"), Holder(123, "http://127.0.0.1:1"))
    assert text == (
        "a sandbox is already running on SETTLEMENT_HOME=/h (pid 123, serving "
        "http://127.0.0.1:1); stop it (kill 123) or start this one with another SETTLEMENT_HOME"
    )
    assert "pid not known" in refusal_message(Path("/h"), Holder(None, "http://127.0.0.1:1"))
