"""The invariants of the Nitrolite v1 model test, as pure checks over one :class:`Snapshot`.

The model (:mod:`.channel_v1_model`) reads the node's ledger, the node's user.v1 answers, the
``ChannelHub`` and every provider into a :class:`Snapshot` after each step; :func:`check`
returns what is broken (human-readable, empty when everything holds). Keeping the checks pure
lets a test feed a deliberately inconsistent snapshot and see the checker catch it.

Amounts are integer token units everywhere; the node's decimal strings are converted exactly
(:func:`units`), with no decimal context that could round.

(a) every node-signed state is backed. For each wallet, the states of its chain that can
    still be enforced (those not older than the hub's last state of their channel) must not
    allocate to the user more than the channel's confirmed on-chain allocation plus what the
    node credited off-chain since (receives and releases), except the state's own deposit
    while its on-chain step is pending (the hub takes that from the user when it is
    enforced). No funds may leave (send, commit, withdraw) out of a deposit the chain does
    not show yet. A channel closed on chain gets no newer state. Every credit is a
    transaction in the node's history from a sender whose state the node signed.
(b) conservation, on each chain (a home channel lives on either, and migrates between them;
    an escrow is on the chain other than its channel's): the token total over every wallet,
    the node's address and that chain's hub never changes (the faucet pays off-chain, out of
    its own channel, and mints nothing; the model mints only when it makes its wallets,
    before the total is taken), and the hub holds exactly the funds its channels lock plus
    the node's vault plus its open escrows. A channel locks its last state's allocations
    while it operates or is disputed, nothing once CLOSED or MIGRATED_OUT.
(a') an escrow deposit's credit is backed on the escrow chain: its escrow is INITIALIZED with
    exactly the amount there, or FINALIZED by the node (settled to its vault), and only the
    latter once the node has no settlement in flight; an escrow withdrawal is an outflow.
(c) one view: each provider's ``balances()`` equals the node's ``user.v1.get_balances`` and
    the latest state of the node's ledger (and the model's expectation); each channel is read
    on the hub of the chain it lives on (its latest state's home ledger names it): the node's
    ``get_home_channel`` chain is that one and its status is that hub's; the provider's
    channel's chain is that one too; its
    version and amount equal the node's latest co-signed state; its channel status equals the
    hub's; the hub's last state is a state of the node's chain, ledger for ledger, and the
    provider's last on-chain step, or a later escrow state the node put there itself. A
    channel is live (operating, disputed, migrating in) on one hub at most, never left
    MIGRATING_IN after a step, and a MIGRATED_OUT channel's hub holds, as its last state, a
    node-signed ``migrate_finalize`` of the node's chain that moved it off that chain.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Final

__all__ = [
    "ChainView",
    "EscrowRecord",
    "HubView",
    "ProviderView",
    "Snapshot",
    "WalletView",
    "check",
    "units",
]

#: transition types (Nitrolite v1.4.1 ``sdk/ts/src/core/types.ts``)
ACK, DEPOSIT, WITHDRAW, SEND, RECEIVE, COMMIT, RELEASE, FINALIZE = 1, 10, 11, 30, 31, 40, 41, 200
ESCROW_DEPOSIT, ESCROW_WITHDRAW, MUTUAL_LOCK, ESCROW_LOCK = 20, 21, 120, 110
#: our migration's states (``core/migration.py``)
MIGRATE, MIGRATE_FINALIZE = 100, 101
_ESCROW_KINDS: Final = (MUTUAL_LOCK, ESCROW_DEPOSIT, ESCROW_LOCK, ESCROW_WITHDRAW)
#: the node's credit after a challenged channel closed (Nitronode ``NewChallengeRescueState``)
RESCUE: Final = 201
_CREDITS: Final = (RECEIVE, RELEASE, RESCUE)
_OUTFLOWS: Final = (SEND, COMMIT, WITHDRAW, ESCROW_WITHDRAW)
#: provider channel status -> the hub's ``ChannelStatus`` name
_HUB_STATUS: Final = {"active": "OPERATING", "final": "CLOSED", "dispute": "DISPUTED"}
#: hub statuses in which a channel is live on that hub (at most one hub at a time)
_LIVE: Final = ("OPERATING", "DISPUTED", "MIGRATING_IN")
#: the node's wire channel status -> the hub's
_WIRE_STATUS: Final = {"void": "VOID", "open": "OPERATING", "challenged": "DISPUTED",
                       "closed": "CLOSED"}  # fmt: skip


def units(display: Any, decimals: int) -> int:
    """A wire decimal string (``"1.5"``, ``"-2"``, ``"1E+3"``) as exact integer units."""
    sign, digits, exponent = Decimal(str(display)).as_tuple()
    if not isinstance(exponent, int):
        raise ValueError(f"not a finite amount: {display!r}")
    number = int("".join(map(str, digits)) or "0")
    shift = exponent + decimals
    if shift >= 0:
        value = number * 10**shift
    else:
        value, rest = divmod(number, 10**-shift)
        if rest:
            raise ValueError(f"{display!r} has more than {decimals} decimals")
    return -value if sign else value


@dataclass(frozen=True)
class HubView:
    """``getChannelData`` of one channel: status name, last state's version and home ledger
    (units), locked funds."""

    status: str
    version: int
    user_allocation: int
    user_net_flow: int
    node_allocation: int
    node_net_flow: int
    locked_funds: int


@dataclass(frozen=True)
class ProviderView:
    """What a ``ChannelProviderV1`` shows: ``balances()`` for the asset, and its newest
    channel (``get_channel``: the chain it lives on too) with the version of its newest
    on-chain step that is done."""

    balance: int
    channel_id: str | None = None
    status: str | None = None
    version: int | None = None
    amount: int | None = None
    onchain_version: int | None = None
    chain_id: int | None = None


@dataclass(frozen=True)
class WalletView:
    """One wallet: the node's state chain for the asset (its ledger, oldest first), the
    node's ``get_balances`` amount, the provider's view, the wallet's token balance on each
    chain and what the model expects (``None``: no expectation)."""

    label: str
    address: str
    states: Sequence[Mapping[str, Any]]
    node_balance: int | None
    provider: ProviderView | None = None
    #: ``channels.v1.get_home_channel``: (channel id, wire status, chain id), None when it
    #: has none
    node_channel: tuple[str, str, int] | None = None
    #: chain id -> the wallet's tokens there
    tokens: Mapping[int, int] | None = None
    expected_offchain: int | None = None
    expected_tokens: Mapping[int, int] | None = None


@dataclass(frozen=True)
class EscrowRecord:
    """An escrow on its chain's hub, and whether the node's ledger says it settled it
    (``finalizeEscrowDeposit`` by the node, to its vault)."""

    status: str
    locked_amount: int
    settled_by_node: bool = False


@dataclass(frozen=True)
class ChainView:
    """One chain: its token total over the holders (and the one expected), its hub's tokens,
    the node's vault there, every channel the wallets' states name as that hub holds it
    (VOID where it never was), the funds channels outside the snapshot lock there (taken
    once per sequence), and every escrow the wallets' states put on it."""

    token_total: int
    expected_token_total: int
    hub_tokens: int
    node_vault: int
    channels: Mapping[str, HubView] = field(default_factory=dict)
    other_locked: int = 0
    deposits: Mapping[str, EscrowRecord] = field(default_factory=dict)
    withdrawals: Mapping[str, EscrowRecord] = field(default_factory=dict)


@dataclass(frozen=True)
class Snapshot:
    """Everything the invariants read after one step."""

    decimals: int
    wallets: Sequence[WalletView]
    #: the node's transaction history (``user.v1.get_transactions`` records), oldest first
    transactions: Sequence[Mapping[str, Any]]
    #: chain id -> that chain (every chain the node serves that the model reads)
    chains: Mapping[int, ChainView]
    #: the node had no escrow settlement in flight (and the model makes none fail): every
    #: credited escrow deposit is then settled, not merely held
    node_quiet: bool = False
    notes: list[str] = field(default_factory=list)


def check(snap: Snapshot) -> list[str]:
    """Every broken invariant of ``snap`` (empty: all hold)."""
    out: list[str] = []
    for wallet in snap.wallets:
        out += _backing(snap, wallet)
        out += _views(snap, wallet)
    out += _credits(snap)
    out += _migrations(snap)
    out += _conservation(snap)
    return out


# --- (a) backing -------------------------------------------------------------------------------


def _key(state: Mapping[str, Any]) -> tuple[int, int]:
    return int(state["epoch"]), int(state["version"])


def _ledger(state: Mapping[str, Any], decimals: int) -> tuple[int, int, int, int]:
    led = state["home_ledger"]
    return (
        units(led["user_balance"], decimals),
        units(led["user_net_flow"], decimals),
        units(led["node_balance"], decimals),
        units(led["node_net_flow"], decimals),
    )


def _hub_ledger(hub: HubView) -> tuple[int, int, int, int]:
    return hub.user_allocation, hub.user_net_flow, hub.node_allocation, hub.node_net_flow


def _kind(state: Mapping[str, Any]) -> int:
    return int(state["transition"]["type"])


def _amount(state: Mapping[str, Any], decimals: int) -> int:
    return units(state["transition"].get("amount") or "0", decimals)


def _channel(state: Mapping[str, Any]) -> str:
    return str(state.get("home_channel_id") or "").lower()


def _home_chain(state: Mapping[str, Any]) -> int:
    """The chain ``state``'s home channel lives on (its home ledger names it)."""
    return int(state["home_ledger"].get("blockchain_id") or 0)


def _escrow_chain(state: Mapping[str, Any]) -> int:
    return int((state.get("escrow_ledger") or {}).get("blockchain_id") or 0)


def _hub_of(snap: Snapshot, chain_id: int, channel: str) -> HubView | None:
    """``channel`` as the hub of ``chain_id`` holds it (None: the snapshot did not read it)."""
    chain = snap.chains.get(chain_id)
    return chain.channels.get(channel) if chain is not None else None


def _hub_state(
    snap: Snapshot, wallet: WalletView, channel: str, hub: HubView
) -> Mapping[str, Any] | None:
    """The state of the node's chain that the hub holds as ``channel``'s last state."""
    found = [
        s
        for s in wallet.states
        if _channel(s) == channel
        and int(s["version"]) == hub.version
        and _ledger(s, snap.decimals) == _hub_ledger(hub)
    ]
    return found[-1] if found else None


def _backing(snap: Snapshot, wallet: WalletView) -> list[str]:
    out: list[str] = []
    d = snap.decimals
    who = f"{wallet.label} ({wallet.address})"
    states = list(wallet.states)
    if not states:
        return out
    epoch = int(states[-1]["epoch"])
    for s in states:
        if _ledger(s, d)[0] < 0:
            out.append(f"(a) {who}: state e{s['epoch']}v{s['version']} has a negative balance")
    # channels closed on chain: no node-signed state after the one the hub closed with
    closed = [
        (channel, hub)
        for channel in sorted({c for c in map(_channel, states) if c})
        for chain in snap.chains.values()
        if (hub := chain.channels.get(channel)) is not None and hub.status == "CLOSED"
    ]
    for channel, hub in closed:
        closing = _hub_state(snap, wallet, channel, hub)
        newer = [
            s
            for s in states
            if _channel(s) == channel
            and s.get("node_sig")
            and (closing is None or _key(s) > _key(closing))
        ]
        if newer:
            out.append(
                f"(a) {who}: the node signed {_names(newer)} for channel {channel}, which is "
                f"closed on chain (hub's last version {hub.version}"
                f"{'' if closing else ', not a state of the node'})"
            )
    # the current epoch, from the hub's last state of its channel on
    current = [s for s in states if int(s["epoch"]) == epoch]
    last = next((s for s in reversed(current) if _channel(s)), None)
    channel = _channel(last) if last is not None else ""
    # read on the hub of the chain the channel lives on now (a migration moved it there)
    hub = _hub_of(snap, _home_chain(last), channel) if last is not None else None
    base_key: tuple[int, int] = (epoch, -1)
    base = 0
    if hub is not None and hub.status in ("OPERATING", "DISPUTED"):
        on_chain = _hub_state(snap, wallet, channel, hub)
        if on_chain is None:
            out.append(
                f"(a) {who}: the hub's last state of {channel} (version {hub.version}) is no "
                "state of the node's chain"
            )
            return out
        if int(on_chain["epoch"]) != epoch:
            return out  # an older epoch's channel; its closed-channel check is above
        base_key, base = _key(on_chain), hub.user_allocation
    elif hub is not None and hub.status == "CLOSED":
        return out  # checked above
    credits = 0
    pending: list[Mapping[str, Any]] = []  # deposits the chain does not show yet
    for s in current:
        if _key(s) <= base_key:
            continue
        kind, amount = _kind(s), _amount(s, d)
        if kind in _CREDITS:
            credits += amount
        if kind == ESCROW_DEPOSIT:
            held = _escrow_credit(snap, s)
            if held is None:
                credits += amount
            else:
                out.append(f"(a') {who}: state e{s['epoch']}v{s['version']} {held}")
        if kind == DEPOSIT:
            pending.append(s)
        if not s.get("node_sig"):
            continue
        balance = _ledger(s, d)[0]
        own = amount if kind == DEPOSIT else 0
        if balance - own > base + credits:
            out.append(
                f"(a) {who}: node-signed state e{s['epoch']}v{s['version']} "
                f"({_kind_name(kind)}) allocates {balance} to the user; backed are only "
                f"{base} on chain + {credits} credited off-chain"
                + (f" + its own pending deposit {own}" if own else "")
            )
        if kind in _OUTFLOWS and pending:
            out.append(
                f"(a) {who}: node-signed state e{s['epoch']}v{s['version']} "
                f"({_kind_name(kind)} {amount}) takes funds out while the deposit(s) "
                f"{_names(pending)} are not on chain"
            )
    return out


def _escrow_credit(snap: Snapshot, state: Mapping[str, Any]) -> str | None:
    """Why an escrow deposit's credit is not backed on the escrow chain (None: it is)."""
    chain = snap.chains.get(_escrow_chain(state))
    if chain is None:
        where = _escrow_chain(state)
        return f"credits an escrow deposit on chain {where}, which the model does not read"
    escrow_id = str(state.get("escrow_channel_id") or "").lower()
    record = chain.deposits.get(escrow_id)
    amount = _amount(state, snap.decimals)
    if record is None:
        return f"credits escrow {escrow_id}, which the escrow chain does not hold"
    if record.status == "INITIALIZED" and record.locked_amount == amount:
        if snap.node_quiet:
            return (
                f"credits escrow {escrow_id} with {amount}; the node, with no settlement in "
                "flight, left it INITIALIZED on the escrow chain (it owes finalizeEscrowDeposit)"
            )
        return None
    if record.status == "FINALIZED" and record.settled_by_node:
        return None
    return (
        f"credits escrow {escrow_id} with {amount}; the escrow chain shows it {record.status} "
        f"locking {record.locked_amount}"
        + ("" if record.settled_by_node else " and the node never settled it")
    )


def _credits(snap: Snapshot) -> list[str]:
    """Every receive/release in a chain is a recorded node transaction to that wallet, whose
    sender's state the node signed."""
    out: list[str] = []
    by_id = {str(tx["id"]).lower(): tx for tx in snap.transactions}
    signed_ids = {str(s["id"]).lower() for w in snap.wallets for s in w.states if s.get("node_sig")}
    known = {w.address.lower() for w in snap.wallets}
    for wallet in snap.wallets:
        for s in wallet.states:
            if _kind(s) != RECEIVE:
                continue
            tx_id = str(s["transition"]["tx_id"]).lower()
            tx = by_id.get(tx_id)
            name = f"{wallet.label} e{s['epoch']}v{s['version']}"
            if tx is None:
                out.append(f"(a) {name}: a receive of {tx_id} the node's history lacks")
                continue
            if str(tx["to_account"]).lower() != wallet.address.lower():
                out.append(f"(a) {name}: transaction {tx_id} was to {tx['to_account']}")
            if units(tx["amount"], snap.decimals) != _amount(s, snap.decimals):
                out.append(f"(a) {name}: credited {s['transition']['amount']}, sent {tx['amount']}")
            sender_state = str(tx.get("sender_new_state_id", "")).lower()
            if str(tx["from_account"]).lower() in known and sender_state not in signed_ids:
                out.append(f"(a) {name}: the sender's state {sender_state} is not node-signed")
    return out


# --- (b) conservation ---------------------------------------------------------------------------


def _conservation(snap: Snapshot) -> list[str]:
    out: list[str] = []
    for chain_id, chain in sorted(snap.chains.items()):
        where = f"chain {chain_id}"
        if chain.token_total != chain.expected_token_total:
            out.append(
                f"(b) {where}: the token total over wallets, node and hub is "
                f"{chain.token_total}, expected {chain.expected_token_total} "
                f"({chain.token_total - chain.expected_token_total:+d})"
            )
        locked = sum(h.locked_funds for h in chain.channels.values()) + chain.other_locked
        escrowed = sum(
            r.locked_amount for r in (*chain.deposits.values(), *chain.withdrawals.values())
        )
        owed = locked + chain.node_vault + escrowed
        if chain.hub_tokens != owed:
            out.append(
                f"(b) {where}: the hub holds {chain.hub_tokens} tokens, its channels lock "
                f"{locked}, the node's vault is {chain.node_vault} and its escrows lock "
                f"{escrowed} ({chain.hub_tokens - owed:+d})"
            )
        for channel, hub in sorted(chain.channels.items()):
            if hub.status in ("VOID", "MIGRATING_IN"):
                continue  # nothing there yet; a migration left half done is (c)'s
            live = hub.status in ("OPERATING", "DISPUTED")
            expected = hub.user_allocation + hub.node_allocation if live else 0
            if hub.locked_funds != expected:
                out.append(
                    f"(b) {where}: channel {channel} ({hub.status}) locks {hub.locked_funds}, "
                    + (
                        f"its last state allocates {hub.user_allocation} + {hub.node_allocation}"
                        if live
                        else "it should lock nothing"
                    )
                )
    return out


def _migrations(snap: Snapshot) -> list[str]:
    """A channel is live on one hub at most and never left MIGRATING_IN; a MIGRATED_OUT
    channel's hub holds a node-signed ``migrate_finalize`` of the node's chain that moved it
    off that chain (the version and the chains, not the ledger: the old hub keeps the state
    as the new home's)."""
    out: list[str] = []
    for wallet in snap.wallets:
        states = list(wallet.states)
        for channel in sorted({c for c in map(_channel, states) if c}):
            views = {
                chain_id: hub
                for chain_id, chain in snap.chains.items()
                if (hub := chain.channels.get(channel)) is not None
            }
            live = sorted(c for c, h in views.items() if h.status in _LIVE)
            if len(live) > 1:
                out.append(
                    f"(c) {wallet.label}: channel {channel} is live on chains {live} at once "
                    f"({', '.join(views[c].status for c in live)})"
                )
            for chain_id, hub in sorted(views.items()):
                if hub.status == "MIGRATING_IN":
                    out.append(
                        f"(c) {wallet.label}: channel {channel} is MIGRATING_IN on chain "
                        f"{chain_id} after the step: a migration left half done"
                    )
                if hub.status != "MIGRATED_OUT":
                    continue
                moved = [
                    s
                    for s in states
                    if _channel(s) == channel
                    and _kind(s) == MIGRATE_FINALIZE
                    and s.get("node_sig")
                    and int(s["version"]) == hub.version
                    and _escrow_chain(s) == chain_id
                    and _home_chain(s) != chain_id
                ]
                if not moved:
                    out.append(
                        f"(c) {wallet.label}: channel {channel} is MIGRATED_OUT on chain "
                        f"{chain_id} at v{hub.version}, which is no node-signed "
                        "migrate_finalize off that chain"
                    )
    return out


# --- (c) views ------------------------------------------------------------------------------------


def _views(snap: Snapshot, wallet: WalletView) -> list[str]:
    out: list[str] = []
    d = snap.decimals
    who = wallet.label
    latest = wallet.states[-1] if wallet.states else None
    ledger_balance = _ledger(latest, d)[0] if latest is not None else 0
    if wallet.node_balance is not None and wallet.node_balance != ledger_balance:
        out.append(
            f"(c) {who}: user.v1.get_balances says {wallet.node_balance}, the node's ledger "
            f"{ledger_balance}"
        )
    if wallet.expected_offchain is not None and ledger_balance != wallet.expected_offchain:
        out.append(f"(c) {who}: the node holds {ledger_balance}, model {wallet.expected_offchain}")
    for chain_id, expected in sorted((wallet.expected_tokens or {}).items()):
        held = (wallet.tokens or {}).get(chain_id)
        if held != expected:
            out.append(
                f"(c) {who}: the wallet holds {held} tokens on chain {chain_id}, model {expected}"
            )
    here = _home_chain(latest) if latest is not None and _channel(latest) else None
    if wallet.node_channel is not None:
        channel_id, wire, chain_id = wallet.node_channel
        if here is not None and chain_id != here:
            out.append(
                f"(c) {who}: channels.v1.get_home_channel puts {channel_id} on chain "
                f"{chain_id}, the node's latest state on chain {here}"
            )
        hub = _hub_of(snap, chain_id, channel_id.lower())
        on_chain = hub.status if hub is not None else "VOID"
        if _WIRE_STATUS.get(wire, wire) != on_chain:
            out.append(
                f"(c) {who}: channels.v1.get_home_channel says {channel_id} is {wire}, "
                f"the hub of chain {chain_id} {on_chain}"
            )
    p = wallet.provider
    if p is None:
        return out
    if p.balance != ledger_balance:
        out.append(f"(c) {who}: provider balances() {p.balance}, node ledger {ledger_balance}")
    if p.channel_id is None:
        return out
    signed = [s for s in wallet.states if s.get("user_sig") and s.get("node_sig")]
    cosigned = signed[-1] if signed else None
    if cosigned is not None and _channel(cosigned) == p.channel_id.lower():
        if p.version != int(cosigned["version"]):
            out.append(
                f"(c) {who}: provider has {p.channel_id} at v{p.version}, the node's latest "
                f"co-signed state is v{cosigned['version']}"
            )
        if p.amount != _ledger(cosigned, d)[0]:
            out.append(
                f"(c) {who}: provider's channel amount {p.amount}, node's co-signed state "
                f"{_ledger(cosigned, d)[0]}"
            )
    elif p.status != "final":
        out.append(f"(c) {who}: provider's open channel {p.channel_id} is not the node's latest")
    if (
        here is not None
        and p.chain_id is not None
        and _channel(latest or {}) == p.channel_id.lower()
        and p.chain_id != here
    ):
        out.append(
            f"(c) {who}: provider has {p.channel_id} on chain {p.chain_id}, the node's latest "
            f"state on chain {here}"
        )
    hub = _hub_of(snap, p.chain_id, p.channel_id.lower()) if p.chain_id is not None else None
    status = hub.status if hub is not None else "VOID"
    if _HUB_STATUS.get(str(p.status)) != status:
        out.append(
            f"(c) {who}: provider says {p.channel_id} is {p.status}, the hub of chain "
            f"{p.chain_id} {status}"
        )
    if (
        hub is not None
        and p.onchain_version is not None
        and hub.version != p.onchain_version
        and not _node_put_on_chain(wallet, p.channel_id, hub.version, p.onchain_version)
    ):
        out.append(
            f"(c) {who}: the hub holds v{hub.version} of {p.channel_id}, the provider's last "
            f"on-chain step was v{p.onchain_version}"
        )
    return out


def _node_put_on_chain(wallet: WalletView, channel: str, hub_version: int, mine: int) -> bool:
    """The hub is ahead of the provider's own on-chain steps only by an escrow's states,
    which the node puts on the home hub itself (its lock, then the credit or the debit)."""
    if hub_version < mine:
        return False
    at = [
        s
        for s in wallet.states
        if _channel(s) == channel.lower() and int(s["version"]) == hub_version
    ]
    return bool(at) and _kind(at[-1]) in _ESCROW_KINDS


# --- helpers ----------------------------------------------------------------------------------


_NAMES: Final = {
    ACK: "acknowledgement",
    DEPOSIT: "deposit",
    WITHDRAW: "withdrawal",
    SEND: "send",
    RECEIVE: "receive",
    COMMIT: "commit",
    RELEASE: "release",
    FINALIZE: "finalize",
}


def _kind_name(kind: int) -> str:
    return _NAMES.get(kind, f"type {kind}")


def _names(states: Sequence[Mapping[str, Any]]) -> str:
    return ", ".join(f"e{s['epoch']}v{s['version']} {_kind_name(_kind(s))}" for s in states)
