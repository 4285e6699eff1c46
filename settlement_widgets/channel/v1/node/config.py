"""What a local Nitronode serves: its key, its chains and its asset table.

The v1 node is configured, not discovered: ``node.v1.get_config`` and ``node.v1.get_assets``
echo these tables, and every state the node co-signs is checked against them (a state whose
home ledger names a token the node does not list is refused, because the node could not
scale its amounts to token units and so could not sign it). The node key is held here and
never rendered: :class:`NitronodeConfig`'s ``repr`` omits it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from ....addresses import validate_address
from ....errors import ConfigurationError
from ....keys import PrivateKey
from ..core.rate_limit import (
    DEFAULT_RATE_LIMIT_BURST,
    DEFAULT_RATE_LIMIT_PER_SEC,
    DEFAULT_WS_BYTES_BURST,
    DEFAULT_WS_BYTES_PER_SEC,
    DEFAULT_WS_MAX_MESSAGE_SIZE,
)
from ..core.state import TokenDecimals, decimals_from_map

__all__ = [
    "DEFAULT_ABANDONED_CHECK_INTERVAL_SECS",
    "DEFAULT_ABANDONED_LOCK_SECS",
    "DEFAULT_CHALLENGE_RANGE",
    "DEFAULT_NODE_VERSION",
    "RATE_LIMIT_ENV",
    "SUPPORTED_SIG_VALIDATORS",
    "NitronodeConfig",
    "NodeAsset",
    "NodeChain",
    "NodeToken",
    "parse_asset_spec",
    "rate_limits_from_env",
]

#: the node's ``challenge`` bounds in seconds (request_creation, Nitrolite v1.4.1)
DEFAULT_CHALLENGE_RANGE: Final = (86400, 604800)
#: validator ids the node verifies: 0 = plain ECDSA, 1 = channel session key
SUPPORTED_SIG_VALIDATORS: Final = (0, 1)
DEFAULT_NODE_VERSION: Final = "v1.4.1-sandbox"
#: the hub's ``ESCROW_DEPOSIT_UNLOCK_DELAY`` (3 h), used as the escrow-lock deadline
DEFAULT_ABANDONED_LOCK_SECS: Final = 3 * 3600
DEFAULT_ABANDONED_CHECK_INTERVAL_SECS: Final = 60.0


@dataclass(frozen=True)
class NodeToken:
    """One asset's token on one chain (``get_assets`` ``tokens[]``)."""

    blockchain_id: int
    address: str
    decimals: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "address", validate_address(self.address, field="token"))


@dataclass(frozen=True)
class NodeAsset:
    """An asset symbol with its display decimals and its tokens (``get_assets`` entry)."""

    symbol: str
    decimals: int
    tokens: tuple[NodeToken, ...]
    name: str = ""
    suggested_blockchain_id: int | None = None

    def token_on(self, blockchain_id: int) -> NodeToken | None:
        """This asset's token on ``blockchain_id`` (``None``: not served there)."""
        for token in self.tokens:
            if token.blockchain_id == blockchain_id:
                return token
        return None

    def to_json(self) -> dict[str, Any]:
        name = self.name or self.symbol.upper()
        suggested = self.suggested_blockchain_id
        if suggested is None:
            suggested = self.tokens[0].blockchain_id if self.tokens else 0
        return {
            "name": name,
            "symbol": self.symbol,
            "decimals": self.decimals,
            "suggested_blockchain_id": str(suggested),
            "tokens": [
                {
                    "name": name,
                    "symbol": self.symbol,
                    "address": t.address,
                    "blockchain_id": str(t.blockchain_id),
                    "decimals": t.decimals,
                }
                for t in self.tokens
            ],
        }


@dataclass(frozen=True)
class NodeChain:
    """A chain the node has a ChannelHub on (``get_config`` ``blockchains[]``)."""

    blockchain_id: int
    channel_hub_address: str
    name: str = "local"
    confirmation_delay_secs: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "blockchain_id": str(self.blockchain_id),
            "channel_hub_address": self.channel_hub_address.lower(),
            "confirmation_delay_secs": self.confirmation_delay_secs,
        }


@dataclass(frozen=True)
class NitronodeConfig:
    """Everything a :class:`~.server.NitronodeNode` needs.

    ``durability`` is SQLite's ``synchronous`` (``"full"``: an fsync per COMMIT, so an
    acknowledged state survives a power cut; ``"normal"``: it survives a killed process).
    """

    db_path: Path
    node_key: PrivateKey = field(repr=False)
    chains: tuple[NodeChain, ...]
    assets: tuple[NodeAsset, ...]
    host: str = "127.0.0.1"
    port: int = 0
    durability: str = "full"
    node_version: str = DEFAULT_NODE_VERSION
    challenge_range: tuple[int, int] = DEFAULT_CHALLENGE_RANGE
    supported_sig_validators: tuple[int, ...] = SUPPORTED_SIG_VALIDATORS
    #: per-connection request bucket (the real node's defaults: 10/s, burst 20)
    rate_limit_per_sec: float = DEFAULT_RATE_LIMIT_PER_SEC
    rate_limit_burst: float = DEFAULT_RATE_LIMIT_BURST
    #: inbound frame cap in bytes (close 1009 above it)
    ws_max_message_size: int = DEFAULT_WS_MAX_MESSAGE_SIZE
    #: per-connection inbound byte bucket (<= 0 per second disables it)
    ws_bytes_per_sec: float = DEFAULT_WS_BYTES_PER_SEC
    ws_bytes_burst: float = DEFAULT_WS_BYTES_BURST
    #: the limiters' clock (monotonic seconds); tests pass a hand-driven one
    clock: Callable[[], float] = field(default=time.monotonic, repr=False, compare=False)
    #: escrow-chain seconds a user has, from the node's first look at a co-signed escrow
    #: lock, to get its escrow_withdraw co-signed; past it the node takes its lock back
    #: (see :mod:`.escrows`). Three hours: what the hub itself gives an escrow deposit
    #: nobody finalizes before it goes to the node's vault (``ESCROW_DEPOSIT_UNLOCK_DELAY``)
    abandoned_lock_secs: int = DEFAULT_ABANDONED_LOCK_SECS
    #: wall-clock seconds between the node's looks for abandoned locks (the chain is read on
    #: demand, there are no events to wait for); <= 0: only on start and on request
    abandoned_check_interval_secs: float = DEFAULT_ABANDONED_CHECK_INTERVAL_SECS
    #: hold a COMMIT while a pipelining client is still sending (see
    #: :mod:`~settlement_widgets.channel.node_base.commit_hold`): one fsync for several of
    #: its states (measured: ~100 us less node CPU per transfer with 64 in flight). On by
    #: default since the client's pipeline stops building on a state whose send failed
    #: (the race that, with the hold on, once lost a transfer from the middle of the
    #: history in the pipelined node-kill test); False commits each state as it comes
    commit_hold: bool = True

    def __post_init__(self) -> None:
        self._check_limits()
        if self.host not in ("127.0.0.1", "localhost", "::1"):
            raise ConfigurationError(
                f"the sandbox Nitronode listens on loopback only, not {self.host!r}"
            )
        if self.durability not in ("full", "normal"):
            raise ConfigurationError(
                f"durability must be 'full' or 'normal', not {self.durability!r}"
            )
        lock = self.abandoned_lock_secs
        if isinstance(lock, bool) or not isinstance(lock, int) or lock < 0:
            raise ConfigurationError(f"abandoned_lock_secs must be an int >= 0, not {lock!r}")
        symbols = [a.symbol for a in self.assets]
        if len(set(symbols)) != len(symbols):
            raise ConfigurationError(f"duplicate asset symbols in {symbols}")

    def _check_limits(self) -> None:
        """The real node's start-up checks (``nitronode/runtime.go``): the frame cap cannot
        be disabled, and an enabled byte bucket must hold at least one maximal frame."""
        for name in ("rate_limit_per_sec", "rate_limit_burst", "ws_bytes_per_sec"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ConfigurationError(f"{name} must be a number, got {value!r}")
        if self.rate_limit_per_sec < 0 or self.rate_limit_burst < 0:
            raise ConfigurationError("the request rate limit and burst must be >= 0")
        if not isinstance(self.ws_max_message_size, int) or self.ws_max_message_size <= 0:
            raise ConfigurationError(
                "NITRONODE_WS_MAX_MESSAGE_SIZE must be > 0; the WebSocket frame cap cannot be "
                f"disabled (got {self.ws_max_message_size!r})"
            )
        if self.ws_bytes_per_sec > 0:
            if self.ws_bytes_burst <= 0:
                raise ConfigurationError(
                    "NITRONODE_WS_BYTES_BURST must be > 0 when NITRONODE_WS_BYTES_PER_SEC is "
                    "enabled"
                )
            if self.ws_bytes_burst < self.ws_max_message_size:
                raise ConfigurationError(
                    "NITRONODE_WS_BYTES_BURST must be >= NITRONODE_WS_MAX_MESSAGE_SIZE when "
                    "byte limiting is enabled"
                )

    def asset(self, symbol: str) -> NodeAsset | None:
        """The configured asset ``symbol`` (case-sensitive, as the channel metadata hashes it)."""
        for asset in self.assets:
            if asset.symbol == symbol:
                return asset
        return None

    def chain(self, blockchain_id: int) -> NodeChain | None:
        for chain in self.chains:
            if chain.blockchain_id == blockchain_id:
                return chain
        return None

    def token_decimals(self) -> TokenDecimals:
        """``(chain, token) -> decimals`` over every configured token (state packing)."""
        return decimals_from_map(
            {f"{t.blockchain_id}:{t.address}": t.decimals for a in self.assets for t in a.tokens}
        )

    @staticmethod
    def assets_from_table(table: Sequence[dict[str, Any]]) -> tuple[NodeAsset, ...]:
        """Assets from the vectors' ``meta.asset_table`` / a ``get_assets`` result."""
        out = []
        for entry in table:
            tokens = tuple(
                NodeToken(
                    int(t.get("blockchain_id", t.get("chain", 0))),
                    t["address"],
                    int(t["decimals"]),
                )
                for t in entry.get("tokens", ())
            )
            suggested = entry.get("suggested_blockchain_id", entry.get("suggested"))
            out.append(
                NodeAsset(
                    symbol=entry["symbol"],
                    decimals=int(entry["decimals"]),
                    tokens=tokens,
                    name=entry.get("name", ""),
                    suggested_blockchain_id=None if suggested is None else int(suggested),
                )
            )
        return tuple(out)


def parse_asset_spec(spec: str, blockchain_id: int) -> NodeAsset:
    """``symbol:0xTOKEN:decimals`` (the CLI's ``--asset``) as a one-token asset."""
    parts = spec.split(":")
    if len(parts) != 3 or not parts[0]:
        raise ConfigurationError(f"--asset must be symbol:0xTOKEN:decimals, got {spec!r}")
    symbol, token, decimals = parts
    try:
        places = int(decimals)
    except ValueError:
        raise ConfigurationError(f"asset decimals must be an integer, got {decimals!r}") from None
    return NodeAsset(symbol, places, (NodeToken(blockchain_id, token, places),))


#: the environment variables the real node reads for its connection limits, by config field
RATE_LIMIT_ENV: Final[Mapping[str, str]] = {
    "rate_limit_per_sec": "NITRONODE_RATE_LIMIT_PER_SEC",
    "rate_limit_burst": "NITRONODE_RATE_LIMIT_BURST",
    "ws_max_message_size": "NITRONODE_WS_MAX_MESSAGE_SIZE",
    "ws_bytes_per_sec": "NITRONODE_WS_BYTES_PER_SEC",
    "ws_bytes_burst": "NITRONODE_WS_BYTES_BURST",
}


def rate_limits_from_env(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The connection-limit fields set in ``environ`` (default: the process environment),
    under the real node's variable names, as :class:`NitronodeConfig` keyword arguments."""
    env = os.environ if environ is None else environ
    out: dict[str, Any] = {}
    for name, var in RATE_LIMIT_ENV.items():
        text = env.get(var)
        if text is None or not text.strip():
            continue
        try:
            out[name] = int(text) if name == "ws_max_message_size" else float(text)
        except ValueError:
            raise ConfigurationError(f"{var} must be a number, got {text!r}") from None
    return out
