"""Our migration states (``core/migration.py``: upstream has no off-chain migration protocol).

The two states must be exactly what the v1.4.1 hub's migration rules accept (the on-chain
tests run them: ``tests/integration/test_channelhub_migration.py``); here, without a chain,
their shape, their refusals and what follows them.
"""

from __future__ import annotations

from typing import Any

import pytest

from settlement_widgets.channel.v1.core.calldata import contract_state_from_wire
from settlement_widgets.channel.v1.core.ids import escrow_channel_id, transaction_id
from settlement_widgets.channel.v1.core.lifecycle import next_state
from settlement_widgets.channel.v1.core.migration import finalize_migration_state, migrate_state
from settlement_widgets.channel.v1.core.state import decimals_from_map
from settlement_widgets.channel.v1.core.transitions import StateIntent, transition_to_intent
from settlement_widgets.errors import InvalidStateError

WALLET = "0x1111111111111111111111111111111111111111"
CHANNEL = "0x" + "ab" * 32
TOKEN_A = "0x00000000000000000000000000000000000000a0"
TOKEN_B = "0x00000000000000000000000000000000000000b0"
DECIMALS = decimals_from_map({f"1:{TOKEN_A}": 6, f"2:{TOKEN_B}": 6})


def _home(user: str = "7.5", user_flow: str = "5", node: str = "0", node_flow: str = "2.5") -> Any:
    return {
        "token_address": TOKEN_A,
        "blockchain_id": "1",
        "user_balance": user,
        "user_net_flow": user_flow,
        "node_balance": node,
        "node_net_flow": node_flow,
    }


def _signed(**extra: Any) -> dict[str, Any]:
    state: dict[str, Any] = {
        "id": "0x" + "00" * 32,
        "transition": {"type": 31, "tx_id": "0x01", "account_id": WALLET, "amount": "2.5"},
        "asset": "usdc",
        "user_wallet": WALLET,
        "epoch": "0",
        "version": "4",
        "home_channel_id": CHANNEL,
        "home_ledger": _home(),
        "user_sig": "0x00",
        "node_sig": "0x00",
    }
    state.update(extra)
    return state


def test_migrate_announces_the_nodes_lock_of_the_whole_balance_on_the_new_chain() -> None:
    state = migrate_state(_signed(), blockchain_id=2, token=TOKEN_B)
    assert state["version"] == "5" and state["home_ledger"] == _home()
    assert state["escrow_ledger"] == {
        "token_address": TOKEN_B,
        "blockchain_id": "2",
        "user_balance": "0",
        "user_net_flow": "0",
        "node_balance": "7.5",
        "node_net_flow": "7.5",
    }
    account = escrow_channel_id(CHANNEL, "5")
    assert state["escrow_channel_id"] == account
    assert state["transition"] == {
        "type": 100,
        "tx_id": transaction_id(account, state["id"]),
        "account_id": account,
        "amount": "7.5",
    }
    assert transition_to_intent(100) == StateIntent.INITIATE_MIGRATION
    contract = contract_state_from_wire(state, DECIMALS)
    assert contract["intent"] == 8
    assert contract["nonHomeLedger"]["nodeAllocation"] == str(7_500_000)


def test_migrate_finalize_trades_the_ledgers_places() -> None:
    migrate = migrate_state(_signed(), blockchain_id=2, token=TOKEN_B)
    migrate |= {"user_sig": "0x00", "node_sig": "0x00"}
    final = finalize_migration_state(migrate)
    assert final["version"] == "6"
    assert final["home_ledger"] == {
        "token_address": TOKEN_B,
        "blockchain_id": "2",
        "user_balance": "7.5",
        "user_net_flow": "0",
        "node_balance": "0",
        "node_net_flow": "7.5",
    }
    # the old home emptied: its hub returns everything it holds to the node's vault
    assert final["escrow_ledger"] == {
        "token_address": TOKEN_A,
        "blockchain_id": "1",
        "user_balance": "0",
        "user_net_flow": "5",
        "node_balance": "0",
        "node_net_flow": "-5",
    }
    assert final["escrow_channel_id"] == migrate["escrow_channel_id"]
    assert final["transition"]["type"] == 101 and final["transition"]["amount"] == "7.5"
    assert contract_state_from_wire(final, DECIMALS)["intent"] == 9
    # once signed, the next state runs on the new home alone (the escrow ledger is dropped)
    after = next_state({**final, "user_sig": "0x00", "node_sig": "0x00"})
    assert "escrow_ledger" not in after and after["home_ledger"] == final["home_ledger"]


@pytest.mark.parametrize(
    ("current", "chain", "token", "message"),
    [
        (_signed(node_sig=""), 2, TOKEN_B, "signed by the node"),
        (_signed(), 1, TOKEN_B, "already on that chain"),
        (_signed(), 0, TOKEN_B, "invalid blockchain ID"),
        (_signed(), 2, "0x0", "invalid token address"),
        (_signed(home_ledger=_home(node="1", node_flow="3.5")), 2, TOKEN_B, "escrow operation"),
        (_signed(home_ledger=_home(user="0", user_flow="0", node_flow="0")), 2, TOKEN_B, "zero"),
        (_signed(transition={"type": 200, "amount": "0"}), 2, TOKEN_B, "missing home channel"),
    ],
)
def test_migrate_is_refused_unsigned(
    current: dict[str, Any], chain: int, token: str, message: str
) -> None:
    with pytest.raises(InvalidStateError, match=message):
        migrate_state(current, blockchain_id=chain, token=token)


def test_migrate_acknowledges_a_receive_the_user_has_not_signed() -> None:
    """The node-issued receive is node-signed only until the user's next state: the migrate
    state is that state and carries the received balance (a co-signed receive was required,
    which refused every migration right after a transfer in)."""
    state = migrate_state(_signed(user_sig=None), blockchain_id=2, token=TOKEN_B)
    assert state["version"] == "5" and state["transition"]["amount"] == "7.5"


def test_a_pending_escrow_ledger_refuses_a_migration() -> None:
    escrow = {**_home(), "blockchain_id": "2", "token_address": TOKEN_B}
    current = _signed(escrow_ledger=escrow, escrow_channel_id="0x" + "cd" * 32)
    current["transition"]["type"] = 110  # escrow_lock: its ledger is carried to the next state
    with pytest.raises(InvalidStateError, match="escrow operation is pending"):
        migrate_state(current, blockchain_id=2, token=TOKEN_B)


def test_migrate_finalize_follows_only_a_cosigned_migrate() -> None:
    with pytest.raises(InvalidStateError, match="directly follow a migrate"):
        finalize_migration_state(_signed())
    migrate = migrate_state(_signed(), blockchain_id=2, token=TOKEN_B)
    with pytest.raises(InvalidStateError, match="not co-signed"):
        finalize_migration_state(migrate)
