// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {SafeCast} from "@openzeppelin/contracts/utils/math/SafeCast.sol";

import {ChannelStatus, Ledger, State, StateIntent} from "./ChannelHubTypes.sol";
import {LedgerMath} from "./LedgerMath.sol";

/// @title ChannelEngine (home channels)
/// @notice The rules a new channel state must pass, and what accepting it moves, as the
/// Nitrolite v1.4.1 `ChannelEngine` library defines them for a channel on its home chain,
/// including the home side of cross-chain escrow (intents 4-7). Three phases, in the
/// reference's order so that the same bad state fails with the same error: checks every state
/// gets, the intent's own rules (which also compute the funds to move), then the invariants
/// over the result.
/// Migration (intents 8-9) follows the reference's rules on both chains: the hub swaps the
/// ledgers of a state arriving on the chain that is not its home ledger's, so the engine
/// always sees `homeLedger` as the executing chain.
/// @dev An externally linked library, as in the reference (its one external function is
/// DELEGATECALLed by the hub, which keeps the hub under EIP-170's size limit); the errors
/// keep their selectors, so a client decodes a revert identically.
library ChannelEngine {
    using SafeCast for int256;
    using SafeCast for uint256;
    using LedgerMath for uint256;
    using LedgerMath for int256;

    error IncorrectHomeChainId();
    error IncorrectNonHomeChainId();
    error NonHomeStateRequired();
    error NonHomeStateMustBeEmpty();
    error IncorrectStateIntent();
    error IncorrectPreviousStateIntent();
    error IncorrectChannelStatus();
    error IncorrectStateVersion();
    error ChallengeExpired();
    error TokenMismatch();
    error IncorrectUserAllocation();
    error IncorrectNodeAllocation();
    error IncorrectUserNetFlow();
    error IncorrectNodeNetFlow();
    error IncorrectUserNetFlowDelta();
    error IncorrectNodeNetFlowDelta();
    error NegativeNetFlowSum();
    error IncorrectAllocationSum();
    error InsufficientLockedFunds();
    error LockedFundsConsistencyViolation();
    error UserAllocationDeltaMismatch();
    error UserNodeAllocationsMismatch();
    error InsufficientNodeBalance();

    /// @notice What the engine needs to know about the channel before the candidate.
    /// `hasPrevious` is false for a channel never created (the reference's "empty" last state:
    /// both ledgers on chain 0); then any version is accepted and the token is free. The
    /// previous intent and allocations are what an escrow deposit's finalization is held to.
    struct TransitionContext {
        ChannelStatus status;
        bool hasPrevious;
        uint64 prevVersion;
        StateIntent prevIntent;
        address prevToken;
        int256 prevUserNetFlow;
        int256 prevNodeNetFlow;
        uint256 prevUserAllocation;
        uint256 prevNonHomeUserAllocation;
        uint8 prevNonHomeDecimals;
        uint256 lockedFunds;
        uint256 nodeAvailableFunds;
        uint64 challengeExpiry;
    }

    /// @notice What accepting the candidate does. Positive deltas lock funds in the channel
    /// (pulled from the user's wallet, taken from the node's vault), negative ones release them.
    struct TransitionEffects {
        int256 userFundsDelta;
        int256 nodeFundsDelta;
        ChannelStatus newStatus;
        uint64 newChallengeExpiry;
        bool closeChannel;
    }

    /// @notice Check `candidate` as the successor of the context's state and compute its effects.
    function validateTransition(TransitionContext memory ctx, State memory candidate)
        external
        view
        returns (TransitionEffects memory effects)
    {
        _validateUniversal(ctx, candidate);
        effects = _effectsOf(ctx, candidate);
        _validateInvariants(ctx, candidate.homeLedger, effects);
    }

    // --- phase 1: what every state must satisfy ---------------------------------------------

    function _validateUniversal(TransitionContext memory ctx, State memory candidate) private view {
        Ledger memory home = candidate.homeLedger;
        // the home ledger always describes the chain executing the call
        if (home.chainId != block.chainid) revert IncorrectHomeChainId();
        if (ctx.hasPrevious) {
            if (candidate.version <= ctx.prevVersion) revert IncorrectStateVersion();
            // a channel holds one token for its whole life
            if (home.token != ctx.prevToken) revert TokenMismatch();
        }
        LedgerMath.validateDecimals(home);

        // a ledger is "empty" when its chain id is 0; only cross-chain intents carry one
        uint64 nonHomeChain = candidate.nonHomeLedger.chainId;
        if (_isCrossChain(candidate.intent)) {
            if (nonHomeChain == 0) revert NonHomeStateRequired();
            if (nonHomeChain == block.chainid) revert IncorrectNonHomeChainId();
        } else if (nonHomeChain != 0) {
            revert NonHomeStateMustBeEmpty();
        }

        // no state creates or destroys funds: what is allocated is what flowed in
        uint256 allocated = home.userAllocation + home.nodeAllocation;
        int256 flowed = home.userNetFlow + home.nodeNetFlow;
        if (flowed < 0) revert NegativeNetFlowSum();
        if (allocated != flowed.toUint256()) revert IncorrectAllocationSum();

        // a dispute can be answered up to and including its expiry second
        if (ctx.status == ChannelStatus.DISPUTED && block.timestamp > ctx.challengeExpiry) {
            revert ChallengeExpired();
        }
    }

    function _isCrossChain(StateIntent intent) private pure returns (bool) {
        return intent >= StateIntent.INITIATE_ESCROW_DEPOSIT;
    }

    // --- phase 2: the intent's own rules ----------------------------------------------------

    function _effectsOf(TransitionContext memory ctx, State memory candidate)
        private
        pure
        returns (TransitionEffects memory effects)
    {
        Ledger memory home = candidate.homeLedger;
        int256 userDelta = home.userNetFlow - ctx.prevUserNetFlow;
        int256 nodeDelta = home.nodeNetFlow - ctx.prevNodeNetFlow;
        StateIntent intent = candidate.intent;

        if (intent == StateIntent.DEPOSIT || intent == StateIntent.WITHDRAW || intent == StateIntent.OPERATE) {
            _requireOpenable(ctx.status);
            if (intent == StateIntent.DEPOSIT) {
                // a deposit moves funds in from the user, and nothing else counts as one
                if (userDelta <= 0) revert IncorrectUserNetFlowDelta();
                effects.userFundsDelta = userDelta;
            } else if (intent == StateIntent.WITHDRAW) {
                if (userDelta >= 0) revert IncorrectUserNetFlowDelta();
                effects.userFundsDelta = userDelta;
            } else {
                // a checkpoint of off-chain operation never moves the user's funds; what the
                // user received off chain is locked from the node's vault instead
                if (userDelta != 0) revert IncorrectUserNetFlowDelta();
                if (home.nodeAllocation != 0) revert IncorrectNodeAllocation();
            }
            effects.nodeFundsDelta = nodeDelta;
            effects.newStatus = ChannelStatus.OPERATING;
        } else if (intent == StateIntent.CLOSE) {
            if (
                ctx.status != ChannelStatus.OPERATING && ctx.status != ChannelStatus.DISPUTED
                    && ctx.status != ChannelStatus.MIGRATING_IN
            ) revert IncorrectChannelStatus();
            // a final state pays everything out through the net flows and allocates nothing
            if (home.userAllocation != 0) revert IncorrectUserAllocation();
            if (home.nodeAllocation != 0) revert IncorrectNodeAllocation();
            if (ctx.lockedFunds.toInt256() + userDelta + nodeDelta < 0) revert InsufficientLockedFunds();
            effects.userFundsDelta = userDelta;
            effects.nodeFundsDelta = nodeDelta;
            effects.newStatus = ChannelStatus.CLOSED;
            effects.closeChannel = true;
        } else if (intent == StateIntent.INITIATE_ESCROW_DEPOSIT) {
            _requireRunning(ctx.status);
            // the node locks, on the home chain, what the user locks on the other chain; its
            // net flow may also settle transfers, so its delta is free
            if (userDelta != 0) revert IncorrectUserNetFlowDelta();
            Ledger memory nonHome = candidate.nonHomeLedger;
            uint256 deposit = nonHome.userAllocation;
            if (deposit == 0) revert IncorrectUserAllocation();
            if (home.nodeAllocation.toWad(home.decimals) != deposit.toWad(nonHome.decimals)) {
                revert IncorrectNodeAllocation();
            }
            if (nonHome.userNetFlow != deposit.toInt256()) revert IncorrectUserNetFlow();
            effects.nodeFundsDelta = nodeDelta;
            effects.newStatus = ChannelStatus.OPERATING;
        } else if (intent == StateIntent.FINALIZE_ESCROW_DEPOSIT) {
            _requireRunning(ctx.status);
            // the direct successor of the lock: the node's locked amount becomes the user's
            if (ctx.prevIntent != StateIntent.INITIATE_ESCROW_DEPOSIT) revert IncorrectPreviousStateIntent();
            if (candidate.version != ctx.prevVersion + 1) revert IncorrectStateVersion();
            Ledger memory nonHome = candidate.nonHomeLedger;
            if (nonHome.userAllocation != 0) revert IncorrectUserAllocation();
            if (nonHome.nodeAllocation != 0) revert IncorrectNodeAllocation();
            if (home.nodeAllocation != 0) revert IncorrectNodeAllocation();
            if (userDelta != 0) revert IncorrectUserNetFlowDelta();
            if (nodeDelta != 0) revert IncorrectNodeNetFlowDelta();
            uint256 deposit = ctx.prevNonHomeUserAllocation;
            if (nonHome.userNetFlow != deposit.toInt256()) revert IncorrectUserNetFlow();
            if (nonHome.nodeNetFlow != -deposit.toInt256()) revert IncorrectNodeNetFlow();
            uint256 credited = home.userAllocation - ctx.prevUserAllocation;
            if (credited.toWad(home.decimals) != deposit.toWad(ctx.prevNonHomeDecimals)) {
                revert UserAllocationDeltaMismatch();
            }
            effects.newStatus = ChannelStatus.OPERATING;
        } else if (
            intent == StateIntent.INITIATE_ESCROW_WITHDRAWAL || intent == StateIntent.FINALIZE_ESCROW_WITHDRAWAL
        ) {
            _requireRunning(ctx.status);
            // the home side of a cross-chain withdrawal is an operate-like state with a
            // non-home ledger: the user's net flow stays, the node allocates nothing
            if (userDelta != 0) revert IncorrectUserNetFlowDelta();
            if (home.nodeAllocation != 0) revert IncorrectNodeAllocation();
            Ledger memory nonHome = candidate.nonHomeLedger;
            if (intent == StateIntent.INITIATE_ESCROW_WITHDRAWAL) {
                if (nonHome.userNetFlow != 0) revert IncorrectUserNetFlow();
                if (nonHome.userAllocation != 0) revert IncorrectUserAllocation();
                if (nonHome.nodeAllocation.toInt256() != nonHome.nodeNetFlow) revert IncorrectNodeNetFlow();
            } else {
                if (nonHome.userAllocation != 0) revert IncorrectUserAllocation();
                if (nonHome.nodeAllocation != 0) revert IncorrectNodeAllocation();
                if (nonHome.userNetFlow != -nonHome.nodeNetFlow) revert IncorrectUserNetFlow();
            }
            effects.nodeFundsDelta = nodeDelta;
            effects.newStatus = ChannelStatus.OPERATING;
        } else if (intent == StateIntent.INITIATE_MIGRATION) {
            effects = _initiateMigration(ctx, candidate, userDelta, nodeDelta);
        } else {
            effects = _finalizeMigration(ctx, candidate, userDelta, nodeDelta);
        }
    }

    /// @dev INITIATE_MIGRATION. On the new home chain (no channel here, or one that migrated
    /// away earlier) the node locks from its vault what the user holds on the old home, as a
    /// MIGRATING_IN channel; on the old home chain it is an operate-like state whose non-home
    /// ledger announces that lock (the user's funds stay locked here until finalization).
    function _initiateMigration(TransitionContext memory ctx, State memory candidate, int256 userDelta, int256 nodeDelta)
        private
        pure
        returns (TransitionEffects memory effects)
    {
        Ledger memory home = candidate.homeLedger;
        Ledger memory nonHome = candidate.nonHomeLedger;
        if (ctx.status == ChannelStatus.VOID || ctx.status == ChannelStatus.MIGRATED_OUT) {
            uint256 migrated = nonHome.userAllocation;
            if (migrated == 0) revert IncorrectUserAllocation();
            if (nonHome.nodeAllocation != 0) revert IncorrectNodeAllocation();
            if (home.userAllocation != 0) revert IncorrectUserAllocation();
            if (home.nodeAllocation.toWad(home.decimals) != migrated.toWad(nonHome.decimals)) {
                revert UserNodeAllocationsMismatch();
            }
            if (home.nodeNetFlow.toWad(home.decimals) != migrated.toInt256().toWad(nonHome.decimals)) {
                revert IncorrectNodeNetFlow();
            }
            if (home.userNetFlow != 0) revert IncorrectUserNetFlow();
            // a fresh ledger on this chain: the whole node allocation is locked, not a delta
            effects.nodeFundsDelta = home.nodeAllocation.toInt256();
            effects.newStatus = ChannelStatus.MIGRATING_IN;
        } else if (ctx.status == ChannelStatus.OPERATING || ctx.status == ChannelStatus.DISPUTED) {
            if (userDelta != 0) revert IncorrectUserNetFlowDelta();
            uint256 userHome = home.userAllocation;
            if (userHome == 0) revert IncorrectUserAllocation();
            if (home.nodeAllocation != 0) revert IncorrectNodeAllocation();
            if (nonHome.userAllocation != 0) revert IncorrectUserAllocation();
            if (nonHome.nodeAllocation.toWad(nonHome.decimals) != userHome.toWad(home.decimals)) {
                revert UserNodeAllocationsMismatch();
            }
            if (nonHome.nodeNetFlow.toWad(nonHome.decimals) != userHome.toInt256().toWad(home.decimals)) {
                revert IncorrectNodeNetFlow();
            }
            if (nonHome.userNetFlow != 0) revert IncorrectUserNetFlow();
            effects.nodeFundsDelta = nodeDelta;
            effects.newStatus = ChannelStatus.OPERATING;
        } else {
            revert IncorrectChannelStatus();
        }
    }

    /// @dev FINALIZE_MIGRATION. On the new home chain the direct successor of the initiating
    /// state gives the user the node's lock (MIGRATING_IN becomes OPERATING, nothing moves); on
    /// the old home chain the channel allocates nothing any more, its locked funds go back to
    /// the node's vault through the node's net flow, and it is MIGRATED_OUT.
    function _finalizeMigration(TransitionContext memory ctx, State memory candidate, int256 userDelta, int256 nodeDelta)
        private
        pure
        returns (TransitionEffects memory effects)
    {
        Ledger memory home = candidate.homeLedger;
        Ledger memory nonHome = candidate.nonHomeLedger;
        if (ctx.status == ChannelStatus.MIGRATING_IN) {
            if (ctx.prevIntent != StateIntent.INITIATE_MIGRATION) revert IncorrectPreviousStateIntent();
            if (candidate.version != ctx.prevVersion + 1) revert IncorrectStateVersion();
            if (home.userAllocation != ctx.prevNonHomeUserAllocation) revert IncorrectUserAllocation();
            if (home.nodeAllocation != 0) revert IncorrectNodeAllocation();
            if (nonHome.userAllocation != 0) revert IncorrectUserAllocation();
            if (nonHome.nodeAllocation != 0) revert IncorrectNodeAllocation();
            if (userDelta != 0) revert IncorrectUserNetFlowDelta();
            if (nodeDelta != 0) revert IncorrectNodeNetFlowDelta();
            effects.newStatus = ChannelStatus.OPERATING;
        } else if (ctx.status == ChannelStatus.OPERATING || ctx.status == ChannelStatus.DISPUTED) {
            // the successor of this chain's initiating state, or a later state that skips it
            if (ctx.prevIntent == StateIntent.INITIATE_MIGRATION) {
                if (candidate.version != ctx.prevVersion + 1) revert IncorrectStateVersion();
            } else if (candidate.version <= ctx.prevVersion + 1) {
                revert IncorrectStateVersion();
            }
            if (home.userAllocation != 0) revert IncorrectUserAllocation();
            if (home.nodeAllocation != 0) revert IncorrectNodeAllocation();
            if (nonHome.userAllocation == 0) revert IncorrectUserAllocation();
            if (nonHome.nodeAllocation != 0) revert IncorrectNodeAllocation();
            effects.nodeFundsDelta = nodeDelta;
            effects.newStatus = ChannelStatus.MIGRATED_OUT;
            effects.closeChannel = true;
        } else {
            revert IncorrectChannelStatus();
        }
    }

    /// @dev Escrow intents need a running channel (not VOID: no escrow opens a channel).
    function _requireRunning(ChannelStatus status) private pure {
        if (
            status != ChannelStatus.OPERATING && status != ChannelStatus.DISPUTED
                && status != ChannelStatus.MIGRATING_IN
        ) revert IncorrectChannelStatus();
    }

    /// @dev DEPOSIT, WITHDRAW and OPERATE may open a channel, run it or answer a dispute.
    function _requireOpenable(ChannelStatus status) private pure {
        if (
            status != ChannelStatus.VOID && status != ChannelStatus.OPERATING && status != ChannelStatus.DISPUTED
                && status != ChannelStatus.MIGRATING_IN
        ) revert IncorrectChannelStatus();
    }

    // --- phase 3: invariants over the result ------------------------------------------------

    function _validateInvariants(TransitionContext memory ctx, Ledger memory home, TransitionEffects memory effects)
        private
        pure
    {
        int256 expectedLocked = ctx.lockedFunds.toInt256() + effects.userFundsDelta + effects.nodeFundsDelta;
        if (expectedLocked < 0) revert InsufficientLockedFunds();
        // what the channel holds afterwards is exactly what the state allocates (a closing
        // state allocates nothing and the channel is emptied)
        if (!effects.closeChannel && home.userAllocation + home.nodeAllocation != expectedLocked.toUint256()) {
            revert LockedFundsConsistencyViolation();
        }
        if (effects.nodeFundsDelta > 0 && ctx.nodeAvailableFunds < effects.nodeFundsDelta.toUint256()) {
            revert InsufficientNodeBalance();
        }
    }
}
