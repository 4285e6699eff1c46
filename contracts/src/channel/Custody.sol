// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {EIP712} from "@openzeppelin/contracts/utils/cryptography/EIP712.sol";
import {SignatureChecker} from "@openzeppelin/contracts/utils/cryptography/SignatureChecker.sol";
import {EnumerableSet} from "@openzeppelin/contracts/utils/structs/EnumerableSet.sol";

import {
    CHALLENGE_TYPEHASH, Allocation, Amount, Channel, ChannelStatus, State, StateIntent
} from "./ChannelTypes.sol";
import {ChannelUtils} from "./ChannelUtils.sol";
import {ERC6492Deployer} from "./ERC6492Deployer.sol";
import {IAdjudicator} from "./interfaces/IAdjudicator.sol";
import {IChannel} from "./interfaces/IChannel.sol";
import {IChannelReader} from "./interfaces/IChannelReader.sol";
import {IComparable} from "./interfaces/IComparable.sol";
import {IDeposit} from "./interfaces/IDeposit.sol";

/// @title Custody
/// @notice Holds deposits and locks them into two-party ERC-7824 state channels, delegating state
/// validity to the channel's adjudicator.
/// @dev Written for settlement_widgets' local sandbox to be ABI-identical to the Nitrolite custody
/// deployed on Sepolia (0x019B...b262): same functions, events and custom errors (selectors in
/// custody-abi-selectors.txt), the same EIP-712 domain (`Nitrolite:Custody`, `0.3.0`, via
/// ERC-5267) and the same signature schemes, so one client serves both. Deliberate differences,
/// all marked `FIX` below: recency is enforced by `checkpoint` in every dispute (issue #455) and by
/// `resize` (a RESIZE can no longer be replayed); ERC-6492 factory calls are made by a fund-less
/// helper, never by the custody (ChannelUtils.isValidERC6492Signature); EIP-712 signatures are
/// also accepted in the standard array encoding (ChannelUtils.isSignedByEOA).
contract Custody is IChannel, IDeposit, IChannelReader, EIP712 {
    using EnumerableSet for EnumerableSet.Bytes32Set;
    using SafeERC20 for IERC20;

    error ChannelNotFound(bytes32 channelId);
    error ChannelNotFinal();
    error InvalidParticipant();
    error InvalidStatus();
    error InvalidState();
    error InvalidAllocations();
    error DepositAlreadyFulfilled();
    error DepositsNotFulfilled(uint256 expectedFulfilled, uint256 actualFulfilled);
    error InvalidStateSignatures();
    error InvalidAdjudicator();
    error InvalidChallengerSignature();
    error InvalidChallengePeriod();
    error InvalidValue();
    error InvalidAmount();
    error TransferFailed(address token, address to, uint256 amount);
    error ChallengeNotExpired();
    error InsufficientBalance(uint256 available, uint256 required);

    uint256 private constant PART_NUM = 2;
    uint256 private constant CLIENT = 0;
    uint256 private constant SERVER = 1;

    uint256 public constant MIN_CHALLENGE_PERIOD = 1 hours;
    bytes32 public constant CHALLENGE_STATE_TYPEHASH = CHALLENGE_TYPEHASH;

    struct Metadata {
        Channel chan;
        ChannelStatus stage;
        address[2] wallets; // who funds and receives resizes: [creator (msg.sender), server]
        Amount[2] expectedDeposits; // what each participant's allocation asks for
        Amount[2] actualDeposits; // what each participant has locked
        uint256 challengeExpire; // non-zero in DISPUTE: when lastValidState becomes final
        State lastValidState;
        mapping(address token => uint256 balance) tokenBalances; // locked in this channel
    }

    struct Ledger {
        mapping(address token => uint256 available) tokens; // unlocked, withdrawable
        EnumerableSet.Bytes32Set channels; // open channels the account participates in
    }

    mapping(bytes32 channelId => Metadata meta) internal _channels;
    mapping(address account => Ledger ledger) internal _ledgers;

    /// @dev Makes ERC-6492 factory calls, so they never run as this contract (see ChannelUtils).
    address private immutable _erc6492Deployer;

    constructor() EIP712("Nitrolite:Custody", "0.3.0") {
        _erc6492Deployer = address(new ERC6492Deployer());
    }

    // ---------------------------------------------------------------- views

    /// @inheritdoc IChannelReader
    function getAccountsBalances(address[] calldata accounts, address[] calldata tokens)
        external
        view
        returns (uint256[][] memory balances)
    {
        balances = new uint256[][](accounts.length);
        for (uint256 i = 0; i < accounts.length; i++) {
            balances[i] = new uint256[](tokens.length);
            for (uint256 j = 0; j < tokens.length; j++) {
                balances[i][j] = _ledgers[accounts[i]].tokens[tokens[j]];
            }
        }
    }

    /// @inheritdoc IChannelReader
    function getOpenChannels(address[] calldata accounts) external view returns (bytes32[][] memory channels) {
        channels = new bytes32[][](accounts.length);
        for (uint256 i = 0; i < accounts.length; i++) {
            channels[i] = _ledgers[accounts[i]].channels.values();
        }
    }

    /// @inheritdoc IChannelReader
    function getChannelData(bytes32 channelId)
        external
        view
        returns (
            Channel memory channel,
            ChannelStatus status,
            address[] memory wallets,
            uint256 challengeExpiry,
            State memory lastValidState
        )
    {
        Metadata storage meta = _channels[channelId];
        channel = meta.chan;
        status = meta.stage;
        wallets = new address[](PART_NUM);
        wallets[CLIENT] = meta.wallets[CLIENT];
        wallets[SERVER] = meta.wallets[SERVER];
        challengeExpiry = meta.challengeExpire;
        lastValidState = meta.lastValidState;
    }

    /// @inheritdoc IChannelReader
    function getChannelBalances(bytes32 channelId, address[] calldata tokens)
        external
        view
        returns (uint256[] memory balances)
    {
        balances = new uint256[](tokens.length);
        for (uint256 i = 0; i < tokens.length; i++) {
            balances[i] = _channels[channelId].tokenBalances[tokens[i]];
        }
    }

    // ---------------------------------------------------------------- ledger

    /// @notice Credit `account`'s ledger with `amount` of `token`, paid by the sender (ERC-20s must
    /// be approved to this contract first; the native coin comes as msg.value).
    function deposit(address account, address token, uint256 amount) public payable {
        if (amount == 0) revert InvalidAmount();
        if (token == address(0) ? msg.value != amount : msg.value != 0) revert InvalidValue();

        _ledgers[account].tokens[token] += amount;
        if (token != address(0)) {
            IERC20(token).safeTransferFrom(msg.sender, address(this), amount);
        }
        emit Deposited(account, token, amount);
    }

    /// @notice Send `amount` of the sender's available (unlocked) balance back to the sender.
    function withdraw(address token, uint256 amount) external {
        Ledger storage ledger = _ledgers[msg.sender];
        uint256 available = ledger.tokens[token];
        if (available < amount) revert InsufficientBalance(available, amount);

        ledger.tokens[token] = available - amount;
        _transfer(token, msg.sender, amount);
        emit Withdrawn(msg.sender, token, amount);
    }

    // ---------------------------------------------------------------- lifecycle

    /// @notice Open a channel with the creator's signed INITIALIZE state, locking allocation 0
    /// from the sender's ledger. With both signatures the server joins in the same transaction
    /// (its allocation 1 is locked from its own ledger) and the channel is ACTIVE at once.
    function create(Channel calldata ch, State calldata initial) public returns (bytes32 channelId) {
        if (
            ch.participants.length != PART_NUM || ch.participants[CLIENT] == address(0)
                || ch.participants[SERVER] == address(0) || ch.participants[CLIENT] == ch.participants[SERVER]
        ) revert InvalidParticipant();
        if (ch.adjudicator == address(0)) revert InvalidAdjudicator();
        if (ch.challenge < MIN_CHALLENGE_PERIOD) revert InvalidChallengePeriod();
        if (initial.intent != StateIntent.INITIALIZE || initial.version != 0) revert InvalidState();

        channelId = ChannelUtils.getChannelId(ch);
        if (_channels[channelId].stage != ChannelStatus.VOID) revert InvalidStatus();

        if (initial.sigs.length == 0 || initial.sigs.length > PART_NUM) revert InvalidStateSignatures();
        if (!_verifySig(channelId, initial, initial.sigs[CLIENT], ch.participants[CLIENT])) {
            revert InvalidStateSignatures();
        }
        if (initial.allocations.length != PART_NUM) revert InvalidAllocations();

        Metadata storage meta = _channels[channelId];
        meta.chan = ch;
        meta.stage = ChannelStatus.INITIAL;
        meta.wallets[CLIENT] = msg.sender;
        meta.lastValidState = initial;
        for (uint256 i = 0; i < PART_NUM; i++) {
            meta.expectedDeposits[i] = Amount(initial.allocations[i].token, initial.allocations[i].amount);
        }
        // The sender ("wallet") funds the creator's allocation; it may differ from participant 0.
        meta.actualDeposits[CLIENT] = meta.expectedDeposits[CLIENT];
        _ledgers[ch.participants[CLIENT]].channels.add(channelId);
        _lockFunds(msg.sender, channelId, initial.allocations[CLIENT].token, initial.allocations[CLIENT].amount);

        emit Created(channelId, msg.sender, ch, initial);

        if (initial.sigs.length == PART_NUM) {
            address server = ch.participants[SERVER];
            if (!_verifySig(channelId, initial, initial.sigs[SERVER], server)) revert InvalidStateSignatures();

            meta.stage = ChannelStatus.ACTIVE;
            meta.actualDeposits[SERVER] = meta.expectedDeposits[SERVER];
            meta.wallets[SERVER] = server;
            _ledgers[server].channels.add(channelId);
            _lockFunds(server, channelId, initial.allocations[SERVER].token, initial.allocations[SERVER].amount);

            emit Joined(channelId, SERVER);
            emit Opened(channelId);
        }
    }

    /// @notice `deposit(msg.sender, token, amount)` then `create(ch, initial)` in one transaction.
    function depositAndCreate(address token, uint256 amount, Channel calldata ch, State calldata initial)
        external
        payable
        returns (bytes32)
    {
        deposit(msg.sender, token, amount);
        return create(ch, initial);
    }

    /// @notice The server joins an INITIAL channel with its signature of the stored initial state,
    /// locking its allocation from the sender's ledger.
    function join(bytes32 channelId, uint256 index, bytes calldata sig) external returns (bytes32) {
        Metadata storage meta = _channels[channelId];
        if (meta.stage == ChannelStatus.VOID) revert ChannelNotFound(channelId);
        if (meta.stage != ChannelStatus.INITIAL) revert InvalidStatus();
        if (index != SERVER) revert InvalidParticipant();
        if (meta.actualDeposits[SERVER].amount != 0) revert DepositAlreadyFulfilled();

        State memory joined = meta.lastValidState;
        if (!_verifySig(channelId, joined, sig, meta.chan.participants[SERVER])) revert InvalidStateSignatures();

        bytes[] memory sigs = new bytes[](PART_NUM);
        sigs[CLIENT] = joined.sigs[CLIENT];
        sigs[SERVER] = sig;
        joined.sigs = sigs;
        if (!IAdjudicator(meta.chan.adjudicator).adjudicate(meta.chan, joined, new State[](0))) {
            revert InvalidState();
        }

        Amount memory expected = meta.expectedDeposits[SERVER];
        meta.actualDeposits[SERVER] = expected;
        meta.wallets[SERVER] = msg.sender;
        meta.lastValidState = joined;
        meta.stage = ChannelStatus.ACTIVE;
        _ledgers[meta.chan.participants[SERVER]].channels.add(channelId);
        _lockFunds(msg.sender, channelId, expected.token, expected.amount);

        emit Joined(channelId, SERVER);
        emit Opened(channelId);
        return channelId;
    }

    /// @notice Close the channel and credit every allocation to its destination's ledger.
    /// ACTIVE: a FINALIZE state signed by both. DISPUTE before expiry: a FINALIZE signed by both
    /// overrides the challenge. DISPUTE after expiry: anyone closes; funds follow the challenged
    /// state and `candidate` only appears in the event. `proofs` is unused.
    function close(bytes32 channelId, State calldata candidate, State[] calldata) public {
        Metadata storage meta = _channels[channelId];
        if (meta.stage == ChannelStatus.VOID) revert ChannelNotFound(channelId);

        if (meta.stage == ChannelStatus.ACTIVE) {
            if (candidate.intent != StateIntent.FINALIZE || candidate.version == 0) revert InvalidState();
            if (candidate.sigs.length != PART_NUM) revert InvalidStateSignatures();
            if (!_verifyAll(meta.chan, candidate)) revert InvalidStateSignatures();
            meta.lastValidState = candidate;
        } else if (meta.stage == ChannelStatus.DISPUTE) {
            if (block.timestamp < meta.challengeExpire) {
                if (candidate.intent != StateIntent.FINALIZE) revert InvalidState();
                if (!_verifyAll(meta.chan, candidate)) revert InvalidStateSignatures();
                meta.challengeExpire = 0;
                meta.lastValidState = candidate;
            }
        } else {
            revert InvalidStatus();
        }

        _closeChannel(channelId, meta.lastValidState.allocations);
        emit Closed(channelId, candidate);
    }

    /// @notice Put a state on chain unilaterally; it becomes final after the challenge period
    /// unless a newer state is checkpointed or both sign a FINALIZE. `challengerSig` is a
    /// participant's signature over `packedState ++ "challenge"` (raw, EIP-191, EIP-712
    /// `AllowChallengeStateHash`, or ERC-1271 for contract participants). In INITIAL the channel
    /// is closed at once on the stored initial state.
    function challenge(
        bytes32 channelId,
        State calldata candidate,
        State[] calldata proofs,
        bytes calldata challengerSig
    ) external {
        Metadata storage meta = _channels[channelId];
        if (meta.stage == ChannelStatus.VOID) revert ChannelNotFound(channelId);
        if (meta.stage == ChannelStatus.DISPUTE || meta.stage == ChannelStatus.FINAL) revert InvalidStatus();
        if (candidate.intent == StateIntent.FINALIZE) revert InvalidState();

        _requireChallengerIsParticipant(channelId, candidate, meta.chan.participants, challengerSig);

        if (meta.stage == ChannelStatus.INITIAL) {
            if (!ChannelUtils.statesAreEqual(candidate, meta.lastValidState)) revert InvalidState();
            _closeChannel(channelId, candidate.allocations);
            emit Challenged(channelId, candidate, block.timestamp);
            emit Closed(channelId, candidate);
            return;
        }

        // ACTIVE: the candidate must be the stored state or a newer adjudicated one.
        StateIntent stored = meta.lastValidState.intent;
        if (stored == StateIntent.INITIALIZE) {
            if (candidate.intent == StateIntent.INITIALIZE) {
                if (!ChannelUtils.statesAreEqual(candidate, meta.lastValidState)) revert InvalidState();
            } else {
                _requireNewerAndValid(meta, candidate, proofs);
            }
        } else if (stored == StateIntent.OPERATE) {
            if (candidate.intent != StateIntent.OPERATE) revert InvalidState();
            if (!ChannelUtils.statesAreEqual(candidate, meta.lastValidState)) {
                _requireNewerAndValid(meta, candidate, proofs);
            }
        } else if (stored == StateIntent.RESIZE) {
            if (candidate.intent == StateIntent.OPERATE) {
                _requireNewerAndValid(meta, candidate, proofs);
            } else if (candidate.intent == StateIntent.RESIZE) {
                if (!ChannelUtils.statesAreEqual(candidate, meta.lastValidState)) revert InvalidState();
            } else {
                revert InvalidState();
            }
        } else {
            revert InvalidState();
        }

        uint256 expiration = block.timestamp + meta.chan.challenge;
        meta.challengeExpire = expiration;
        meta.lastValidState = candidate;
        meta.stage = ChannelStatus.DISPUTE;
        emit Challenged(channelId, candidate, expiration);
    }

    /// @notice Store a newer adjudicated OPERATE state; in DISPUTE this clears the challenge.
    function checkpoint(bytes32 channelId, State calldata candidate, State[] calldata proofs) external {
        Metadata storage meta = _channels[channelId];
        if (meta.stage == ChannelStatus.VOID) revert ChannelNotFound(channelId);
        if (meta.stage == ChannelStatus.FINAL) revert InvalidStatus();
        // INITIALIZE goes through join, RESIZE through resize, FINALIZE through close.
        if (candidate.intent != StateIntent.OPERATE) revert InvalidState();
        if (meta.stage == ChannelStatus.INITIAL) revert InvalidStatus();

        // FIX(#455): the deployed custody checks recency in a dispute only when the challenged state
        // is OPERATE, so a dispute over a RESIZE (or INITIALIZE) state could be cleared with any
        // adjudicated OPERATE state, however old. Here the candidate must be strictly newer than the
        // stored state in every status (ACTIVE and DISPUTE alike).
        _requireNewerAndValid(meta, candidate, proofs);
        if (meta.stage == ChannelStatus.DISPUTE) meta.challengeExpire = 0;

        meta.stage = ChannelStatus.ACTIVE;
        meta.lastValidState = candidate;
        emit Checkpointed(channelId, candidate);
    }

    /// @notice Move funds in or out of an ACTIVE channel with a RESIZE state both signed.
    /// `candidate.data` is `abi.encode(int256[2] deltas)` for [client, server]; positive deltas are
    /// locked from `wallets[i]`'s ledger first, then negative ones are credited to it. Only the
    /// sums are checked (`sum(before) + sum(deltas) == sum(after)`), which allows the "implicit
    /// transfer" between the two. `proofs[0]` is the preceding state (version - 1), adjudicated
    /// with `proofs[1:]`.
    function resize(bytes32 channelId, State calldata candidate, State[] calldata proofs) external {
        Metadata storage meta = _channels[channelId];
        if (meta.stage == ChannelStatus.VOID) revert ChannelNotFound(channelId);
        if (meta.stage != ChannelStatus.ACTIVE) revert InvalidStatus();

        if (proofs.length == 0) revert InvalidState();
        if (candidate.intent != StateIntent.RESIZE) revert InvalidState();
        State memory preceding = proofs[0];
        if (candidate.version != preceding.version + 1) revert InvalidState();
        // FIX: the deployed custody never compares the candidate with the stored state, so a RESIZE
        // that was already applied could be submitted again (with its own preceding state) and
        // move the deltas a second time. Here it must be newer than the stored state.
        if (!_isMoreRecent(meta.chan.adjudicator, candidate, meta.lastValidState)) revert InvalidState();

        _requireSameTokenPair(preceding.allocations);
        _requireSameTokenPair(candidate.allocations);
        if (!_verifyAll(meta.chan, candidate)) revert InvalidStateSignatures();

        int256[] memory deltas = abi.decode(candidate.data, (int256[]));
        _requireCorrectDelta(preceding.allocations, candidate.allocations, deltas);

        State[] memory rest = new State[](proofs.length - 1);
        for (uint256 i = 1; i < proofs.length; i++) {
            rest[i - 1] = proofs[i];
        }
        if (!IAdjudicator(meta.chan.adjudicator).adjudicate(meta.chan, preceding, rest)) revert InvalidState();

        meta.lastValidState = candidate;
        _applyResize(channelId, meta, deltas, candidate.allocations);
        emit Resized(channelId, deltas);
    }

    // ---------------------------------------------------------------- internals

    function _domain() private view returns (bytes32) {
        return _domainSeparatorV4();
    }

    function _verifySig(bytes32 channelId, State memory state, bytes memory sig, address signer)
        private
        returns (bool)
    {
        return ChannelUtils.verifyStateSignature(state, channelId, _domain(), sig, signer, _erc6492Deployer);
    }

    function _verifyAll(Channel memory chan, State memory state) private returns (bool) {
        return ChannelUtils.verifyUnanimous(state, chan, _domain(), _erc6492Deployer);
    }

    /// @dev Strictly newer than the stored state, and valid for the adjudicator.
    function _requireNewerAndValid(Metadata storage meta, State calldata candidate, State[] calldata proofs)
        private
    {
        if (!_isMoreRecent(meta.chan.adjudicator, candidate, meta.lastValidState)) revert InvalidState();
        if (!IAdjudicator(meta.chan.adjudicator).adjudicate(meta.chan, candidate, proofs)) revert InvalidState();
    }

    /// @dev The adjudicator's IComparable.compare if it has one (> 0 means newer), else version.
    function _isMoreRecent(address adjudicator, State memory candidate, State memory previous)
        private
        view
        returns (bool)
    {
        try IComparable(adjudicator).compare(candidate, previous) returns (int8 result) {
            return result > 0;
        } catch {
            return candidate.version > previous.version;
        }
    }

    function _requireChallengerIsParticipant(
        bytes32 channelId,
        State memory state,
        address[] memory participants,
        bytes memory challengerSig
    ) private view {
        // ERC-6492 is not accepted here: a participant able to challenge has a deployed wallet.
        bytes memory message = abi.encodePacked(ChannelUtils.getPackedState(channelId, state), "challenge");
        bytes32 digest = keccak256(message);
        for (uint256 i = 0; i < participants.length; i++) {
            address participant = participants[i];
            if (participant.code.length != 0) {
                if (SignatureChecker.isValidERC1271SignatureNow(participant, digest, challengerSig)) return;
            } else if (
                ChannelUtils.isSignedByEOA(
                    message, CHALLENGE_TYPEHASH, channelId, state, _domain(), challengerSig, participant
                )
            ) {
                return;
            }
        }
        revert InvalidChallengerSignature();
    }

    function _requireSameTokenPair(Allocation[] memory allocations) private pure {
        if (allocations.length != PART_NUM) revert InvalidState();
        if (allocations[CLIENT].token != allocations[SERVER].token) revert InvalidState();
    }

    function _requireCorrectDelta(Allocation[] memory before, Allocation[] memory next, int256[] memory deltas)
        private
        pure
    {
        if (deltas.length != PART_NUM) revert InvalidState();
        int256 sumBefore = int256(before[CLIENT].amount + before[SERVER].amount);
        int256 sumAfter = int256(next[CLIENT].amount + next[SERVER].amount);
        if (sumBefore + deltas[CLIENT] + deltas[SERVER] != sumAfter) revert InvalidAllocations();
    }

    /// @dev Positive deltas first: they bring in the funds a negative delta may take out.
    function _applyResize(bytes32 channelId, Metadata storage meta, int256[] memory deltas, Allocation[] memory next)
        private
    {
        address token = meta.expectedDeposits[CLIENT].token;
        for (uint256 i = 0; i < PART_NUM; i++) {
            if (deltas[i] > 0) _lockFunds(meta.wallets[i], channelId, token, uint256(deltas[i]));
        }
        for (uint256 i = 0; i < PART_NUM; i++) {
            if (deltas[i] < 0) {
                _unlockAllocation(channelId, Allocation(meta.wallets[i], token, uint256(-deltas[i])));
            }
        }
        for (uint256 i = 0; i < PART_NUM; i++) {
            meta.expectedDeposits[i].amount = next[i].amount;
            meta.actualDeposits[i].amount = next[i].amount;
        }
    }

    function _lockFunds(address account, bytes32 channelId, address token, uint256 amount) private {
        if (amount == 0) return;
        Ledger storage ledger = _ledgers[account];
        uint256 available = ledger.tokens[token];
        if (available < amount) revert InsufficientBalance(available, amount);
        ledger.tokens[token] = available - amount;
        _channels[channelId].tokenBalances[token] += amount;
    }

    /// @dev Credit an allocation to its destination's ledger, capped by what the channel holds.
    function _unlockAllocation(bytes32 channelId, Allocation memory alloc) private {
        if (alloc.amount == 0) return;
        Metadata storage meta = _channels[channelId];
        uint256 held = meta.tokenBalances[alloc.token];
        if (held == 0) return;
        uint256 amount = held > alloc.amount ? alloc.amount : held;
        meta.tokenBalances[alloc.token] = held - amount;
        _ledgers[alloc.destination].tokens[alloc.token] += amount;
    }

    function _closeChannel(bytes32 channelId, Allocation[] memory allocations) private {
        Metadata storage meta = _channels[channelId];
        meta.stage = ChannelStatus.FINAL; // transient: the record is deleted below
        if (allocations.length != PART_NUM) revert InvalidState();
        for (uint256 i = 0; i < PART_NUM; i++) {
            _unlockAllocation(channelId, allocations[i]);
        }
        for (uint256 i = 0; i < PART_NUM; i++) {
            _ledgers[meta.chan.participants[i]].channels.remove(channelId);
        }
        delete _channels[channelId];
    }

    function _transfer(address token, address to, uint256 amount) private {
        if (token == address(0)) {
            (bool ok,) = to.call{value: amount}("");
            if (!ok) revert TransferFailed(token, to, amount);
        } else {
            IERC20(token).safeTransfer(to, amount);
        }
    }
}
