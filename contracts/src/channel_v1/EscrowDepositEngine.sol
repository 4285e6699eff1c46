// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {SafeCast} from "@openzeppelin/contracts/utils/math/SafeCast.sol";

import {EscrowStatus, Ledger, State, StateIntent} from "./ChannelHubTypes.sol";
import {LedgerMath} from "./LedgerMath.sol";

/// @title EscrowDepositEngine (non-home chain)
/// @notice The rules of a cross-chain escrow deposit on the chain that is NOT the channel's
/// home, as the Nitrolite v1.4.1 `EscrowDepositEngine` library defines them: the user locks
/// funds here (INITIATE_ESCROW_DEPOSIT, intent 4) while the node locks as much in the home
/// channel; the next state (FINALIZE_ESCROW_DEPOSIT, intent 5) hands them to the node's vault.
/// Unchallenged, they also go to the node's vault once `UNLOCK_DELAY` has passed (the hub's
/// purge); a challenge before that freezes them, and an expired challenge returns them to the
/// user. Same three phases as the reference, in its order.
/// @dev An externally linked library, as in the reference (keeping the hub under EIP-170's
/// size limit), errors with the reference's selectors.
library EscrowDepositEngine {
    using SafeCast for int256;
    using SafeCast for uint256;
    using LedgerMath for uint256;

    error IncorrectStateIntent();
    error IncorrectStateVersion();
    error UnlockPeriodPassed();
    error IncorrectEscrowStatus();
    error EscrowAlreadyExists();
    error EscrowAlreadyFinalized();
    error ChallengeExpired();
    error IncorrectUserAllocation();
    error UserAllocationAndNetFlowMismatch();
    error IncorrectNodeAllocation();
    error IncorrectNodeNetFlow();
    error IncorrectHomeChain();
    error IncorrectNonHomeChain();
    error NegativeNetFlowSum();
    error InvalidAllocationSum();
    error UserNodeAllocationMismatch();
    error UserAllocationDeltaAndDepositMismatch();
    error IncorrectUserNetFlowDelta();
    error FundMovementIsRequired();
    error FundConservationOnInitiate();
    error FundConservationOnFinalize();
    error NodeFundsDeltaAndLockedAmountMismatch();
    error EscrowTokenMismatch();

    /// @notice How long an unchallenged deposit stays the user's to dispute.
    uint64 internal constant UNLOCK_DELAY = 3 hours;
    /// @notice How long a disputed deposit waits for its finalizing state.
    uint64 internal constant CHALLENGE_DURATION = 1 days;

    /// @notice The escrow record before the candidate (its initiating state is passed apart).
    struct TransitionContext {
        EscrowStatus status;
        uint256 lockedAmount;
        uint64 unlockAt;
        uint64 challengeExpiry;
    }

    /// @notice What accepting the candidate does: positive deltas lock (pull from the user,
    /// take from the vault), negative ones release; zero status / unlock time keep the record's.
    struct TransitionEffects {
        int256 userFundsDelta;
        int256 nodeFundsDelta;
        EscrowStatus newStatus;
        uint64 newUnlockAt;
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
        if (candidate.intent == StateIntent.INITIATE_ESCROW_DEPOSIT) {
            effects = _initiate(ctx, candidate);
            // the user's lock is all that moves
            _requireMovement(effects);
            if (effects.userFundsDelta + effects.nodeFundsDelta != effects.userFundsDelta) {
                revert FundConservationOnInitiate();
            }
        } else if (candidate.intent == StateIntent.FINALIZE_ESCROW_DEPOSIT) {
            effects = _finalize(ctx, init, candidate);
            // the whole lock goes to the node's vault
            _requireMovement(effects);
            if (effects.userFundsDelta + effects.nodeFundsDelta != effects.nodeFundsDelta) {
                revert FundConservationOnFinalize();
            }
            if ((-effects.nodeFundsDelta).toUint256() != ctx.lockedAmount) {
                revert NodeFundsDeltaAndLockedAmountMismatch();
            }
        } else {
            revert IncorrectStateIntent();
        }
    }

    /// @notice A challenge of an initialized deposit before its unlock time: it is frozen for
    /// `CHALLENGE_DURATION`, then returned to the user unless finalized by then.
    function validateChallenge(TransitionContext memory ctx) external view returns (TransitionEffects memory effects) {
        if (ctx.status != EscrowStatus.INITIALIZED) revert IncorrectEscrowStatus();
        if (block.timestamp >= ctx.unlockAt) revert UnlockPeriodPassed();
        effects.newStatus = EscrowStatus.DISPUTED;
        effects.newChallengeExpiry = uint64(block.timestamp) + CHALLENGE_DURATION;
    }

    // --- phase 1 ----------------------------------------------------------------------------

    function _validateUniversal(TransitionContext memory ctx, State calldata candidate) private view {
        if (ctx.status == EscrowStatus.FINALIZED) revert EscrowAlreadyFinalized();
        // an escrow lives on the non-home ledger's chain, which is this one
        if (candidate.homeLedger.chainId == block.chainid) revert IncorrectHomeChain();
        Ledger calldata nonHome = candidate.nonHomeLedger;
        if (nonHome.chainId != block.chainid) revert IncorrectNonHomeChain();
        if (candidate.version == 0) revert IncorrectStateVersion();
        LedgerMath.validateDecimals(nonHome);
        int256 flowed = nonHome.userNetFlow + nonHome.nodeNetFlow;
        if (flowed < 0) revert NegativeNetFlowSum();
        if (nonHome.userAllocation + nonHome.nodeAllocation != flowed.toUint256()) revert InvalidAllocationSum();
        // a dispute can be answered up to and including its expiry second
        if (ctx.status == EscrowStatus.DISPUTED && block.timestamp > ctx.challengeExpiry) revert ChallengeExpired();
    }

    // --- phase 2 ----------------------------------------------------------------------------

    function _initiate(TransitionContext memory ctx, State calldata candidate)
        private
        view
        returns (TransitionEffects memory effects)
    {
        if (ctx.status != EscrowStatus.VOID) revert EscrowAlreadyExists();
        Ledger calldata nonHome = candidate.nonHomeLedger;
        uint256 deposit = nonHome.userAllocation;
        if (nonHome.userNetFlow != deposit.toInt256()) revert UserAllocationAndNetFlowMismatch();
        if (nonHome.nodeAllocation != 0) revert IncorrectNodeAllocation();
        if (nonHome.nodeNetFlow != 0) revert IncorrectNodeNetFlow();
        // the home ledger shows the node locking the same value
        Ledger calldata home = candidate.homeLedger;
        if (home.nodeAllocation.toWad(home.decimals) != deposit.toWad(nonHome.decimals)) {
            revert UserNodeAllocationMismatch();
        }
        effects.userFundsDelta = deposit.toInt256();
        effects.newStatus = EscrowStatus.INITIALIZED;
        effects.newUnlockAt = uint64(block.timestamp) + UNLOCK_DELAY;
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
        // the direct successor of the initiating state, on the same token
        if (candidate.version != init.version + 1) revert IncorrectStateVersion();
        Ledger calldata nonHome = candidate.nonHomeLedger;
        Ledger storage initNonHome = init.nonHomeLedger;
        if (nonHome.token != initNonHome.token) revert EscrowTokenMismatch();
        if (init.intent != StateIntent.INITIATE_ESCROW_DEPOSIT) revert IncorrectStateIntent();

        uint256 deposit = initNonHome.userAllocation;
        if (nonHome.userNetFlow != deposit.toInt256()) revert UserAllocationAndNetFlowMismatch();
        if (nonHome.nodeNetFlow != -deposit.toInt256()) revert IncorrectNodeNetFlow();
        if (nonHome.userAllocation != 0) revert IncorrectUserAllocation();
        if (nonHome.nodeAllocation != 0) revert IncorrectNodeAllocation();

        // on the home ledger the user is credited the deposit, the node's lock is gone
        Ledger calldata home = candidate.homeLedger;
        uint256 credited = home.userAllocation - init.homeLedger.userAllocation;
        if (credited.toWad(home.decimals) != deposit.toWad(initNonHome.decimals)) {
            revert UserAllocationDeltaAndDepositMismatch();
        }
        if (home.nodeAllocation != 0) revert IncorrectNodeAllocation();
        if (home.userNetFlow - init.homeLedger.userNetFlow != 0) revert IncorrectUserNetFlowDelta();

        effects.nodeFundsDelta = -ctx.lockedAmount.toInt256();
        effects.newStatus = EscrowStatus.FINALIZED;
    }

    // --- phase 3 ----------------------------------------------------------------------------

    function _requireMovement(TransitionEffects memory effects) private pure {
        if (effects.userFundsDelta == 0 && effects.nodeFundsDelta == 0) revert FundMovementIsRequired();
    }
}
