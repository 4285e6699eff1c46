"""Who owns the v4 hook and adapter, and can the hook hold policies? (``v4:contracts``)

The original answered with a fixed sentence (``hashpass-tech/jack``). Its deployed
hook's owner is the CREATE2 deterministic deployer, a contract that can only deploy
contracts, so ``setPolicy`` can never be called and every intent fails with POLICY_MISSING.
Here the notes are read from the chain (``owner()`` of each contract, and whether the owner
has code) when an RPC URL is configured; otherwise, on Sepolia, they come from the recorded
facts and say so.

:func:`ownership_notes` is pure (facts in, notes out); :func:`read_ownership` is the effect.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..addresses import short, to_checksum
from ..errors import ChainUnavailableError, ConfigurationError
from ..networks import SEPOLIA
from ..v4.core.create2 import CREATE2_DEPLOYER

if TYPE_CHECKING:
    from ..networks import Network

__all__ = [
    "CREATE2_DEPLOYER",
    "RECORDED_SEPOLIA_FACTS",
    "SOURCE_CHAIN",
    "SOURCE_RECORDED",
    "OwnerFact",
    "contracts_body",
    "ownership_notes",
    "read_ownership",
    "redact_url",
]

SOURCE_CHAIN = "chain"
SOURCE_RECORDED = "recorded from Sepolia on 2026-02-08"
_OWNER_SELECTOR = "0x8da5cb5b"  # owner()
_DELEGATION_PREFIX = b"\xef\x01\x00"  # EIP-7702: a delegated account is still an account


@dataclass(frozen=True)
class OwnerFact:
    """What is known about one contract's owner; ``error`` when it could not be read."""

    contract: str  # "policyHook" | "settlementAdapter"
    address: str
    owner: str | None = None
    owner_is_contract: bool | None = None
    error: str | None = None


#: the v4 proof of 2026-02-08 (``hashpass-tech/jack``): the hook is owned by the
#: CREATE2 proxy, the adapter by the deployer account. Addresses come from
#: :data:`settlement_widgets.networks.SEPOLIA`, where they are written down once.
RECORDED_SEPOLIA_FACTS = (
    OwnerFact(
        "policyHook",
        SEPOLIA.contracts.policy_hook,
        CREATE2_DEPLOYER,
        True,
    ),
    OwnerFact(
        "settlementAdapter",
        SEPOLIA.contracts.settlement_adapter,
        SEPOLIA.deployer,
        False,
    ),
)

_LABELS = {"policyHook": "PolicyHook", "settlementAdapter": "SettlementAdapter"}


def _note(fact: OwnerFact, source: str) -> dict[str, Any]:
    label = _LABELS.get(fact.contract, fact.contract)
    note: dict[str, Any] = {"contract": fact.contract, "address": fact.address, "source": source}
    if fact.error is not None or fact.owner is None:
        note["text"] = f"{label} owner could not be read: {fact.error or 'unknown'}"
        return note
    owner = fact.owner
    note["owner"] = owner
    note["ownerIsContract"] = fact.owner_is_contract
    what = (
        "the CREATE2 deterministic deployer, which can only deploy contracts"
        if owner == CREATE2_DEPLOYER
        else "a contract"
        if fact.owner_is_contract
        else "an account"
    )
    if fact.contract == "policyHook":
        can_hold = not fact.owner_is_contract
        note["canHoldPolicies"] = can_hold
        if can_hold:
            note["text"] = (
                f"{label} owner is {short(owner)} ({what}): it can call setPolicy, "
                "so the hook can hold policies."
            )
        else:
            note["text"] = (
                f"{label} owner is {short(owner)} ({what}): it cannot call setPolicy, so the "
                "hook cannot hold policies and every settleIntent is rejected with "
                "POLICY_MISSING."
            )
    else:
        note["text"] = f"{label} owner is {short(owner)} ({what})" + (
            "." if fact.owner_is_contract else ": it can authorize solvers."
        )
    return note


def ownership_notes(facts: tuple[OwnerFact, ...], source: str) -> list[dict[str, Any]]:
    """One note per contract: owner, whether it is a contract, and what that means."""
    return [_note(f, source) for f in facts]


def redact_url(url: str) -> str:
    """Scheme and host only: RPC URLs often carry an API key in the path or query."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "<invalid URL>"
    return f"{parts.scheme}://{host}{port}" if parts.scheme and host else "<RPC URL>"


async def _read_one(w3: Any, contract: str, address: str, rpc_url: str) -> OwnerFact:
    from eth_abi import decode
    from web3.exceptions import Web3Exception

    try:
        raw = await w3.eth.call({"to": address, "data": _OWNER_SELECTOR})
        if len(raw) < 32:
            return OwnerFact(contract, address, error="owner() returned no value (no contract?)")
        (owner,) = decode(["address"], bytes(raw[:32]))
        owner = to_checksum(owner)
        code = bytes(await w3.eth.get_code(owner))
    except (Web3Exception, ValueError) as exc:  # a revert or a node refusing the call
        detail = str(exc).replace(rpc_url, redact_url(rpc_url))[:200] or type(exc).__name__
        return OwnerFact(contract, address, error=f"owner() failed: {detail}")
    is_contract = bool(code) and not (len(code) == 23 and code.startswith(_DELEGATION_PREFIX))
    return OwnerFact(contract, address, owner, is_contract)


async def read_ownership(
    rpc_url: str, hook: str, adapter: str, *, timeout: float = 5.0
) -> tuple[OwnerFact, ...]:
    """Read ``owner()`` of the hook and adapter and whether each owner has code.

    Raises :class:`~settlement_widgets.errors.ChainUnavailableError` when the node cannot be
    reached in ``timeout`` seconds; a contract whose ``owner()`` fails gets a fact with
    ``error`` instead.
    """
    if not rpc_url.startswith(("http://", "https://")):
        raise ConfigurationError(
            f"the RPC URL must be http(s) for ownership reads, got {redact_url(rpc_url)!r}"
        )
    import aiohttp
    from web3 import AsyncHTTPProvider, AsyncWeb3

    provider = AsyncHTTPProvider(rpc_url, request_kwargs={"timeout": timeout})
    w3 = AsyncWeb3(provider)
    try:
        async with asyncio.timeout(timeout):
            return (
                await _read_one(w3, "policyHook", hook, rpc_url),
                await _read_one(w3, "settlementAdapter", adapter, rpc_url),
            )
    except (TimeoutError, aiohttp.ClientError, OSError) as exc:
        detail = str(exc).replace(rpc_url, redact_url(rpc_url)) or type(exc).__name__
        raise ChainUnavailableError(
            f"cannot read ownership from {redact_url(rpc_url)}: {detail}"
        ) from exc
    finally:
        await provider.disconnect()


async def contracts_body(network: Network, *, rpc_timeout: float = 5.0) -> dict[str, Any]:
    """The ``v4:contracts`` answer for ``network``: addresses, deployer and ownership notes."""
    c = network.contracts
    notes: list[dict[str, Any]] = []
    recorded_applies = (
        c.policy_hook == SEPOLIA.contracts.policy_hook
        and c.settlement_adapter == SEPOLIA.contracts.settlement_adapter
    )
    if network.rpc_url:
        try:
            facts = await read_ownership(
                network.rpc_url, c.policy_hook, c.settlement_adapter, timeout=rpc_timeout
            )
            notes = ownership_notes(facts, SOURCE_CHAIN)
        except (ChainUnavailableError, ConfigurationError) as exc:
            notes = [{"source": SOURCE_CHAIN, "text": f"Ownership not read from chain: {exc}"}]
    if not any("owner" in n for n in notes):  # nothing read from chain
        if recorded_applies:
            notes += ownership_notes(RECORDED_SEPOLIA_FACTS, SOURCE_RECORDED)
        elif not network.rpc_url:
            notes.append({"source": "configuration", "text": "No RPC URL: ownership not read."})
    return {
        "status": "ok",
        "contracts": {
            "policyHook": c.policy_hook,
            "settlementAdapter": c.settlement_adapter,
            "poolManager": c.pool_manager,
        },
        "deployer": network.deployer,
        "notes": notes,
    }
