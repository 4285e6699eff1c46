"""Network profiles: the only thing that differs between Sepolia and the local sandbox.

A :class:`Network` carries the chain id, the contract addresses, the relay and faucet URLs,
the block explorer and the JSON-RPC URL. Providers take a ``Network`` and never branch on its
name: if the sandbox behaves differently from Sepolia, the sandbox is fixed.

``get_network()`` reads ``SETTLEMENT_NETWORK`` (``local`` by default, ``sepolia`` or
``sepolia-v1``). The
local profile is written by the sandbox (``python -m settlement_widgets.sandbox``) to
``$SETTLEMENT_HOME/sandbox/profile.json`` or to ``SETTLEMENT_PROFILE``; ``LocalSandbox``
in-process hands its ``Network`` over directly.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Final

from .addresses import validate_address
from .errors import ConfigurationError, InvalidNetworkError

__all__ = [
    "NETWORK_NAMES",
    "PROTOCOLS",
    "PROTOCOL_V05",
    "PROTOCOL_V1",
    "PUBLIC_NETWORKS",
    "SEPOLIA",
    "SEPOLIA_ENV",
    "SEPOLIA_V1",
    "SEPOLIA_V1_CHAINS",
    "Explorer",
    "Network",
    "NetworkContracts",
    "get_network",
    "local",
    "sepolia_from_env",
    "settlement_home",
]

NETWORK_NAMES = ("local", "sepolia", "sepolia-v1")
#: the networks that are public chains (read through ``SEPOLIA_RPC_URL``), not a sandbox
PUBLIC_NETWORKS = ("sepolia", "sepolia-v1")

#: the channel method's wire protocols: Nitrolite v0.5 (ClearNode, Custody) and Nitrolite v1
#: (Nitronode, ChannelHub). A profile names one, so the provider picks its client from the
#: profile and never from a URL's look.
PROTOCOL_V05: Final = "nitrolite-v0.5"
PROTOCOL_V1: Final = "nitrolite-v1"
PROTOCOLS = (PROTOCOL_V05, PROTOCOL_V1)


@dataclass(frozen=True)
class Explorer:
    """Links into a block explorer (Etherscan on Sepolia, the sandbox's own pages locally)."""

    base: str

    def tx_url(self, tx_hash: str) -> str:
        return f"{self.base.rstrip('/')}/tx/{tx_hash}"

    def address_url(self, address: str) -> str:
        return f"{self.base.rstrip('/')}/address/{address}"


@dataclass(frozen=True)
class NetworkContracts:
    """Contract addresses of the ``channel`` and ``v4`` methods on one chain (EIP-55)."""

    custody: str
    adjudicator: str
    policy_hook: str
    settlement_adapter: str
    pool_manager: str
    #: Nitrolite v1's ChannelHub (None where the network runs no v1 node)
    channel_hub: str | None = None

    def __post_init__(self) -> None:
        for name in ("custody", "adjudicator", "policy_hook", "settlement_adapter", "pool_manager"):
            object.__setattr__(self, name, validate_address(getattr(self, name), field=name))
        if self.channel_hub is not None:
            object.__setattr__(
                self, "channel_hub", validate_address(self.channel_hub, field="channel_hub")
            )


@dataclass(frozen=True)
class Network:
    """Everything a provider needs to know about where it settles."""

    name: str
    chain_id: int
    contracts: NetworkContracts
    node_url: str
    faucet_url: str
    explorer_base: str
    rpc_url: str | None = None
    #: deployer of the v4 contracts (reported by the ``v4:contracts`` action)
    deployer: str | None = None
    #: the channel asset: ERC-20 address, symbol and decimals
    token: str | None = None
    asset_symbol: str = "ytest.usd"
    asset_decimals: int = 6
    #: extra profile data (v4 test tokens and pool, broker address, ...) written by the sandbox
    extra: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    #: which chain of this chain id: every local sandbox is a new chain with the same chain
    #: id (31337), so stores key local data by this id (None for public networks, whose
    #: chain id is unique)
    instance: str | None = None
    #: the channel method's protocol at ``node_url``: ``"nitrolite-v0.5"`` or ``"nitrolite-v1"``
    protocol: str = PROTOCOL_V05

    def __post_init__(self) -> None:
        if self.name not in NETWORK_NAMES:
            raise InvalidNetworkError(
                f"unknown network {self.name!r}; valid networks: {', '.join(NETWORK_NAMES)}"
            )
        if self.protocol not in PROTOCOLS:
            raise InvalidNetworkError(
                f"unknown channel protocol {self.protocol!r}; valid: {', '.join(PROTOCOLS)}"
            )
        if self.protocol == PROTOCOL_V1 and self.contracts.channel_hub is None:
            raise InvalidNetworkError(
                f"network {self.name!r} speaks {PROTOCOL_V1} but names no ChannelHub contract"
            )
        if not isinstance(self.chain_id, int) or self.chain_id <= 0:
            raise InvalidNetworkError(f"chain_id must be a positive integer, got {self.chain_id!r}")

    @property
    def explorer(self) -> Explorer:
        return Explorer(self.explorer_base)

    def chain_ids(self) -> tuple[int, ...]:
        """Every chain this profile reaches the channel method on: its own, then those a
        Nitrolite v1 node serves beside it (``extra["v1Chains"]``: a sandbox started with
        ``protocol="v1", aggregator=True``, or ``sepolia-v1`` with a second chain's JSON-RPC
        variable set, see :data:`SEPOLIA_V1_CHAINS`). A chain the node serves but whose
        variable is unset is not reached, so it is not listed."""
        return (self.chain_id, *(int(c["chainId"]) for c in self.extra.get("v1Chains", ())))

    def on_chain(self, chain_id: int) -> Network:
        """This profile as seen from another chain its Nitrolite v1 node serves: the same
        node, that chain's JSON-RPC, ChannelHub, token and explorer. A
        :class:`~settlement_widgets.channel.v1.ChannelProviderV1` built on it keeps its home
        channel there; its balance is the same one the node keeps across chains."""
        if chain_id == self.chain_id:
            return self
        for entry in self.extra.get("v1Chains", ()):
            if int(entry["chainId"]) == chain_id:
                # a public profile's token there is the node's to name (None: read from
                # its asset list, as on the home chain)
                token = entry.get("token")
                return replace(
                    self,
                    chain_id=chain_id,
                    rpc_url=str(entry["rpcUrl"]),
                    token=None if token is None else str(token),
                    explorer_base=str(entry["explorerBase"]),
                    contracts=replace(self.contracts, channel_hub=str(entry["channelHub"])),
                )
        for entry in self.extra.get("v1ChainsByEnv", ()):
            if int(entry["chainId"]) == chain_id:
                raise InvalidNetworkError(
                    f"network {self.name!r} reaches chain {chain_id} ({entry['name']}) through "
                    f"the JSON-RPC URL in {entry['rpcEnv']}, which is not set: set it to an "
                    f"RPC endpoint of that chain (http(s):// or ws(s)://)"
                )
        raise InvalidNetworkError(
            f"network {self.name!r} serves the channel method on chains {list(self.chain_ids())}, "
            f"not on {chain_id}"
        )

    def with_rpc_url(self, rpc_url: str | None) -> Network:
        return replace(self, rpc_url=rpc_url)

    def to_json(self) -> dict[str, Any]:
        """The profile as JSON (the sandbox prints this); camelCase like the endpoint's body."""
        c = self.contracts
        return {
            "name": self.name,
            "chainId": self.chain_id,
            "contracts": {
                "custody": c.custody,
                "adjudicator": c.adjudicator,
                "policyHook": c.policy_hook,
                "settlementAdapter": c.settlement_adapter,
                "poolManager": c.pool_manager,
                "channelHub": c.channel_hub,
            },
            "nodeUrl": self.node_url,
            "faucetUrl": self.faucet_url,
            "explorerBase": self.explorer_base,
            "rpcUrl": self.rpc_url,
            "deployer": self.deployer,
            "token": self.token,
            "assetSymbol": self.asset_symbol,
            "assetDecimals": self.asset_decimals,
            "extra": self.extra,
            "instance": self.instance,
            "protocol": self.protocol,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Network:
        try:
            c = data["contracts"]
            return cls(
                name=data["name"],
                chain_id=int(data["chainId"]),
                contracts=NetworkContracts(
                    custody=c["custody"],
                    adjudicator=c["adjudicator"],
                    policy_hook=c["policyHook"],
                    settlement_adapter=c["settlementAdapter"],
                    pool_manager=c["poolManager"],
                    channel_hub=c.get("channelHub"),
                ),
                node_url=data["nodeUrl"],
                faucet_url=data["faucetUrl"],
                explorer_base=data["explorerBase"],
                rpc_url=data.get("rpcUrl"),
                deployer=data.get("deployer"),
                token=data.get("token"),
                asset_symbol=data.get("assetSymbol", "ytest.usd"),
                asset_decimals=int(data.get("assetDecimals", 6)),
                extra=dict(data.get("extra") or {}),
                instance=data.get("instance"),
                protocol=data.get("protocol", PROTOCOL_V05),
            )
        except (KeyError, TypeError) as exc:
            raise ConfigurationError(
                f"network profile is missing or has a bad field: {exc}"
            ) from exc

    def describe(self) -> dict[str, Any]:
        return asdict(self)


SEPOLIA = Network(
    name="sepolia",
    chain_id=11155111,
    contracts=NetworkContracts(
        custody="0x019B65A265EB3363822f2752141b3dF16131b262",
        adjudicator="0x7c7ccbc98469190849BCC6c926307794fDfB11F2",
        policy_hook="0xE8142B1Ff0DA631866fec5771f4291CbCe718080",
        settlement_adapter="0xd8f0415b488F2BA18EF14F5C41989EEf90E51D1A",
        pool_manager="0xE03A1074c86CFeDd5C142C4F04F1a1536e203543",
    ),
    node_url="wss://clearnet-sandbox.yellow.com/ws",
    faucet_url="https://clearnet-sandbox.yellow.com/faucet/requestTokens",
    explorer_base="https://sepolia.etherscan.io",
    rpc_url=None,
    deployer="0x114d72D97Aa9C413A1ba3f0Cd37F439D668EA1aD",
    token="0xDB9F293e3898c9E5536A3be1b0C56c89d2b32DEb",
)

#: the other chains Yellow's public v1 sandbox node serves that ``sepolia-v1`` reaches, each
#: once its variable holds a JSON-RPC URL of that chain (the user's own provider, as
#: ``SEPOLIA_RPC_URL`` is; Nitrolite ``nitronode/chart/config/sandbox-v1/blockchains.yaml``).
#: What is public and fixed is pinned: the chain id, the node's name for it, the ChannelHub
#: (the same address as on Sepolia; a provider checks it against the node's ``get_config``)
#: and the explorer. The token is not: the provider reads it from the node's asset list for
#: that chain, as it does on Sepolia. ``Network.on_chain`` names the variable when it is unset.
SEPOLIA_V1_CHAINS: Final[tuple[dict[str, Any], ...]] = (
    {
        "chainId": 84532,
        "name": "base_sepolia",
        "rpcEnv": "BASE_SEPOLIA_RPC_URL",
        "channelHub": "0x5DBa8515af063Db0c243C15eCE7B99F91459C7C3",
        "explorerBase": "https://sepolia.basescan.org",
    },
)

#: Sepolia with Yellow's Nitrolite v1 sandbox (Nitronode, v1.3.0+ host) and its ChannelHub
#: (its public v1 sandbox). The v4 contracts are Sepolia's, as in :data:`SEPOLIA`; the
#: v1 asset is ``yusd`` and its token is read from the node (``node.v1.get_assets``), so no
#: token is pinned here. The node's other chains are reached when their variable is set
#: (:data:`SEPOLIA_V1_CHAINS`, read by :func:`sepolia_from_env`).
SEPOLIA_V1 = replace(
    SEPOLIA,
    name="sepolia-v1",
    contracts=replace(SEPOLIA.contracts, channel_hub="0x5dba8515af063db0c243c15ece7b99f91459c7c3"),
    node_url="wss://nitronode-sandbox.yellow.org/v1/ws",
    faucet_url="https://nitronode-sandbox.yellow.org/v1/faucet-app/requestTokens",
    token=None,
    asset_symbol="yusd",
    asset_decimals=6,
    protocol=PROTOCOL_V1,
    extra={"v1ChainsByEnv": [dict(c) for c in SEPOLIA_V1_CHAINS]},
)


def local(
    *,
    chain_id: int,
    custody: str,
    adjudicator: str,
    policy_hook: str,
    settlement_adapter: str,
    pool_manager: str,
    node_url: str,
    faucet_url: str,
    explorer_base: str,
    rpc_url: str | None = None,
    deployer: str | None = None,
    token: str | None = None,
    extra: dict[str, Any] | None = None,
    instance: str | None = None,
    channel_hub: str | None = None,
    protocol: str = PROTOCOL_V05,
) -> Network:
    """A profile for the local sandbox (built by the sandbox once it has deployed)."""
    return Network(
        name="local",
        chain_id=chain_id,
        contracts=NetworkContracts(
            custody=custody,
            adjudicator=adjudicator,
            policy_hook=policy_hook,
            settlement_adapter=settlement_adapter,
            pool_manager=pool_manager,
            channel_hub=channel_hub,
        ),
        node_url=node_url,
        faucet_url=faucet_url,
        explorer_base=explorer_base,
        rpc_url=rpc_url,
        deployer=deployer,
        token=token,
        extra=dict(extra or {}),
        instance=instance,
        protocol=protocol,
    )


def settlement_home() -> Path:
    """``$SETTLEMENT_HOME``, or the user data dir; where stores and profiles live."""
    env = os.environ.get("SETTLEMENT_HOME")
    if env:
        return Path(env)
    from platformdirs import user_data_dir

    return Path(user_data_dir("settlement_widgets", appauthor=False))


def _profile_path() -> Path:
    env = os.environ.get("SETTLEMENT_PROFILE")
    return Path(env) if env else settlement_home() / "sandbox" / "profile.json"


#: environment variables that point the Sepolia profiles at other services, as a user with
#: their own RPC provider, relay or faucet (or the project's offline Sepolia twin) would
SEPOLIA_ENV: dict[str, str] = {
    "SEPOLIA_RPC_URL": "rpc_url",
    "SETTLEMENT_RELAY_URL": "node_url",
    "SETTLEMENT_FAUCET_URL": "faucet_url",
}
_SCHEMES = {
    "rpc_url": ("http://", "https://", "ws://", "wss://"),
    "node_url": ("ws://", "wss://"),
    "faucet_url": ("http://", "https://"),
}


def _env_value(environ: Mapping[str, str], var: str, field_name: str) -> str | None:
    """``var``'s value (None when unset or blank), checked to have ``field_name``'s scheme."""
    value = (environ.get(var) or "").strip()
    if not value:
        return None
    if not value.lower().startswith(_SCHEMES[field_name]):
        raise InvalidNetworkError(
            f"{var} must start with {' or '.join(_SCHEMES[field_name])}, got {value[:80]!r}"
        )
    return value


def sepolia_from_env(base: Network = SEPOLIA, environ: Mapping[str, str] | None = None) -> Network:
    """``base`` (:data:`SEPOLIA`, or :data:`SEPOLIA_V1` for ``sepolia-v1``) with the overrides
    of :data:`SEPOLIA_ENV` that are set: the JSON-RPC URL (``SEPOLIA_RPC_URL``), the node's
    WebSocket (``SETTLEMENT_RELAY_URL``: the ClearNode for ``sepolia``, the Nitronode for
    ``sepolia-v1``) and the faucet (``SETTLEMENT_FAUCET_URL``); for ``sepolia-v1`` also each
    other chain of :data:`SEPOLIA_V1_CHAINS` whose JSON-RPC variable is set (e.g.
    ``BASE_SEPOLIA_RPC_URL``), added to ``extra["v1Chains"]`` so ``on_chain`` reaches it.
    Contracts, chain id, protocol, asset and explorer stay the profile's, so a twin (``python
    -m settlement_widgets.sandbox --twin sepolia-v1``) is reached by exactly the variables a
    real user sets. A value with the wrong scheme is an :class:`InvalidNetworkError` naming
    the variable. ``environ``: where to read them (``os.environ`` by default)."""
    env = os.environ if environ is None else environ
    changes: dict[str, Any] = {}
    for var, field_name in SEPOLIA_ENV.items():
        value = _env_value(env, var, field_name)
        if value is not None:
            changes[field_name] = value
    reached = []
    for entry in base.extra.get("v1ChainsByEnv", ()):
        rpc_url = _env_value(env, str(entry["rpcEnv"]), "rpc_url")
        if rpc_url is not None:
            reached.append(
                {
                    "chainId": int(entry["chainId"]),
                    "rpcUrl": rpc_url,
                    "token": None,  # the node's asset list names it
                    "explorerBase": str(entry["explorerBase"]),
                    "channelHub": str(entry["channelHub"]),
                }
            )
    if reached:
        changes["extra"] = {**base.extra, "v1Chains": [*base.extra.get("v1Chains", ()), *reached]}
    return replace(base, **changes) if changes else base


def get_network(name: str | None = None) -> Network:
    """The configured network: ``name``, else ``$SETTLEMENT_NETWORK``, else ``local``.

    ``sepolia`` and ``sepolia-v1`` take their RPC URL from ``SEPOLIA_RPC_URL`` and their node
    and faucet from ``SETTLEMENT_RELAY_URL``/``SETTLEMENT_FAUCET_URL`` when set, and
    ``sepolia-v1`` its node's other chains from their RPC variables (``BASE_SEPOLIA_RPC_URL``)
    (:func:`sepolia_from_env`).
    ``local`` reads the profile the
    sandbox wrote (``SETTLEMENT_PROFILE`` or ``$SETTLEMENT_HOME/sandbox/profile.json``).
    """
    chosen = (name if name is not None else os.environ.get("SETTLEMENT_NETWORK", "local")).strip()
    key = chosen.lower()
    if key not in NETWORK_NAMES:
        raise InvalidNetworkError(
            f"unknown network {chosen!r}; valid networks: {', '.join(NETWORK_NAMES)}"
        )
    if key == "sepolia":
        return sepolia_from_env()
    if key == "sepolia-v1":
        return sepolia_from_env(SEPOLIA_V1)
    path = _profile_path()
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise ConfigurationError(
            f"no local sandbox profile at {path}: start one with "
            "`python -m settlement_widgets.sandbox` (or use `async with LocalSandbox()` "
            "in-process), or set SETTLEMENT_NETWORK=sepolia"
        ) from None
    except json.JSONDecodeError as exc:
        raise ConfigurationError(f"the sandbox profile at {path} is not valid JSON: {exc}") from exc
    return Network.from_json(data)
