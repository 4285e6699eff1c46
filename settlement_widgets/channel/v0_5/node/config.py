"""What a relay node serves: its networks, its assets and how it persists (frozen values).

``get_config`` lists :class:`NetworkConfig` entries and ``get_assets`` the
:class:`AssetConfig` entries exactly as the ClearNode does (its v0.5 ``get_config``/``get_assets``);
the unified ledger is keyed by asset *symbol*, so one symbol may have a token on several
chains. Nothing here does I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from ....addresses import validate_address
from ....errors import SettlementValueError, UnknownOptionError
from ....keys import PrivateKey

__all__ = [
    "DEFAULT_CHALLENGE_PERIOD",
    "DEFAULT_FAUCET_SEED_UNITS",
    "DURABILITY_MODES",
    "AssetConfig",
    "NetworkConfig",
    "RelayConfig",
]

#: the ClearNode always offers ``challenge: 3600`` in ``create_channel``
DEFAULT_CHALLENGE_PERIOD = 3600
#: what the faucet account holds when a fresh ledger is created (1,000,000,000 ytest.usd)
DEFAULT_FAUCET_SEED_UNITS = 10**15
DURABILITY_MODES = ("full", "normal")


@dataclass(frozen=True)
class AssetConfig:
    """One ``get_assets`` entry: a token on a chain and the ledger symbol it counts under."""

    symbol: str
    token: str
    chain_id: int
    decimals: int

    def __post_init__(self) -> None:
        if not isinstance(self.symbol, str) or not self.symbol:
            raise SettlementValueError("asset symbol must be a non-empty string")
        object.__setattr__(self, "token", validate_address(self.token, field="asset token"))
        if isinstance(self.decimals, bool) or not isinstance(self.decimals, int):
            raise SettlementValueError(f"asset decimals must be an integer, got {self.decimals!r}")
        if not 0 <= self.decimals <= 36:
            raise SettlementValueError(f"asset decimals must be 0..36, got {self.decimals}")

    def to_json(self) -> dict[str, object]:
        return {
            "token": self.token,
            "chain_id": self.chain_id,
            "symbol": self.symbol,
            "decimals": self.decimals,
        }


@dataclass(frozen=True)
class NetworkConfig:
    """One ``get_config.networks`` entry."""

    chain_id: int
    name: str
    custody: str
    adjudicator: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "custody", validate_address(self.custody, field="custody"))
        object.__setattr__(
            self, "adjudicator", validate_address(self.adjudicator, field="adjudicator")
        )

    def to_json(self) -> dict[str, object]:
        return {
            "chain_id": self.chain_id,
            "name": self.name,
            "custody_address": self.custody,
            "adjudicator_address": self.adjudicator,
        }


@dataclass(frozen=True)
class RelayConfig:
    """Everything a :class:`~.server.RelayNode` needs besides a chain connection.

    ``broker_key``: ``None`` takes the key stored in the database, or generates one and stores
    it (a sandbox convenience so a restarted node keeps its identity). ``durability="full"``
    fsyncs every group commit (``synchronous=FULL``); ``"normal"`` survives a killed process
    but not a power cut, and is about twice as fast for one client sending sequentially.
    ``deterministic`` makes channel nonces and auth challenges come from counters kept in the
    database instead of the clock and a random source (reproducible notebooks).
    """

    db_path: Path
    networks: tuple[NetworkConfig, ...]
    assets: tuple[AssetConfig, ...]
    broker_key: PrivateKey | None = field(default=None, repr=False)
    host: str = "127.0.0.1"
    port: int = 0
    message_expiry_ms: int = 60_000
    challenge_period: int = DEFAULT_CHALLENGE_PERIOD
    durability: Literal["full", "normal"] = "full"
    deterministic: bool = False
    #: the off-chain account the faucet pays from (seeded once in a fresh ledger)
    faucet_account: str | None = None
    faucet_seed_units: int = DEFAULT_FAUCET_SEED_UNITS
    jwt_ttl_seconds: int = 24 * 3600
    #: how often the chain watcher polls custody events (seconds)
    poll_interval: float = 0.25
    #: first block the chain watcher reads on a fresh ledger
    start_block: int = 0
    #: ``bu``/``tr`` committed within this many seconds go out as one of each (0: per batch)
    notify_delay: float = 0.005
    #: recover the signers of requests that arrive together on a second thread as well as
    #: the loop's (:mod:`.signer_pool`); ``False``: the loop thread alone
    signer_threads: bool = True
    #: COMMIT on a writer thread (the fsync overlaps request handling) instead of on the
    #: loop once it is idle. With this disk's ~0.1 ms fsync the thread hand-offs cost more
    #: than the overlap saves (measured: pipelined 8.0k/s threaded, 9-10k/s inline); a
    #: disk whose fsync takes milliseconds (network block storage) wants the thread.
    commit_thread: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "db_path", Path(self.db_path))
        object.__setattr__(self, "networks", tuple(self.networks))
        object.__setattr__(self, "assets", tuple(self.assets))
        if self.durability not in DURABILITY_MODES:
            raise UnknownOptionError(
                f"unknown durability {self.durability!r}: use one of {', '.join(DURABILITY_MODES)}"
            )
        if self.faucet_account is not None:
            object.__setattr__(
                self, "faucet_account", validate_address(self.faucet_account, field="faucet")
            )
        symbols: dict[str, int] = {}
        for asset in self.assets:
            if symbols.setdefault(asset.symbol, asset.decimals) != asset.decimals:
                raise SettlementValueError(
                    f"asset {asset.symbol!r} is configured with two different decimals"
                )
        if self.host not in ("127.0.0.1", "localhost", "::1"):
            raise SettlementValueError(
                f"the sandbox relay only listens on loopback, got host {self.host!r}"
            )

    def asset_for_token(self, token: str, chain_id: int) -> AssetConfig | None:
        for asset in self.assets:
            if asset.chain_id == chain_id and asset.token.lower() == token.lower():
                return asset
        return None

    def network(self, chain_id: int) -> NetworkConfig | None:
        for network in self.networks:
            if network.chain_id == chain_id:
                return network
        return None
