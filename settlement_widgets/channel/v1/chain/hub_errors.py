"""Every custom error a Nitrolite v1 ``ChannelHub`` call can revert with, as ABI entries.

Why this module exists: a revert from the real hub (layer-3/nitrolite v1.4.1: ``ChannelHub``,
its ``ChannelEngine``, ``EscrowDepositEngine`` and ``EscrowWithdrawalEngine`` libraries, and
the ``ECDSAValidator`` / ``SessionKeyValidator`` signature validators) carries only a 4-byte
selector. Our compiled hub declares the errors of what it implements (home channels); the
escrow and migration engines' errors it never raises, but a client pointed at the real hub
meets them. :data:`HUB_ERROR_ABI` lists them all, declared once with their parameter names,
so :class:`~settlement_widgets.channel.v1.chain.hub.ChannelHubClient` names every revert
(``"ValidatorNotActive"`` with ``validatorId`` and ``activatesAt``) instead of showing a raw
selector.

The declarations are the upstream Solidity signatures (by upstream source file); a selector
is keccak256 of the canonical ``Name(type,...)``, computed, not stored.
"""

from __future__ import annotations

import re
from typing import Any, Final

from settlement_widgets.errors import SettlementValueError

__all__ = ["HUB_ERROR_ABI", "HUB_ERROR_DECLARATIONS", "error_abi_entry"]

#: every error of the v1.4.1 hub, engines and validators, each once (grouped by the first
#: upstream file that declares it; many are declared by several)
HUB_ERROR_DECLARATIONS: Final[tuple[str, ...]] = (
    # src/ChannelEngine.sol (and src/Utils.sol, OpenZeppelin SafeCast)
    "AllocationExceedsLockedFunds()",
    "ChallengeExpired()",
    "DecimalsExceedMaxPrecision()",
    "DecimalsMismatch()",
    "FailedToFetchDecimals()",
    "IncorrectAllocationSum()",
    "IncorrectChannelStatus()",
    "IncorrectHomeChainId()",
    "IncorrectNodeAllocation()",
    "IncorrectNodeNetFlow()",
    "IncorrectNodeNetFlowDelta()",
    "IncorrectNonHomeChainId()",
    "IncorrectPreviousStateIntent()",
    "IncorrectStateIntent()",
    "IncorrectStateVersion()",
    "IncorrectUserAllocation()",
    "IncorrectUserNetFlow()",
    "IncorrectUserNetFlowDelta()",
    "InsufficientLockedFunds()",
    "InsufficientNodeBalance()",
    "LockedFundsConsistencyViolation()",
    "NegativeNetFlowSum()",
    "NonHomeStateMustBeEmpty()",
    "NonHomeStateRequired()",
    "SafeCastOverflowedIntToUint(int256 value)",
    "SafeCastOverflowedUintToInt(uint256 value)",
    "TokenMismatch()",
    "UserAllocationDeltaMismatch()",
    "UserNodeAllocationsMismatch()",
    # src/ChannelHub.sol (and OpenZeppelin ECDSA, SafeERC20, ReentrancyGuard)
    "AddressCollision(address collision)",
    "ChallengerVersionTooLow()",
    "ECDSAInvalidSignature()",
    "ECDSAInvalidSignatureLength(uint256 length)",
    "ECDSAInvalidSignatureS(bytes32 s)",
    "EmptySignature()",
    "IncorrectAmount()",
    "IncorrectChallengeDuration()",
    "IncorrectChannelId()",
    "IncorrectMsgSender()",
    "IncorrectNode()",
    "IncorrectSignature()",
    "IncorrectValue()",
    "InsufficientBalance()",
    "InvalidAddress()",
    "InvalidValidatorId()",
    "NativeTransferFailed(address to, uint256 amount)",
    "NoChannelIdFoundForEscrow()",
    "ReentrancyGuardReentrantCall()",
    "SafeERC20FailedOperation(address token)",
    "ValidatorAlreadyRegistered(uint8 validatorId)",
    "ValidatorNotActive(uint8 validatorId, uint64 activatesAt)",
    "ValidatorNotApproved()",
    "ValidatorNotRegistered(uint8 validatorId)",
    # src/EscrowDepositEngine.sol
    "EscrowAlreadyExists()",
    "EscrowAlreadyFinalized()",
    "EscrowTokenMismatch()",
    "FundConservationOnFinalize()",
    "FundConservationOnInitiate()",
    "FundMovementIsRequired()",
    "IncorrectEscrowStatus()",
    "IncorrectHomeChain()",
    "IncorrectNonHomeChain()",
    "InvalidAllocationSum()",
    "NodeFundsDeltaAndLockedAmountMismatch()",
    "UnlockPeriodPassed()",
    "UserAllocationAndNetFlowMismatch()",
    "UserAllocationDeltaAndDepositMismatch()",
    "UserNodeAllocationMismatch()",
    # src/EscrowWithdrawalEngine.sol
    "NodeAllocationAndNetFlowMismatch()",
    "UserAllocationDeltaAndWithdrawMismatch()",
    "UserAllocationMustDecrease()",
    "UserFundsDeltaAndLockedAmountMismatch()",
    # src/interfaces/ISignatureValidator.sol, src/sigValidators/*.sol
    "EmptyChannelId()",
    "InvalidSignerAddress()",
    "ChallengeWithSessionKeyNotSupported()",
)

_DECLARATION: Final = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\((.*)\)$")


def error_abi_entry(declaration: str) -> dict[str, Any]:
    """``"Name(type name, ...)"`` as a JSON-ABI error entry."""
    match = _DECLARATION.match(declaration)
    if match is None:
        raise SettlementValueError(f"not an error declaration: {declaration!r}")
    name, params = match.groups()
    inputs = []
    for param in filter(None, (p.strip() for p in params.split(","))):
        kind, _, arg = param.partition(" ")
        inputs.append({"internalType": kind, "name": arg.strip(), "type": kind})
    return {"type": "error", "name": name, "inputs": inputs}


#: :data:`HUB_ERROR_DECLARATIONS` as one JSON ABI (pass it among a client's error ABIs)
HUB_ERROR_ABI: Final[tuple[dict[str, Any], ...]] = tuple(
    error_abi_entry(d) for d in HUB_ERROR_DECLARATIONS
)
