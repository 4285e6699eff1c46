"""Async client of a Nitrolite v1 ``ChannelHub`` (home channels and cross-chain escrow).

Why this module exists: a v1 user must be able to put a co-signed state on chain without the
node: open a channel, deposit, withdraw, checkpoint, challenge and close, and take part in a
cross-chain escrow deposit or withdrawal (Nitrolite v1.4.1 ``ChannelHub.sol``).
:class:`ChannelHubClient` sends those calls for a :class:`~settlement_widgets.signer.Signer` and
reads the hub back.

- The six channel entry points and the six escrow ones are encoded with
  :mod:`settlement_widgets.channel.v1.core.calldata`, which reproduces the SDK's calldata byte
  for byte, so what we send is what the SDK would send.
  States and definitions are taken in that module's contract JSON form (camelCase keys, see
  :func:`~settlement_widgets.channel.v1.core.calldata.contract_state_from_wire` for turning a signed
  wire state into it, and :func:`contract_definition` for a definition).
- Node-vault, reclaim and validator-registry calls and views go through the compiled
  ``ChannelHub`` ABI (our own hub, ABI-identical to the reference for these entry points;
  ``abi=`` takes another).
- Every revert becomes :class:`~settlement_widgets.errors.TransactionFailedError` with the
  custom error decoded from the hub, validator and token ABIs plus every error of the real
  hub, engines and validators (:mod:`.hub_errors`), so a revert of the real hub is named too
  (``"IncorrectSignature"``, ``"ValidatorNotActive"``, ...). A transaction that reverts
  only when mined is replayed to name its error by the shared
  :class:`~settlement_widgets.channel.contract_client.ContractClient` (the base of both
  versions' contract clients), which also serves the ERC-20 reads.

Signing is not this module's job (:mod:`settlement_widgets.channel.v1.core.state` signs); it
submits what it is given and the contract stays the judge of signatures.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from ....addresses import ZERO_ADDRESS, to_checksum, validate_address
from ....contracts import load_artifact
from ...contract_client import ContractClient, optional_abi, uint256
from ..core.calldata import (
    challenge_channel_calldata,
    channel_state_calldata,
    create_channel_calldata,
    encode_call,
    hex_bytes,
)
from .hub_errors import HUB_ERROR_ABI
from .hub_types import (
    HubChannelData,
    HubChannelStatus,
    HubEscrowData,
    HubEvent,
    HubTx,
    _channel_id_hex,
    _EventDecoder,
    _hex,
    _outputs,
    _to_json,
    channel_id_of,
    contract_definition,
    escrow_status_name,
    hub_status_name,
)
from .hub_view import HubChainView

if TYPE_CHECKING:
    from ....signer import Signer

__all__ = [
    "ChannelHubClient",
    "HubChainView",
    "HubChannelData",
    "HubChannelStatus",
    "HubEscrowData",
    "HubEvent",
    "HubTx",
    "channel_id_of",
    "contract_definition",
    "hub_status_name",
]

#: the ``ChannelHub`` artifact built from contracts/src/channel_v1
HUB_ARTIFACT: Final = "ChannelHub"
_VALIDATOR_ARTIFACTS: Final = ("ECDSAValidator", "SessionKeyValidator")


class ChannelHubClient(ContractClient):
    """The ChannelHub at ``address``, driven by ``signer``.

    ``abi`` defaults to our compiled ``ChannelHub``; ``error_abis`` (default: our
    ``ECDSAValidator``, ``SessionKeyValidator`` and ``TestToken``) add the custom errors a hub
    call can bubble up from a signature validator and the token. Every error of the real hub,
    its engines and validators (:data:`~.hub_errors.HUB_ERROR_ABI`) is always added.
    """

    def __init__(
        self,
        signer: Signer,
        address: str,
        *,
        abi: Sequence[dict[str, Any]] | None = None,
        error_abis: Sequence[Sequence[dict[str, Any]]] | None = None,
    ) -> None:
        extra = (
            [list(a) for a in error_abis]
            if error_abis is not None
            else [*(optional_abi(n) for n in _VALIDATOR_ARTIFACTS), optional_abi("TestToken")]
        )
        extra.append(list(HUB_ERROR_ABI))
        super().__init__(
            signer,
            validate_address(address, field="hub", allow_zero=False),
            list(abi) if abi is not None else load_artifact(HUB_ARTIFACT).abi,
            extra,
        )
        self._decoder = _EventDecoder(self._abi, self._address)

    # --- identity -------------------------------------------------------------------------

    @property
    def signer(self) -> Signer:
        return self._signer

    def __repr__(self) -> str:
        return f"ChannelHubClient(hub={self._address!r}, signer={self._signer.address!r})"

    # --- transactions ---------------------------------------------------------------------

    async def _transact(
        self,
        call: Any = None,
        *,
        data: bytes | None = None,
        to: str | None = None,
        value: int = 0,
        channel_id: str | None = None,
    ) -> HubTx:
        receipt = await self._send(call, data=data, to=to, value=value)
        return self.result(receipt, channel_id=channel_id)

    def result(self, receipt: Any, *, channel_id: str | None = None) -> HubTx:
        """A :class:`HubTx` from a mined receipt (hub events decoded)."""
        return HubTx(
            tx_hash=_hex(receipt["transactionHash"]),
            block_number=int(receipt["blockNumber"]),
            gas_used=int(receipt["gasUsed"]),
            events=self.decode_receipt(receipt),
            channel_id=channel_id,
        )

    def decode_receipt(self, receipt: Any) -> tuple[HubEvent, ...]:
        """The hub events in a receipt, in log order (other contracts' logs skipped)."""
        return self._decoder.decode_logs(receipt.get("logs", ()))

    async def _native_value(
        self, channel_id: str | None, state: Mapping[str, Any], value: int | None
    ) -> int:
        """msg.value for a state: the user's net-flow increase when the token is native.

        The hub takes exactly that (and nothing for an ERC-20), so the client computes it from
        the last on-chain state unless the caller gives ``value`` explicitly.
        """
        if value is not None:
            return uint256(value, "value")
        home = state["homeLedger"]
        if validate_address(home["token"], field="state.homeLedger.token") != ZERO_ADDRESS:
            return 0
        previous = 0
        if channel_id is not None:
            data = await self.get_channel_data(channel_id)
            previous = int(data.last_state["homeLedger"]["userNetFlow"])
        return max(int(home["userNetFlow"]) - previous, 0)

    # channel lifecycle

    async def create_channel(
        self, definition: Mapping[str, Any], state: Mapping[str, Any], *, value: int | None = None
    ) -> HubTx:
        """``createChannel``: open ``definition`` with its first co-signed state (intent
        DEPOSIT, WITHDRAW or OPERATE). A deposit is pulled from the user's wallet: approve the
        hub first (:meth:`approve`), or, for the native token, it is sent as the value."""
        channel_id = channel_id_of(definition)
        data = create_channel_calldata(definition, state)
        amount = await self._native_value(None, state, value)
        return await self._transact(data=data, value=amount, channel_id=channel_id)

    async def deposit_to_channel(
        self, channel_id: str | bytes, state: Mapping[str, Any], *, value: int | None = None
    ) -> HubTx:
        """``depositToChannel`` with a co-signed DEPOSIT state (approve the hub first)."""
        cid = _channel_id_hex(channel_id)
        amount = await self._native_value(cid, state, value)
        data = channel_state_calldata("depositToChannel", cid, state)
        return await self._transact(data=data, value=amount, channel_id=cid)

    async def withdraw_from_channel(
        self, channel_id: str | bytes, state: Mapping[str, Any]
    ) -> HubTx:
        """``withdrawFromChannel`` with a co-signed WITHDRAW state; the user is paid out."""
        cid = _channel_id_hex(channel_id)
        data = channel_state_calldata("withdrawFromChannel", cid, state)
        return await self._transact(data=data, channel_id=cid)

    async def checkpoint_channel(self, channel_id: str | bytes, state: Mapping[str, Any]) -> HubTx:
        """``checkpointChannel`` with a newer co-signed OPERATE state; answers a challenge."""
        cid = _channel_id_hex(channel_id)
        data = channel_state_calldata("checkpointChannel", cid, state)
        return await self._transact(data=data, channel_id=cid)

    async def challenge_channel(
        self,
        channel_id: str | bytes,
        state: Mapping[str, Any],
        challenger_sig: str | bytes,
        challenger_idx: int,
        *,
        value: int | None = None,
    ) -> HubTx:
        """``challengeChannel``: dispute with ``state`` (the on-chain state or a newer
        co-signed one). ``challenger_sig`` is
        :func:`~settlement_widgets.channel.v1.core.state.sign_challenge` by the user
        (``challenger_idx`` 0) or the node (1)."""
        cid = _channel_id_hex(channel_id)
        amount = await self._native_value(cid, state, value)
        data = challenge_channel_calldata(cid, state, challenger_sig, challenger_idx)
        return await self._transact(data=data, value=amount, channel_id=cid)

    async def close_channel(self, channel_id: str | bytes, state: Mapping[str, Any]) -> HubTx:
        """``closeChannel``: with a co-signed CLOSE (finalize) state, or, once a challenge has
        expired (expiry < now), with any state (the challenged one decides the payout: the
        user's part to the user, the node's to the node's address)."""
        cid = _channel_id_hex(channel_id)
        data = channel_state_calldata("closeChannel", cid, state)
        return await self._transact(data=data, channel_id=cid)

    # cross-chain escrow (the hub picks the home or the non-home side itself)

    async def initiate_escrow_deposit(
        self, definition: Mapping[str, Any], state: Mapping[str, Any], *, value: int = 0
    ) -> HubTx:
        """``initiateEscrowDeposit`` with a co-signed mutual-lock state (intent 4). On the
        home chain only the node may send it; elsewhere the user's deposit is pulled (approve
        the hub first; a native deposit is sent as ``value``)."""
        data = encode_call("initiateEscrowDeposit", [definition, state])
        return await self._transact(
            data=data, value=uint256(value, "value"), channel_id=channel_id_of(definition)
        )

    async def challenge_escrow_deposit(
        self, escrow_id: str | bytes, challenger_sig: str | bytes, challenger_idx: int
    ) -> HubTx:
        """``challengeEscrowDeposit``: ``challenger_sig`` is
        :func:`~settlement_widgets.channel.v1.core.state.sign_challenge` of the initiating
        state by the user (``challenger_idx`` 0) or the node (1)."""
        eid = _channel_id_hex(escrow_id)
        data = encode_call("challengeEscrowDeposit", [eid, challenger_sig, challenger_idx])
        return await self._transact(data=data)

    async def finalize_escrow_deposit(
        self, channel_id: str | bytes, escrow_id: str | bytes, state: Mapping[str, Any]
    ) -> HubTx:
        """``finalizeEscrowDeposit`` with the co-signed escrow-deposit state (intent 5), or any
        state once the record's dispute has expired (the deposit then goes back to the user)."""
        cid = _channel_id_hex(channel_id)
        data = encode_call("finalizeEscrowDeposit", [cid, _channel_id_hex(escrow_id), state])
        return await self._transact(data=data, channel_id=cid)

    async def purge_escrow_deposits(self, max_steps: int) -> HubTx:
        """``purgeEscrowDeposits``: release unlocked escrow deposits to the node's vault."""
        call = self.contract.functions.purgeEscrowDeposits(uint256(max_steps, "max_steps"))
        return await self._transact(call)

    async def initiate_escrow_withdrawal(
        self, definition: Mapping[str, Any], state: Mapping[str, Any]
    ) -> HubTx:
        """``initiateEscrowWithdrawal`` with a co-signed escrow-lock state (intent 6)."""
        data = encode_call("initiateEscrowWithdrawal", [definition, state])
        return await self._transact(data=data, channel_id=channel_id_of(definition))

    async def challenge_escrow_withdrawal(
        self, escrow_id: str | bytes, challenger_sig: str | bytes, challenger_idx: int
    ) -> HubTx:
        """``challengeEscrowWithdrawal`` (as :meth:`challenge_escrow_deposit`)."""
        eid = _channel_id_hex(escrow_id)
        data = encode_call("challengeEscrowWithdrawal", [eid, challenger_sig, challenger_idx])
        return await self._transact(data=data)

    async def finalize_escrow_withdrawal(
        self, channel_id: str | bytes, escrow_id: str | bytes, state: Mapping[str, Any]
    ) -> HubTx:
        """``finalizeEscrowWithdrawal`` with the co-signed escrow-withdraw state (intent 7), or
        any state once the record's dispute has expired (the lock then goes back to the
        node's vault)."""
        cid = _channel_id_hex(channel_id)
        data = encode_call("finalizeEscrowWithdrawal", [cid, _channel_id_hex(escrow_id), state])
        return await self._transact(data=data, channel_id=cid)

    # migration

    async def initiate_migration(
        self, definition: Mapping[str, Any], state: Mapping[str, Any]
    ) -> HubTx:
        """``initiateMigration`` with a co-signed migrate state (intent 8): on the old home
        chain it checkpoints the channel (``MigrationOutInitiated``), on the new one it opens
        it as MIGRATING_IN with the node's lock from its vault (``MigrationInInitiated``)."""
        data = encode_call("initiateMigration", [definition, state])
        return await self._transact(data=data, channel_id=channel_id_of(definition))

    async def finalize_migration(self, channel_id: str | bytes, state: Mapping[str, Any]) -> HubTx:
        """``finalizeMigration`` with the co-signed migrate-finalize state (intent 9): on the
        new home chain the channel becomes OPERATING (``MigrationInFinalized``), on the old
        one its funds go back to the node's vault and it is MIGRATED_OUT
        (``MigrationOutFinalized``)."""
        cid = _channel_id_hex(channel_id)
        data = encode_call("finalizeMigration", [cid, state])
        return await self._transact(data=data, channel_id=cid)

    # node vault

    async def deposit_to_node(self, token: str, amount: int) -> HubTx:
        """Fund the node's vault on the hub (ERC-20: approve the hub first)."""
        token = validate_address(token, field="token")
        amount = uint256(amount, "amount")
        value = amount if token == ZERO_ADDRESS else 0
        return await self._transact(
            self.contract.functions.depositToNode(token, amount), value=value
        )

    async def withdraw_from_node(self, to: str, token: str, amount: int) -> HubTx:
        """The node takes ``amount`` of ``token`` out of its vault (only the node may)."""
        to = validate_address(to, field="to", allow_zero=False)
        token = validate_address(token, field="token")
        return await self._transact(
            self.contract.functions.withdrawFromNode(to, token, uint256(amount, "amount"))
        )

    # reclaims and the validator registry

    async def claim_funds(self, token: str, destination: str | None = None) -> HubTx:
        """``claimFunds``: take the signer's reclaim balance (payouts to it that failed) to
        ``destination`` (default: the signer)."""
        token = validate_address(token, field="token")
        to = validate_address(destination or self._signer.address, field="destination")
        return await self._transact(self.contract.functions.claimFunds(token, to))

    async def register_node_validator(
        self, validator_id: int, validator: str, node_signature: str | bytes
    ) -> HubTx:
        """``registerNodeValidator``: anyone may submit it; ``node_signature`` is the node's
        (see :func:`settlement_widgets.channel.v1.node.validators.sign_validator_registration`).
        The validator is usable ``VALIDATOR_ACTIVATION_DELAY`` seconds after this block."""
        address = validate_address(validator, field="validator", allow_zero=False)
        signature = hex_bytes(node_signature, "node_signature")
        call = self.contract.functions.registerNodeValidator(int(validator_id), address, signature)
        return await self._transact(call)

    # ERC-20

    async def approve(self, token: str, amount: int, *, spender: str | None = None) -> HubTx:
        """Allow ``spender`` (default: the hub) to pull ``amount`` of ``token``."""
        spender = validate_address(spender or self._address, field="spender", allow_zero=False)
        return await self._transact(
            self._token(token).functions.approve(spender, uint256(amount, "amount"))
        )

    # --- views ----------------------------------------------------------------------------

    async def get_channel_data(self, channel_id: str | bytes) -> HubChannelData:
        """``getChannelData``; a channel never created reads as status ``"VOID"``."""
        cid = _channel_id_hex(channel_id)
        raw = await self.contract.functions.getChannelData(cid).call()
        outputs = _outputs(self._abi, "getChannelData")
        status, definition, last_state, expiry, locked = (
            _to_json(param, value) for param, value in zip(outputs, raw, strict=True)
        )
        return HubChannelData(
            channel_id=cid,
            status=hub_status_name(int(status)),
            definition=definition,
            last_state=last_state,
            challenge_expiry=int(expiry),
            locked_funds=int(locked),
            status_code=int(status),
        )

    async def get_open_channels(self, user: str | None = None) -> list[str]:
        """Channels of ``user`` (default: the signer) that are not closed."""
        user = validate_address(user or self._signer.address, field="user")
        ids = await self.contract.functions.getOpenChannels(user).call()
        return [_hex(i) for i in ids]

    async def get_channel_ids(self, user: str | None = None) -> list[str]:
        """The channels of ``user`` (default: the signer) that are not closed, as the real hub
        reports them (a closed channel is dropped, so this is no history of ids used)."""
        user = validate_address(user or self._signer.address, field="user")
        ids = await self.contract.functions.getChannelIds(user).call()
        return [_hex(i) for i in ids]

    async def get_node_balance(self, token: str) -> int:
        """The node's vault balance of ``token`` on the hub."""
        token = validate_address(token, field="token")
        return int(await self.contract.functions.getNodeBalance(token).call())

    async def get_reclaim_balance(self, token: str, account: str | None = None) -> int:
        """What ``account`` (default: the signer) may take with ``claimFunds``."""
        account = validate_address(account or self._signer.address, field="account")
        token = validate_address(token, field="token")
        return int(await self.contract.functions.getReclaimBalance(account, token).call())

    async def get_node_validator(self, validator_id: int) -> tuple[str, int]:
        """``(validator address, registeredAt)`` for an id; the zero address if unregistered."""
        address, registered_at = await self.contract.functions.getNodeValidator(
            int(validator_id)
        ).call()
        return to_checksum(address), int(registered_at)

    async def _escrow_data(
        self, function: str, escrow_id: str | bytes, block: int | str = "latest"
    ) -> HubEscrowData:
        eid = _channel_id_hex(escrow_id)
        raw = await getattr(self.contract.functions, function)(eid).call(block_identifier=block)
        values = {
            param["name"]: _to_json(param, value)
            for param, value in zip(_outputs(self._abi, function), raw, strict=True)
        }
        status = int(values["status"])
        return HubEscrowData(
            escrow_id=eid,
            channel_id=_hex(values["channelId"]),
            status=escrow_status_name(status),
            unlock_at=int(values.get("unlockAt", 0)),
            challenge_expiry=int(values["challengeExpiry"]),
            locked_amount=int(values["lockedAmount"]),
            init_state=values["initState"],
            status_code=status,
        )

    async def get_escrow_deposit_data(
        self, escrow_id: str | bytes, *, block: int | str = "latest"
    ) -> HubEscrowData:
        """``getEscrowDepositData`` (a record this hub never held reads as ``"VOID"``), as of
        ``block``."""
        return await self._escrow_data("getEscrowDepositData", escrow_id, block)

    async def get_escrow_withdrawal_data(
        self, escrow_id: str | bytes, *, block: int | str = "latest"
    ) -> HubEscrowData:
        """``getEscrowWithdrawalData`` (``unlock_at`` is always 0), as of ``block``."""
        return await self._escrow_data("getEscrowWithdrawalData", escrow_id, block)

    async def get_escrow_deposit_ids(self, page: int = 0, page_size: int = 100) -> list[str]:
        """One page of the escrow deposit queue (purged entries included), oldest first."""
        ids = await self.contract.functions.getEscrowDepositIds(
            uint256(page, "page"), uint256(page_size, "page_size")
        ).call()
        return [_hex(i) for i in ids]

    async def get_unlockable_escrow_deposit_stats(self) -> tuple[int, int]:
        """``(count, totalAmount)`` a purge would release to the node's vault now."""
        count, total = await self.contract.functions.getUnlockableEscrowDepositStats().call()
        return int(count), int(total)

    async def escrow_head(self) -> int:
        """Index of the first escrow deposit queue entry a purge has not passed."""
        return int(await self.contract.functions.escrowHead().call())

    async def escrow_deposit_unlock_delay(self) -> int:
        """``ESCROW_DEPOSIT_UNLOCK_DELAY``: seconds an escrow deposit can be challenged."""
        return int(await self.contract.functions.ESCROW_DEPOSIT_UNLOCK_DELAY().call())

    async def validator_activation_delay(self) -> int:
        """``VALIDATOR_ACTIVATION_DELAY``: seconds from registration to first use."""
        return int(await self.contract.functions.VALIDATOR_ACTIVATION_DELAY().call())

    async def version(self) -> int:
        """``VERSION``: the byte every channel id of this hub starts with."""
        return int(await self.contract.functions.VERSION().call())

    async def node(self) -> str:
        """``NODE``: the node every channel of this hub is opened with."""
        return to_checksum(await self.contract.functions.NODE().call())
