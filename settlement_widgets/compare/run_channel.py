"""The channel method in a comparison: one channel opened, ``payments`` off-chain transfers,
one close, on Nitrolite v0.5 (the ClearNode relay and the custody contract) or v1 (the
Nitronode and the ChannelHub), measured through a counting signer (:mod:`.measure`)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from .measure import Clock, CountingSigner, RunContext, blocks_between, cost_usd, heads, receipts
from .result import MethodRun
from .trust import TRUST

__all__ = ["run_channel"]


async def run_channel(ctx: RunContext, variant: str) -> MethodRun:
    from ..networks import PROTOCOL_V05

    net = ctx.network
    user = CountingSigner(ctx.user, net.chain_id)
    cp_wallet = ctx.counterparty_wallet
    if variant == "nitrolite-v0.5":
        from ..channel.v0_5.client.config import ChannelConfig
        from ..channel.v0_5.client.provider import ChannelProvider

        v05 = net
        if net.protocol != PROTOCOL_V05:
            v05 = replace(net, node_url=net.extra["relayV05Url"], protocol=PROTOCOL_V05)
        config = ChannelConfig.from_network(v05)
        payer: Any = ChannelProvider(config, user)
        receiver: Any = ChannelProvider(config, cp_wallet) if cp_wallet is not None else None
        opened_with = config.token
    else:
        from ..channel.v1 import ChannelProviderV1

        payer = ChannelProviderV1(net, user)
        receiver = ChannelProviderV1(net, cp_wallet) if cp_wallet is not None else None
        opened_with = ""
    w3s = {net.chain_id: user.w3}
    clock = Clock()
    before = await heads(w3s)
    try:
        user.at("connect", "open")
        await payer.connect()
        if receiver is not None:
            await receiver.connect()
        asset = payer.asset
        decimals = int(getattr(payer, "decimals", 0) or net.asset_decimals)
        amounts = ctx.intent.instalments(decimals)
        total = sum(amounts)
        got_before = (await receiver.balances()).get(asset, 0) if receiver is not None else 0
        node = payer.broker_address
        channel = await payer.create_channel(node, opened_with or asset, total)
        clock.mark("opened")
        acknowledged = 0
        for i, amount in enumerate(amounts):
            user.at("transfer", "payment", i)
            sent = await payer.transfer(channel.id, amount, ctx.counterparty)
            acknowledged += int(sent.amount)
        clock.mark("paid")
        user.at("close", "close")
        await payer.close_channel(channel.id)
        clock.mark("closed")
        got = (
            (await receiver.balances()).get(asset, 0) - got_before
            if receiver is not None
            else acknowledged
        )
        names = {h.lower(): step for step, h in payer.get_channel(channel.id).tx_hashes.items()}
        window = int(payer.get_channel(channel.id).challenge_period)
    finally:
        await payer.close()
        if receiver is not None:
            await receiver.close()
    txs = await receipts(user.sent, lambda _c: user.w3, ctx.explorer, names)
    trust = TRUST[f"channel/{variant}"]
    phases = clock.phases()
    how = (
        "the counterparty's off-chain balance at the node"
        if receiver is not None
        else "the node's acknowledgements (the counterparty's key is not here)"
    )
    return MethodRun(
        method="channel",
        variant=variant,
        label=f"channel ({variant})",
        asset=asset,
        decimals=decimals,
        chain_ids=(net.chain_id,),
        payments=len(amounts),
        txs=tuple(txs),
        fees_base_units={"node": total - got},
        sent_base_units=total,
        received_base_units=got,
        wall_seconds=clock.total(),
        phase_seconds=phases,
        blocks=blocks_between(before, await heads(w3s)),
        signature_prompts=user.signatures,
        transaction_prompts=len(user.sent),
        off_chain_operations=len(amounts),
        locked_base_units=total,
        locked_seconds=round(phases["payments"] + phases["close"], 4),
        dispute_window_seconds=window,
        cost_usd=cost_usd(ctx, txs),
        payer=ctx.user.address,
        trust=trust.trust,
        if_counterparty_vanishes=trust.if_counterparty_vanishes,
        scope=(
            f"one channel opened with {total} {asset} units on chain {net.chain_id}, "
            f"{len(amounts)} off-chain transfer(s) to {ctx.counterparty}, closed once; "
            f"received = {how}. Same chain: the channel does not move funds to chain "
            f"{ctx.intent.destination_chain}."
        ),
    )
