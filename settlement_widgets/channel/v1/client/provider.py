"""``ChannelProviderV1``: the channel operations on Nitrolite v1 (Nitronode, ChannelHub).

The same public operations as the v0.5 :class:`~settlement_widgets.channel.ChannelProvider`
(``create_channel``, ``transfer``, ``withdraw``, ``close_channel``, ``challenge``,
``checkpoint``, ``balances``, ``channels``, ``get_channel``), driven by the v1 methods, plus
v1's app sessions (:mod:`.app_sessions`). What changes underneath:

- no login: every request that moves value carries a state the wallet signed (EIP-191 over
  the packed state, validator byte 0x00), and the node answers with its own signature;
- one state chain per (wallet, asset): a deposit, a transfer, a withdrawal and the close are
  consecutive versions of it, and a home channel on the ``ChannelHub`` holds the funds;
- the node pushes nothing: what a counterparty did is read (``get_latest_state``,
  ``get_balances``), so :meth:`balances` and :meth:`sync` ask.

Persistence follows the v0.5 provider's rule, persist before you rely on it
(:class:`~.store.V1Store`): a state is written when the wallet has signed it and before the
node sees it, the node's signature is added before the call returns, and the on-chain step a
co-signed state needs is written ``pending`` before it is sent. :meth:`recover` (run by
:meth:`connect`) finishes what a crash interrupted: it adopts the node's signature of a state
the node accepted, resubmits one it never saw (several, for transfers that were pipelined:
those the node took are recorded, the rest resubmitted in order or dropped if the node has
moved on), and sends on-chain steps the chain does not show yet; an escrow or a migration
whose first state and on-chain step are done gets its second state (a migration then its
``finalizeMigration``).

Amounts are integers in the asset's smallest units (``10**decimals`` of the node's asset
table); the wire's display-unit decimal strings are made and read at the edge.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ....errors import (
    ChannelStateError,
    RelayError,
)
from .app_sessions import AppSessionsMixin
from .base import (
    _ESCROW_LOCK,
    _MIGRATE,
    _MIGRATE_FINALIZE,
    _MUTUAL_LOCK,
    _SEND,
    EVENTS,
    default_v1_store_path,
)
from .onchain import _MIGRATION_STEPS
from .transfers import TransferOps

__all__ = ["EVENTS", "ChannelProviderV1", "default_v1_store_path"]

#: in the node's refusal of a lock's second state once it took the lock back after its
#: deadline (the sandbox node's ``ESCROW_WITHDRAWAL_RECLAIMED`` / ``MIGRATION_RECLAIMED``)
_ABANDONED = "abandoned past its deadline"


class ChannelProviderV1(AppSessionsMixin, TransferOps):
    """The ``channel`` method on a Nitrolite v1 network: one wallet, one asset, one store.

    ``ChannelProviderV1(network, wallet)`` does no I/O; :meth:`connect` (or the first
    operation) connects to ``network.node_url``, checks that the node serves
    ``network.chain_id`` with ``network.contracts.channel_hub``, picks the asset
    (``network.asset_symbol``) and recovers unfinished work. ``async with`` closes it.

    An on-chain step (open with a deposit, deposit, withdraw, close) returns once the node
    counts it: after the chain is the node's ``confirmation_delay_secs`` past the step's
    block (36 s on Sepolia), so the next transfer is not refused as "still ongoing".
    ``wait_for_confirmation=False`` returns as soon as the transaction is mined (the node
    then refuses states on top of it until the delay has passed).

    Composed in layers: :class:`~.base.ProviderV1Base` (construction, connection, events,
    reads), :class:`~.onchain.OnChainOps` (the channel's on-chain steps),
    :class:`~.cross_chain.CrossChainOps` (escrows on the node's other chains, migration),
    :class:`~.transfers.TransferOps` (off-chain transfers, sync, balances),
    :class:`~.app_sessions.AppSessionsMixin`; recovery, which needs them all, is here.
    """

    # --- recovery -----------------------------------------------------------------------

    async def recover(self) -> list[str]:
        """Finish what a crashed provider left: adopt or resubmit the last signed state
        (or settle several pending transfer states, :meth:`_recover_pipeline`), then send
        pending on-chain steps the chain does not show yet. Returns what it did."""
        done: list[str] = []
        async with self._op_lock:
            mine = self.store.latest_state(self._asset)
            pending = self._pending_states()
            if len(pending) > 1 and all(int(s["transition"]["type"]) == _SEND for s in pending):
                done += await self._recover_pipeline(pending)
            elif mine is not None and not mine.get("node_sig"):
                node = await self._client.get_latest_state(self.address, self._asset, False)
                same = node is not None and (int(node["epoch"]), int(node["version"])) == (
                    int(mine["epoch"]),
                    int(mine["version"]),
                )
                if same and node is not None and node.get("node_sig"):
                    with self.store.transaction():
                        self.store.put_state({**mine, "node_sig": node["node_sig"]})
                        self._recovered_transfer(mine)
                    done.append(f"adopted the node's signature of version {mine['version']}")
                elif not same:
                    done.append(await self._resubmit(mine))
            for row in self.store.onchain(status="pending"):
                state = self.store.state_at(row["asset"], row["epoch"], row["version"])
                if state is None or not state.get("node_sig"):
                    continue
                if await self._onchain_done(row):
                    self.store.put_onchain(row["channel_id"], row["step"], state, status="done")
                    continue
                await self._run_onchain(row["channel_id"], row["step"], state)
                done.append(f"sent {row['step']} for version {row['version']}")
            lock = self._escrow_to_finish()
            try:
                if lock is not None and int(lock["transition"]["type"]) == _MIGRATE:
                    cid = str(lock["home_channel_id"]).lower()
                    await self._finish_migration(cid, lock)
                    done.append(f"finished the migration of version {lock['version']}")
                elif lock is not None and int(lock["transition"]["type"]) == _MUTUAL_LOCK:
                    await self._credit_escrow(lock)
                    done.append(f"credited the escrow deposit of version {lock['version']}")
                elif lock is not None:
                    cid = str(lock["home_channel_id"]).lower()
                    await self._pay_out_escrow(cid, lock)
                    done.append(f"paid out the escrow withdrawal of version {lock['version']}")
            except RelayError as exc:
                # the node took the lock back after its deadline (ours, node/escrows.py): the
                # second state never comes, the channel goes on from the lock without it
                if lock is None or _ABANDONED not in str(exc):
                    raise
                done.append(f"left the lock of version {lock['version']}: {exc}")
            final = self._migration_finalize_unsent()
            if final is not None:
                cid = str(final["home_channel_id"]).lower()
                await self._store_and_run_finalize(cid, final)
                done.append(f"sent migrate_finalize for version {final['version']}")
        return done

    def _pending_states(self) -> list[dict[str, Any]]:
        """The states after the latest co-signed one (all signed by us alone), oldest
        first: one for a call the process died in, several for pipelined transfers."""
        states = self.store.states(self._asset)
        signed = [i for i, s in enumerate(states) if s.get("user_sig") and s.get("node_sig")]
        after = states[signed[-1] + 1 :] if signed else states
        return [s for s in after if s.get("user_sig") and not s.get("node_sig")]

    async def _recover_pipeline(self, pending: list[dict[str, Any]]) -> list[str]:
        """Settle several pending states (transfers that were pipelined when the process
        died). The node applies a connection's states in order and refuses every one after
        a refusal, so what it has is a prefix of them: the node's history (keyed by each
        transfer's transaction id) says which. Those happened: their history lines are
        recorded, and the node's signature is adopted for the one that is its latest. The
        rest are resubmitted in order if the node's latest is the last state it took of
        ours (they build on it), else dropped: the node moved on (a transfer received),
        they can never be applied, and no caller was ever told they were."""
        done: list[str] = []
        node = await self._client.get_latest_state(self.address, self._asset, False)
        taken = {str(tx["id"]) for tx in await self._node_history()}
        accepted = [s for s in pending if str(s["transition"].get("tx_id")) in taken]
        rest = pending[len(accepted) :]
        if any(str(s["transition"].get("tx_id")) in taken for s in rest):
            raise ChannelStateError(
                "the node took our pending states out of order: "
                f"versions {[s['version'] for s in accepted + rest]}; not recovering them"
            )
        with self.store.transaction():
            for state in accepted:
                ours = node is not None and _same_state(node, state) and node.get("node_sig")
                if ours:
                    assert node is not None
                    self.store.put_state({**state, "node_sig": node["node_sig"]})
                    done.append(f"adopted the node's signature of version {state['version']}")
                else:
                    done.append(f"the node took version {state['version']}")
                self._recovered_transfer(state)
        base = accepted[-1] if accepted else self.store.latest_state(self._asset, signed=True)
        on_ours = node is not None and base is not None and _same_state(node, base)
        for state in rest:
            if on_ours:
                await self._resubmit(state)
                done.append(f"resubmitted version {state['version']}")
            else:
                self.store.forget_refused(state)
                done.append(f"dropped version {state['version']}: the node moved on")
        return done

    def _migration_finalize_unsent(self) -> dict[str, Any] | None:
        """A co-signed ``migrate_finalize`` (the latest state) with no on-chain step written:
        the node's signature arrived (or was adopted above) but the process died before the
        store moved the channel and wrote ``finalizeMigration`` ahead."""
        latest = self.store.latest_state(self._asset)
        if (
            latest is None
            or not latest.get("node_sig")
            or int(latest["transition"]["type"]) != _MIGRATE_FINALIZE
        ):
            return None
        for row in self.store.onchain():
            if row["step"] == "migrate_finalize" and int(row["version"]) == int(latest["version"]):
                return None
        return latest

    def _escrow_to_finish(self) -> dict[str, Any] | None:
        """A co-signed mutual or escrow lock whose escrow the chain holds (its on-chain step
        is done) but whose second state was never co-signed: the process died in between."""
        latest = self.store.latest_state(self._asset)
        if latest is None or not latest.get("node_sig"):
            return None
        step = {
            _MUTUAL_LOCK: "escrow_deposit",
            _ESCROW_LOCK: "escrow_withdrawal",
            _MIGRATE: "migrate_in",
        }.get(int(latest["transition"]["type"]))
        for row in self.store.onchain(status="done"):
            if row["step"] == step and int(row["version"]) == int(latest["version"]):
                return latest
        return None

    async def _resubmit(self, state: Mapping[str, Any]) -> str:
        """Send our signed ``state`` the node never answered; returns what was done. A second
        state the node refuses because it took the lock back after its deadline is dropped
        (never co-signed, it never will be); any other refusal is raised."""
        record = self.store.channel(str(state.get("home_channel_id") or ""))
        try:
            if record is not None and record["status"] == "opening":
                reply = await self._client.channels_v1_request_creation(state, record["definition"])
            else:
                reply = await self._client.channels_v1_submit_state(state)
        except RelayError as exc:
            if _ABANDONED in str(exc):
                self.store.forget_refused(state)
                return f"dropped version {state['version']}: {exc}"
            raise ChannelStateError(
                f"the node refused our signed version {state['version']} on recovery: {exc}"
            ) from exc
        with self.store.transaction():
            self.store.put_state({**state, "node_sig": reply["signature"]})
            self._recovered_transfer(state)
        return f"resubmitted version {state['version']}"

    def _recovered_transfer(self, state: Mapping[str, Any]) -> None:
        """The history line of a transfer whose reply we never recorded (the process died,
        or the power went before that commit reached the disk): the node co-signed it, so
        it happened. Recorded once (keyed by its transaction id)."""
        transition = state["transition"]
        if int(transition["type"]) == _SEND and transition.get("tx_id"):
            self._record_transfer(state, "out", str(transition["account_id"]))

    async def _onchain_done(self, row: Mapping[str, Any]) -> bool:
        if row["step"] in ("escrow_deposit", "escrow_withdrawal", "escrow_payout"):
            state = self.store.state_at(row["asset"], row["epoch"], row["version"])
            assert state is not None  # the caller read it
            hub = self._hub_on(int(state["escrow_ledger"]["blockchain_id"]))
            escrow_id = str(state["escrow_channel_id"])
            if row["step"] == "escrow_deposit":
                return (await hub.get_escrow_deposit_data(escrow_id)).status != "VOID"
            status = (await hub.get_escrow_withdrawal_data(escrow_id)).status
            return status != "VOID" if row["step"] == "escrow_withdrawal" else status == "FINALIZED"
        state = self.store.state_at(row["asset"], row["epoch"], row["version"])
        assert state is not None  # the caller read it
        if row["step"] in _MIGRATION_STEPS:
            # on the new home chain: done once it holds the channel at this version or later
            chain_id = int(
                (state["escrow_ledger"] if row["step"] == "migrate_in" else state["home_ledger"])[
                    "blockchain_id"
                ]
            )
            data = await self._hub_on(chain_id).get_channel_data(row["channel_id"])
            return data.status in ("MIGRATING_IN", "OPERATING", "DISPUTED") and int(
                data.last_state.get("version", 0)
            ) >= int(row["version"])
        data = await self._home_hub(state).get_channel_data(row["channel_id"])
        if row["step"] == "create":
            return data.status != "VOID"
        if row["step"] == "close":
            return data.status == "CLOSED"
        if row["step"] == "challenge":
            return data.status in ("DISPUTED", "CLOSED")
        return int(data.last_state.get("version", 0)) >= int(row["version"])


def _same_state(node: Mapping[str, Any], mine: Mapping[str, Any]) -> bool:
    """Whether the node's state is ours: same epoch and version, and our signature on it
    (the node keeps the user's signature of a state it took from us)."""
    return (int(node["epoch"]), int(node["version"])) == (
        int(mine["epoch"]),
        int(mine["version"]),
    ) and str(node.get("user_sig") or "").lower() == str(mine.get("user_sig") or "").lower()
