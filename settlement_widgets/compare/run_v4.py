"""The v4 method in a comparison: ``payments`` signed intents, each with its policy on the
hook, settled by a solver through the hook's pool; the pool's price read from the
PoolManager's storage to measure slippage."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .measure import Clock, CountingSigner, RunContext, blocks_between, cost_usd, heads, receipts
from .result import MethodRun
from .trust import TRUST

if TYPE_CHECKING:
    from web3 import AsyncWeb3

__all__ = ["V4_DEADLINE", "run_v4"]

#: the v4 intents' deadline (unix seconds, in 2033): the payer's choice, fixed rather than
#: "now + an hour" so that a re-run on a fresh sandbox signs the same bytes (the same gas)
V4_DEADLINE = 2_000_000_000


async def _sqrt_price(w3: AsyncWeb3, pool_manager: str, key: Any) -> int:
    """The pool's mid price as slot0's sqrtPriceX96, read from the PoolManager's storage."""
    from eth_abi import encode
    from eth_hash.auto import keccak

    from ..contracts import load_artifact

    pools_slot = 6  # v4-core StateLibrary.POOLS_SLOT
    slot = keccak(encode(["bytes32", "uint256"], [bytes.fromhex(key.pool_id[2:]), pools_slot]))
    manager = w3.eth.contract(address=pool_manager, abi=load_artifact("PoolManager").abi)  # type: ignore[call-overload]
    word = bytes(await manager.functions.extsload(slot).call())
    return int.from_bytes(word[12:], "big")


def _at_price(amount_in: int, sqrt_price: int) -> int:
    """What ``amount_in`` of currency0 buys at mid price ``sqrt_price`` (no fee, no impact)."""
    return amount_in * sqrt_price * sqrt_price >> 192


async def run_v4(ctx: RunContext) -> MethodRun:
    from ..contracts import load_artifact
    from ..v4 import Intent as SignedIntent
    from ..v4 import PoolKey, V4Provider, intent_id

    net = ctx.network
    assert ctx.solver is not None and ctx.operator is not None
    chain_id = net.chain_id
    user = CountingSigner(ctx.user, chain_id)
    solver = CountingSigner(ctx.solver, chain_id)
    operator = CountingSigner(ctx.operator, chain_id)
    as_user = V4Provider(user, network=net)
    as_solver = V4Provider(solver, network=net)
    as_operator = V4Provider(operator, network=net)
    key = PoolKey.from_json(net.extra["v4"]["poolKey"])
    token_in, token_out = key.currency0, key.currency1
    w3 = ctx.user.w3
    erc20 = load_artifact("V4TestToken").abi
    token = w3.eth.contract(address=token_in, abi=erc20)  # type: ignore[call-overload]
    symbol_in = str(await token.functions.symbol().call())
    symbol_out = str(
        await w3.eth.contract(address=token_out, abi=erc20).functions.symbol().call()  # type: ignore[call-overload]
    )
    decimals = int(await token.functions.decimals().call())
    amounts = ctx.intent.instalments(decimals)
    total = sum(amounts)
    # the sandbox's faucet step for this token: the operator mints what the user lacks
    # (funding, like the channel faucet: not part of the settlement, not measured)
    held = await as_user.balance_of(token_in)
    if held < total:
        await ctx.operator.transact(token.functions.mint(ctx.user.address, total - held))
    nonce = await w3.eth.get_transaction_count(ctx.user.address)  # type: ignore[arg-type]
    bps = ctx.intent.max_slippage_bps
    w3s = {chain_id: w3}
    before = await heads(w3s)
    out_before = await as_user.balance_of(token_out)
    clock = Clock()
    adapter = net.contracts.settlement_adapter
    authorised = (
        await w3.eth.contract(  # type: ignore[call-overload]
            address=adapter, abi=load_artifact("SettlementAdapter").abi
        )
        .functions.authorizedSolvers(solver.address)
        .call()
    )
    if not authorised:
        operator.at("setAuthorizedSolver", "open")
        await as_operator.set_authorized_solver(solver.address)
    user.at("approve", "open")
    await as_user.approve_adapter(token_in, total)
    clock.mark("opened")
    pool_fee = 0
    deadline = V4_DEADLINE
    start_price = await _sqrt_price(w3, net.contracts.pool_manager, key)
    for i, amount in enumerate(amounts):
        mid = _at_price(amount, await _sqrt_price(w3, net.contracts.pool_manager, key))
        minimum = mid * (10_000 - bps) // 10_000
        iid = intent_id(f"compare_methods v4 {ctx.user.address} nonce {nonce} payment {i}")
        operator.at("setPolicyWithSlippage", "payment", i)
        await as_operator.register_policy(
            iid, minimum, deadline, reference_amount_out=mid, max_slippage_bps=bps
        )
        order = SignedIntent(
            id=iid,
            user=ctx.user.address,
            token_in=token_in,
            token_out=token_out,
            amount_in=amount,
            min_amount_out=minimum,
            deadline=deadline,
        )
        signed = await as_user.sign_intent(order)
        solver.at("settleIntent", "payment", i)
        await as_solver.settle_intent(signed, key, minimum)
        pool_fee += amount * key.fee // 1_000_000
    clock.mark("paid")
    clock.mark("closed")
    received = await as_user.balance_of(token_out) - out_before
    # slippage: what the payer got below the pool's price before the first payment, after the
    # pool's fee, in the token-in's units (price impact, including the earlier instalments')
    received_in = received * 2**192 // max(start_price * start_price, 1)
    slippage = max(total - pool_fee - received_in, 0)
    sent = [*operator.sent, *user.sent, *solver.sent]
    sent.sort(key=lambda s: (s.payment if s.payment is not None else -1, s.phase != "open"))
    txs = await receipts(sent, lambda _c: w3, ctx.explorer)
    txs.sort(key=lambda t: (t.block, t.hash))
    trust = TRUST["v4/policy-hook"]
    return MethodRun(
        method="v4",
        variant="policy-hook",
        label="v4 (policy hook)",
        asset=symbol_in,
        decimals=decimals,
        chain_ids=(chain_id,),
        payments=len(amounts),
        txs=tuple(txs),
        fees_base_units={"pool": pool_fee, "slippage": slippage},
        sent_base_units=total,
        received_base_units=received,
        wall_seconds=clock.total(),
        phase_seconds=clock.phases(),
        blocks=blocks_between(before, await heads(w3s)),
        signature_prompts=user.signatures,
        transaction_prompts=len(user.sent),
        off_chain_operations=0,
        locked_base_units=0,
        locked_seconds=0.0,
        dispute_window_seconds=None,
        cost_usd=cost_usd(ctx, txs),
        payer=ctx.user.address,
        trust=trust.trust,
        if_counterparty_vanishes=trust.if_counterparty_vanishes,
        scope=(
            f"{len(amounts)} signed intent(s) settled by a solver through the policy hook's "
            f"pool on chain {chain_id}: {total} {symbol_in} units sold for {symbol_out} (the "
            f"hook's pool trades these tokens: it stands in for {ctx.intent.asset}). The "
            f"adapter pays the intent's user, not {ctx.counterparty}, and stays on one chain."
        ),
    )
