"""A relay node in its own process: ``python -m settlement_widgets.channel.v0_5.node``.

The sandbox runs its relay inside the caller's process, which is what a notebook wants (one
kernel, nothing to clean up). Beside it, :class:`RelayProcess` runs the same node as a child
process over a sandbox's chain, which is how a real deployment runs it and what two things
need:

- the benchmark of what users run (``ChannelProvider.transfer`` against a relay that does
  not share the client's interpreter, so each has a core and a GIL of its own);
- the crash tests: a relay that can be SIGKILLed in the middle of a stream and restarted on
  the same database and port, as after a power cut or an OOM kill.

The broker key reaches the child through an environment variable, never its command line
(``/proc/PID/cmdline`` is world-readable).
"""

from __future__ import annotations

import sys
from pathlib import Path

from ....keys import PrivateKey
from ...node_base.process import NodeProcess, drain_pipe
from .config import AssetConfig, NetworkConfig

__all__ = ["NodeProcess", "RelayProcess", "drain_pipe"]

_KEY_ENV = "SETTLEMENT_RELAY_BROKER_KEY"


class RelayProcess(NodeProcess):
    """``python -m settlement_widgets.channel.v0_5.node`` for one chain's custody and one asset.

    ``rpc_url`` makes it follow the custody contract on that chain (channels opened there
    become known to it). :meth:`start` returns once the node listens; :meth:`kill` is a
    SIGKILL; :meth:`restart` starts a new process on the same database and port, so clients
    reconnect to the same URL.
    """

    def __init__(
        self,
        *,
        db_path: Path,
        network: NetworkConfig,
        asset: AssetConfig,
        broker_key: PrivateKey,
        rpc_url: str | None = None,
        faucet_account: str | None = None,
        durability: str = "full",
        poll_interval: float = 0.1,
        uvloop: bool = False,
        port: int = 0,
    ) -> None:
        super().__init__(key=broker_key, key_env=_KEY_ENV, port=port)
        self.db_path = Path(db_path)
        self.network = network
        self.asset = asset
        self.durability = durability
        self._broker_key = broker_key
        self._rpc_url = rpc_url
        self._faucet_account = faucet_account
        self._poll_interval = poll_interval
        self._uvloop = uvloop

    @property
    def broker_address(self) -> str:
        return self._broker_key.address

    def _argv(self) -> list[str]:
        argv = [
            sys.executable, "-m", "settlement_widgets.channel.v0_5.node",
            "--db", str(self.db_path),
            "--port", str(self._port),
            "--chain-id", str(self.network.chain_id),
            "--network-name", self.network.name,
            "--custody", self.network.custody,
            "--adjudicator", self.network.adjudicator,
            "--token", self.asset.token,
            "--symbol", self.asset.symbol,
            "--decimals", str(self.asset.decimals),
            "--durability", self.durability,
            "--poll-interval", str(self._poll_interval),
            "--broker-key-env", _KEY_ENV,
        ]  # fmt: skip
        if self._faucet_account:
            argv += ["--faucet-account", self._faucet_account]
        if self._rpc_url:
            argv += ["--rpc-url", self._rpc_url]
        if self._uvloop:
            argv.append("--uvloop")
        return argv
