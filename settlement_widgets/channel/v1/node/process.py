"""A Nitronode in its own process: ``python -m settlement_widgets.channel.v1.node``.

:class:`NitronodeProcess` is the relay's :class:`~..relay.process.NodeProcess` pointed at the
v1 node: the same start / SIGKILL / restart on the same database and port, so the crash
tests can kill the node mid-stream as they kill the v0.5 relay. The node key reaches the
child through an environment variable, never its command line.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from ....keys import PrivateKey
from ...node_base.process import NodeProcess
from .config import NodeAsset

__all__ = ["NODE_KEY_ENV", "NitronodeProcess"]

NODE_KEY_ENV = "SETTLEMENT_NITRONODE_KEY"


class NitronodeProcess(NodeProcess):
    """One chain (``chain_id`` with its ChannelHub ``hub``) and its assets' tokens on it, or
    several (``extra_chains``, each read over its JSON-RPC)."""

    URL_KEY = "url"
    NAME = "Nitronode"

    def __init__(
        self,
        *,
        db_path: Path,
        node_key: PrivateKey,
        chain_id: int,
        hub: str,
        assets: Sequence[NodeAsset],
        durability: str = "full",
        port: int = 0,
        rate_limit_per_sec: float | None = None,
        rate_limit_burst: float | None = None,
        rpc_url: str | None = None,
        extra_chains: Sequence[tuple[int, str, str]] = (),
    ) -> None:
        """``rpc_url``: the chain's JSON-RPC, for the node to read its hub; ``extra_chains``:
        more chains it serves and reads, as (chain id, ChannelHub, JSON-RPC), with the
        assets' tokens on them in ``assets``."""
        super().__init__(key=node_key, key_env=NODE_KEY_ENV, port=port)
        #: per-connection request limits (None: the node's defaults, those of the real node)
        self.rate_limit_per_sec = rate_limit_per_sec
        self.rate_limit_burst = rate_limit_burst
        self.db_path = Path(db_path)
        self.chain_id = chain_id
        self.hub = hub
        self.assets = tuple(assets)
        self.durability = durability
        self.rpc_url = rpc_url
        self.extra_chains = tuple(extra_chains)

    @property
    def node_address(self) -> str:
        return self._key.address

    def _argv(self) -> list[str]:
        argv = [
            sys.executable, "-m", "settlement_widgets.channel.v1.node",
            "--db", str(self.db_path),
            "--port", str(self._port),
            "--chain-id", str(self.chain_id),
            "--hub", self.hub,
            "--durability", self.durability,
            "--node-key-env", NODE_KEY_ENV,
        ]  # fmt: skip
        if self.rate_limit_per_sec is not None:
            argv += ["--rate-limit-per-sec", repr(float(self.rate_limit_per_sec))]
        if self.rate_limit_burst is not None:
            argv += ["--rate-limit-burst", repr(float(self.rate_limit_burst))]
        for asset in self.assets:
            token = asset.token_on(self.chain_id) or asset.tokens[0]
            argv += ["--asset", f"{asset.symbol}:{token.address}:{token.decimals}"]
        if self.rpc_url:
            argv += ["--rpc-url", self.rpc_url]
        for chain_id, hub, url in self.extra_chains:
            for asset in self.assets:
                there = asset.token_on(chain_id)
                if there is not None:
                    spec = f"{asset.symbol}:{there.address}:{there.decimals}"
                    argv += ["--extra-chain", f"{chain_id},{hub},{url},{spec}"]
        return argv
