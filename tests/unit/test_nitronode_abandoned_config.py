"""The Nitronode's deadline for abandoned locks (``NitronodeConfig.abandoned_lock_secs``):
its default is the hub's own escrow-deposit unlock delay, and a value that is not a
non-negative whole number of seconds is refused at construction, not at the first look."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from settlement_widgets.channel.v1.node.config import (
    DEFAULT_ABANDONED_LOCK_SECS,
    NitronodeConfig,
    NodeAsset,
    NodeChain,
    NodeToken,
)
from settlement_widgets.errors import ConfigurationError
from settlement_widgets.keys import PrivateKey

TOKEN = "0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512"
HUB = Path(__file__).parents[2] / "contracts" / "src" / "channel_v1" / "ChannelHub.sol"


def _config(**extra: Any) -> NitronodeConfig:
    return NitronodeConfig(
        db_path=Path("unused.sqlite"),
        node_key=PrivateKey("0x" + "02" * 32),
        chains=(NodeChain(31337, TOKEN),),
        assets=(NodeAsset("usdc", 6, (NodeToken(31337, TOKEN, 6),)),),
        **extra,
    )


def test_the_default_deadline_is_the_hubs_deposit_unlock_delay() -> None:
    found = re.search(r"ESCROW_DEPOSIT_UNLOCK_DELAY = (\d+) hours", HUB.read_text())
    assert found is not None
    assert int(found.group(1)) * 3600 == DEFAULT_ABANDONED_LOCK_SECS
    assert _config().abandoned_lock_secs == DEFAULT_ABANDONED_LOCK_SECS
    assert _config(abandoned_lock_secs=0).abandoned_lock_secs == 0


@pytest.mark.parametrize("value", [-1, 1.5, True, "3600"])
def test_a_deadline_that_is_not_whole_seconds_is_refused(value: Any) -> None:
    with pytest.raises(ConfigurationError, match="abandoned_lock_secs"):
        _config(abandoned_lock_secs=value)
