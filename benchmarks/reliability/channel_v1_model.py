"""A stateful model test of the channel method on Nitrolite v1: hypothesis drives random
sequences of ``ChannelProviderV1`` operations against one ``LocalSandbox(protocol="v1")``
(our Nitronode, our ChannelHub; in-process chain by default, anvil by ``chain``) and checks,
after every step, the invariants of :mod:`.channel_v1_invariants` (every node-signed state is
backed; tokens are conserved; the provider, the node and the chain agree, and agree with the
model).

The model holds, per wallet, its token balance on each chain, the off-chain balance the node
should hold for it (the latest state's allocation), whether it has an open home channel and
the chain that channel lives on (channels open on the provider's network's chain; a
migration moves one). Rules: faucet
(an off-chain v1 transfer from the faucet's channel), create (0 and > 0; more than the wallet
holds, and 0 right after a close with nothing received since, are refused), create while a
channel is open (refused), deposit (too much refused), transfer (to wallets with or without a
channel; amounts with many digits; all of the balance), transfer of more than the balance
(one unit more, 31 digits, uint256 max) and without a channel, both refused, withdraw (part,
all, too much), deposit from and withdrawal to the chain the channel does not live on
(escrows), migration of the home channel to the other chain and back (refused to the chain it
lives on, with nothing to move, and over an escrow deposit a crashed provider left pending,
which the next provider's ``recover()`` then finishes), close, close and reopen at once,
disputes on the hub the channel lives on, sync (acknowledges received funds),
provider restart over the same store (``recover()`` finds nothing to do), node restart over
the same database on the same port, and moving the chain clock (1 s to 2 days). Every
refusal must be a ``SettlementError`` with a message, raised before the wallet signed
anything and before the node stored anything.

``run_channel_v1_model`` is what ``make reliability`` runs (long) and ``tests/reliability``
runs (short); both report ``v1_model_sequences``, ``v1_model_steps`` and
``v1_model_violations``. A violation's message carries the sequence's steps so far, so the
failing sequence can be replayed by hand.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
import traceback
from collections.abc import Coroutine, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from .channel_model import _Counters, _LoopThread
from .channel_v1_invariants import (
    ChainView,
    EscrowRecord,
    HubView,
    ProviderView,
    Snapshot,
    WalletView,
    check,
    units,
)
from .common import CheckResult

__all__ = ["V1ModelParams", "run_channel_v1_model", "run_channel_v1_script"]

T = TypeVar("T")
U = 10**6
START_TOKENS = 40 * U
#: amounts with many significant digits, and far beyond any balance (31 digits, uint256 max)
HUGE = (10**30 + 1, 2**256 - 1)


@dataclass(frozen=True)
class V1ModelParams:
    """How much to run: ``sequences`` hypothesis examples of up to ``steps`` rules each;
    ``shrink`` lets hypothesis minimise a failing sequence (each replay is real work)."""

    sequences: int = 3
    steps: int = 12
    wallets: int = 3
    seed: int | None = None
    shrink: bool = False
    chain: str = "inprocess"
    #: run the sandbox's second chain too, with deposits from and withdrawals to it (escrows)
    escrow: bool = True
    #: known bugs to steer around while hunting for others (names of ``KNOWN_BUGS``); empty in
    #: the published runs, so a bug that is still there shows up as a violation
    avoid: frozenset[str] = frozenset()


#: the provider's on-chain steps sent on the escrow chain, not to the home channel's hub
_ESCROW_STEPS = frozenset({"escrow_deposit", "escrow_withdrawal", "escrow_payout"})

#: faucet payments one sequence may take (the faucet is topped up to cover them first)
FAUCET_PER_SEQUENCE = 8

#: bugs the model found that another change is fixing, by the name ``avoid`` takes
KNOWN_BUGS: dict[str, str] = {}


@dataclass
class _Env:
    """The sandbox and what every sequence shares."""

    sb: Any
    workdir: Path
    runner: _LoopThread
    sequence: int = 0
    log: list[str] = field(default_factory=list)
    #: what ended each failed sequence, as teardown saw it: hypothesis reports a sequence that
    #: fails where an earlier one with the same draws did not as "flaky" and drops the error
    failures: list[str] = field(default_factory=list)


def run_channel_v1_model(workdir: Path, params: V1ModelParams = V1ModelParams()) -> CheckResult:
    """Run the model for ``params`` against one v1 sandbox under ``workdir``."""
    from hypothesis import HealthCheck, Phase, settings
    from hypothesis.errors import Flaky
    from hypothesis.stateful import run_state_machine_as_test

    result = CheckResult("channel_v1_model")
    started = time.perf_counter()
    counters = _Counters()
    with _session(workdir, params) as env:
        machine = _machine_class(env, counters, params)
        phases = (Phase.explicit, Phase.generate) + ((Phase.shrink,) if params.shrink else ())
        config = settings(
            max_examples=params.sequences,
            stateful_step_count=params.steps,
            deadline=None,
            database=None,
            derandomize=params.seed is None,
            phases=phases,
            suppress_health_check=list(HealthCheck),
            print_blob=False,
        )
        try:
            if params.seed is not None:
                from hypothesis import seed

                run_state_machine_as_test(seed(params.seed)(machine), settings=config)
            else:
                run_state_machine_as_test(machine, settings=config)
        except Exception as exc:  # the falsifying sequence: a violation, with its steps
            causes = list(getattr(exc, "exceptions", ())) or [exc]
            for cause in causes:
                where = traceback.extract_tb(cause.__traceback__)[-1]
                result.fail(
                    f"{type(cause).__name__}: {cause} (at {Path(where.filename).name}:"
                    f"{where.lineno}: {where.line}); steps: {'; '.join(env.log)}"
                )
            if isinstance(exc, Flaky):  # the errors it hid: what the sequences raised
                for failure in env.failures:
                    result.fail(failure)
    result.metrics["v1_model_sequences"] = counters.sequences
    _finish(result, counters, started)
    result.metrics["v1_model_steps_per_second"] = round(counters.steps / result.seconds, 3)
    return result


class _Pick:
    """Stands in for hypothesis's ``data`` in a scripted step: draws ``choice`` where the
    strategy offers it (a wallet, an amount), else the strategy's first element."""

    def __init__(self, choice: Any = 0) -> None:
        self.choice = choice

    def draw(self, strategy: Any) -> Any:
        # ``st.sampled_from`` is lazy: its elements are on the strategy it wraps
        elements = list(getattr(strategy, "wrapped_strategy", strategy).elements)
        return self.choice if self.choice in elements else elements[0]


def run_channel_v1_script(
    workdir: Path,
    script: Sequence[tuple[str, Mapping[str, Any]]],
    params: V1ModelParams = V1ModelParams(),
) -> CheckResult:
    """Run one given sequence of the model's rules (name, arguments; ``data=_Pick(i)`` for
    wallet ``i``, implied as wallet 0) with every invariant checked after each step, as
    hypothesis would: for paths a short random run draws too rarely (a migration, escrows
    relative to the chain the channel moved to, a dispute there)."""
    result = CheckResult("channel_v1_script")
    started = time.perf_counter()
    counters = _Counters()
    with _session(workdir, params) as env:
        machine = _machine_class(env, counters, params)()
        try:
            machine.invariants_hold()
            for name, kwargs in script:
                args = dict(kwargs)
                if "data" in getattr(machine, name).__code__.co_varnames:
                    args.setdefault("data", _Pick())
                getattr(machine, name)(**args)
                machine.invariants_hold()
        except Exception as exc:
            result.fail(f"{type(exc).__name__}: {exc}; steps: {'; '.join(env.log)}")
        finally:
            machine.teardown()
    _finish(result, counters, started)
    return result


@contextlib.contextmanager
def _session(workdir: Path, params: V1ModelParams) -> Iterator[_Env]:
    """The model's v1 sandbox under ``workdir`` on its own loop thread, with SETTLEMENT_HOME
    there while it runs (the providers' stores), all stopped and restored after."""
    workdir.mkdir(parents=True, exist_ok=True)
    previous_home = os.environ.get("SETTLEMENT_HOME")
    os.environ["SETTLEMENT_HOME"] = str(workdir / "home")
    runner = _LoopThread()
    try:
        env = runner.run(_start_env(workdir, runner, params.chain, params.escrow))
        try:
            yield env
        finally:
            runner.run(env.sb.aclose())
    finally:
        runner.close()
        if previous_home is None:
            os.environ.pop("SETTLEMENT_HOME", None)
        else:
            os.environ["SETTLEMENT_HOME"] = previous_home


def _finish(result: CheckResult, counters: _Counters, started: float) -> None:
    """The counts every run reports, and its time."""
    result.metrics.update(
        {
            "v1_model_steps": counters.steps,
            "v1_model_rejected_operations": counters.rejected,
            "v1_model_violations": len(result.violations),
            "v1_model_steps_by_rule": dict(sorted(counters.by_rule.items())),
        }
    )
    result.seconds = time.perf_counter() - started


async def _start_env(workdir: Path, runner: _LoopThread, chain: str, escrow: bool) -> _Env:
    from settlement_widgets.sandbox import LocalSandbox

    sb = LocalSandbox(
        chain=chain,
        protocol="v1",
        aggregator=escrow,
        v4=False,
        wallets=1,
        data_dir=workdir / "sandbox",
    )
    await sb.start()
    return _Env(sb, workdir, runner)


def _machine_class(env: _Env, counters: _Counters, params: V1ModelParams) -> type:
    """The ``RuleBasedStateMachine`` bound to ``env`` (hypothesis builds one per sequence)."""
    from hypothesis import strategies as st
    from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

    from settlement_widgets.channel import request_faucet_tokens
    from settlement_widgets.channel.v1 import ChannelProviderV1
    from settlement_widgets.errors import RelayUnavailableError, SettlementError
    from settlement_widgets.keys import PrivateKey

    sb = env.sb
    n = params.wallets
    wallet_ids = st.integers(0, n - 1)
    _RARELY = st.sampled_from([False, False, False, True])
    tip = sb.faucet.config.tip_units
    #: the faucet keeps ``min_transfer_count`` tips back; the model's sequences spend at most
    #: ``FAUCET_PER_SEQUENCE`` and each sequence starts with the faucet topped up past both, so
    #: whether the faucet rule may run depends on the sequence's own steps only (hypothesis
    #: refuses a strategy whose draws depend on state outside the sequence, such as a faucet
    #: drained by earlier sequences)
    faucet_floor = (sb.faucet.config.min_transfer_count + 1 + FAUCET_PER_SEQUENCE) * tip
    #: the escrow chain (the sandbox's second chain), when the model runs one
    ESCROW = bool(params.escrow and sb.second_chain is not None)
    from settlement_widgets.channel.v1.chain.hub import ChannelHubClient

    CHAIN_A = sb.network.chain_id
    CHAIN_B = sb.second_chain.chain_id if ESCROW else 0
    #: every chain the model reads: chain id -> (its network, a read-only hub client signing
    #: with the deployer's wallet, never a user's, and the sandbox chain). Channels open on
    #: A; a migration moves one to the other chain and back, escrows run on the chain the
    #: channel does not live on.
    CHAINS: dict[int, tuple[Any, ChannelHubClient, Any]] = {}
    for chain_obj in (sb.chain, sb.second_chain) if ESCROW else (sb.chain,):
        net = sb.network if chain_obj.chain_id == CHAIN_A else sb.network.on_chain(CHAIN_B)
        CHAINS[chain_obj.chain_id] = (
            net,
            ChannelHubClient(chain_obj.wallet(0), net.contracts.channel_hub),
            chain_obj,
        )

    def other(chain_id: int) -> int:
        """The chain a channel living on ``chain_id`` escrows on, or migrates to."""
        return CHAIN_B if chain_id == CHAIN_A else CHAIN_A

    class ChannelV1Model(RuleBasedStateMachine):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            env.sequence += 1
            env.log = []
            counters.sequences += 1
            self.seq = env.sequence
            self.wallets = self.run(self._fresh_wallets())
            self.providers: dict[int, ChannelProviderV1] = {}
            #: chain id -> wallet -> its tokens there (each chain mints START_TOKENS to it)
            self.tokens = {c: dict.fromkeys(range(n), START_TOKENS) for c in CHAINS}
            #: the chain each wallet's (open or last) channel lives on
            self.home: dict[int, int] = dict.fromkeys(range(n), CHAIN_A)
            self.offchain = dict.fromkeys(range(n), 0)
            self.open: dict[int, bool] = dict.fromkeys(range(n), False)
            #: closed a channel and received nothing since (its latest state is its finalize)
            self.bare: dict[int, bool] = dict.fromkeys(range(n), False)
            #: chain id -> the token total over its holders, and the funds locked there by
            #: channels outside this sequence (both taken once, at its start)
            self.totals: dict[int, int] = dict.fromkeys(CHAINS, 0)
            self.other_locked: dict[int, int] = dict.fromkeys(CHAINS, 0)
            self.faucet_uses = 0  # faucet payments in this sequence (its budget is fixed)
            self.closed_views: dict[tuple[int, str], HubView] = {}
            self.run(self._baseline())

        # --- plumbing -----------------------------------------------------------------

        def run(self, coro: Coroutine[Any, Any, T]) -> T:
            return env.runner.run(coro)

        def call(self, fn: Any, *args: Any) -> Any:
            """A synchronous read on the loop thread (stores are used there only)."""

            async def on_loop() -> Any:
                return fn(*args)

            return self.run(on_loop())

        def step(self, text: str) -> None:
            env.log.append(text)
            name = text.split("(", 1)[0]
            counters.steps += 1
            counters.by_rule[name] = counters.by_rule.get(name, 0) + 1

        async def _fresh_wallets(self) -> list[Any]:
            from settlement_widgets.contracts import load_artifact

            deployer = sb.chain.wallet(0)
            abi = load_artifact("TestToken").abi
            token = deployer.w3.eth.contract(address=sb.token, abi=abi)
            wallets = []
            for _ in range(n):
                wallet = sb.chain.wallet_for(PrivateKey.generate())
                await deployer.transact(to=wallet.address, value=10**18)
                await deployer.transact(
                    token.functions.mint(wallet.address, START_TOKENS), abis=[abi]
                )
                wallets.append(wallet)
            if ESCROW:  # the same keys hold the asset's token on the escrow chain
                net_b, _hub, chain_b = CHAINS[CHAIN_B]
                deployer_b = chain_b.wallet(0)
                token_b = deployer_b.w3.eth.contract(address=net_b.token, abi=abi)
                for wallet in wallets:
                    await deployer_b.transact(to=wallet.address, value=10**18)
                    await deployer_b.transact(
                        token_b.functions.mint(wallet.address, START_TOKENS), abis=[abi]
                    )
            return wallets

        def holders(self, chain_id: int) -> list[str]:
            """Who holds the token on ``chain_id``: the wallets, the faucet, the node, the
            hub (last)."""
            return [w.address for w in self.wallets] + [
                sb.faucet.payer.provider.address,
                sb.broker_address,
                CHAINS[chain_id][1].address,
            ]

        async def token_balances(self, chain_id: int) -> list[int]:
            net, hub, _ = CHAINS[chain_id]
            return [await hub.token_balance(net.token, a) for a in self.holders(chain_id)]

        async def _baseline(self) -> None:
            """The faucet topped up for this sequence, the token total, and the locked funds
            of channels outside this sequence. Taken with the node quiet: an earlier
            sequence's escrow settling behind this one's reads would count as a leak."""
            from settlement_widgets.sandbox.provision import mint_test_token

            await sb.nitronode.settled()
            faucet = sb.faucet.payer.provider
            short = faucet_floor - (sb.faucet.payer.balance(self.asset) or 0)
            if short > 0:  # a deposit into the faucet's open channel, as its operator would
                await mint_test_token(sb.chain.wallet(0), sb.token, faucet.address, short)
                assert (await faucet.deposit(short)).status == 1
            for chain_id in CHAINS:
                self.totals[chain_id] = sum(await self.token_balances(chain_id))
            mine = {w.lower() for w in self._tracked()}
            others = [
                c["channel_id"]
                for c in sb.nitronode.ledger.channels.values()
                if c["user_wallet"].lower() not in mine
            ]
            for chain_id, (_net, hub, _chain) in CHAINS.items():  # earlier ones migrated too
                self.other_locked[chain_id] = sum(
                    [(await hub.get_channel_data(c)).locked_funds for c in others]
                )

        def _tracked(self) -> list[str]:
            return [w.address for w in self.wallets] + [sb.faucet.payer.provider.address]

        def provider(self, i: int) -> ChannelProviderV1:
            if i not in self.providers:
                self.providers[i] = self.run(
                    ChannelProviderV1(sb.network, self.wallets[i]).connect()
                )
            return self.providers[i]

        def signed_so_far(self, i: int) -> tuple[int, int]:
            """(states wallet ``i`` signed in its store, states in the node's chain for it);
            a refused operation may store a state the node issued (a receive), never sign."""
            p = self.providers[i]
            node = sb.nitronode.ledger.state_chain(self.wallets[i].address, self.asset)
            return sum(1 for s in p.store.states(p.asset) if s.get("user_sig")), len(node)

        @property
        def asset(self) -> str:
            return str(sb.faucet.payer.provider.asset)

        def refused(self, i: int, coro: Coroutine[Any, Any, Any], what: str) -> None:
            """``coro`` must fail with a ``SettlementError`` that says something, before the
            wallet signed anything (its store and the node's chain are unchanged)."""
            self.provider(i)
            before = self.call(self.signed_so_far, i)
            try:
                self.run(coro)
            except SettlementError as exc:
                assert str(exc).strip(), f"{what}: {type(exc).__name__} with an empty message"
                counters.rejected += 1
                error = f"{type(exc).__name__}: {exc}"
            else:
                raise AssertionError(f"{what} was accepted; the model expected a refusal")
            after = self.call(self.signed_so_far, i)
            assert after == before, (
                f"{what} was refused ({error}) but only after signing: "
                f"(user-signed states in the store, node states) went from {before} to {after}"
            )

        @staticmethod
        def sent_on(tx: Any, chain_id: int) -> None:
            """``tx`` was sent on ``chain_id`` (its explorer link names the chain unless it
            is the provider's network's own)."""
            named = f"/chain/{chain_id}/" in tx.explorer_url
            assert named == (chain_id != CHAIN_A), (tx.explorer_url, chain_id)

        def pick(self, data: Any, open_: bool) -> int:
            return int(data.draw(st.sampled_from([i for i in range(n) if self.open[i] == open_])))

        # --- rules ----------------------------------------------------------------------

        @initialize(amount=st.sampled_from([0, 2 * U]))
        def open_first_channel(self, amount: int) -> None:
            """Every sequence starts with wallet 0 funded and a channel open, so random
            steps exercise channels rather than mostly refusals."""
            self.faucet(0)
            self.create(0, amount)

        @precondition(
            lambda self: (
                self.faucet_uses < FAUCET_PER_SEQUENCE and sum(self.offchain.values()) < 30 * U
            )
        )
        @rule(i=wallet_ids)
        def faucet(self, i: int) -> None:
            self.step(f"faucet({i})")
            reply = self.run(request_faucet_tokens(self.wallets[i].address, sb.network))
            assert reply["success"] is True, reply
            self.faucet_uses += 1
            self.offchain[i] += tip
            self.bare[i] = False

        @precondition(lambda self: not all(self.open.values()))
        @rule(data=st.data(), amount=st.sampled_from([0, 0, 1, 1_234_567, 7 * U, 90 * U]))
        def open_channel(self, data: Any, amount: int) -> None:
            self.create(self.pick(data, False), amount)

        def create(self, i: int, amount: int) -> None:
            p = self.provider(i)
            self.step(f"create({i}, {amount})")
            # v1 opens an empty channel with an acknowledgement, valid only over a state the
            # wallet has not signed: not over its own finalize with nothing received since
            if amount > self.tokens[CHAIN_A][i] or (amount == 0 and self.bare[i]):
                self.refused(i, p.create_channel(p.node_address, p.asset, amount), "create")
                return
            channel = self.run(p.create_channel(p.node_address, p.asset, amount))
            assert channel.status == "active", channel
            # a new channel opens on the provider's network's chain, wherever the last one
            # migrated to
            assert channel.chain_id == CHAIN_A, (channel.chain_id, CHAIN_A)
            self.home[i] = CHAIN_A
            self.open[i] = True
            self.bare[i] = False
            self.tokens[CHAIN_A][i] -= amount
            self.offchain[i] += amount
            assert channel.amount == self.offchain[i], (channel.amount, self.offchain[i])

        @precondition(lambda self: any(self.open.values()))
        @rule(data=st.data(), now=_RARELY)
        def create_while_open(self, data: Any, now: bool) -> None:
            if not now:  # a refusal: rarer than an operation
                return
            i = self.pick(data, True)
            self.step(f"create_while_open({i})")
            p = self.provider(i)
            self.refused(i, p.create_channel(p.node_address, p.asset, 0), "a second channel")

        @precondition(lambda self: any(self.open.values()))
        @rule(data=st.data(), amount=st.sampled_from([1, 1_234_567, 5 * U, 60 * U, HUGE[0]]))
        def deposit(self, data: Any, amount: int) -> None:
            i = self.pick(data, True)
            self.step(f"deposit({i}, {amount})")
            p = self.provider(i)
            here = self.home[i]  # from the wallet on the chain the channel lives on
            if amount > self.tokens[here][i]:
                self.refused(i, p.deposit(amount), f"deposit {amount}")
                return
            tx = self.run(p.deposit(amount))
            assert tx.status == 1
            self.sent_on(tx, here)
            self.tokens[here][i] -= amount
            self.offchain[i] += amount

        @precondition(lambda self: ESCROW and any(self.open.values()))
        @rule(data=st.data(), amount=st.sampled_from([1, 1_234_567, 5 * U, 60 * U]))
        def deposit_from(self, data: Any, amount: int) -> None:
            """Tokens from the wallet on the other chain than the home channel's (an escrow
            deposit); more than the wallet holds there is refused before anything is
            signed, and so is one from the channel's own chain (that is ``deposit``). The
            step waits for the node to settle the escrow (its own effect)."""
            i = self.pick(data, True)
            source = other(self.home[i])
            self.step(f"deposit_from({i}, {source}, {amount})")
            p = self.provider(i)
            if amount > self.tokens[source][i]:
                self.refused(i, p.deposit_from(source, amount), f"deposit_from {amount}")
                return
            if amount == 1:  # and from the chain it lives on: refused, that is deposit()
                self.refused(i, p.deposit_from(self.home[i], 1), "deposit_from its own chain")
            tx = self.run(p.deposit_from(source, amount))
            assert tx.status == 1
            self.run(sb.nitronode.settled())
            self.tokens[source][i] -= amount
            self.offchain[i] += amount
            self.bare[i] = False

        @precondition(lambda self: ESCROW and any(self.open.values()))
        @rule(data=st.data(), amount=st.sampled_from([1, 1_234_567, 2 * U, -1, -2]))
        def withdraw_to(self, data: Any, amount: int) -> None:
            """Out of the home channel to the wallet on the escrow chain (an escrow
            withdrawal); -1: all of it, -2: one unit more than the balance (refused before
            anything is signed)."""
            i = self.pick(data, True)
            if amount == -1:
                amount = self.offchain[i]
            elif amount == -2:
                amount = self.offchain[i] + 1
            target = other(self.home[i])  # relative to where the channel lives now
            self.step(f"withdraw_to({i}, {target}, {amount})")
            p = self.provider(i)
            if amount == 0 or amount > self.offchain[i]:
                self.refused(i, p.withdraw_to(target, amount), f"withdraw_to {amount}")
                return
            tx = self.run(p.withdraw_to(target, amount))
            assert tx.status == 1
            self.run(sb.nitronode.settled())  # its home-chain steps
            self.tokens[target][i] += amount
            self.offchain[i] -= amount

        @precondition(lambda self: ESCROW and any(self.open.values()))
        @rule(data=st.data(), to=st.sampled_from(["other", "other", "other", "same"]))
        def migrate(self, data: Any, to: str) -> None:
            """Move the home channel to the other chain (and, drawn again later, back): the
            whole balance follows it, the old hub releases its funds to the node's vault and
            shows the channel MIGRATED_OUT, and deposits, withdrawals, escrows, the close
            and disputes then run on the new chain. Refused before anything is signed: to
            the chain it already lives on, and with nothing to move."""
            i = self.pick(data, True)
            here = self.home[i]
            target = here if to == "same" else other(here)
            p = self.provider(i)
            if to == "same" or self.offchain[i] == 0:
                self.step(f"migrate_refused({i}, {target})")
                self.refused(i, p.migrate(target), f"migrate to {target} from {here}")
                return
            self.step(f"migrate({i}, {here}->{target})")
            cid = self.call(p.channels)[-1].id
            tx = self.run(p.migrate(target))
            assert tx.status == 1
            self.sent_on(tx, target)
            self.run(sb.nitronode.settled())  # the node's release of the old chain
            self.home[i] = target
            moved = self.call(p.get_channel, cid)
            assert (moved.chain_id, moved.status, moved.amount) == (
                target,
                "active",
                self.offchain[i],
            ), moved

        @precondition(lambda self: ESCROW and any(self.open.values()))
        @rule(data=st.data(), now=_RARELY)
        def migrate_over_pending_deposit(self, data: Any, now: bool) -> None:
            """The provider dies after the escrow deposit's lock is co-signed, before
            ``initiateEscrowDeposit``: a migration then is refused before anything is signed
            (an escrow is pending); the next provider's ``recover()`` (on connect) sends the
            deposit and has it credited, and the node settles it."""
            if not now:  # a refusal: rarer than an operation
                return
            i = self.pick(data, True)
            source = other(self.home[i])
            if self.tokens[source][i] < U:
                return
            self.step(f"migrate_over_pending_deposit({i}, {source})")
            p = self.provider(i)
            hub = p._hub_on(source)

            async def dies(*_a: Any, **_k: Any) -> Any:
                raise RelayUnavailableError("the process died before initiateEscrowDeposit")

            hub.initiate_escrow_deposit = dies
            try:
                self.run(p.deposit_from(source, U))
            except RelayUnavailableError:
                pass
            else:
                raise AssertionError("deposit_from ran on without initiateEscrowDeposit")
            self.refused(i, p.migrate(source), "a migration over a pending escrow lock")
            self.run(self.providers.pop(i).close())
            finished = self.run(self.provider(i).recover())  # connect() did it already
            assert finished == [], finished
            self.run(sb.nitronode.settled())
            self.tokens[source][i] -= U
            self.offchain[i] += U
            self.bare[i] = False

        @precondition(lambda self: any(self.open.values()))
        @rule(
            data=st.data(),
            j=wallet_ids,
            amount=st.sampled_from([1, 999_999, 1_234_567, U, 3 * U, -1]),
        )
        def transfer(self, data: Any, j: int, amount: int) -> None:
            """A transfer within the balance (-1: all of it), to a wallet with or without a
            channel."""
            self._transfer(self.pick(data, True), j, amount)

        @precondition(lambda self: any(self.open.values()))
        @rule(data=st.data(), j=wallet_ids, amount=st.sampled_from([-1, *HUGE]))
        def transfer_too_much(self, data: Any, j: int, amount: int) -> None:
            """More than the balance (-1: one unit more; 31 digits; uint256 max): refused
            before anything is signed."""
            i = self.pick(data, True)
            self._transfer(i, j, self.offchain[i] + 1 if amount == -1 else amount)

        def _transfer(self, i: int, j: int, amount: int) -> None:
            if i == j:
                j = (j + 1) % n
            if amount == -1:
                amount = self.offchain[i]
            self.step(f"transfer({i}, {j}, {amount})")
            p = self.provider(i)
            to = self.wallets[j].address
            if amount == 0 or amount > self.offchain[i]:
                self.refused(i, p.transfer(None, amount, to), f"transfer {amount}")
                return
            sent = self.run(p.transfer(None, amount, to))
            assert sent.amount == amount, (sent.amount, amount)
            self.offchain[i] -= amount
            self.offchain[j] += amount
            self.bare[j] = False

        @precondition(lambda self: not all(self.open.values()))
        @rule(data=st.data(), j=wallet_ids, now=_RARELY)
        def transfer_without_channel(self, data: Any, j: int, now: bool) -> None:
            if not now:  # a refusal: rarer than an operation
                return
            i = self.pick(data, False)
            self.step(f"transfer_without_channel({i}, {j})")
            p = self.provider(i)
            to = self.wallets[j if j != i else (i + 1) % n].address
            self.refused(i, p.transfer(None, 1, to), "a transfer without a channel")

        @precondition(lambda self: any(self.open.values()))
        @rule(data=st.data(), part=st.sampled_from([None, 1, 1_234_567, -1]))
        def withdraw(self, data: Any, part: int | None) -> None:
            i = self.pick(data, True)
            p = self.provider(i)
            amount = self.offchain[i] if part is None else part
            if part == -1:
                amount = self.offchain[i] + 1
            self.step(f"withdraw({i}, {part if part is None else amount})")
            if amount == 0 or amount > self.offchain[i]:
                self.refused(i, p.withdraw(part if part is None else amount), "withdraw")
                return
            tx = self.run(p.withdraw(part if part is None else amount))
            assert tx.status == 1
            self.tokens[self.home[i]][i] += amount  # on the chain the channel lives on
            self.offchain[i] -= amount

        @precondition(lambda self: any(self.open.values()))
        @rule(data=st.data(), reopen=st.sampled_from([False, True]))
        def close(self, data: Any, reopen: bool) -> None:
            i = self.pick(data, True)
            self.step(f"close({i}, reopen={reopen})")
            p = self.provider(i)
            tx = self.run(p.close_channel())
            assert tx.status == 1
            self.tokens[self.home[i]][i] += self.offchain[i]  # paid where it lives
            self.offchain[i] = 0
            self.open[i] = False
            self.bare[i] = True
            assert self.run(p.balances()).get(p.asset, 0) == 0
            if reopen:
                self.create(i, min(U, self.tokens[CHAIN_A][i]))

        @precondition(lambda self: any(self.open.values()))
        @rule(data=st.data(), gift=st.sampled_from([False, True]), now=_RARELY)
        def challenge_and_close(self, data: Any, gift: bool, now: bool) -> None:
            """A dispute the node never answers: the wallet challenges with its latest
            co-signed state (optionally receiving a faucet payment while it is disputed),
            the period passes, the wallet closes on chain. The node then credits what the
            chain did not enforce with a challenge rescue, and the wallet may open again."""
            if not now:  # rarer than an operation
                return
            i = self.pick(data, True)
            p = self.provider(i)
            gift = gift and self.faucet_uses < FAUCET_PER_SEQUENCE
            self.step(f"challenge_and_close({i}, gift={gift})")
            channel = self.call(p.channels)[-1]  # the store lives on the loop thread
            self.run(p.sync())  # receives acknowledged: the latest state is co-signed
            assert self.run(p.challenge()).status == 1
            if gift:
                reply = self.run(request_faucet_tokens(self.wallets[i].address, sb.network))
                assert reply["success"] is True, reply
                self.faucet_uses += 1
            here = self.home[i]  # the dispute runs on the hub the channel lives on
            assert channel.chain_id == here, (channel.chain_id, here)
            self.run(CHAINS[here][2].time_travel(channel.challenge_period + 1))
            assert self.run(p.close_channel()).status == 1
            self.tokens[here][i] += self.offchain[i]  # the challenged state's balance
            self.offchain[i] = tip if gift else 0  # credited by the rescue
            self.open[i] = False
            self.bare[i] = False  # the latest state is the node's unsigned rescue
            assert self.run(p.balances()).get(p.asset, 0) == self.offchain[i]

        @rule(i=wallet_ids)
        def sync(self, i: int) -> None:
            self.step(f"sync({i})")
            p = self.provider(i)
            state = self.run(p.sync())
            if self.open[i] and state is not None:
                assert state.get("user_sig") and state.get("node_sig"), (
                    "after sync the latest state of an open channel is co-signed"
                )

        @rule(i=wallet_ids, now=_RARELY)
        def restart_provider(self, i: int, now: bool) -> None:
            if not now or i not in self.providers:
                return
            self.step(f"restart_provider({i})")
            self.run(self.providers.pop(i).close())
            finished = self.run(self.provider(i).recover())
            assert finished == [], f"nothing was interrupted, yet recover() did {finished}"

        @rule(now=_RARELY)
        def restart_node(self, now: bool) -> None:
            if not now:
                return
            self.step("restart_node()")
            self.run(sb.restart_nitronode())

        @rule(seconds=st.sampled_from([1, 600, 2 * 86400]), now=_RARELY)
        def advance_time(self, seconds: int, now: bool) -> None:
            if not now:  # rarer than an operation
                return
            self.step(f"advance_time({seconds})")
            for _net, _hub, chain in CHAINS.values():  # a home channel may live on either
                self.run(chain.time_travel(seconds))

        # --- invariants -------------------------------------------------------------------

        @invariant()
        def invariants_hold(self) -> None:
            broken = check(self.run(self.snapshot()))
            assert not broken, "; ".join(broken)

        async def snapshot(self) -> Snapshot:
            ledger = sb.nitronode.ledger
            faucet = sb.faucet.payer.provider
            decimals = faucet.decimals
            asset = faucet.asset
            entries: list[tuple[str, Any, ChannelProviderV1 | None, int | None]] = [
                (f"w{i}", w, self.providers.get(i), i) for i, w in enumerate(self.wallets)
            ]
            entries.append(("faucet", faucet.wallet, faucet, None))
            views = []
            channel_ids: set[str] = set()
            balances = {c: await self.token_balances(c) for c in CHAINS}
            for label, wallet, p, i in entries:
                states = list(ledger.state_chain(wallet.address, asset))
                channel_ids |= {
                    str(s["home_channel_id"]).lower() for s in states if s.get("home_channel_id")
                }
                home = await faucet.client.get_home_channel(wallet.address, asset)
                reply = await faucet.client.get_balances(wallet.address)
                amounts = [units(e["amount"], decimals) for e in reply if e["asset"] == asset]
                at = self.holders(CHAIN_A).index(wallet.address)
                views.append(
                    WalletView(
                        label=label,
                        address=wallet.address,
                        states=states,
                        node_balance=amounts[0] if amounts else None,
                        node_channel=(
                            (
                                str(home["channel_id"]),
                                str(home["status"]),
                                int(home["blockchain_id"]),
                            )
                            if home
                            else None
                        ),
                        provider=await _provider_view(p) if p is not None else None,
                        tokens={c: balances[c][at] for c in CHAINS},
                        expected_offchain=self.offchain[i] if i is not None else None,
                        expected_tokens=(
                            {c: self.tokens[c][i] for c in CHAINS} if i is not None else None
                        ),
                    )
                )
            escrows = await self._escrows(views)
            chains = {}
            for chain_id, (net, hub, _chain) in CHAINS.items():
                channels = {}
                for c in sorted(channel_ids):  # every channel on every hub: migrations move them
                    key = (chain_id, c)  # a closed channel never changes: read it once
                    channels[c] = self.closed_views.get(key) or await _hub_view(hub, c)
                    if channels[c].status == "CLOSED":
                        self.closed_views[key] = channels[c]
                chains[chain_id] = ChainView(
                    token_total=sum(balances[chain_id]),
                    expected_token_total=self.totals[chain_id],
                    hub_tokens=balances[chain_id][-1],
                    node_vault=await hub.get_node_balance(net.token),
                    channels=channels,
                    other_locked=self.other_locked[chain_id],
                    deposits=escrows[chain_id]["deposit"],
                    withdrawals=escrows[chain_id]["withdrawal"],
                )
            return Snapshot(
                decimals=decimals,
                wallets=views,
                transactions=list(ledger.transactions),
                chains=chains,
                node_quiet=not sb.nitronode.settling,
            )

        async def _escrows(
            self, views: list[WalletView]
        ) -> dict[int, dict[str, dict[str, EscrowRecord]]]:
            """Every escrow the wallets' states name, read on the hub of the chain its escrow
            ledger names (the chain the home channel did not live on then)."""
            records = sb.nitronode.ledger.escrows
            found: dict[int, dict[str, dict[str, EscrowRecord]]] = {
                c: {"deposit": {}, "withdrawal": {}} for c in CHAINS
            }
            which = {120: "deposit", 20: "deposit", 110: "withdrawal", 21: "withdrawal"}
            for view in views:
                for state in view.states:
                    kind = which.get(int(state["transition"]["type"]))
                    escrow_id = str(state.get("escrow_channel_id") or "").lower()
                    chain_id = int((state.get("escrow_ledger") or {}).get("blockchain_id") or 0)
                    if kind is None or chain_id not in found or escrow_id in found[chain_id][kind]:
                        continue
                    hub = CHAINS[chain_id][1]
                    read = (
                        hub.get_escrow_deposit_data
                        if kind == "deposit"
                        else hub.get_escrow_withdrawal_data
                    )
                    data = await read(escrow_id)
                    mine = records.get(escrow_id) or records.get(str(state["escrow_channel_id"]))
                    found[chain_id][kind][escrow_id] = EscrowRecord(
                        status=data.status,
                        locked_amount=data.locked_amount,
                        settled_by_node=bool(mine and mine["status"] == "settled"),
                    )
            return found

        def teardown(self) -> None:
            failure = sys.exc_info()[1]  # hypothesis tears down in a ``finally``
            if failure is not None:
                where = traceback.extract_tb(failure.__traceback__)[-1]
                env.failures.append(
                    f"sequence {self.seq}: {type(failure).__name__}: {failure} (at "
                    f"{Path(where.filename).name}:{where.lineno}: {where.line}); "
                    f"steps: {'; '.join(env.log)}"
                )
            for p in self.providers.values():
                self.run(p.close())

    return ChannelV1Model


async def _provider_view(p: Any) -> ProviderView:
    balance = (await p.balances()).get(p.asset, 0)
    records = p.store.channels()
    if not records:
        return ProviderView(balance=balance)
    cid = records[-1]["channel_id"]
    channel = p.get_channel(cid)
    done = [
        (int(r["epoch"]), int(r["version"]))
        for r in p.store.onchain(status="done")
        if r["channel_id"] == cid and r["step"] not in _ESCROW_STEPS  # those: the other chain
    ]
    return ProviderView(
        balance=balance,
        channel_id=cid,
        status=channel.status,
        version=channel.version,
        amount=channel.amount,
        onchain_version=max(done)[1] if done else None,
        chain_id=channel.chain_id,
    )


async def _hub_view(hub: Any, channel_id: str) -> HubView:
    data = await hub.get_channel_data(channel_id)
    ledger = data.last_state.get("homeLedger", {}) if data.last_state else {}
    return HubView(
        status=data.status,
        version=int(data.last_state.get("version", 0)) if data.last_state else 0,
        user_allocation=int(ledger.get("userAllocation", 0)),
        user_net_flow=int(ledger.get("userNetFlow", 0)),
        node_allocation=int(ledger.get("nodeAllocation", 0)),
        node_net_flow=int(ledger.get("nodeNetFlow", 0)),
        locked_funds=data.locked_funds,
    )
