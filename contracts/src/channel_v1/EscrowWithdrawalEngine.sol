// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {SafeCast} from "@openzeppelin/contracts/utils/math/SafeCast.sol";

import {EscrowStatus, Ledger, State, StateIntent} from "./ChannelHubTypes.sol";
import {LedgerMath} from "./LedgerMath.sol";

/// @title EscrowWithdrawalEngine (non-home chain)
/// @notice The rules of a cross-chain escrow withdrawal on the chain that is NOT the channel's
/// home, as the Nitrolite v1.4.1 `EscrowWithdrawalEngine` library defines them: the node locks
/// from its vault here what the user withdraws (INITIATE_ESCROW_WITHDRAWAL, intent 6); the next
/// state (FINALIZE_ESCROW_WITHDRAWAL, intent 7), which debits the user on the home ledger, pays
/// it to the user. A challenge freezes the lock; an expired challenge returns it to the vault.
/// Same three phases as the reference, in its order.
/// @dev An externally linked library, as in the reference (keeping the hub under EIP-170's
/// size limit), errors with the reference's selectors.
library EscrowWithdrawalEngine {
    using SafeCast for int256;
    using SafeCast for uint256;
    using LedgerMath for uint256;
    using LedgerMath for int256;

    error IncorrectStateIntent();
    error IncorrectStateVersion();
    error IncorrectEscrowStatus();
    error EscrowAlreadyExists();
    error EscrowAlreadyFinalized();
    error ChallengeExpired();
    error IncorrectHomeChain();
    error IncorrectNonHomeChain();
    error NegativeNetFlowSum();
    error InvalidAllocationSum();
    error UserAllocationMustDecrease();
    error UserAllocationDeltaAndWithdrawMismatch();
    error NodeAllocationAndNetFlowMismatch();
    error UserNodeAllocationMismatch();
    error IncorrectUserAllocation();
    error IncorrectNodeAllocation();
    error IncorrectUserNetFlow();
    error IncorrectNodeNetFlow();
    error FundMovementIsRequired();
    error FundConservationOnInitiate();
    error FundConservationOnFinalize();
    error UserFundsDeltaAndLockedAmountMismatch();
    error EscrowTokenMismatch();
    error InsufficientNodeBalance();

    /// @notice How long a disputed withdrawal waits for its finalizing state.
    uint64 internal constant CHALLENGE_DURATION = 1 days;

    /// @notice The escrow record before the candidate (its initiating state is passed apart)
    /// and what the node's vault holds of the candidate's token.
    struct TransitionContext {
        EscrowStatus status;
        uint256 lockedAmount;
        uint64 challengeExpiry;
        uint256 nodeAvailableFunds;
    }

    /// @notice What accepting the candidate does (signs as in `EscrowDepositEngine`).
    struct TransitionEffects {
        int256 userFundsDelta;
        int256 nodeFundsDelta;
        EscrowStatus newStatus;
        uint64 newChallengeExpiry;
        bool updateInitState;
    }

    /// @notice Check `candidate` against the record (`init` is its initiating state, empty for
    /// a new record) and compute its effects.
    function validateTransition(TransitionContext memory ctx, State storage init, State calldata candidate)
        external
        view
        returns (TransitionEffects memory effects)
    {
        _validateUniversal(ctx, candidate);
        if (candidate.intent == StateIntent.INITIATE_ESCROW_WITHDRAWAL) {
            effects = _initiate(ctx, candidate);
            // the node's lock is all that moves, and the vault must hold it
            _requireMovement(effects);
            if (effects.userFundsDelta + effects.nodeFundsDelta != effects.nodeFundsDelta) {
                revert FundConservationOnInitiate();
            }
            if (ctx.nodeAvailableFunds < effects.nodeFundsDelta.toUint256()) revert InsufficientNodeBalance();
        } else if (candidate.intent == StateIntent.FINALIZE_ESCROW_WITHDRAWAL) {
            effects = _finalize(ctx, init, candidate);
            // the whole lock goes to the user
            _requireMovement(effects);
            if (effects.userFundsDelta + effects.nodeFundsDelta != effects.userFundsDelta) {
                revert FundConservationOnFinalize();
            }
            if ((-effects.userFundsDelta).toUint256() != ctx.lockedAmount) {
                revert UserFundsDeltaAndLockedAmountMismatch();
            }
        } else {
            revert IncorrectStateIntent();
        }
    }

    /// @notice A challenge of an initialized withdrawal (no unlock time): frozen for
    /// `CHALLENGE_DURATION`, then returned to the node's vault unless finalized by then.
    function validateChallenge(TransitionContext memory ctx) external view returns (TransitionEffects memory effects) {
        if (ctx.status != EscrowStatus.INITIALIZED) revert IncorrectEscrowStatus();
        effects.newStatus = EscrowStatus.DISPUTED;
        effects.newChallengeExpiry = uint64(block.timestamp) + CHALLENGE_DURATION;
    }

    // --- phase 1 ----------------------------------------------------------------------------

    function _validateUniversal(TransitionContext memory ctx, State calldata candidate) private view {
        if (ctx.status == EscrowStatus.FINALIZED) revert EscrowAlreadyFinalized();
        if (candidate.homeLedger.chainId == block.chainid) revert IncorrectHomeChain();
        Ledger calldata nonHome = candidate.nonHomeLedger;
        if (nonHome.chainId != block.chainid) revert IncorrectNonHomeChain();
        if (candidate.version == 0) revert IncorrectStateVersion();
        LedgerMath.validateDecimals(nonHome);
        int256 flowed = nonHome.userNetFlow + nonHome.nodeNetFlow;
        if (flowed < 0) revert NegativeNetFlowSum();
        if (nonHome.userAllocation + nonHome.nodeAllocation != flowed.toUint256()) revert InvalidAllocationSum();
        if (ctx.status == EscrowStatus.DISPUTED && block.timestamp > ctx.challengeExpiry) revert ChallengeExpired();
    }

    // --- phase 2 ----------------------------------------------------------------------------

    function _initiate(TransitionContext memory ctx, State calldata candidate)
        private
        pure
        returns (TransitionEffects memory effects)
    {
        if (ctx.status != EscrowStatus.VOID) revert EscrowAlreadyExists();
        Ledger calldata nonHome = candidate.nonHomeLedger;
        if (nonHome.userAllocation != 0) revert IncorrectUserAllocation();
        if (nonHome.userNetFlow != 0) revert IncorrectUserNetFlow();
        uint256 amount = nonHome.nodeAllocation;
        if (nonHome.nodeNetFlow != amount.toInt256()) revert NodeAllocationAndNetFlowMismatch();
        // the user holds at least as much on the home ledger, and the node nothing
        Ledger calldata home = candidate.homeLedger;
        if (home.userAllocation.toWad(home.decimals) < amount.toWad(nonHome.decimals)) {
            revert UserNodeAllocationMismatch();
        }
        if (home.nodeAllocation != 0) revert IncorrectNodeAllocation();
        effects.nodeFundsDelta = amount.toInt256();
        effects.newStatus = EscrowStatus.INITIALIZED;
        effects.updateInitState = true;
    }

    function _finalize(TransitionContext memory ctx, State storage init, State calldata candidate)
        private
        view
        returns (TransitionEffects memory effects)
    {
        if (ctx.status != EscrowStatus.INITIALIZED && ctx.status != EscrowStatus.DISPUTED) {
            revert IncorrectEscrowStatus();
        }
        if (candidate.version != init.version + 1) revert IncorrectStateVersion();
        Ledger calldata nonHome = candidate.nonHomeLedger;
        Ledger storage initNonHome = init.nonHomeLedger;
        if (nonHome.token != initNonHome.token) revert EscrowTokenMismatch();
        if (init.intent != StateIntent.INITIATE_ESCROW_WITHDRAWAL) revert IncorrectStateIntent();

        uint256 amount = initNonHome.nodeAllocation;
        if (nonHome.userAllocation != 0) revert IncorrectUserAllocation();
        if (nonHome.userNetFlow != -amount.toInt256()) revert IncorrectUserNetFlow();
        if (nonHome.nodeAllocation != 0) revert IncorrectNodeAllocation();
        if (nonHome.nodeNetFlow != amount.toInt256()) revert IncorrectNodeNetFlow();

        // on the home ledger the user is debited the amount, which flows to the node
        Ledger calldata home = candidate.homeLedger;
        Ledger storage initHome = init.homeLedger;
        uint256 before = initHome.userAllocation;
        if (home.userAllocation >= before) revert UserAllocationMustDecrease();
        uint8 escrowDecimals = initNonHome.decimals;
        if ((before - home.userAllocation).toWad(home.decimals) != amount.toWad(escrowDecimals)) {
            revert UserAllocationDeltaAndWithdrawMismatch();
        }
        int256 nodeFlowDelta = home.nodeNetFlow - initHome.nodeNetFlow;
        if (nodeFlowDelta >= 0) revert IncorrectNodeNetFlow();
        if ((-nodeFlowDelta).toWad(home.decimals) != amount.toInt256().toWad(escrowDecimals)) {
            revert NodeAllocationAndNetFlowMismatch();
        }

        effects.userFundsDelta = -ctx.lockedAmount.toInt256();
        effects.newStatus = EscrowStatus.FINALIZED;
    }

    // --- phase 3 ----------------------------------------------------------------------------

    function _requireMovement(TransitionEffects memory effects) private pure {
        if (effects.userFundsDelta == 0 && effects.nodeFundsDelta == 0) revert FundMovementIsRequired();
    }
}
