"""Configuration of a channel provider: where the custody, adjudicator and relay are."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from ....addresses import validate_address
from ....errors import SettlementValueError
from ....networks import Network

__all__ = ["DEFAULT_APPLICATION", "MIN_CHALLENGE_PERIOD", "ChannelConfig"]

MIN_CHALLENGE_PERIOD = 3600
DEFAULT_APPLICATION = "settlement_widgets"


@dataclass(frozen=True)
class ChannelConfig:
    """What ``create_sepolia_channel_config()`` returns: custody, adjudicator, chain id,
    challenge period (3600 s) and the relay URL, plus the rest of the network profile
    (RPC, faucet, explorer, asset) so one object drives the whole lifecycle."""

    custody: str
    adjudicator: str
    chain_id: int
    node_url: str
    challenge_period: int = MIN_CHALLENGE_PERIOD
    rpc_url: str | None = None
    faucet_url: str | None = None
    explorer_base: str | None = None
    token: str | None = None
    asset_symbol: str = "ytest.usd"
    asset_decimals: int = 6
    network_name: str = "sepolia"
    #: EIP-712 domain name and application of the session key (auth_request ``application``)
    application: str = DEFAULT_APPLICATION
    #: session key lifetime in seconds
    session_expiry: int = 24 * 3600
    #: SQLite store; None means ``$SETTLEMENT_HOME/channel/<network>-<address>.sqlite``
    store_path: Path | None = None
    request_timeout: float = 30.0
    #: the chain's identity beside its id (a local sandbox's instance id; see
    #: :attr:`Network.instance`): the default store is one per chain instance
    chain_instance: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "custody", validate_address(self.custody, field="custody"))
        object.__setattr__(
            self, "adjudicator", validate_address(self.adjudicator, field="adjudicator")
        )
        if self.token is not None:
            object.__setattr__(self, "token", validate_address(self.token, field="token"))
        if self.challenge_period < MIN_CHALLENGE_PERIOD:
            raise SettlementValueError(
                f"challenge_period must be at least {MIN_CHALLENGE_PERIOD} s (the custody "
                f"contract's MIN_CHALLENGE_PERIOD), got {self.challenge_period}"
            )

    @classmethod
    def from_network(cls, network: Network, **overrides: object) -> ChannelConfig:
        """The config of ``network`` (Sepolia or a local sandbox profile)."""
        config = cls(
            custody=network.contracts.custody,
            adjudicator=network.contracts.adjudicator,
            chain_id=network.chain_id,
            node_url=network.node_url,
            rpc_url=network.rpc_url,
            faucet_url=network.faucet_url,
            explorer_base=network.explorer_base,
            token=network.token,
            asset_symbol=network.asset_symbol,
            asset_decimals=network.asset_decimals,
            network_name=network.name,
            chain_instance=network.instance,
        )
        return replace(config, **overrides) if overrides else config  # type: ignore[arg-type]

    @classmethod
    def sepolia(cls, **overrides: object) -> ChannelConfig:
        """Sepolia's config, with ``SEPOLIA_RPC_URL``, ``SETTLEMENT_RELAY_URL`` and
        ``SETTLEMENT_FAUCET_URL`` applied when set (see :func:`~..networks.sepolia_from_env`)."""
        from ....networks import sepolia_from_env

        return cls.from_network(sepolia_from_env(), **overrides)
