"""The v4 method on the in-process EVM: the real PoolManager, our hook and adapter, a pool with
liquidity; a user-signed intent settled by a solver, and every way it must refuse.

One deployment per module (deploying takes ~1.5 s); each test uses its own intent ids, so the
tests do not depend on each other's order.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest
import pytest_asyncio
from eth_abi import encode
from web3 import AsyncWeb3
from web3.providers.eth_tester import AsyncEthereumTesterProvider

from settlement_widgets import networks, providers
from settlement_widgets.addresses import ZERO_ADDRESS
from settlement_widgets.contracts import load_artifact
from settlement_widgets.errors import (
    ConfigurationError,
    InvalidAmountError,
    InvalidSignatureError,
    PolicyRejectedError,
    TransactionFailedError,
)
from settlement_widgets.keys import PrivateKey
from settlement_widgets.providers import get_v4_provider, init_v4_provider, reset_v4_provider
from settlement_widgets.v4 import (
    Intent,
    PoolKey,
    SwapParams,
    V4Deployment,
    V4Provider,
    deploy_v4,
    evaluate_policy,
    exact_input_swap,
    flags_of,
    intent_digest,
    intent_id,
    reason_code,
    sign_intent,
)
from settlement_widgets.v4.core.pool import MIN_SQRT_PRICE
from settlement_widgets.wallet import WalletClient

pytestmark = pytest.mark.asyncio(loop_scope="module")

KEYS = {
    "deployer": "0x" + "d1" * 32,
    "solver": "0x" + "50" * 32,
    "user": "0x" + "05" * 32,
    "outsider": "0x" + "0f" * 32,
    "poor": "0x" + "09" * 32,
}
AMOUNT_IN = 10**18
USER_TOKENS = 100 * 10**18


@dataclass
class Env:
    w3: AsyncWeb3
    network: networks.Network
    dep: V4Deployment
    wallets: dict[str, WalletClient]
    providers: dict[str, V4Provider]

    def p(self, who: str) -> V4Provider:
        return self.providers[who]

    async def now(self) -> int:
        return int((await self.w3.eth.get_block("latest"))["timestamp"])

    async def intent(
        self, label: str, *, min_out: int, user: str = "user", sell: int = 0, **changes: Any
    ) -> Intent:
        tokens = (self.dep.token0, self.dep.token1)
        base = Intent(
            id=intent_id(label),
            user=self.wallets[user].address,
            token_in=tokens[sell],
            token_out=tokens[1 - sell],
            amount_in=AMOUNT_IN,
            min_amount_out=min_out,
            deadline=await self.now() + 3600,
        )
        return dataclasses.replace(base, **changes) if changes else base


async def _fund(w3: AsyncWeb3, *addresses: str) -> None:
    rich = (await w3.eth.accounts)[0]
    for address in addresses:
        tx = await w3.eth.send_transaction({"from": rich, "to": address, "value": 100 * 10**18})
        await w3.eth.wait_for_transaction_receipt(tx)


def _local_network(chain_id: int, dep: V4Deployment) -> networks.Network:
    base = networks.local(
        chain_id=chain_id,
        custody=ZERO_ADDRESS,
        adjudicator=ZERO_ADDRESS,
        policy_hook=ZERO_ADDRESS,
        settlement_adapter=ZERO_ADDRESS,
        pool_manager=ZERO_ADDRESS,
        node_url="ws://127.0.0.1:1/ws",
        faucet_url="http://127.0.0.1:1/faucet/requestTokens",
        explorer_base="http://127.0.0.1:1/explorer",
    )
    return dep.apply_to(base)


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def env() -> AsyncIterator[Env]:
    w3 = AsyncWeb3(AsyncEthereumTesterProvider())
    wallets = {name: WalletClient(key, w3=w3) for name, key in KEYS.items()}
    await _fund(w3, *(w.address for w in wallets.values()))
    dep = await deploy_v4(w3, wallets["deployer"], owner=wallets["deployer"].address)
    network = _local_network(int(await w3.eth.chain_id), dep)
    providers = {name: V4Provider(w, network=network) for name, w in wallets.items()}
    owner = providers["deployer"]
    await owner.set_authorized_solver(wallets["solver"].address)
    for name in ("user", "poor"):
        for address in (dep.token0, dep.token1):
            token = w3.eth.contract(address=address, abi=load_artifact("V4TestToken").abi)
            await wallets["deployer"].transact(
                token.functions.mint(wallets[name].address, USER_TOKENS)
            )
    for address in (dep.token0, dep.token1):
        await providers["user"].approve_adapter(address)  # "poor" never approves
    yield Env(w3, network, dep, wallets, providers)


async def _balances(env: Env, who: str) -> tuple[int, int]:
    p = env.p(who)
    return await p.balance_of(env.dep.token0), await p.balance_of(env.dep.token1)


# --- the deployment -----------------------------------------------------------------------


async def test_deployment_is_real_and_wired(env: Env) -> None:
    dep = env.dep
    assert flags_of(dep.hook) == 0x0080
    assert int(dep.hook, 16) & 0xFFFF in (0x0080, 0x4080, 0x8080, 0xC080)
    pm_code = await env.w3.eth.get_code(dep.pool_manager)
    # v4-core's own PoolManager: its runtime code, except the zero-filled immutable slots
    reference = bytes.fromhex(load_artifact("PoolManager").deployed_bytecode[2:])
    assert len(pm_code) == len(reference)
    assert all(a == b or b == 0 for a, b in zip(bytes(pm_code), reference, strict=True))
    report = await env.p("deployer").inspect()
    assert report.code_present == {
        "policyHook": True,
        "settlementAdapter": True,
        "poolManager": True,
    }
    assert report.flags_ok and [n for n, on in report.flags.items() if on] == ["beforeSwap"]
    assert report.hook_owner == report.adapter_owner == env.wallets["deployer"].address
    assert report.hook_owner_kind == "eoa"
    assert report.adapter_policy_hook == dep.hook
    assert report.hook_pool_manager == report.adapter_pool_manager == dep.pool_manager
    assert report.can_hold_policies is True and report.can_settle
    assert report.wallet_is_hook_owner and report.wallet_is_adapter_owner
    assert report.eip712_domain is not None
    assert report.eip712_domain.name == "SettlementAdapter"
    assert report.eip712_domain.verifying_contract == dep.adapter
    assert report.eip712_domain.chain_id == env.network.chain_id
    assert "it can register policies" in str(report)
    solver_view = await env.p("solver").inspect()
    assert solver_view.wallet_is_solver and not solver_view.wallet_is_hook_owner
    outsider_view = await env.p("outsider").inspect()
    assert "is not an authorized solver" in str(outsider_view)


async def test_deployment_is_deterministic(env: Env) -> None:
    w3 = AsyncWeb3(AsyncEthereumTesterProvider())
    deployer = WalletClient(KEYS["deployer"], w3=w3)
    await _fund(w3, deployer.address)
    again = await deploy_v4(w3, deployer, owner=deployer.address)
    fields = ("pool_manager", "hook", "hook_salt", "adapter", "token0", "token1", "pool_key")
    assert {f: getattr(again, f) for f in fields} == {f: getattr(env.dep, f) for f in fields}


async def test_hash_intent_matches_python(env: Env) -> None:
    p = env.p("user")
    intent = await env.intent("hash-check", min_out=1)
    domain = await p.eip712_domain()
    assert await p.hash_intent(intent) == intent_digest(intent, domain)


# --- settlement ---------------------------------------------------------------------------


async def test_settle_signed_intent_end_to_end(env: Env) -> None:
    from settlement_widgets.proofs import list_proofs

    owner, user, solver = env.p("deployer"), env.p("user"), env.p("solver")
    intent = await env.intent("e2e", min_out=99 * 10**16)  # at least 0.99 of the input
    quoted = 996 * 10**15
    await owner.register_policy(
        intent.id,
        intent.min_amount_out,
        await env.now() + 600,
        reference_amount_out=quoted,
        max_slippage_bps=50,
    )
    assert await solver.check_policy(intent.id, quoted) == (True, "OK")
    signed = await user.sign_intent(intent)
    before = await _balances(env, "user")

    tx = await solver.settle_intent(signed, env.dep.pool_key, quoted)

    after = await _balances(env, "user")
    assert after[0] == before[0] - intent.amount_in  # exactly amountIn of token0 left
    gained = after[1] - before[1]
    assert gained >= intent.min_amount_out
    settled = tx.event("IntentSettled")
    assert settled is not None and settled.address == env.dep.adapter
    assert settled.args == {"intentId": intent.id_bytes, "solver": env.wallets["solver"].address}
    checked = tx.event("PolicyChecked")
    assert checked is not None and checked.address == env.dep.hook
    assert checked.args == {"intentId": intent.id_bytes, "allowed": True, "reason": bytes(32)}
    swapped = tx.event("IntentSwapped")
    assert swapped is not None and swapped.args["amountOut"] == gained
    assert tx.event("Swap") is not None  # the PoolManager's own event
    assert tx.status == 1 and tx.gas_used > 0
    assert tx.explorer_url == f"http://127.0.0.1:1/explorer/tx/{tx.hash}"
    assert await solver.is_settled(intent.id)
    print(f"\nsettleIntent gas used: {tx.gas_used}")

    steps = [(p["step"], p["type"]) for p in list_proofs("v4", env.network)["proofs"]]
    assert steps == [
        ("register_policy", "on-chain"),
        ("check_policy", "read-only"),
        ("sign_intent", "off-chain"),
        ("settle_intent", "on-chain"),
    ]
    last = list_proofs("v4", env.network)["proofs"][-1]
    assert last["txHash"] == tx.hash and last["data"]["amountOut"] == str(gained)

    # replay: the same signed intent cannot settle twice
    with pytest.raises(TransactionFailedError) as replay:
        await solver.settle_intent(signed, env.dep.pool_key, quoted)
    assert replay.value.error_name == "IntentAlreadySettled"
    assert "at most once" in str(replay.value)
    assert await _balances(env, "user") == after


async def test_selling_token1_settles_too(env: Env) -> None:
    owner, solver = env.p("deployer"), env.p("solver")
    intent = await env.intent("reverse", min_out=98 * 10**16, sell=1)
    await owner.register_policy(intent.id, intent.min_amount_out, await env.now() + 600)
    signed = sign_intent(intent, PrivateKey(KEYS["user"]), await solver.eip712_domain())
    before = await _balances(env, "user")
    tx = await solver.settle_intent(signed, env.dep.pool_key, 99 * 10**16)
    after = await _balances(env, "user")
    assert after[1] == before[1] - AMOUNT_IN and after[0] - before[0] >= intent.min_amount_out
    assert exact_input_swap(intent, env.dep.pool_key).zero_for_one is False
    assert tx.event("IntentSettled") is not None


# --- the policy refuses -------------------------------------------------------------------


async def _expect_policy_rejection(env: Env, intent: Intent, quoted: int, reason: str) -> None:
    solver = env.p("solver")
    signed = await env.p("user").sign_intent(intent)
    before = await _balances(env, "user")
    with pytest.raises(PolicyRejectedError) as err:
        await solver.settle_intent(signed, env.dep.pool_key, quoted)
    assert err.value.error_name == "PolicyRejected"
    assert err.value.reason == reason
    assert err.value.error_args == (intent.id_bytes, reason_code(reason))
    assert reason in str(err.value)
    assert await solver.check_policy(intent.id, quoted) == (False, reason)
    assert await _balances(env, "user") == before
    assert not await solver.is_settled(intent.id)


async def test_quote_under_policy_bound(env: Env) -> None:
    intent = await env.intent("under-bound", min_out=9 * 10**17)
    await env.p("deployer").register_policy(
        intent.id,
        9 * 10**17,
        await env.now() + 600,
        reference_amount_out=10**18,
        max_slippage_bps=100,  # bound: max(0.90, 0.99) = 0.99
    )
    await _expect_policy_rejection(env, intent, 98 * 10**16, "SLIPPAGE_EXCEEDED")
    assert (await env.p("solver").check_policy(intent.id, 99 * 10**16)) == (True, "OK")


async def test_expired_policy(env: Env) -> None:
    intent = await env.intent("expired-policy", min_out=9 * 10**17)
    await env.p("deployer").register_policy(intent.id, 9 * 10**17, await env.now() - 1)
    await _expect_policy_rejection(env, intent, 99 * 10**16, "POLICY_EXPIRED")


async def test_missing_policy(env: Env) -> None:
    intent = await env.intent("no-policy", min_out=9 * 10**17)
    await _expect_policy_rejection(env, intent, 99 * 10**16, "POLICY_MISSING")
    assert "setPolicy" in str(
        await _raises(
            env.p("solver").settle_intent(
                await env.p("user").sign_intent(intent), env.dep.pool_key, 99 * 10**16
            )
        )
    )


async def _raises(coro: Any) -> BaseException:
    try:
        await coro
    except BaseException as exc:
        return exc
    raise AssertionError("expected an error")


async def test_on_chain_decisions_match_python(env: Env) -> None:
    """The original's decision table (min 90, ref 100, 500 bps), asked of the real hook."""
    owner = env.p("deployer")
    iid = intent_id("decision-table")
    deadline = await env.now() + 600
    await owner.register_policy(iid, 90, deadline, reference_amount_out=100, max_slippage_bps=500)
    policy = await owner.get_policy(iid)
    assert (policy.min_amount_out, policy.reference_amount_out, policy.max_slippage_bps) == (
        90,
        100,
        500,
    )
    assert policy.updater == env.wallets["deployer"].address and policy.exists
    now = await env.now()
    for quoted in (0, 90, 94, 95, 96, 10**30):
        assert await owner.check_policy(iid, quoted) == evaluate_policy(policy, quoted, now)
    assert await owner.check_policy(iid, 94) == (False, "SLIPPAGE_EXCEEDED")
    assert await owner.check_policy(iid, 95) == (True, "OK")


# --- the adapter refuses ------------------------------------------------------------------


async def _expect_revert(coro: Any, name: str) -> TransactionFailedError:
    exc = await _raises(coro)
    assert isinstance(exc, TransactionFailedError), exc
    assert not isinstance(exc, PolicyRejectedError)
    assert exc.error_name == name, exc
    return exc


async def _with_policy(env: Env, label: str, **kw: Any) -> Intent:
    intent = await env.intent(label, min_out=9 * 10**17, **kw)
    await env.p("deployer").register_policy(intent.id, 9 * 10**17, await env.now() + 600)
    return intent


async def test_bad_signature(env: Env) -> None:
    intent = await _with_policy(env, "bad-signature")
    domain = await env.p("solver").eip712_domain()
    stranger = PrivateKey(KEYS["outsider"])
    forged = intent.with_signature(stranger.sign_hash(intent_digest(intent, domain)))
    err = await _expect_revert(
        env.p("solver").settle_intent(forged, env.dep.pool_key, 99 * 10**16), "InvalidSignature"
    )
    assert "EIP-712" in str(err)
    # signed, then the amount changed: the signature no longer covers it
    signed = await env.p("user").sign_intent(intent)
    tampered = dataclasses.replace(signed, min_amount_out=1)
    await _expect_revert(
        env.p("solver").settle_intent(tampered, env.dep.pool_key, 99 * 10**16), "InvalidSignature"
    )
    # check_policy says the policy is fine: it is the signature that was wrong
    assert await env.p("solver").check_policy(intent.id, 99 * 10**16) == (True, "OK")
    # an unsigned intent of someone else cannot be settled without their signature
    with pytest.raises(InvalidSignatureError, match="not signed"):
        await env.p("solver").settle_intent(intent, env.dep.pool_key, 99 * 10**16)


async def test_unauthorised_solver(env: Env) -> None:
    intent = await _with_policy(env, "unauthorised")
    signed = await env.p("user").sign_intent(intent)
    err = await _expect_revert(
        env.p("outsider").settle_intent(signed, env.dep.pool_key, 99 * 10**16),
        "UnauthorizedSolver",
    )
    assert err.error_args == (env.wallets["outsider"].address,)
    assert "setAuthorizedSolver" in str(err)
    assert await env.p("solver").check_policy(intent.id, 99 * 10**16) == (True, "OK")


async def test_pool_token_amount_and_deadline_checks(env: Env) -> None:
    solver, key = env.p("solver"), env.dep.pool_key
    intent = await _with_policy(env, "checks")
    signed = await env.p("user").sign_intent(intent)
    quoted = 99 * 10**16

    foreign_hook = dataclasses.replace(key, hooks=env.dep.adapter)
    await _expect_revert(solver.settle_intent(signed, foreign_hook, quoted), "PoolMismatch")
    wrong_amount = SwapParams(True, -(AMOUNT_IN - 1), MIN_SQRT_PRICE + 1)
    await _expect_revert(
        solver.settle_intent(signed, key, quoted, swap_params=wrong_amount), "AmountMismatch"
    )
    exact_output = SwapParams(True, AMOUNT_IN, MIN_SQRT_PRICE + 1)
    await _expect_revert(
        solver.settle_intent(signed, key, quoted, swap_params=exact_output), "AmountMismatch"
    )
    backwards = SwapParams(False, -AMOUNT_IN, MIN_SQRT_PRICE + 1)
    await _expect_revert(
        solver.settle_intent(signed, key, quoted, swap_params=backwards), "SwapDirectionMismatch"
    )
    await _expect_revert(
        solver.settle_intent(signed, key, intent.min_amount_out - 1), "QuotedAmountOutTooLow"
    )
    # a pool of other tokens (same hook) does not trade this intent
    other = PoolKey.for_tokens(
        env.dep.token0, env.dep.adapter, fee=3000, tick_spacing=60, hooks=env.dep.hook
    )
    await _expect_revert(
        solver.settle_intent(
            signed, other, quoted, swap_params=SwapParams(True, -AMOUNT_IN, MIN_SQRT_PRICE + 1)
        ),
        "PoolMismatch",
    )

    expired = await env.intent("checks-expired", min_out=1, deadline=await env.now() - 1)
    await _expect_revert(
        solver.settle_intent(await env.p("user").sign_intent(expired), key, quoted),
        "IntentExpired",
    )

    native = await env.intent("checks-native", min_out=1, token_in=ZERO_ADDRESS)
    native_key = PoolKey.for_tokens(
        ZERO_ADDRESS, env.dep.token1, fee=3000, tick_spacing=60, hooks=env.dep.hook
    )
    await _expect_revert(
        solver.settle_intent(await env.p("user").sign_intent(native), native_key, quoted),
        "NativeEthNotSupported",
    )

    # a user who never approved the adapter: the swap happens inside the lock and is undone
    poor_intent = await _with_policy(env, "checks-no-approval", user="poor")
    poor_signed = sign_intent(poor_intent, PrivateKey(KEYS["poor"]), await solver.eip712_domain())
    before = await _balances(env, "poor")
    err = await _expect_revert(
        solver.settle_intent(poor_signed, key, quoted), "ERC20InsufficientAllowance"
    )
    assert "approve the adapter" in str(err)
    assert await _balances(env, "poor") == before
    assert not await solver.is_settled(intent.id)


# --- policy administration ----------------------------------------------------------------


async def test_policy_administration(env: Env) -> None:
    owner, outsider, solver = env.p("deployer"), env.p("outsider"), env.p("solver")
    iid = intent_id("admin")
    deadline = await env.now() + 600
    err = await _expect_revert(outsider.register_policy(iid, 1, deadline), "Unauthorized")
    assert env.wallets["deployer"].address in str(err)  # names the owner who can
    # bounds of a policy that does not exist: the hook's PolicyViolation(id, POLICY_MISSING)
    with pytest.raises(PolicyRejectedError) as missing:
        await owner.update_policy_bounds(iid, 1, 1, 0, deadline)
    assert missing.value.error_name == "PolicyViolation"
    assert missing.value.reason == "POLICY_MISSING"
    await owner.register_policy(iid, 90, deadline, updater=env.wallets["solver"].address)
    tx = await solver.update_policy_bounds(iid, 85, 100, 1200, deadline + 86400)
    assert tx.event("PolicyUpdated") is not None
    policy = await owner.get_policy(iid)
    assert (policy.min_amount_out, policy.reference_amount_out, policy.max_slippage_bps) == (
        85,
        100,
        1200,
    )
    assert policy.deadline == deadline + 86400 and policy.updater == env.wallets["solver"].address
    await _expect_revert(outsider.update_policy_bounds(iid, 1, 1, 0, deadline), "Unauthorized")
    # 10001 bps: refused locally for setPolicyWithSlippage, by the hook for an update
    with pytest.raises(InvalidAmountError, match="10000"):
        await owner.register_policy(
            iid, 1, deadline, reference_amount_out=1, max_slippage_bps=10_001
        )
    await _expect_revert(
        owner.update_policy_bounds(iid, 1, 1, 10_001, deadline), "InvalidSlippageBps"
    )


async def test_hook_guards_the_pool_for_any_swapper(env: Env) -> None:
    """The hook, not only the adapter, enforces policies: a swap through v4-core's own router
    with an under-bound quote is refused by the PoolManager's call to beforeSwap."""
    owner = env.p("deployer")
    iid = intent_id("router-swap")
    await owner.register_policy(iid, 10**18, await env.now() + 600)
    deployer = env.wallets["deployer"]
    router = env.w3.eth.contract(address=env.dep.swap_router, abi=load_artifact("PoolSwapTest").abi)
    hook_data = encode(["bytes32", "uint256"], [bytes.fromhex(iid[2:]), 5 * 10**17])
    call = router.functions.swap(
        env.dep.pool_key.as_abi(),
        (True, -(10**15), MIN_SQRT_PRICE + 1),
        (False, False),
        hook_data,
    )
    exc = await _raises(deployer.transact(call, abis=owner.error_abis))
    assert isinstance(exc, TransactionFailedError)
    # v4-core wraps the hook's revert: WrappedError(hook, beforeSwap selector, reason, details)
    explained = owner.explain_error(exc, "router swap")
    assert isinstance(explained, PolicyRejectedError)
    assert explained.error_name == "PolicyViolation" and explained.reason == "SLIPPAGE_EXCEEDED"


# --- Sepolia's ownership mistake, reproduced ----------------------------------------------


async def test_hook_owned_by_create2_factory_cannot_hold_policies(env: Env) -> None:
    deployer = env.wallets["deployer"]
    broken = await deploy_v4(env.w3, deployer, owner=deployer.address, hook_owner_is_factory=True)
    assert broken.hook_owner == broken.hook_deployer
    network = _local_network(env.network.chain_id, broken)
    provider = V4Provider(deployer, network=network)

    report = await provider.inspect()
    assert report.hook_owner == broken.hook_deployer
    assert report.hook_owner_kind == "create2-factory"
    assert report.can_hold_policies is False
    assert not report.can_settle
    assert report.adapter_owner == deployer.address  # the adapter itself is fine
    text = str(report)
    assert "CREATE2 factory" in text and "cannot hold policies" in text
    assert report.to_json()["canHoldPolicies"] is False

    iid = intent_id("sepolia-like")
    err = await _expect_revert(
        provider.register_policy(iid, 1, await env.now() + 600), "Unauthorized"
    )
    assert broken.hook_deployer in str(err)
    assert await provider.check_policy(iid, 10**18) == (False, "POLICY_MISSING")
    intent = await env.intent(
        "sepolia-like", min_out=1, token_in=broken.token0, token_out=broken.token1
    )
    user = V4Provider(env.wallets["user"], network=network)
    with pytest.raises(PolicyRejectedError) as rejected:
        await provider.settle_intent(await user.sign_intent(intent), broken.pool_key, 10**17)
    assert rejected.value.reason == "POLICY_MISSING"


# --- configuration ------------------------------------------------------------------------


async def test_configuration_errors_and_singletons(env: Env) -> None:
    wallet = env.wallets["solver"]
    with pytest.raises(ConfigurationError, match="does not match"):
        V4Provider(wallet, chain_id=11155111, network=env.network)
    wrong_chain = dataclasses.replace(env.network, chain_id=env.network.chain_id + 1)
    provider = V4Provider(wallet, network=wrong_chain)
    with pytest.raises(ConfigurationError, match="connected to chain"):
        await provider.set_authorized_solver(wallet.address)
    report = await provider.inspect()
    assert "the node is chain" in str(report) and not report.can_settle

    # the Sepolia profile against this chain: nothing of it is here, and inspect() says so
    sepolia = await V4Provider(wallet, network=networks.SEPOLIA).inspect()
    assert sepolia.chain_id == 11155111 and sepolia.chain_id_on_chain == env.network.chain_id
    assert not any(sepolia.code_present.values()) and not sepolia.can_settle
    assert [n for n, on in sepolia.flags.items() if on] == ["beforeSwap"]  # from the address
    assert "no contract code at policyHook" in str(sepolia)
    assert sepolia.can_hold_policies is False

    assert V4Provider(wallet, network=env.network).contracts() == env.dep.contracts()
    created = init_v4_provider(wallet, network=env.network)
    assert get_v4_provider() is created and created.contracts()["policyHook"] == env.dep.hook
    reset_v4_provider()
    assert get_v4_provider() is None
    await asyncio.gather(*providers._pending_closes)  # the close it scheduled
