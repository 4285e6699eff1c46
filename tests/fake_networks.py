"""A local network profile for tests that render or parse, not run, a sandbox.

Its contracts are made-up fixed addresses and its services sit on a loopback port nothing
listens on (port 1 by default), so a test that reaches for the network by mistake fails at
once instead of finding a sandbox left running by another test.
"""

from __future__ import annotations

from settlement_widgets.networks import Network, local

__all__ = ["fake_local"]


def fake_local(
    *,
    port: int = 1,
    faucet_url: str | None = None,
    explorer_base: str = "http://127.0.0.1:8899/explorer",
) -> Network:
    """The sandbox's profile shape on chain 31337 with fixed contract addresses."""
    return local(
        chain_id=31337,
        custody="0x" + "11" * 20,
        adjudicator="0x" + "22" * 20,
        policy_hook="0x" + "33" * 20,
        settlement_adapter="0x" + "44" * 20,
        pool_manager="0x" + "55" * 20,
        node_url=f"ws://127.0.0.1:{port}/ws",
        faucet_url=faucet_url or f"http://127.0.0.1:{port}/faucet/requestTokens",
        explorer_base=explorer_base,
    )
