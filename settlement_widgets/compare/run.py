"""``compare_methods``: run one intent through every method that can serve it, for real.

On the sandbox (a :class:`~settlement_widgets.sandbox.LocalSandbox` started with
``protocol="v1", aggregator=True``, or a notebook session on one) that is: the channel method
on Nitrolite v0.5 (the ClearNode relay beside the v1 node) and on v1 (the Nitronode and the
ChannelHub), the v4 policy hook, and the aggregator across the two sandbox chains, one run
per route (the first ``max_routes``, best first). A method the network cannot run goes to
``Comparison.unavailable`` with the reason.

How each figure is obtained, so that none is typed in:

- every transaction is sent through a :class:`_CountingSigner` (the payer's, a solver's, an
  operator's), which records its hash; the bridge relayer's release comes from the status
  the route server reports. Their receipts are then re-read from their chain: gas used,
  effective gas price, sender, value, block.
- wallet prompts are what the code asked the payer's signer for (typed data and messages,
  transactions);
- amounts received are balance changes: the counterparty's off-chain balance at the node
  (channel), the user's token-out balance (v4), the receiver's balance on the destination
  chain (aggregator); fees are the differences the runs show (bridge, node), the pool's fee
  tier applied to the amount in, and the pool's mid price before the first swap read from the
  PoolManager (slippage: what was received below it, after the fee);
- the dispute window is the channel's challenge period as the channel records it from the
  contract; time is the monotonic clock around the calls; blocks are block-number deltas.

With ``payments=N`` the channel opens once, makes N off-chain transfers and closes once;
v4 and the aggregator settle N times.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ..errors import SettlementError, SettlementValueError, UnknownOptionError
from ..signer import Signer, TxRequest
from .intent import Intent
from .result import Comparison, MethodRun, TxRecord
from .trust import TRUST

if TYPE_CHECKING:
    from web3 import AsyncWeb3

    from ..networks import Network
    from ..wallet import WalletClient

__all__ = ["DEFAULT_MAX_ROUTES", "METHOD_KEYS", "compare_methods"]

#: how many aggregator routes are executed (best first): each is a full set of payments
DEFAULT_MAX_ROUTES = 2
#: what ``methods=`` may name: a method, or one variant of it
METHOD_KEYS = ("channel", "channel/nitrolite-v0.5", "channel/nitrolite-v1", "v4", "aggregator")
#: the assets every sandbox method moves as "USDC": each method's test dollar
_USD_ASSETS = frozenset({"USDC", "USD"})
#: the v4 intents' deadline (unix seconds, in 2033): the payer's choice, fixed rather than
#: "now + an hour" so that a re-run on a fresh sandbox signs the same bytes (the same gas)
_V4_DEADLINE = 2_000_000_000


# --- measuring what the code asks a signer for --------------------------------------------


@dataclass
class _Sent:
    hash: str
    chain_id: int
    step: str
    phase: str
    payment: int | None
    selector: str = ""


#: ERC-20 ``approve(address,uint256)``
_APPROVE = "0x095ea7b3"


def _selector(tx: TxRequest) -> str:
    data = tx.get("data") or b""
    return data[:10].lower() if isinstance(data, str) else "0x" + bytes(data[:4]).hex()


class _CountingSigner(Signer):
    """A signer that passes every call to ``inner`` and records it: signatures asked for,
    transactions sent (with the step, phase and payment the runner is in)."""

    def __init__(self, inner: Signer, chain_id: int) -> None:
        self.inner = inner
        self.chain_id_value = chain_id
        self.receipt_timeout = inner.receipt_timeout
        self.signatures = 0
        self.sent: list[_Sent] = []
        self.label: tuple[str, str, int | None] = ("tx", "open", None)

    @property
    def address(self) -> str:
        return self.inner.address

    @property
    def w3(self) -> AsyncWeb3:
        return self.inner.w3

    @property
    def rpc_url(self) -> str | None:
        return self.inner.rpc_url

    def reset_nonce(self) -> None:
        self.inner.reset_nonce()

    async def chain_id(self) -> int:
        return await self.inner.chain_id()

    async def sign_typed_data(self, full_message: Mapping[str, Any]) -> str:
        self.signatures += 1
        return await self.inner.sign_typed_data(full_message)

    async def sign_message(self, message: bytes) -> str:
        self.signatures += 1
        return await self.inner.sign_message(message)

    async def send_transaction(
        self, tx: TxRequest, *, on_signed: Callable[[str], Any] | None = None
    ) -> str:
        tx_hash = await self.inner.send_transaction(tx, on_signed=on_signed)
        step, phase, payment = self.label
        self.sent.append(_Sent(tx_hash, self.chain_id_value, step, phase, payment, _selector(tx)))
        return tx_hash

    def at(self, step: str, phase: str, payment: int | None = None) -> _CountingSigner:
        """Label the transactions sent from now on."""
        self.label = (step, phase, payment)
        return self


@dataclass
class _Clock:
    """Wall-clock seconds of the phases of one run."""

    started: float = field(default_factory=time.monotonic)
    marks: dict[str, float] = field(default_factory=dict)

    def mark(self, name: str) -> None:
        self.marks[name] = time.monotonic()

    def phases(self) -> dict[str, float]:
        opened = self.marks.get("opened", self.started)
        paid = self.marks.get("paid", opened)
        closed = self.marks.get("closed", paid)
        return {
            "open": round(opened - self.started, 4),
            "payments": round(paid - opened, 4),
            "close": round(closed - paid, 4),
        }

    def total(self) -> float:
        return round(max(self.marks.values(), default=self.started) - self.started, 4)


# --- what the sandbox gives a comparison --------------------------------------------------


@dataclass
class _Context:
    sandbox: Any
    network: Network
    user: Signer
    counterparty: str
    counterparty_wallet: WalletClient | None
    solver: Signer | None
    operator: Signer | None
    intent: Intent
    max_routes: int
    explorer: Callable[[int, str], str | None]
    native_usd: float | None = None
    price_source: str | None = None


def _explorer(sandbox: Any, network: Network) -> Callable[[int, str], str | None]:
    def url(chain_id: int, tx_hash: str) -> str | None:
        if sandbox is not None:
            with contextlib.suppress(SettlementError):
                return str(sandbox.explorer_tx(chain_id, tx_hash))
        if chain_id == network.chain_id:
            return network.explorer.tx_url(tx_hash)
        return None

    return url


async def _receipts(
    sent: Iterable[_Sent],
    w3_of: Callable[[int], AsyncWeb3],
    explorer: Callable[[int, str], str | None],
    names: Mapping[str, str] | None = None,
) -> list[TxRecord]:
    """Every sent transaction as its receipt on its chain says (re-read here)."""
    records = []
    for s in sent:
        w3 = w3_of(s.chain_id)
        receipt = await w3.eth.wait_for_transaction_receipt(
            s.hash,  # type: ignore[arg-type]
            timeout=60,
            poll_latency=0.02,
        )
        tx = await w3.eth.get_transaction(s.hash)  # type: ignore[arg-type]
        records.append(
            TxRecord(
                hash=s.hash,
                chain_id=s.chain_id,
                step=(names or {}).get(
                    s.hash.lower(), "approve" if s.selector == _APPROVE else s.step
                ),
                phase=s.phase,
                payment=s.payment if s.phase == "payment" else None,
                gas_used=int(receipt["gasUsed"]),
                effective_gas_price_wei=int(receipt["effectiveGasPrice"]),
                payer=str(receipt["from"]),
                value_wei=int(tx["value"]),
                block=int(receipt["blockNumber"]),
                explorer_url=explorer(s.chain_id, s.hash),
            )
        )
    return records


async def _heads(w3s: Mapping[int, AsyncWeb3]) -> dict[int, int]:
    return {cid: int(await w3.eth.block_number) for cid, w3 in w3s.items()}


def _blocks(before: Mapping[int, int], after: Mapping[int, int]) -> int:
    return sum(after[c] - before[c] for c in before)


def _cost_usd(ctx: _Context, txs: Sequence[TxRecord]) -> float | None:
    if ctx.native_usd is None:
        return None
    wei = sum(t.cost_wei for t in txs)
    return round(wei / 10**18 * ctx.native_usd, 6)


# --- the channel method -------------------------------------------------------------------


async def _run_channel(ctx: _Context, variant: str) -> MethodRun:
    from ..networks import PROTOCOL_V05

    net = ctx.network
    user = _CountingSigner(ctx.user, net.chain_id)
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
    clock = _Clock()
    heads = await _heads(w3s)
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
    txs = await _receipts(user.sent, lambda _c: user.w3, ctx.explorer, names)
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
        blocks=_blocks(heads, await _heads(w3s)),
        signature_prompts=user.signatures,
        transaction_prompts=len(user.sent),
        off_chain_operations=len(amounts),
        locked_base_units=total,
        locked_seconds=round(phases["payments"] + phases["close"], 4),
        dispute_window_seconds=window,
        cost_usd=_cost_usd(ctx, txs),
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


# --- the v4 method ------------------------------------------------------------------------


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


async def _run_v4(ctx: _Context) -> MethodRun:
    from ..contracts import load_artifact
    from ..v4 import Intent as SignedIntent
    from ..v4 import PoolKey, V4Provider, intent_id

    net = ctx.network
    assert ctx.solver is not None and ctx.operator is not None
    chain_id = net.chain_id
    user = _CountingSigner(ctx.user, chain_id)
    solver = _CountingSigner(ctx.solver, chain_id)
    operator = _CountingSigner(ctx.operator, chain_id)
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
    heads = await _heads(w3s)
    out_before = await as_user.balance_of(token_out)
    clock = _Clock()
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
    deadline = _V4_DEADLINE
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
    txs = await _receipts(sent, lambda _c: w3, ctx.explorer)
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
        blocks=_blocks(heads, await _heads(w3s)),
        signature_prompts=user.signatures,
        transaction_prompts=len(user.sent),
        off_chain_operations=0,
        locked_base_units=0,
        locked_seconds=0.0,
        dispute_window_seconds=None,
        cost_usd=_cost_usd(ctx, txs),
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


# --- the aggregator -----------------------------------------------------------------------


async def _token_balance(w3: AsyncWeb3, token: str, who: str) -> int:
    from ..contracts import load_artifact

    contract = w3.eth.contract(address=token, abi=load_artifact("TestToken").abi)  # type: ignore[call-overload]
    return int(await contract.functions.balanceOf(who).call())


async def _aggregator_runs(ctx: _Context, provider: Any) -> list[MethodRun]:
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
    _price_from_routes(ctx, first, provider.base_url)
    runs = []
    for route in first[: ctx.max_routes]:
        tools = route.tools
        signer = _CountingSigner(sender, a)
        relayed: list[_Sent] = []
        heads = await _heads(w3s)
        got_before = await _token_balance(w3_b, usdc_b, ctx.counterparty)
        clock = _Clock()
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
            relayed.append(_Sent(final.receiving.tx_hash, b, "release", "payment", i))
            fee_bridge += amount - (await _token_balance(w3_b, usdc_b, ctx.counterparty) - before)
        clock.mark("paid")
        clock.mark("closed")
        received = await _token_balance(w3_b, usdc_b, ctx.counterparty) - got_before
        # the step transaction's name, as the route called its tool
        names = {
            s.hash.lower(): ("approve" if s.selector == _APPROVE else f"bridge ({'+'.join(tools)})")
            for s in signer.sent
        }
        sent = [*signer.sent, *relayed]
        sent.sort(key=lambda s: (s.payment or 0, s.chain_id != a))
        txs = await _receipts(sent, lambda c: w3s[c], ctx.explorer, names)
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
                blocks=_blocks(heads, await _heads(w3s)),
                signature_prompts=signer.signatures,
                transaction_prompts=len(signer.sent),
                off_chain_operations=0,
                locked_base_units=max(amounts),
                locked_seconds=round(in_flight, 4),
                dispute_window_seconds=None,
                cost_usd=_cost_usd(ctx, txs),
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


def _price_from_routes(ctx: _Context, routes: Sequence[Any], base_url: str) -> None:
    """The native coin's USD price as the route data gives it (``gasCosts[].token``)."""
    for route in routes:
        for step in route.steps:
            for gas in step.estimate.gas_costs:
                if gas.token.price_usd is not None and int(gas.token.address, 16) == 0:
                    ctx.native_usd = float(gas.token.price_usd)
                    ctx.price_source = (
                        f"route data: gasCosts[].token.priceUSD of {gas.token.symbol} "
                        f"from {base_url}"
                    )
                    return


# --- the entry point ----------------------------------------------------------------------


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
            chosen |= {"channel/nitrolite-v0.5", "channel/nitrolite-v1"}
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
        for key in ("channel/nitrolite-v0.5", "channel/nitrolite-v1", "v4", "aggregator"):
            refuse(key, why)
        return Comparison(network.name, measured_at, resolved, (), unavailable)

    if resolved.asset.upper() not in _USD_ASSETS:
        why = f"the sandbox's methods move test dollars (USDC), not {resolved.asset}"
        for key in ("channel/nitrolite-v0.5", "channel/nitrolite-v1", "v4", "aggregator"):
            refuse(key, why)
        return Comparison(network.name, measured_at, resolved, (), unavailable)

    operator = sandbox.chain.wallet(0) if getattr(sandbox, "chain", None) is not None else None
    ctx = _Context(
        sandbox=sandbox,
        network=network,
        user=user,
        counterparty=resolved.counterparty,
        counterparty_wallet=cp_wallet,
        solver=others[-1] if len(others) >= 2 else None,
        operator=operator,
        intent=resolved,
        max_routes=max_routes,
        explorer=_explorer(sandbox, network),
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
                aggregator_runs = await _aggregator_runs(ctx, p)
    if "channel/nitrolite-v0.5" in chosen:
        if network.protocol != "nitrolite-v0.5" and "relayV05Url" not in network.extra:
            refuse("channel/nitrolite-v0.5", "no Nitrolite v0.5 node on this network")
        else:
            runs.append(await _run_channel(ctx, "nitrolite-v0.5"))
    if "channel/nitrolite-v1" in chosen:
        if network.protocol != "nitrolite-v1":
            refuse(
                "channel/nitrolite-v1",
                "this network's node speaks Nitrolite v0.5: start the sandbox with "
                "protocol='v1' (the v0.5 relay runs beside it)",
            )
        else:
            runs.append(await _run_channel(ctx, "nitrolite-v1"))
    if "v4" in chosen:
        if not network.extra.get("v4") or ctx.solver is None or ctx.operator is None:
            refuse("v4", "no policy-hook pool, solver or operator on this network")
        else:
            runs.append(await _run_v4(ctx))
    runs.extend(aggregator_runs)
    # the USD price arrived with the aggregator's routes: apply it to the earlier runs too
    if ctx.native_usd is not None:
        runs = [replace(r, cost_usd=_cost_usd(ctx, r.txs)) for r in runs]
    return Comparison(
        network=network.name,
        measured_at=measured_at,
        intent=resolved,
        runs=tuple(runs),
        unavailable=unavailable,
        native_usd=ctx.native_usd,
        price_source=ctx.price_source,
    )
