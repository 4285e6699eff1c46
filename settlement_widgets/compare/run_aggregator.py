"""The aggregator in a comparison: the routes across the sandbox's two chains, the best
``max_routes`` of them each executed for every payment (approve, bridge, the relayer's
release) and followed to DONE; received is the counterparty's destination balance change."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..errors import SettlementValueError
from .measure import (
    APPROVE,
    Clock,
    CountingSigner,
    RunContext,
    Sent,
    blocks_between,
    cost_usd,
    heads,
    receipts,
)
from .result import MethodRun
from .trust import TRUST

if TYPE_CHECKING:
    from web3 import AsyncWeb3

__all__ = ["run_aggregator"]


async def _token_balance(w3: AsyncWeb3, token: str, who: str) -> int:
    from ..contracts import load_artifact

    contract = w3.eth.contract(address=token, abi=load_artifact("TestToken").abi)  # type: ignore[call-overload]
    return int(await contract.functions.balanceOf(who).call())


async def run_aggregator(ctx: RunContext, provider: Any) -> list[MethodRun]:
    sb = ctx.sandbox
    a, b = ctx.intent.source_chain, ctx.intent.destination_chain
    assert a is not None and b is not None
    usdc_a, usdc_b = sb.crosschain.chains[a].usdc, sb.crosschain.chains[b].usdc
    sender = sb.wallets_on(a)[sb.wallets.index(ctx.user)] if ctx.user in sb.wallets else None
    if sender is None:
        raise SettlementValueError("the aggregator run needs the payer to be a sandbox wallet")
    w3_a, w3_b = sb.chain_on(a).w3, sb.chain_on(b).w3
    w3s = {a: w3_a, b: w3_b}
    decimals = int(
        await w3_a.eth.contract(  # type: ignore[call-overload]
            address=usdc_a, abi=_erc20_abi()
        )
        .functions.decimals()
        .call()
    )
    amounts = ctx.intent.instalments(decimals)
    slippage = ctx.intent.max_slippage_bps / 10_000
    first = await provider.routes(
        a, b, usdc_a, usdc_b, amounts[0], sender.address,
        to_address=ctx.counterparty, slippage=slippage,
    )  # fmt: skip
    where = "the sandbox's LI.FI-schema route server" if provider.source == "local" else "LI.FI"
    _price_from_routes(ctx, first, where)
    runs = []
    for route in first[: ctx.max_routes]:
        tools = route.tools
        signer = CountingSigner(sender, a)
        relayed: list[Sent] = []
        blocks_before = await heads(w3s)
        got_before = await _token_balance(w3_b, usdc_b, ctx.counterparty)
        clock = Clock()
        clock.mark("opened")
        in_flight = 0.0
        fee_bridge = 0
        for i, amount in enumerate(amounts):
            quoted = route if i == 0 else None
            if quoted is None:
                fresh = await provider.routes(
                    a, b, usdc_a, usdc_b, amount, sender.address,
                    to_address=ctx.counterparty, slippage=slippage,
                )  # fmt: skip
                quoted = next((r for r in fresh if r.tools == tools), None)
                if quoted is None:
                    raise SettlementValueError(f"route {tools} is no longer offered")
            before = await _token_balance(w3_b, usdc_b, ctx.counterparty)
            signer.at("bridge", "payment", i)
            plan = await provider.execute_plan(quoted, wallet=signer, send=True)
            step_hash = plan.tx_hashes[-1]
            sent_at = time.monotonic()
            final = await provider.track(step_hash)
            in_flight += time.monotonic() - sent_at
            if not final.done or final.receiving is None or not final.receiving.tx_hash:
                raise SettlementValueError(
                    f"route {tools}: payment {i} ended {final.status}/{final.substatus}"
                )
            relayed.append(Sent(final.receiving.tx_hash, b, "release", "payment", i))
            fee_bridge += amount - (await _token_balance(w3_b, usdc_b, ctx.counterparty) - before)
        clock.mark("paid")
        clock.mark("closed")
        received = await _token_balance(w3_b, usdc_b, ctx.counterparty) - got_before
        # the step transaction's name, as the route called its tool
        names = {
            s.hash.lower(): ("approve" if s.selector == APPROVE else f"bridge ({'+'.join(tools)})")
            for s in signer.sent
        }
        sent = [*signer.sent, *relayed]
        sent.sort(key=lambda s: (s.payment or 0, s.chain_id != a))
        txs = await receipts(sent, lambda c: w3s[c], ctx.explorer, names)
        trust = TRUST["aggregator"]
        variant = "+".join(tools)
        runs.append(
            MethodRun(
                method="aggregator",
                variant=variant,
                label=f"aggregator ({variant})",
                asset="USDC",
                decimals=decimals,
                chain_ids=(a, b),
                payments=len(amounts),
                txs=tuple(txs),
                fees_base_units={"bridge": fee_bridge},
                sent_base_units=sum(amounts),
                received_base_units=received,
                wall_seconds=clock.total(),
                phase_seconds=clock.phases(),
                blocks=blocks_between(blocks_before, await heads(w3s)),
                signature_prompts=signer.signatures,
                transaction_prompts=len(signer.sent),
                off_chain_operations=0,
                locked_base_units=max(amounts),
                locked_seconds=round(in_flight, 4),
                dispute_window_seconds=None,
                cost_usd=cost_usd(ctx, txs),
                payer=ctx.user.address,
                trust=trust.trust,
                if_counterparty_vanishes=trust.if_counterparty_vanishes,
                scope=(
                    f"{len(amounts)} transfer(s) of USDC from chain {a} to {ctx.counterparty} "
                    f"on chain {b} over route {variant} (rank {route.rank} of {len(first)}), "
                    "each approved, sent and followed to DONE; the release on the "
                    "destination is the bridge relayer's transaction."
                ),
            )
        )
    return runs


def _erc20_abi() -> list[dict[str, Any]]:
    from ..contracts import load_artifact

    return list(load_artifact("TestToken").abi)


def _price_from_routes(ctx: RunContext, routes: Sequence[Any], where: str) -> None:
    """The native coin's USD price as the route data gives it (``gasCosts[].token``); the
    source names the server by kind, not URL (a sandbox's URL is a loopback port that no
    reader of a saved output can open)."""
    for route in routes:
        for step in route.steps:
            for gas in step.estimate.gas_costs:
                if gas.token.price_usd is not None and int(gas.token.address, 16) == 0:
                    ctx.native_usd = float(gas.token.price_usd)
                    ctx.price_source = (
                        f"route data: gasCosts[].token.priceUSD of {gas.token.symbol} from {where}"
                    )
                    return
