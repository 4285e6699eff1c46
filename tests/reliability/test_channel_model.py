"""The stateful model test of the channel method, short run (``make reliability`` runs the long
one and publishes ``model_sequences``, ``model_steps``, ``model_violations``): random sequences
of faucet, create, resize, transfer, close, challenge + close, withdraw, provider and relay
restarts on the in-process sandbox, every invariant checked after every step."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.reliability.__main__ import QUICK
from benchmarks.reliability.channel_model import ModelParams, run_channel_model

pytestmark = pytest.mark.slow


def test_random_sequences_keep_every_invariant(tmp_path: Path) -> None:
    params = ModelParams(sequences=QUICK.model_sequences, steps=QUICK.model_steps)
    result = run_channel_model(tmp_path, params)
    assert result.violations == []
    m = result.metrics
    assert m["model_violations"] == 0
    assert m["model_sequences"] >= params.sequences
    # the sequences did real work, not only refused operations
    assert m["model_steps"] > m["model_rejected_operations"] > 0
