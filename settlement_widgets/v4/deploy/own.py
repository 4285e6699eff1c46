"""The user's own v4 deployment on a public chain: a hook that can hold policies.

The hook deployed on Sepolia is owned by the CREATE2 deployer that created it, so no policy
can ever be set on it and no intent can settle through it (:mod:`..client.inspection` says so). On
a chain we do not control, the way forward is to deploy the method again with the user as
owner, next to the network's real ``PoolManager``:

1. two ``V4TestToken`` ERC-20s (anyone may mint them: they are test tokens);
2. ``PolicyHook(poolManager, owner=user)`` through the deterministic CREATE2 deployer
   (``0x4e59…956C``, present on Sepolia and in anvil) at the first salt whose address carries
   exactly ``beforeSwap``; the owner is a constructor argument, so the factory is not it;
3. ``SettlementAdapter(hook, owner=user)``;
4. v4-core's ``PoolModifyLiquidityTest`` router on that PoolManager;
5. the pool (fee 3000, tick spacing 60, 1:1) initialised with the hook, and liquidity.

Each step is recorded as soon as it is mined in ``$SETTLEMENT_HOME/v4/own_deployments.json``,
keyed by chain id, genesis block and owner: the next session reuses what is there (after
checking the code is still on chain), and a session interrupted half-way resumes where it
stopped instead of paying again. Gas is estimated per step, as on any public chain.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from eth_abi import encode
from eth_hash.auto import keccak

from ...addresses import ZERO_ADDRESS, validate_address
from ...atomic_file import write_atomic
from ...contracts import load_artifact
from ...errors import ConfigurationError
from ..core.create2 import CREATE2_DEPLOYER, SaltSearch, mine_hook_salt
from ..core.flags import BEFORE_SWAP_FLAG
from ..core.pool import PoolKey
from .stack import (
    POOL_FEE,
    POOL_TICK_SPACING,
    V4Deployment,
    _contract,
    deploy_artifact,
    hook_init_code,
    seed_pool,
)

if TYPE_CHECKING:
    from web3 import AsyncWeb3

    from ...networks import Network
    from ...signer import Signer

__all__ = ["OwnV4Deployment", "deploy_own_v4", "own_deployments_path", "recorded_own_v4"]

#: ``StateLibrary.POOLS_SLOT``: where v4's PoolManager keeps ``mapping(PoolId => Pool.State)``
_POOLS_SLOT = 6
_STEPS = ("token_a", "token_b", "hook", "adapter", "modify_router", "pool")


@dataclass(frozen=True)
class OwnV4Deployment:
    """The user's deployment, and which of its steps this call sent (the others were
    reused from the store)."""

    deployment: V4Deployment
    sent: tuple[str, ...]
    reused: tuple[str, ...]
    store: Path

    def apply_to(self, network: Network) -> Network:
        """``network`` with this deployment's hook, adapter and pool."""
        return self.deployment.apply_to(network)

    def __str__(self) -> str:
        d = self.deployment
        how = (
            "reused from " + str(self.store)
            if not self.sent
            else f"deployed {', '.join(self.sent)}"
            + (f"; reused {', '.join(self.reused)}" if self.reused else "")
        )
        return (
            f"own v4 deployment of {d.owner}: hook {d.hook} (salt {d.hook_salt}), adapter "
            f"{d.adapter}, pool {d.pool_key.pool_id} on PoolManager {d.pool_manager} ({how})"
        )


def own_deployments_path() -> Path:
    """``$SETTLEMENT_HOME/v4/own_deployments.json``."""
    from ...networks import settlement_home

    return settlement_home() / "v4" / "own_deployments.json"


def _load(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise ConfigurationError(f"the own-deployment store {path} is unreadable: {exc}") from exc
    return data if isinstance(data, dict) else {}


def _save(path: Path, key: str, record: dict[str, Any]) -> None:
    data = _load(path)
    data[key] = record
    write_atomic(path, json.dumps(data, indent=2, sort_keys=True) + "\n")


async def _has_code(w3: AsyncWeb3, address: str | None) -> bool:
    return bool(address) and bool(await w3.eth.get_code(address))  # type: ignore[arg-type]


async def _pool_initialised(w3: AsyncWeb3, pool_manager: str, key: PoolKey) -> bool:
    slot = keccak(encode(["bytes32", "uint256"], [bytes.fromhex(key.pool_id[2:]), _POOLS_SLOT]))
    manager = _contract(w3, "PoolManager", pool_manager)
    word = await manager.functions.extsload(slot).call()
    return int.from_bytes(bytes(word)[12:], "big") != 0  # slot0's sqrtPriceX96 (low 160 bits)


async def _store_key(wallet: Signer, network: Network) -> str:
    """Chain id, genesis block (a chain restarted under the same id is another chain),
    owner and PoolManager: what one recorded deployment belongs to."""
    chain_id = await wallet.chain_id()
    if chain_id != network.chain_id:
        raise ConfigurationError(
            f"the wallet's node is on chain {chain_id}, the network {network.name!r} is "
            f"{network.chain_id}"
        )
    genesis = bytes((await wallet.w3.eth.get_block(0))["hash"]).hex()[:16]  # type: ignore[index]
    return f"{chain_id}:{genesis}:{wallet.address}:{network.contracts.pool_manager}"


def _deployment(
    record: dict[str, Any],
    pool_manager: str,
    owner: str,
    pool_key: PoolKey,
    t0: float,
    search: SaltSearch | None = None,
) -> V4Deployment:
    if search is None:  # the salt is not stored: it is found again in milliseconds
        init_code = hook_init_code(pool_manager, owner)
        search = mine_hook_salt(CREATE2_DEPLOYER, keccak(init_code), BEFORE_SWAP_FLAG)
    return V4Deployment(
        pool_manager=pool_manager,
        modify_liquidity_router=record["modify_router"],
        swap_router=ZERO_ADDRESS,
        token0=pool_key.currency0,
        token1=pool_key.currency1,
        hook_deployer=CREATE2_DEPLOYER,
        hook=record["hook"],
        hook_salt=search.salt,
        adapter=record["adapter"],
        owner=owner,
        hook_owner=owner,
        pool_key=pool_key,
        salt_attempts=search.attempts,
        salt_search_seconds=search.seconds,
        deploy_seconds=time.perf_counter() - t0,
    )


async def recorded_own_v4(
    wallet: Signer, network: Network, *, store: Path | None = None
) -> OwnV4Deployment | None:
    """``wallet``'s complete own deployment on ``network`` from the store, if its contracts
    and pool are still on chain; None otherwise. Sends nothing (what the dashboard uses to
    settle on Sepolia through a deployment notebook 04 made)."""
    t0 = time.perf_counter()
    path = store or own_deployments_path()
    record = _load(path).get(await _store_key(wallet, network))
    if not isinstance(record, dict) or not all(record.get(step) for step in _STEPS):
        return None
    w3 = wallet.w3
    for step in _STEPS[:-1]:
        if not await _has_code(w3, record[step]):
            return None
    pool_manager = network.contracts.pool_manager
    pool_key = PoolKey.for_tokens(
        record["token_a"],
        record["token_b"],
        fee=POOL_FEE,
        tick_spacing=POOL_TICK_SPACING,
        hooks=record["hook"],
    )
    if record["pool"] != pool_key.pool_id or not await _pool_initialised(
        w3, pool_manager, pool_key
    ):
        return None
    deployment = _deployment(record, pool_manager, wallet.address, pool_key, t0)
    return OwnV4Deployment(deployment, (), _STEPS, path)


async def deploy_own_v4(
    wallet: Signer, network: Network, *, store: Path | None = None
) -> OwnV4Deployment:
    """Deploy (or reuse) ``wallet``'s own hook, adapter and pool next to ``network``'s
    PoolManager; ``wallet`` owns both and provides the liquidity. See the module docstring.
    """
    w3 = wallet.w3
    path = store or own_deployments_path()
    t0 = time.perf_counter()
    key = await _store_key(wallet, network)
    chain_id = network.chain_id
    pool_manager = network.contracts.pool_manager
    if not await _has_code(w3, pool_manager):
        raise ConfigurationError(f"no PoolManager at {pool_manager} on chain {chain_id}")
    if not await _has_code(w3, CREATE2_DEPLOYER):
        raise ConfigurationError(
            f"chain {chain_id} has no deterministic CREATE2 deployer at {CREATE2_DEPLOYER}"
        )
    owner = wallet.address
    record: dict[str, Any] = dict(_load(path).get(key) or {})
    sent: list[str] = []
    reused: list[str] = []

    async def step(name: str, address_of: Any) -> str:
        """The address of step ``name``: the recorded one while its code is there, else
        deploy now and record it before anything else happens."""
        known = record.get(name)
        if known and await _has_code(w3, known):
            reused.append(name)
            return str(known)
        address = validate_address(await address_of(), field=name)
        record[name] = address
        _save(path, key, record)
        sent.append(name)
        return address

    token_a = await step(
        "token_a",
        lambda: deploy_artifact(w3, wallet, "V4TestToken", "V4 Test Token A", "V4A", gas=None),
    )
    token_b = await step(
        "token_b",
        lambda: deploy_artifact(w3, wallet, "V4TestToken", "V4 Test Token B", "V4B", gas=None),
    )
    init_code = hook_init_code(pool_manager, owner)
    search = mine_hook_salt(CREATE2_DEPLOYER, keccak(init_code), BEFORE_SWAP_FLAG)

    async def deploy_hook() -> str:
        if not await _has_code(w3, search.address):  # a run stopped before recording it
            await wallet.transact(
                to=CREATE2_DEPLOYER,
                data=search.salt_bytes + init_code,
                abis=[load_artifact("PolicyHook").abi],
            )
        if not await _has_code(w3, search.address):
            raise ConfigurationError(f"the hook did not land at the mined address {search.address}")
        return search.address

    hook = await step("hook", deploy_hook)
    await step(
        "adapter", lambda: deploy_artifact(w3, wallet, "SettlementAdapter", hook, owner, gas=None)
    )
    router = await step(
        "modify_router",
        lambda: deploy_artifact(w3, wallet, "PoolModifyLiquidityTest", pool_manager, gas=None),
    )
    pool_key = PoolKey.for_tokens(
        token_a, token_b, fee=POOL_FEE, tick_spacing=POOL_TICK_SPACING, hooks=hook
    )
    if record.get("pool") == pool_key.pool_id and await _pool_initialised(
        w3, pool_manager, pool_key
    ):
        reused.append("pool")
    else:  # a run stopped after initialising is given its liquidity without a second init
        initialised = await _pool_initialised(w3, pool_manager, pool_key)
        await seed_pool(
            w3, wallet, pool_manager, router, pool_key, gas=None, initialise=not initialised
        )
        record["pool"] = pool_key.pool_id
        _save(path, key, record)
        sent.append("pool")
    deployment = _deployment(record, pool_manager, owner, pool_key, t0, search)
    assert set(sent) | set(reused) == set(_STEPS)
    return OwnV4Deployment(deployment, tuple(sent), tuple(reused), path)
