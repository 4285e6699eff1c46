"""``compare_methods``: run one intent through every method that can serve it, for real.

On the sandbox (a :class:`~settlement_widgets.sandbox.LocalSandbox` started with
``protocol="v1", aggregator=True``, or a notebook session on one) that is: the channel method
on Nitrolite v0.5 (the ClearNode relay beside the v1 node) and on v1 (the Nitronode and the
ChannelHub), v1 across the two sandbox chains (the payer's home channel on the source chain,
the payee's on the destination chain, one node over both: off-chain transfers, the payee
paid out of the node's vault on the destination chain; nothing bridged), the v4 policy
hook, and the aggregator across the two sandbox chains, one run per route (the first
``max_routes``, best first). A method the network cannot run goes to
``Comparison.unavailable`` with the reason.

How each figure is obtained, so that none is typed in:

- every transaction is sent through a :class:`_CountingSigner` (the payer's, a solver's, an
  operator's), which records its hash; the bridge relayer's release comes from the status
  the route server reports. Their receipts are then re-read from their chain: gas used,
  effective gas price, sender, value, block.
- wallet prompts are what the code asked the payer's signer for (typed data and messages,
  transactions);
- amounts received are balance changes: the counterparty's off-chain balance at the node
  (channel on one chain), the user's token-out balance (v4), the receiver's balance on the
  destination chain (aggregator, channel across chains); fees are the differences the runs
  show (bridge, node), the pool's fee tier applied to the amount in, and the pool's mid
  price before the first swap read from the PoolManager (slippage: what was received below
  it, after the fee);
- the dispute window is the channel's challenge period as the channel records it from the
  contract; time is the monotonic clock around the calls; blocks are block-number deltas.

With ``payments=N`` the channel opens once, makes N off-chain transfers and closes once
(across chains: the payee withdraws once on the destination chain); v4 and the aggregator
settle N times.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ..errors import SettlementValueError, UnknownOptionError
from .intent import Intent
from .measure import RunContext, cost_usd, explorer_for
from .result import Comparison, MethodRun
from .run_aggregator import run_aggregator
from .run_channel import CROSSCHAIN, run_channel
from .run_v4 import run_v4

if TYPE_CHECKING:
    from ..networks import Network
    from ..signer import Signer

__all__ = ["DEFAULT_MAX_ROUTES", "METHOD_KEYS", "compare_methods"]

#: how many aggregator routes are executed (best first): each is a full set of payments
DEFAULT_MAX_ROUTES = 2
#: what ``methods=`` may name: a method, or one variant of it
METHOD_KEYS = (
    "channel",
    "channel/nitrolite-v0.5",
    "channel/nitrolite-v1",
    f"channel/{CROSSCHAIN}",
    "v4",
    "aggregator",
)
#: what runs: every key but ``channel``, which names all its variants
_RUN_KEYS = tuple(k for k in METHOD_KEYS if k != "channel")
#: the assets every sandbox method moves as "USDC": each method's test dollar
_USD_ASSETS = frozenset({"USDC", "USD"})


def _selected(methods: Iterable[str] | None) -> set[str]:
    if methods is None:
        return set(METHOD_KEYS)
    chosen = set()
    for m in methods:
        if m not in METHOD_KEYS:
            import difflib

            close = difflib.get_close_matches(str(m), METHOD_KEYS, 1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise UnknownOptionError(f"unknown method {m!r}{hint}; valid: {list(METHOD_KEYS)}")
        chosen.add(m)
        if m == "channel":
            chosen |= {k for k in _RUN_KEYS if k.startswith("channel/")}
    return chosen


def _unpack(target: Any) -> tuple[Any, Network, Signer | None, Sequence[Any]]:
    """(sandbox, network, user, wallets) of a LocalSandbox, a notebook session or a Network."""
    from ..networks import Network

    if isinstance(target, Network):
        return None, target, None, ()
    if hasattr(target, "provision_plan") and hasattr(target, "wallets"):  # a sandbox
        wallets = tuple(target.wallets)
        return target, target.network, (wallets[0] if wallets else None), wallets
    if hasattr(target, "network") and hasattr(target, "user"):  # a NotebookSession
        return target.sandbox, target.network, target.user, tuple(target.wallets)
    raise SettlementValueError(
        "compare_methods needs a LocalSandbox, a notebook session or a Network, "
        f"got {type(target).__name__}"
    )


async def compare_methods(
    sandbox_or_network: Any,
    intent: Intent,
    *,
    methods: Iterable[str] | None = None,
    max_routes: int = DEFAULT_MAX_ROUTES,
) -> Comparison:
    """Run ``intent`` for real through every method that can serve it and measure each.

    ``sandbox_or_network`` is a running :class:`~settlement_widgets.sandbox.LocalSandbox`, a
    notebook session on one (``open_session(aggregator=True, protocol="v1")``) or a
    :class:`~settlement_widgets.networks.Network`. ``methods`` limits the run to some of
    :data:`METHOD_KEYS`; ``max_routes`` caps how many aggregator routes are executed (each
    executes every payment). What cannot run here is in ``Comparison.unavailable``.
    """
    if not isinstance(intent, Intent):
        raise SettlementValueError(
            f"intent must be a settlement_widgets.compare.Intent, got {type(intent).__name__}"
        )
    if isinstance(max_routes, bool) or not isinstance(max_routes, int) or max_routes < 0:
        raise SettlementValueError(f"max_routes must be an int >= 0, got {max_routes!r}")
    chosen = _selected(methods)
    sandbox, network, user, wallets = _unpack(sandbox_or_network)
    chain_ids = tuple(sandbox.chain_ids) if sandbox is not None else (network.chain_id,)
    others = [w for w in wallets if user is None or w.address != user.address]
    default_cp = others[0].address if others else None
    resolved = intent.resolved(
        chain_ids[0],
        chain_ids[1] if len(chain_ids) > 1 else chain_ids[0],
        intent.counterparty or default_cp or "0x000000000000000000000000000000000000dEaD",
    )
    assert resolved.counterparty is not None
    cp_wallet = next((w for w in wallets if w.address == resolved.counterparty), None)
    unavailable: dict[str, str] = {}
    measured_at = datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")

    def refuse(key: str, reason: str) -> None:
        if key in chosen:
            unavailable[key] = reason

    if sandbox is None or user is None:
        why = (
            f"compare_methods runs the methods on a sandbox it can fund and sign for (a payer, "
            f"a solver, an operator, two chains); {network.name} is not one: project a "
            "sandbox comparison onto it with settlement_widgets.compare.projection.project()"
        )
        for key in _RUN_KEYS:
            refuse(key, why)
        return Comparison(network.name, measured_at, resolved, (), unavailable)

    if resolved.asset.upper() not in _USD_ASSETS:
        why = f"the sandbox's methods move test dollars (USDC), not {resolved.asset}"
        for key in _RUN_KEYS:
            refuse(key, why)
        return Comparison(network.name, measured_at, resolved, (), unavailable)

    operator = sandbox.chain.wallet(0) if getattr(sandbox, "chain", None) is not None else None
    ctx = RunContext(
        sandbox=sandbox,
        network=network,
        user=user,
        counterparty=resolved.counterparty,
        counterparty_wallet=cp_wallet,
        solver=others[-1] if len(others) >= 2 else None,
        operator=operator,
        intent=resolved,
        max_routes=max_routes,
        explorer=explorer_for(sandbox, network),
    )
    runs: list[MethodRun] = []
    aggregator_runs: list[MethodRun] = []
    # the aggregator first: its route data carries the native coin's USD price
    if "aggregator" in chosen:
        if len(chain_ids) < 2 or "lifiUrl" not in network.extra:
            refuse("aggregator", "this sandbox runs one chain: start it with aggregator=True")
        elif resolved.source_chain == resolved.destination_chain:
            refuse("aggregator", "the intent stays on one chain: nothing to bridge")
        elif max_routes == 0:
            refuse("aggregator", "max_routes=0: no route was executed")
        else:
            from ..aggregator import AggregatorProvider

            # the sandbox's route server answers at once: poll it at the relayer's pace
            async with AggregatorProvider(base_url=sandbox.lifi_url, poll_interval=0.02) as p:
                aggregator_runs = await run_aggregator(ctx, p)
    if "channel/nitrolite-v0.5" in chosen:
        if network.protocol != "nitrolite-v0.5" and "relayV05Url" not in network.extra:
            refuse("channel/nitrolite-v0.5", "no Nitrolite v0.5 node on this network")
        else:
            runs.append(await run_channel(ctx, "nitrolite-v0.5"))
    if "channel/nitrolite-v1" in chosen:
        if network.protocol != "nitrolite-v1":
            refuse(
                "channel/nitrolite-v1",
                "this network's node speaks Nitrolite v0.5: start the sandbox with "
                "protocol='v1' (the v0.5 relay runs beside it)",
            )
        else:
            runs.append(await run_channel(ctx, "nitrolite-v1"))
    if f"channel/{CROSSCHAIN}" in chosen:
        why_not = _crosschain_refusal(network, resolved, cp_wallet)
        if why_not:
            refuse(f"channel/{CROSSCHAIN}", why_not)
        else:
            runs.append(await run_channel(ctx, CROSSCHAIN))
    if "v4" in chosen:
        if not network.extra.get("v4") or ctx.solver is None or ctx.operator is None:
            refuse("v4", "no policy-hook pool, solver or operator on this network")
        else:
            runs.append(await run_v4(ctx))
    runs.extend(aggregator_runs)
    # the USD price arrived with the aggregator's routes: apply it to the earlier runs too
    if ctx.native_usd is not None:
        runs = [replace(r, cost_usd=cost_usd(ctx, r.txs)) for r in runs]
    return Comparison(
        network=network.name,
        measured_at=measured_at,
        intent=resolved,
        runs=tuple(runs),
        unavailable=unavailable,
        native_usd=ctx.native_usd,
        price_source=ctx.price_source,
    )


def _crosschain_refusal(network: Network, intent: Intent, payee: Any) -> str | None:
    """Why the v1 cross-chain route cannot serve ``intent`` here (None: it can)."""
    from ..networks import PROTOCOL_V1

    if network.protocol != PROTOCOL_V1:
        return (
            "this network's node speaks Nitrolite v0.5: start the sandbox with "
            "protocol='v1', aggregator=True (home channels on two chains)"
        )
    chains = network.chain_ids()
    if len(chains) < 2:
        return (
            f"this network's Nitrolite v1 node serves one chain ({chains[0]}): start the "
            "sandbox with protocol='v1', aggregator=True for a home channel on a second chain"
        )
    a, b = intent.source_chain, intent.destination_chain
    if a == b:
        return "the intent stays on one chain: channel/nitrolite-v1 serves it"
    missing = [c for c in (a, b) if c not in chains]
    if missing:
        return f"the Nitrolite v1 node serves chains {list(chains)}, not {missing}"
    if payee is None:
        return (
            "the payee withdraws on the destination chain with its own key: the "
            "counterparty is not one of this sandbox's wallets"
        )
    return None
