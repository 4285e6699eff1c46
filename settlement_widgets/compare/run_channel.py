"""The channel method in a comparison: one channel opened, ``payments`` off-chain transfers,
one close, measured through counting signers (:mod:`.measure`). Three variants share that
run:

- ``nitrolite-v0.5``: the ClearNode relay and the custody contract, on the first chain;
- ``nitrolite-v1``: the Nitronode and the ChannelHub, on the first chain;
- ``nitrolite-v1-crosschain``: the payer's home channel on the intent's source chain, the
  payee's on its destination chain, one node over both (``Network.on_chain``). The transfers
  are the same off-chain v1 transfers; after them the payee opens its home channel on the
  destination chain if it has none (an empty open that carries what it received) and
  withdraws exactly what this run paid it, out of the node's vault on that chain. Nothing
  is bridged and no escrow is used, so it runs on Yellow's network too (its Nitronode v1.4.1
  refuses v1's escrow transitions, a deposit from or a withdrawal to another chain, which
  the sandbox's node has: ``ChannelProviderV1.deposit_from`` / ``withdraw_to``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ..errors import SettlementValueError
from .measure import Clock, CountingSigner, RunContext, blocks_between, cost_usd, heads, receipts
from .result import MethodRun
from .trust import TRUST

if TYPE_CHECKING:
    from web3 import AsyncWeb3

    from ..networks import Network
    from ..signer import Signer

__all__ = ["CROSSCHAIN", "run_channel"]

#: the v1 variant whose payer and payee keep their home channels on two chains
CROSSCHAIN = "nitrolite-v1-crosschain"
#: the payee's transactions on the destination chain, as the rows name them
_PAYEE_OPEN, _PAYEE_WITHDRAW = "create (payee)", "withdraw (payee)"


@dataclass
class _Legs:
    """Who pays and who is paid in one channel run, each with its own counting signer
    (bound to the chain its home channel lives on) and provider."""

    payer: Any
    payer_signer: CountingSigner
    receiver: Any | None
    receiver_signer: CountingSigner | None
    opened_with: str
    #: after the payer's close: the payee's on-chain payout of ``amount`` (cross-chain),
    #: returning what the payee's token balance on its chain rose by
    payout: Callable[[int], Awaitable[int]] | None = None

    @property
    def signers(self) -> list[CountingSigner]:
        return [s for s in (self.payer_signer, self.receiver_signer) if s is not None]


def _signer_on(ctx: RunContext, wallet: Signer, chain_id: int) -> Signer:
    """``wallet``'s key bound to chain ``chain_id`` (the sandbox's wallets on that chain)."""
    if chain_id == ctx.network.chain_id:
        return wallet
    sb = ctx.sandbox
    addresses = [w.address for w in sb.wallets]
    if wallet.address not in addresses:
        raise SettlementValueError(
            f"the channel run on chain {chain_id} needs {wallet.address} to be a sandbox wallet"
        )
    bound: Signer = sb.wallets_on(chain_id)[addresses.index(wallet.address)]
    return bound


def _legs_v05(ctx: RunContext) -> _Legs:
    from ..channel.v0_5.client.config import ChannelConfig
    from ..channel.v0_5.client.provider import ChannelProvider
    from ..networks import PROTOCOL_V05

    net = ctx.network
    v05 = net
    if net.protocol != PROTOCOL_V05:
        v05 = replace(net, node_url=net.extra["relayV05Url"], protocol=PROTOCOL_V05)
    config = ChannelConfig.from_network(v05)
    user = CountingSigner(ctx.user, net.chain_id)
    cp = ctx.counterparty_wallet
    receiver = ChannelProvider(config, cp) if cp is not None else None
    return _Legs(ChannelProvider(config, user), user, receiver, None, config.token or "")


def _legs_v1(ctx: RunContext) -> _Legs:
    from ..channel.v1 import ChannelProviderV1

    net = ctx.network
    user = CountingSigner(ctx.user, net.chain_id)
    cp = ctx.counterparty_wallet
    receiver = ChannelProviderV1(net, cp) if cp is not None else None
    return _Legs(ChannelProviderV1(net, user), user, receiver, None, "")


def _legs_v1_crosschain(ctx: RunContext) -> _Legs:
    from ..channel.v1 import ChannelProviderV1

    a, b = ctx.intent.source_chain, ctx.intent.destination_chain
    assert a is not None and b is not None and ctx.counterparty_wallet is not None
    net_a, net_b = ctx.network.on_chain(a), ctx.network.on_chain(b)
    user = CountingSigner(_signer_on(ctx, ctx.user, a), a)
    payee = CountingSigner(_signer_on(ctx, ctx.counterparty_wallet, b), b)
    receiver = ChannelProviderV1(net_b, payee)

    async def payout(amount: int) -> int:
        return await _pay_out_on(receiver, payee, net_b, amount)

    return _Legs(ChannelProviderV1(net_a, user), user, receiver, payee, "", payout)


async def _pay_out_on(receiver: Any, payee: CountingSigner, net: Network, amount: int) -> int:
    """The payee takes ``amount`` out of its home channel on ``net``'s chain: it opens one
    there if it has none (empty: the channel carries what the node credits it), then
    withdraws exactly ``amount``; returns its token balance change on that chain."""
    await receiver.adopt_open_channels()
    home = await receiver.client.get_home_channel(receiver.address, receiver.asset)
    if home is not None and str(home.get("status")) in ("open", "challenged"):
        on = int(home["blockchain_id"])
        if on != net.chain_id:
            raise SettlementValueError(
                f"the payee {receiver.address} keeps its {receiver.asset} home channel on "
                f"chain {on}, not on the destination chain {net.chain_id}: moving it would "
                "need Nitrolite v1's migration, which neither Yellow's node nor ours implements"
            )
        channel_id = str(home["channel_id"]).lower()
    else:
        payee.at(_PAYEE_OPEN, "close")
        opened = await receiver.create_channel(receiver.node_address, receiver.asset, 0)
        channel_id = opened.id
    token = net.token
    assert token is not None
    before = await receiver.hub.token_balance(token, receiver.address)
    payee.at("withdraw (payee)", "close")
    await receiver.withdraw(amount, channel_id=channel_id)
    return int(await receiver.hub.token_balance(token, receiver.address)) - int(before)


_LEGS: dict[str, Callable[[RunContext], _Legs]] = {
    "nitrolite-v0.5": _legs_v05,
    "nitrolite-v1": _legs_v1,
    CROSSCHAIN: _legs_v1_crosschain,
}


async def run_channel(ctx: RunContext, variant: str) -> MethodRun:
    net = ctx.network
    legs = _LEGS[variant](ctx)
    payer, receiver, user = legs.payer, legs.receiver, legs.payer_signer
    w3s: dict[int, AsyncWeb3] = {s.chain_id_value: s.w3 for s in legs.signers}
    clock = Clock()
    before = await heads(w3s)
    try:
        user.at("connect", "open")
        await payer.connect()
        if receiver is not None:
            await receiver.connect()
        asset = payer.asset
        decimals = int(getattr(payer, "decimals", 0) or net.asset_decimals)
        there = int(receiver.decimals) if legs.payout and receiver is not None else decimals
        if there != decimals:  # sent and received are compared in one unit
            raise SettlementValueError(
                f"the {asset} token has {decimals} decimals on the source chain and "
                f"{there} on the destination chain: not compared here"
            )
        amounts = ctx.intent.instalments(decimals)
        total = sum(amounts)
        got_before = (await receiver.balances()).get(asset, 0) if receiver is not None else 0
        node = payer.broker_address
        channel = await payer.create_channel(node, legs.opened_with or asset, total)
        clock.mark("opened")
        acknowledged = 0
        for i, amount in enumerate(amounts):
            user.at("transfer", "payment", i)
            sent = await payer.transfer(channel.id, amount, ctx.counterparty)
            acknowledged += int(sent.amount)
        clock.mark("paid")
        user.at("close", "close")
        await payer.close_channel(channel.id)
        if legs.payout is None:
            clock.mark("closed")
        credited = (
            (await receiver.balances()).get(asset, 0) - got_before
            if receiver is not None
            else acknowledged
        )
        got = credited
        if legs.payout is not None:
            got = await legs.payout(credited)
            clock.mark("closed")
        names = {h.lower(): step for step, h in payer.get_channel(channel.id).tx_hashes.items()}
        window = int(payer.get_channel(channel.id).challenge_period)
    finally:
        await payer.close()
        if receiver is not None:
            await receiver.close()
    sent_txs = [s for signer in legs.signers for s in signer.sent]
    txs = await receipts(sent_txs, lambda c: w3s[c], ctx.explorer, names)
    trust = TRUST[f"channel/{variant}"]
    phases = clock.phases()
    return MethodRun(
        method="channel",
        variant=variant,
        label=f"channel ({variant})",
        asset=asset,
        decimals=decimals,
        chain_ids=tuple(w3s),
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
        scope=_scope(ctx, legs, asset, total, len(amounts)),
    )


def _scope(ctx: RunContext, legs: _Legs, asset: str, total: int, payments: int) -> str:
    a = legs.payer_signer.chain_id_value
    opened = (
        f"one channel opened with {total} {asset} units on chain {a}, "
        f"{payments} off-chain transfer(s) to {ctx.counterparty}, closed once; "
    )
    if legs.receiver_signer is not None:
        b = legs.receiver_signer.chain_id_value
        opened_there = any(s.step == _PAYEE_OPEN for s in legs.receiver_signer.sent)
        home = (
            "opened empty (it carries what the node credited)" if opened_there else "already open"
        )
        return (
            f"the payer's home channel on chain {a} opened with {total} {asset} units, "
            f"{payments} off-chain transfer(s) to {ctx.counterparty}, closed once on chain "
            f"{a}; the payee's home channel on chain {b} {home}, and a withdrawal there of "
            f"exactly what this run credited it; received = the payee's "
            f"{asset} balance change on chain {b}, paid out of the node's vault there. The "
            f"payee's {legs.receiver_signer.signatures} signature and "
            f"{len(legs.receiver_signer.sent)} transaction prompts are not in the payer's "
            "counts. Nothing is bridged: no escrow, no bridge, one balance at the node "
            "across both chains."
        )
    how = (
        "the counterparty's off-chain balance at the node"
        if legs.receiver is not None
        else "the node's acknowledgements (the counterparty's key is not here)"
    )
    return (
        f"{opened}received = {how}. Same chain: the channel does not move funds to chain "
        f"{ctx.intent.destination_chain}."
    )
