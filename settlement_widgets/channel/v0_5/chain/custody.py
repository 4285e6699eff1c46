"""Async client of the ERC-7824 custody contract (Nitrolite v0.3-v0.5 ABI).

:class:`CustodyClient` wraps every entry point of ``Custody`` (Nitrolite v0.5 ``Custody.sol``):
the ledger (``deposit``, ``withdraw``), the channel lifecycle (``create`` with auto-join,
``depositAndCreate``, ``join``, ``resize``, ``close``, ``challenge``, ``checkpoint``), the views,
and the ERC-20 approvals the ledger needs. It takes and returns the protocol types of
:mod:`settlement_widgets.channel.v0_5.core.types`; transactions come back as :class:`CustodyTx`
(hash,
gas used, decoded typed events); a revert raises
:class:`~settlement_widgets.errors.TransactionFailedError` whose ``error_name`` is the
contract's custom error (``"InvalidStateSignatures"``, ``"InsufficientBalance"``, ...).

Nothing here knows which network it talks to: our sandbox deployment and the Sepolia custody
share the ABI, so the address (and optionally the ABI) is all that differs. Signing states
is not this module's job (see :mod:`settlement_widgets.channel.v0_5.core.signing`); it
submits what it is given, so the contract stays the judge of signatures.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ....addresses import ZERO_ADDRESS, validate_address
from ....contracts import load_artifact
from ....errors import (
    ChannelNotFoundError,
    InvalidStateError,
    SettlementValueError,
    UnknownOptionError,
)
from ...contract_client import ContractClient, optional_abi, uint256
from ..core.ids import as_channel_id_bytes
from ..core.types import Channel, ChannelStatus, State
from .custody_events import EVENT_NAMES, CustodyEvent, EventDecoder

if TYPE_CHECKING:
    from ....signer import Signer

__all__ = ["ChannelData", "CustodyClient", "CustodyTx"]


@dataclass(frozen=True)
class CustodyTx:
    """A mined custody (or token) transaction and the custody events it emitted."""

    tx_hash: str
    block_number: int
    gas_used: int
    events: tuple[CustodyEvent, ...]
    #: the channel the transaction is about (``create``, ``resize``, ``close``, ...)
    channel_id: str | None = None

    def event(self, name: str) -> CustodyEvent:
        """The first event called ``name`` (e.g. ``"Created"``); raises if there is none."""
        for event in self.events:
            if event.name == name:
                return event
        if name not in EVENT_NAMES:
            raise UnknownOptionError(
                f"unknown custody event {name!r}: use one of {', '.join(EVENT_NAMES)}"
            )
        raise InvalidStateError(
            f"transaction {self.tx_hash} emitted no {name} event "
            f"(it emitted: {', '.join(e.name for e in self.events) or 'none'})"
        )

    @property
    def event_names(self) -> tuple[str, ...]:
        return tuple(e.name for e in self.events)


@dataclass(frozen=True)
class ChannelData:
    """``getChannelData``: the channel, its on-chain status, funding wallets, challenge expiry
    (0 unless in dispute) and the last state the custody accepted."""

    channel_id: str
    channel: Channel
    status: ChannelStatus
    wallets: tuple[str, str]
    challenge_expiry: int
    last_valid_state: State


def _channel_id_hex(channel_id: str | bytes) -> str:
    return "0x" + as_channel_id_bytes(channel_id).hex()


def _states(states: Iterable[State], field: str) -> list[Any]:
    out = []
    for state in states:
        if not isinstance(state, State):
            raise InvalidStateError(f"{field} must hold State values, got {type(state).__name__}")
        out.append(state.to_abi())
    return out


class CustodyClient(ContractClient):
    """The custody contract at ``custody_address``, driven by ``wallet``.

    ``abi`` defaults to our compiled ``Custody`` (ABI-identical to the deployed one); pass the
    deployed ABI explicitly to run without built artifacts. Revert data is decoded with the
    custody, adjudicator and ERC-20 errors. Sending, naming a mined revert
    (:meth:`~..contract_client.ContractClient.explain_failure`) and the ERC-20 reads are the
    shared :class:`~settlement_widgets.channel.contract_client.ContractClient`'s.
    """

    def __init__(
        self,
        wallet: Signer,
        custody_address: str,
        *,
        abi: Sequence[dict[str, Any]] | None = None,
        error_abis: Sequence[Sequence[dict[str, Any]]] | None = None,
    ) -> None:
        address = validate_address(custody_address, field="custody", allow_zero=False)
        extra = (
            [list(a) for a in error_abis]
            if error_abis is not None
            else [optional_abi("SimpleConsensus"), optional_abi("TestToken")]
        )
        super().__init__(
            wallet, address, list(abi) if abi is not None else load_artifact("Custody").abi, extra
        )
        self._decoder = EventDecoder(self._abi, self._address)

    # --- identity -----------------------------------------------------------------------

    @property
    def wallet(self) -> Signer:
        return self._signer

    def __repr__(self) -> str:
        return f"CustodyClient(custody={self._address!r}, wallet={self._signer.address!r})"

    # --- transactions -------------------------------------------------------------------

    async def _transact(
        self, call: Any, *, value: int = 0, channel_id: str | None = None
    ) -> CustodyTx:
        return self.result(await self._send(call, value=value), channel_id=channel_id)

    def result(self, receipt: Any, *, channel_id: str | None = None) -> CustodyTx:
        """A :class:`CustodyTx` from a mined receipt (events decoded)."""
        tx_hash = receipt["transactionHash"]
        return CustodyTx(
            tx_hash=tx_hash if isinstance(tx_hash, str) else "0x" + bytes(tx_hash).hex(),
            block_number=int(receipt["blockNumber"]),
            gas_used=int(receipt["gasUsed"]),
            events=self.decode_receipt(receipt),
            channel_id=channel_id,
        )

    def decode_receipt(self, receipt: Any) -> tuple[CustodyEvent, ...]:
        """The custody events in a receipt, in log order (other contracts' logs skipped)."""
        return self._decoder.decode_logs(receipt.get("logs", ()))

    # ledger

    async def deposit(self, token: str, amount: int, *, account: str | None = None) -> CustodyTx:
        """Credit ``account`` (default: the wallet) with ``amount`` of ``token`` paid by the
        wallet. ERC-20s need an allowance first (:meth:`approve`); ``token`` zero is native."""
        token = validate_address(token, field="token")
        amount = uint256(amount, "amount")
        account = validate_address(
            account or self._signer.address, field="account", allow_zero=False
        )
        value = amount if token == ZERO_ADDRESS else 0
        return await self._transact(
            self.contract.functions.deposit(account, token, amount), value=value
        )

    async def withdraw(self, token: str, amount: int) -> CustodyTx:
        """Send ``amount`` of the wallet's available custody balance back to the wallet."""
        token = validate_address(token, field="token")
        return await self._transact(
            self.contract.functions.withdraw(token, uint256(amount, "amount"))
        )

    # channels

    async def create(self, channel: Channel, initial: State) -> CustodyTx:
        """Open ``channel`` with ``initial`` (INITIALIZE, version 0). With both signatures in
        ``initial.sigs`` the channel is ACTIVE in this one transaction (auto-join)."""
        call = self.contract.functions.create(_channel_abi(channel), _state_abi(initial, "initial"))
        tx = await self._transact(call)
        created = tx.event("Created")
        return _with_channel(tx, created.channel_id)  # type: ignore[attr-defined]

    async def deposit_and_create(
        self, token: str, amount: int, channel: Channel, initial: State
    ) -> CustodyTx:
        """``deposit`` (to the wallet) and ``create`` in one transaction."""
        token = validate_address(token, field="token")
        amount = uint256(amount, "amount")
        call = self.contract.functions.depositAndCreate(
            token, amount, _channel_abi(channel), _state_abi(initial, "initial")
        )
        tx = await self._transact(call, value=amount if token == ZERO_ADDRESS else 0)
        return _with_channel(tx, tx.event("Created").channel_id)  # type: ignore[attr-defined]

    async def join(
        self, channel_id: str | bytes, signature: str | bytes, *, index: int = 1
    ) -> CustodyTx:
        """Join an INITIAL channel as participant ``index`` (1) with its signature of the initial
        state; the wallet funds that participant's allocation."""
        cid = _channel_id_hex(channel_id)
        sig = bytes.fromhex(signature[2:]) if isinstance(signature, str) else bytes(signature)
        return await self._transact(self.contract.functions.join(cid, index, sig), channel_id=cid)

    async def resize(
        self, channel_id: str | bytes, candidate: State, proofs: Sequence[State]
    ) -> CustodyTx:
        """Apply a RESIZE state both signed; ``proofs[0]`` is the preceding state (usually
        :meth:`get_channel_data`'s ``last_valid_state``)."""
        cid = _channel_id_hex(channel_id)
        call = self.contract.functions.resize(
            cid, _state_abi(candidate, "candidate"), _states(proofs, "proofs")
        )
        return await self._transact(call, channel_id=cid)

    async def close(
        self, channel_id: str | bytes, candidate: State, proofs: Sequence[State] = ()
    ) -> CustodyTx:
        """Close cooperatively (a FINALIZE state both signed) or after an expired challenge
        (any state; funds follow the challenged one). Funds land in the custody ledger."""
        cid = _channel_id_hex(channel_id)
        call = self.contract.functions.close(
            cid, _state_abi(candidate, "candidate"), _states(proofs, "proofs")
        )
        return await self._transact(call, channel_id=cid)

    async def challenge(
        self,
        channel_id: str | bytes,
        candidate: State,
        challenger_signature: str | bytes,
        proofs: Sequence[State] = (),
    ) -> CustodyTx:
        """Dispute with ``candidate``; ``challenger_signature`` is a participant's signature of
        the packed state followed by ``"challenge"``."""
        cid = _channel_id_hex(channel_id)
        sig = (
            bytes.fromhex(challenger_signature[2:])
            if isinstance(challenger_signature, str)
            else bytes(challenger_signature)
        )
        call = self.contract.functions.challenge(
            cid, _state_abi(candidate, "candidate"), _states(proofs, "proofs"), sig
        )
        return await self._transact(call, channel_id=cid)

    async def checkpoint(
        self, channel_id: str | bytes, candidate: State, proofs: Sequence[State] = ()
    ) -> CustodyTx:
        """Record a newer OPERATE state both signed; clears a pending challenge."""
        cid = _channel_id_hex(channel_id)
        call = self.contract.functions.checkpoint(
            cid, _state_abi(candidate, "candidate"), _states(proofs, "proofs")
        )
        return await self._transact(call, channel_id=cid)

    # ERC-20

    async def approve(self, token: str, amount: int, *, spender: str | None = None) -> CustodyTx:
        """Allow ``spender`` (default: the custody) to pull ``amount`` of ``token``."""
        spender = validate_address(spender or self._address, field="spender", allow_zero=False)
        return await self._transact(
            self._token(token).functions.approve(spender, uint256(amount, "amount"))
        )

    # --- views --------------------------------------------------------------------------

    async def get_accounts_balances(
        self, accounts: Sequence[str], tokens: Sequence[str]
    ) -> list[list[int]]:
        """Available (unlocked) custody balances, ``[account][token]``."""
        accs = [validate_address(a, field="accounts") for a in accounts]
        toks = [validate_address(t, field="tokens") for t in tokens]
        rows = await self.contract.functions.getAccountsBalances(accs, toks).call()
        return [[int(v) for v in row] for row in rows]

    async def balance(self, token: str, account: str | None = None) -> int:
        """One account's available custody balance of one token."""
        rows = await self.get_accounts_balances([account or self._signer.address], [token])
        return rows[0][0]

    async def get_open_channels(self, accounts: Sequence[str]) -> list[list[str]]:
        """Open channel ids per account (as participant 0, or 1 once joined)."""
        accs = [validate_address(a, field="accounts") for a in accounts]
        rows = await self.contract.functions.getOpenChannels(accs).call()
        return [["0x" + bytes(c).hex() for c in row] for row in rows]

    async def open_channels(self, account: str | None = None) -> list[str]:
        return (await self.get_open_channels([account or self._signer.address]))[0]

    async def channel_status(self, channel_id: str | bytes) -> ChannelStatus:
        """The on-chain status; VOID for a channel never created or already closed."""
        data = await self.contract.functions.getChannelData(_channel_id_hex(channel_id)).call()
        return ChannelStatus(int(data[1]))

    async def get_channel_data(self, channel_id: str | bytes) -> ChannelData:
        """``getChannelData`` as protocol types; :class:`ChannelNotFoundError` if VOID."""
        cid = _channel_id_hex(channel_id)
        channel, status, wallets, expiry, state = await self.contract.functions.getChannelData(
            cid
        ).call()
        if ChannelStatus(int(status)) == ChannelStatus.VOID:
            raise ChannelNotFoundError(
                f"channel {cid} is not open in the custody at {self._address} "
                "(never created, or already closed)"
            )
        return ChannelData(
            channel_id=cid,
            channel=Channel.from_abi(channel),
            status=ChannelStatus(int(status)),
            wallets=(validate_address(wallets[0]), validate_address(wallets[1])),
            challenge_expiry=int(expiry),
            last_valid_state=State.from_abi(state),
        )

    async def get_channel_balances(
        self, channel_id: str | bytes, tokens: Sequence[str]
    ) -> list[int]:
        """What the channel holds locked, per token."""
        toks = [validate_address(t, field="tokens") for t in tokens]
        values = await self.contract.functions.getChannelBalances(
            _channel_id_hex(channel_id), toks
        ).call()
        return [int(v) for v in values]

    async def min_challenge_period(self) -> int:
        return int(await self.contract.functions.MIN_CHALLENGE_PERIOD().call())

    async def eip712_domain(self) -> dict[str, Any]:
        """The custody's ERC-5267 domain: ``name``, ``version``, ``chainId``,
        ``verifyingContract`` (what EIP-712 state signatures must use)."""
        (
            _fields,
            name,
            version,
            chain_id,
            verifying,
            _salt,
            _ext,
        ) = await self.contract.functions.eip712Domain().call()
        return {
            "name": name,
            "version": version,
            "chainId": int(chain_id),
            "verifyingContract": validate_address(verifying),
        }

    # --- events -------------------------------------------------------------------------

    async def get_events(
        self,
        from_block: int = 0,
        to_block: int | str = "latest",
        *,
        names: Iterable[str] | None = None,
        channel_id: str | bytes | None = None,
    ) -> tuple[CustodyEvent, ...]:
        """Custody events in ``[from_block, to_block]``, ordered by (block, log index).

        ``names`` restricts the event types; ``channel_id`` keeps the events of one channel
        (so ``Deposited``/``Withdrawn``, which carry no channel, are left out).
        """
        wanted = list(names) if names is not None else list(EVENT_NAMES)
        for name in wanted:
            if name not in EVENT_NAMES:
                raise UnknownOptionError(
                    f"unknown custody event {name!r}: use one of {', '.join(EVENT_NAMES)}"
                )
        if channel_id is not None:
            wanted = [n for n in wanted if n not in ("Deposited", "Withdrawn")]
        if not wanted:
            return ()
        if isinstance(from_block, bool) or not isinstance(from_block, int) or from_block < 0:
            raise SettlementValueError(f"from_block must be a block number, got {from_block!r}")
        topics: list[Any] = [[self._decoder.topic(n) for n in wanted]]
        if channel_id is not None:
            topics.append(_channel_id_hex(channel_id))
        logs = await self._signer.w3.eth.get_logs(
            {
                "address": self._address,  # type: ignore[typeddict-item]
                "fromBlock": from_block,
                "toBlock": to_block,  # type: ignore[typeddict-item]
                "topics": topics,
            }
        )
        return self._decoder.decode_logs(logs)


def _channel_abi(channel: Channel) -> tuple[list[str], str, int, int]:
    if not isinstance(channel, Channel):
        raise InvalidStateError(f"channel must be a Channel, got {type(channel).__name__}")
    return channel.to_abi()


def _state_abi(state: State, field: str) -> Any:
    if not isinstance(state, State):
        raise InvalidStateError(f"{field} must be a State, got {type(state).__name__}")
    return state.to_abi()


def _with_channel(tx: CustodyTx, channel_id: str) -> CustodyTx:
    from dataclasses import replace

    return replace(tx, channel_id=channel_id)
