// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {IERC20Metadata} from "@openzeppelin/contracts/token/ERC20/extensions/IERC20Metadata.sol";
import {SafeCast} from "@openzeppelin/contracts/utils/math/SafeCast.sol";

import {ChannelStatus, Ledger, State, StateIntent} from "./ChannelHubTypes.sol";

/// @title ChannelEngine (home channels)
/// @notice The rules a new channel state must pass, and what accepting it moves, as the
/// Nitrolite v1.4.1 `ChannelEngine` library defines them for a channel on its home chain.
/// Three phases, in the reference's order so that the same bad state fails with the same
/// error: checks every state gets, the intent's own rules (which also compute the funds to
/// move), then the invariants over the result.
/// @dev An internal library (compiled into the hub) rather than the reference's linked one:
/// the errors keep their selectors, so a client decodes a revert identically. Escrow and
/// migration intents pass the universal checks and are then refused with
/// `IncorrectStateIntent`: this hub implements home channels only.
library ChannelEngine {
    using SafeCast for int256;
    using SafeCast for uint256;

    /// @notice The most decimals a ledger may declare (the reference's WAD precision).
    uint8 internal constant MAX_DECIMALS = 18;
    uint8 private constant NATIVE_DECIMALS = 18;

    error IncorrectHomeChainId();
    error IncorrectNonHomeChainId();
    error NonHomeStateRequired();
    error NonHomeStateMustBeEmpty();
    error IncorrectStateIntent();
    error IncorrectChannelStatus();
    error IncorrectStateVersion();
    error ChallengeExpired();
    error TokenMismatch();
    error IncorrectUserAllocation();
    error IncorrectNodeAllocation();
    error IncorrectUserNetFlowDelta();
    error NegativeNetFlowSum();
    error IncorrectAllocationSum();
    error InsufficientLockedFunds();
    error LockedFundsConsistencyViolation();
    error InsufficientNodeBalance();
    error DecimalsExceedMaxPrecision();
    error DecimalsMismatch();
    error FailedToFetchDecimals();

    /// @notice What the engine needs to know about the channel before the candidate.
    /// `hasPrevious` is false for a channel never created (the reference's "empty" last state:
    /// both ledgers on chain 0); then any version is accepted and the token is free.
    struct TransitionContext {
        ChannelStatus status;
        bool hasPrevious;
        uint64 prevVersion;
        address prevToken;
        int256 prevUserNetFlow;
        int256 prevNodeNetFlow;
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
    function validateTransition(TransitionContext memory ctx, State calldata candidate)
        internal
        view
        returns (TransitionEffects memory effects)
    {
        _validateUniversal(ctx, candidate);
        effects = _effectsOf(ctx, candidate);
        _validateInvariants(ctx, candidate.homeLedger, effects);
    }

    // --- phase 1: what every state must satisfy ---------------------------------------------

    function _validateUniversal(TransitionContext memory ctx, State calldata candidate) private view {
        Ledger calldata home = candidate.homeLedger;
        // the home ledger always describes the chain executing the call
        if (home.chainId != block.chainid) revert IncorrectHomeChainId();
        if (ctx.hasPrevious) {
            if (candidate.version <= ctx.prevVersion) revert IncorrectStateVersion();
            // a channel holds one token for its whole life
            if (home.token != ctx.prevToken) revert TokenMismatch();
        }
        _validateDecimals(home);

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

    /// @dev The declared decimals must be representable and, on this chain, the token's own.
    function _validateDecimals(Ledger calldata ledger) private view {
        uint8 declared = ledger.decimals;
        if (declared > MAX_DECIMALS) revert DecimalsExceedMaxPrecision();
        if (ledger.chainId != block.chainid) return;
        if (ledger.token == address(0)) {
            if (declared != NATIVE_DECIMALS) revert DecimalsMismatch();
            return;
        }
        try IERC20Metadata(ledger.token).decimals() returns (uint8 actual) {
            if (declared != actual) revert DecimalsMismatch();
        } catch {
            revert FailedToFetchDecimals();
        }
    }

    function _isCrossChain(StateIntent intent) private pure returns (bool) {
        return intent >= StateIntent.INITIATE_ESCROW_DEPOSIT;
    }

    // --- phase 2: the intent's own rules ----------------------------------------------------

    function _effectsOf(TransitionContext memory ctx, State calldata candidate)
        private
        pure
        returns (TransitionEffects memory effects)
    {
        Ledger calldata home = candidate.homeLedger;
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
        } else {
            // escrow and migration: not implemented by this hub
            revert IncorrectStateIntent();
        }
    }

    /// @dev DEPOSIT, WITHDRAW and OPERATE may open a channel, run it or answer a dispute.
    function _requireOpenable(ChannelStatus status) private pure {
        if (
            status != ChannelStatus.VOID && status != ChannelStatus.OPERATING && status != ChannelStatus.DISPUTED
                && status != ChannelStatus.MIGRATING_IN
        ) revert IncorrectChannelStatus();
    }

    // --- phase 3: invariants over the result ------------------------------------------------

    function _validateInvariants(TransitionContext memory ctx, Ledger calldata home, TransitionEffects memory effects)
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
