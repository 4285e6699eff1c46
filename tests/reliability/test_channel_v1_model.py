"""The stateful model test of the channel method on Nitrolite v1, short run (``make
reliability`` runs the long one and publishes ``v1_model_sequences``, ``v1_model_steps``,
``v1_model_violations``): random sequences of faucet, create, deposit, transfer, withdraw,
deposit from and withdrawal to the chain the channel does not live on (escrows), migration of
the home channel to the other chain and back,
close and reopen, sync, provider and node restarts and clock moves on the in-process v1
sandbox, every invariant checked after every step; and the invariant checker itself, fed
snapshots that break each invariant, so a broken system cannot pass unnoticed."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from benchmarks.reliability.__main__ import QUICK
from benchmarks.reliability.channel_v1_invariants import (
    ChainView,
    EscrowRecord,
    HubView,
    ProviderView,
    Snapshot,
    WalletView,
    check,
)
from benchmarks.reliability.channel_v1_model import (
    V1ModelParams,
    run_channel_v1_model,
    run_channel_v1_script,
)

U = 10**6
USER = "0x" + "11" * 20
OTHER = "0x" + "22" * 20
CHANNEL = "0x" + "ab" * 32
#: the home chain channels open on, and the other one (escrows, migrations)
A, B = 31337, 31338


@pytest.mark.slow
@pytest.mark.parametrize(
    "chain",
    [
        pytest.param("inprocess", id="inprocess"),
        pytest.param("anvil", id="anvil", marks=pytest.mark.anvil),
    ],
)
def test_random_sequences_keep_every_invariant(tmp_path: Path, chain: str) -> None:
    params = V1ModelParams(
        sequences=QUICK.v1_model_sequences,
        steps=QUICK.v1_model_steps,
        seed=QUICK.v1_model_seed,
        chain=chain,
    )
    result = run_channel_v1_model(tmp_path, params)
    assert result.violations == [], "\n".join(result.violations)
    m = result.metrics
    assert m["v1_model_violations"] == 0
    assert m["v1_model_sequences"] >= params.sequences
    # the sequences did real work, not only refused operations
    assert m["v1_model_steps"] > m["v1_model_rejected_operations"] > 0
    done = m["v1_model_steps_by_rule"]
    assert {"faucet", "create", "transfer"} <= set(done), done
    # the seed moves a home channel to the other chain, refuses a migration to its own chain
    # and one over a pending escrow deposit, and runs an escrow
    assert {"migrate", "migrate_refused", "migrate_over_pending_deposit"} <= set(done), done
    assert {"deposit_from", "withdraw_to"} & set(done), done


# --- the checker on hand-made snapshots ---------------------------------------------------------


def _state(
    version: int,
    kind: int,
    amount: str,
    balance: str,
    unf: str,
    nnf: str,
    *,
    epoch: int = 0,
    channel: str = CHANNEL,
    wallet: str = USER,
    signed: bool = True,
    tx_id: str = "0x01",
    chain: int = A,
) -> dict[str, Any]:
    return {
        "id": f"0x{epoch:02x}{version:062x}",
        "transition": {"type": kind, "tx_id": tx_id, "account_id": "", "amount": amount},
        "asset": "usdc",
        "user_wallet": wallet,
        "epoch": str(epoch),
        "version": str(version),
        "home_channel_id": channel,
        "home_ledger": {
            "blockchain_id": str(chain),
            "user_balance": balance,
            "user_net_flow": unf,
            "node_balance": "0",
            "node_net_flow": nnf,
        },
        "user_sig": "0xaa" if signed else None,
        "node_sig": "0xbb",
    }


def _hub(status: str, version: int, alloc: int, unf: int, nnf: int = 0) -> HubView:
    locked = alloc if status != "CLOSED" else 0
    return HubView(status, version, alloc, unf, 0, nnf, locked)


def _chain(channels: dict[str, HubView], vault: int = 50, **kw: Any) -> ChainView:
    """A chain whose hub holds exactly its channels' locks plus ``vault`` (and ``kw``'s
    escrows, unless ``hub_tokens`` says otherwise)."""
    escrows = [*kw.get("deposits", {}).values(), *kw.get("withdrawals", {}).values()]
    held = sum(h.locked_funds for h in channels.values()) + vault
    base = {"token_total": 100, "expected_token_total": 100, "node_vault": vault}
    base["hub_tokens"] = held + sum(e.locked_amount for e in escrows)
    return ChainView(**{**base, **kw}, channels=channels)


def _snapshot(
    states: list[dict[str, Any]],
    hub: HubView,
    *,
    on_b: HubView | None = None,
    escrow_chain: dict[str, Any] | None = None,
    **kw: Any,
) -> Snapshot:
    """One wallet whose channel the hub of A holds as ``hub`` (and B's as ``on_b``, VOID by
    default); ``escrow_chain``: B's escrows and totals."""
    balance = int(float(states[-1]["home_ledger"]["user_balance"]) * U)
    wallet = WalletView("w0", USER, states, node_balance=balance)
    void = HubView("VOID", 0, 0, 0, 0, 0, 0)
    return Snapshot(
        decimals=6,
        wallets=[wallet],
        transactions=[],
        chains={
            A: _chain({CHANNEL: hub}),
            B: _chain({CHANNEL: on_b or void}, **(escrow_chain or {})),
        },
        **kw,
    )


def test_a_consistent_snapshot_passes() -> None:
    states = [
        _state(1, 10, "2", "2", "2", "0"),  # created with a deposit of 2, on chain
        _state(2, 30, "0.5", "1.5", "2", "-0.5"),
    ]
    assert check(_snapshot(states, _hub("OPERATING", 1, 2 * U, 2 * U))) == []


def test_a_transfer_out_of_a_deposit_the_chain_never_saw_is_caught() -> None:
    """The issue's unbacked transfer: creation with 2 co-signed, never on chain (VOID), then
    a send of 1 co-signed."""
    states = [_state(1, 10, "2", "2", "2", "0"), _state(2, 30, "1", "1", "2", "-1")]
    broken = check(_snapshot(states, HubView("VOID", 0, 0, 0, 0, 0, 0)))
    assert any("allocates 1000000 to the user" in b for b in broken), broken
    assert any("takes funds out while the deposit" in b for b in broken), broken


def test_a_state_for_a_channel_closed_on_chain_is_caught() -> None:
    """The reused channel id: epoch 0 closed on chain, the node signs epoch 1's creation."""
    states = [
        _state(1, 10, "2", "2", "2", "0"),
        _state(2, 200, "2", "0", "0", "0"),
        _state(1, 10, "2", "2", "2", "0", epoch=1),
    ]
    broken = check(_snapshot(states, _hub("CLOSED", 2, 0, 0)))
    assert any("closed on chain" in b for b in broken), broken


def test_broken_conservation_and_views_are_caught() -> None:
    states = [_state(1, 10, "2", "2", "2", "0")]
    snap = _snapshot(states, _hub("OPERATING", 1, 2 * U, 2 * U))
    minted = replace(snap, chains={**snap.chains, A: replace(snap.chains[A], token_total=101)})
    assert any(b.startswith(f"(b) chain {A}: the token total") for b in check(minted))
    leaky = replace(snap, chains={**snap.chains, A: replace(snap.chains[A], node_vault=49)})
    assert any(b.startswith(f"(b) chain {A}: the hub holds") for b in check(leaky))
    view = ProviderView(
        balance=2 * U, channel_id=CHANNEL, status="active", version=1, amount=2 * U,
        onchain_version=1, chain_id=A,
    )  # fmt: skip
    good = replace(snap, wallets=[replace(snap.wallets[0], provider=view)])
    assert check(good) == []
    stale = replace(snap, wallets=[replace(snap.wallets[0], provider=replace(view, balance=U))])
    assert any("provider balances()" in b for b in check(stale))
    closed = replace(view, status="final")
    wrong = replace(snap, wallets=[replace(snap.wallets[0], provider=closed)])
    assert any(f"the hub of chain {A} OPERATING" in b for b in check(wrong))
    node_says_closed = replace(snap.wallets[0], node_channel=(CHANNEL, "closed", A))
    assert any(
        "get_home_channel says" in b for b in check(replace(snap, wallets=[node_says_closed]))
    )
    node_agrees = replace(snap.wallets[0], node_channel=(CHANNEL, "open", A))
    assert check(replace(snap, wallets=[node_agrees])) == []
    lagging = replace(snap, wallets=[replace(snap.wallets[0], node_balance=U)])
    assert any("user.v1.get_balances says" in b for b in check(lagging))


def test_a_credit_the_node_never_recorded_is_caught() -> None:
    states = [
        _state(1, 1, "0", "0", "0", "0"),
        _state(2, 31, "1", "1", "0", "1", signed=False, tx_id="0x99"),
    ]
    broken = check(_snapshot(states, _hub("OPERATING", 1, 0, 0)))
    assert any("the node's history lacks" in b for b in broken), broken


def test_units_are_exact_beyond_28_digits() -> None:
    from benchmarks.reliability.channel_v1_invariants import units

    top = 2**256 - 1
    assert units(f"{top // 10**6}.{top % 10**6:06d}", 6) == top
    assert units("-0.000001", 6) == -1 and units("1E+3", 6) == 10**9
    with pytest.raises(ValueError, match="more than 6 decimals"):
        units("0.0000001", 6)


def test_an_escrow_credit_the_escrow_chain_does_not_back_is_caught() -> None:
    """An escrow deposit's credit stands on the escrow chain: held there with exactly the
    amount (while the node settles), or settled by the node; a refunded, short or unknown
    escrow is a violation, and so is an escrow chain that lost or minted tokens."""
    escrow = "0x" + "ee" * 32
    ledger_b = {"blockchain_id": str(B), "token_address": "0x" + "00" * 20}
    lock = {**_state(2, 120, "1", "2", "2", "1"), "escrow_channel_id": escrow,
            "escrow_ledger": ledger_b}  # fmt: skip
    credit = {**_state(3, 20, "1", "3", "2", "1"), "escrow_channel_id": escrow,
              "escrow_ledger": ledger_b}  # fmt: skip
    states = [_state(1, 10, "2", "2", "2", "0"), lock, credit]

    def chain(record: EscrowRecord | None, **kw: Any) -> dict[str, Any]:
        return {"deposits": {} if record is None else {escrow: record}, **kw}

    hub = _hub("OPERATING", 1, 2 * U, 2 * U)
    held = EscrowRecord("INITIALIZED", U)
    ok = _snapshot(states, hub, escrow_chain=chain(held))
    assert check(ok) == []
    settled = _snapshot(states, hub, escrow_chain=chain(EscrowRecord("FINALIZED", 0, True)))
    assert check(settled) == []
    for record in (None, EscrowRecord("FINALIZED", 0), EscrowRecord("INITIALIZED", U - 1)):
        broken = check(_snapshot(states, hub, escrow_chain=chain(record)))
        assert any(b.startswith("(a')") for b in broken), (record, broken)
    # held is fine while the node settles; with nothing in flight the node owes its release
    # (a lost record update once left a credited deposit there for good)
    abandoned = check(_snapshot(states, hub, escrow_chain=chain(held), node_quiet=True))
    assert any("left it INITIALIZED" in b for b in abandoned), abandoned
    minted = check(
        _snapshot(
            states, hub, escrow_chain=chain(EscrowRecord("FINALIZED", 0, True), token_total=101)
        )
    )
    assert any(f"(b) chain {B}: the token total" in b for b in minted), minted
    leaky = check(_snapshot(states, hub, escrow_chain=chain(held, hub_tokens=50)))
    assert any(f"(b) chain {B}: the hub holds" in b for b in leaky), leaky


#: one sequence through the model's rules (wallet 0 unless ``data`` picks another): the
#: dispute over an escrow deposit's credit the model once found the home hub refusing, then
#: a migration to the second chain with escrows, transfers and on-chain steps relative to it,
#: the refusals, a crashed escrow deposit recovered, restarts, a round trip, and a dispute on
#: the hub the channel migrated to
MIGRATION_SCRIPT: list[tuple[str, dict[str, Any]]] = [
    ("open_first_channel", {"amount": 2 * U}),
    ("deposit_from", {"amount": 1_234_567}),
    ("challenge_and_close", {"gift": True, "now": True}),
    ("open_channel", {"amount": 7 * U}),
    ("faucet", {"i": 1}),
    ("migrate", {"to": "other"}),
    ("deposit_from", {"amount": 5 * U}),
    ("deposit_from", {"amount": 1}),  # refused from the chain it lives on now, then from A
    ("withdraw_to", {"amount": 2 * U}),
    ("transfer", {"j": 1, "amount": U}),
    ("deposit", {"amount": 1_234_567}),
    ("withdraw", {"part": 1_234_567}),
    ("migrate", {"to": "same"}),
    ("migrate_over_pending_deposit", {"now": True}),
    ("restart_provider", {"i": 0, "now": True}),
    ("restart_node", {"now": True}),
    ("migrate", {"to": "other"}),
    ("advance_time", {"seconds": 600, "now": True}),
    ("migrate", {"to": "other"}),
    ("challenge_and_close", {"gift": False, "now": True}),
    ("open_channel", {"amount": 0}),
    ("close", {"reopen": False}),
]


@pytest.mark.slow
def test_a_scripted_migration_sequence_keeps_every_invariant(tmp_path: Path) -> None:
    """The migration's paths, deterministically (a short random run draws some of them
    only rarely): every invariant after every step, on both hubs."""
    result = run_channel_v1_script(tmp_path, MIGRATION_SCRIPT)
    assert result.violations == [], "\n".join(result.violations)
    done = result.metrics["v1_model_steps_by_rule"]
    assert done.get("migrate") == 3 and done.get("migrate_refused") == 1, done
    assert done.get("challenge_and_close") == 2, done
    assert done.get("migrate_over_pending_deposit") == 1, done
    # refused: a deposit_from the chain the channel migrated to, the migration to its own
    # chain and the one over the pending escrow deposit
    assert result.metrics["v1_model_rejected_operations"] == 3, result.metrics


def _migrated() -> tuple[list[dict[str, Any]], HubView, HubView]:
    """A channel created on A with 2, migrated to B (``migrate`` then ``migrate_finalize``),
    as the node's chain and both hubs hold it when everything went right: B operates it with
    the node's lock of 2 as the user's allocation, A shows it MIGRATED_OUT, locking nothing."""
    migration = "0x" + "cd" * 32
    to_b = {"blockchain_id": str(B), "user_balance": "0", "user_net_flow": "0",
            "node_balance": "2", "node_net_flow": "2"}  # fmt: skip
    off_a = {"blockchain_id": str(A), "user_balance": "0", "user_net_flow": "0",
             "node_balance": "0", "node_net_flow": "-2"}  # fmt: skip
    states = [
        _state(1, 10, "2", "2", "2", "0"),
        {**_state(2, 100, "2", "2", "2", "0"), "escrow_channel_id": migration,
         "escrow_ledger": to_b},
        {**_state(3, 101, "2", "2", "0", "2", chain=B), "escrow_channel_id": migration,
         "escrow_ledger": off_a},
    ]  # fmt: skip
    old = HubView("MIGRATED_OUT", 3, 2 * U, 0, 0, 2 * U, 0)
    new = _hub("OPERATING", 3, 2 * U, 0, 2 * U)
    return states, old, new


def test_a_migrated_channel_is_read_on_its_new_hub() -> None:
    """After a migration the channel's backing, locks and views are those of the hub it
    lives on; the old hub's MIGRATED_OUT record is consistent and locks nothing."""
    states, old, new = _migrated()
    snap = _snapshot(states, old, on_b=new)
    assert check(snap) == []
    view = ProviderView(
        balance=2 * U, channel_id=CHANNEL, status="active", version=3, amount=2 * U,
        onchain_version=3, chain_id=B,
    )  # fmt: skip
    wallet = replace(snap.wallets[0], provider=view, node_channel=(CHANNEL, "open", B))
    assert check(replace(snap, wallets=[wallet])) == []


def test_a_broken_migration_is_caught() -> None:
    """Each way a migration can leave the two hubs, the node and the provider disagreeing is
    a violation: the old hub still locking the funds, the new hub short of tokens, the
    channel live on both hubs or left MIGRATING_IN, a MIGRATED_OUT record at no
    migrate_finalize, the node or the provider placing the channel on the old chain, and a
    state the node signs after the channel closed on its new hub."""
    states, old, new = _migrated()

    def broken(snap: Snapshot) -> list[str]:
        found = check(snap)
        assert found, "a broken migration passed the checker"
        return found

    still_locked = broken(_snapshot(states, replace(old, locked_funds=2 * U), on_b=new))
    assert any(f"chain {A}: channel" in b and "should lock nothing" in b for b in still_locked)
    snap = _snapshot(states, old, on_b=new)
    short = replace(snap.chains[B], hub_tokens=snap.chains[B].hub_tokens - 1)
    lost = broken(replace(snap, chains={**snap.chains, B: short}))
    assert any(b.startswith(f"(b) chain {B}: the hub holds") for b in lost), lost
    both = broken(_snapshot(states, _hub("OPERATING", 1, 2 * U, 2 * U), on_b=new))
    assert any("live on chains" in b for b in both), both
    half = broken(_snapshot(states, old, on_b=replace(new, status="MIGRATING_IN")))
    assert any("left half done" in b for b in half), half
    stray = broken(_snapshot(states, replace(old, version=2), on_b=new))
    assert any("no node-signed migrate_finalize" in b for b in stray), stray
    node_old = replace(snap.wallets[0], node_channel=(CHANNEL, "open", A))
    wrong_node = broken(replace(snap, wallets=[node_old]))
    assert any("get_home_channel puts" in b for b in wrong_node), wrong_node
    view = ProviderView(
        balance=2 * U, channel_id=CHANNEL, status="active", version=3, amount=2 * U,
        onchain_version=3, chain_id=A,
    )  # fmt: skip
    wrong_provider = broken(replace(snap, wallets=[replace(snap.wallets[0], provider=view)]))
    assert any(f"on chain {A}, the node's latest" in b for b in wrong_provider), wrong_provider
    closed_b = HubView("CLOSED", 4, 0, -2 * U, 0, 2 * U, 0)  # closed with the v4 finalize
    after = [*states, _state(4, 200, "2", "0", "-2", "2", chain=B),
             _state(5, 10, "1", "1", "-1", "2", chain=B)]  # fmt: skip
    signed_after = broken(_snapshot(after, old, on_b=closed_b))
    assert any("e0v5 deposit" in b and "closed on chain" in b for b in signed_after), signed_after
