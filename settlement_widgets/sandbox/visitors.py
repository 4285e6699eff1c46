"""Wallets of their own for each visitor of a shared sandbox.

Every kernel of a Jupyter server that shares one sandbox (:mod:`.shared`) used to act with the
same deterministic dev wallets, so a channel one kernel left open (its page reloaded, its
kernel culled) blocked the channel method for every other kernel: the relay allows one open
channel per wallet and token, and the channel's records lived in the store of the kernel that
had gone. So a kernel of a shared sandbox generates fresh keys of its own (they never leave
the kernel) and asks the sandbox's operator to fund their addresses, through
``POST /operator/fund`` on the sandbox's loopback HTTP server:

* gas (native ETH) on every chain of the sandbox;
* the channel token (v0.5 and v1 share it), as much as a dev wallet holds;
* the aggregator's USDC and WETH on both chains, as the dev wallets get them;
* the v4 pool's two test tokens (open-mint tokens: the notebooks also mint them themselves).

A private sandbox (nbval, a script) keeps its deterministic dev wallets, so committed notebook
outputs stay reproducible. :func:`parse_fund_request` (pure) checks what a request asks;
:func:`visitor_grants` (pure) says what each address receives; :func:`fund_visitors` sends
it, one request at a time (the operator's nonces); :func:`request_funding` is the kernel's
side.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from ..addresses import validate_address
from ..errors import InvalidAddressError, SettlementValueError, UnavailableError
from ..json_depth import check_nesting

if TYPE_CHECKING:
    from .local import LocalSandbox

__all__ = [
    "FUND_PATH",
    "MAX_VISITOR_WALLETS",
    "VISITOR_GAS_WEI",
    "Grant",
    "fund_visitors",
    "parse_fund_request",
    "request_funding",
    "visitor_grants",
]

#: the sandbox HTTP server's path of the operator's funding endpoint (loopback only)
FUND_PATH: Final = "/operator/fund"
#: at most this many addresses per request (a session asks for its 1..8 wallets)
MAX_VISITOR_WALLETS: Final = 8
#: the gas each visitor wallet gets on each chain (a dev wallet starts with 10,000 ETH)
VISITOR_GAS_WEI: Final = 10 * 10**18
#: WETH per visitor wallet on each aggregator chain, as the dev wallets get
VISITOR_WETH: Final = 100 * 10**18
#: each v4 pool token per visitor wallet (18 decimals)
VISITOR_V4_TOKENS: Final = 100 * 10**18


@dataclass(frozen=True)
class Grant:
    """One funding transfer: on chain ``chain_id``, ``amount`` of ``token`` (``None``: native
    ETH) to ``to``; ``artifact`` is the token's contract (whose ``mint`` the operator calls)."""

    chain_id: int
    to: str
    amount: int
    token: str | None = None
    artifact: str | None = None


def parse_fund_request(body: bytes) -> list[str]:
    """The addresses a ``POST /operator/fund`` body asks to fund: ``{"addresses": [...]}``,
    1..:data:`MAX_VISITOR_WALLETS` checksummed-or-lowercase addresses, no duplicates.
    Raises :class:`SettlementValueError` (nothing is funded) otherwise."""
    try:
        check_nesting(body)
        payload = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise SettlementValueError("the body is not JSON") from None
    addresses = payload.get("addresses") if isinstance(payload, dict) else None
    if not isinstance(addresses, list) or not addresses:
        raise SettlementValueError('the body must be {"addresses": [<address>, ...]}')
    if len(addresses) > MAX_VISITOR_WALLETS:
        raise SettlementValueError(
            f"at most {MAX_VISITOR_WALLETS} addresses per request, got {len(addresses)}"
        )
    checked = [validate_address(a, field="addresses", allow_zero=False) for a in addresses]
    if len(set(checked)) != len(checked):
        raise InvalidAddressError("the addresses must be distinct")
    return checked


def visitor_grants(
    addresses: Sequence[str],
    *,
    chain_id: int,
    channel_token: str,
    token_funding: int,
    v4_tokens: Sequence[str] = (),
    aggregator: dict[str, Any] | None = None,
) -> list[Grant]:
    """What ``addresses`` receive on a sandbox: gas on every chain, ``token_funding`` of the
    channel token, each v4 pool token, and the aggregator's USDC and WETH on each of its
    chains (``aggregator`` is the profile's ``extra["aggregator"]``). Grants are ordered per
    chain, so each chain's operator sends its own in nonce order."""
    chains = [int(c["chainId"]) for c in (aggregator or {}).get("chains", ())]
    grants: list[Grant] = []
    for to in addresses:
        grants.append(Grant(chain_id, to, VISITOR_GAS_WEI))
        grants.append(Grant(chain_id, to, token_funding, channel_token, "TestToken"))
        grants += [Grant(chain_id, to, VISITOR_V4_TOKENS, t, "V4TestToken") for t in v4_tokens]
        for entry in (aggregator or {}).get("chains", ()):
            cid = int(entry["chainId"])
            if cid != chain_id:
                grants.append(Grant(cid, to, VISITOR_GAS_WEI))
            grants.append(Grant(cid, to, token_funding, str(entry["usdc"]), "TestToken"))
            if entry.get("weth"):
                grants.append(Grant(cid, to, VISITOR_WETH, str(entry["weth"]), "V4TestToken"))
    order = {cid: i for i, cid in enumerate(dict.fromkeys([chain_id, *chains]))}
    return sorted(grants, key=lambda g: order[g.chain_id])


_lock: asyncio.Lock | None = None


async def fund_visitors(sb: LocalSandbox, addresses: Sequence[str]) -> dict[str, Any]:
    """Send :func:`visitor_grants` for ``addresses`` on ``sb``'s chains, from dev account 0
    of each chain (the deployer: it owns the test tokens). Requests run one at a time in
    this process, so the operator's nonces stay in order. Returns what was granted."""
    from ..contracts import load_artifact

    global _lock
    if _lock is None:
        _lock = asyncio.Lock()
    if sb.chain is None or sb.deployment is None:
        raise UnavailableError("the sandbox is not running")
    aggregator = sb.network.extra.get("aggregator")
    v4 = sb.v4
    grants = visitor_grants(
        addresses,
        chain_id=sb.chain.chain_id,
        channel_token=sb.deployment.token,
        token_funding=sb.token_funding,
        v4_tokens=(v4.token0, v4.token1) if v4 is not None else (),
        aggregator=aggregator,
    )
    async with _lock:
        for grant in grants:
            operator = sb.chain_on(grant.chain_id).wallet(0)
            if grant.token is None:
                await operator.transact(to=grant.to, value=grant.amount)
                continue
            assert grant.artifact is not None
            abi = load_artifact(grant.artifact).abi
            contract = operator.w3.eth.contract(address=grant.token, abi=abi)  # type: ignore[call-overload]
            await operator.transact(contract.functions.mint(grant.to, grant.amount), abis=[abi])
    return {
        "funded": list(addresses),
        "grants": len(grants),
        "chains": sorted({g.chain_id for g in grants}),
    }


async def request_funding(http_url: str, addresses: Sequence[str], timeout: float = 120.0) -> bool:
    """The kernel's side: ask the sandbox at ``http_url`` (its loopback HTTP server) to fund
    ``addresses``. False when that sandbox has no funding endpoint (one started by an older
    version: the caller falls back to the dev wallets); :class:`UnavailableError` when it
    fails to fund."""
    import httpx

    try:
        async with httpx.AsyncClient(timeout=timeout) as http:
            response = await http.post(
                f"{http_url}{FUND_PATH}", json={"addresses": list(addresses)}
            )
    except httpx.HTTPError as exc:
        raise UnavailableError(f"the sandbox's operator did not fund the wallets: {exc}") from exc
    if response.status_code == 404:
        return False
    if response.status_code != 200:
        raise UnavailableError(
            f"the sandbox's operator did not fund the wallets ({response.status_code}: "
            f"{response.text[:200]})"
        )
    return True
