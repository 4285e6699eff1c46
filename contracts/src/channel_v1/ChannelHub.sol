// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {IERC20Metadata} from "@openzeppelin/contracts/token/ERC20/extensions/IERC20Metadata.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {SafeCast} from "@openzeppelin/contracts/utils/math/SafeCast.sol";
import {ReentrancyGuard} from "@openzeppelin/contracts/utils/ReentrancyGuard.sol";

import {ChannelDefinition, ChannelStatus, Ledger, State, StateIntent} from "./ChannelHubTypes.sol";
import {ISignatureValidator} from "./ISignatureValidator.sol";

/// @title ChannelHub (home channels)
/// @notice Our own implementation of the Nitrolite v1 ChannelHub for HOME channels: the entry
/// points, events and custom errors a v1 client and node use to open, fund, checkpoint,
/// challenge and close a channel on its home chain, with the protocol's selectors, so the SDK's
/// calldata and the node's event decoding work unchanged against it (nitrolite-v1.md §8).
/// Cross-chain escrow, migration, validator registration and pull-payment reclaims are not
/// implemented; their functions are absent rather than stubbed.
/// @dev Funds model. The hub holds `lockedFunds` per channel, always equal to the allocations of
/// the last accepted state. Moving to a newer state moves exactly the change in each net flow:
/// the user's change is pulled from (or paid to) the user's wallet, the node's change is taken
/// from (or returned to) the node's vault on this hub (`depositToNode`). Because both states
/// satisfy allocations == net flows, the locked amount follows automatically; states skipped
/// off chain (transfers between two on-chain states) are settled by the same difference.
contract ChannelHub is ReentrancyGuard {
    using SafeERC20 for IERC20;
    using SafeCast for uint256;
    using SafeCast for int256;

    // ----------------------------------------------------------------------------------------
    // constants and immutables
    // ----------------------------------------------------------------------------------------

    /// @notice Written over byte 0 of every channel id, so ids of another hub version differ.
    uint8 public constant VERSION = 1;
    uint32 public constant MIN_CHALLENGE_DURATION = 1 days;
    uint32 public constant MAX_CHALLENGE_DURATION = 7 days;

    uint8 private constant DEFAULT_VALIDATOR_ID = 0;
    uint8 private constant USER_IDX = 0;
    uint8 private constant NODE_IDX = 1;
    uint256 private constant VALIDATION_SUCCESS = 0;
    uint8 private constant NATIVE_DECIMALS = 18;

    /// @notice Validator id 0 (ECDSA by the participant's key), the only one this hub accepts.
    ISignatureValidator public immutable DEFAULT_SIG_VALIDATOR;
    /// @notice The node every channel of this hub is opened with (one hub per node and chain).
    address public immutable NODE;

    // ----------------------------------------------------------------------------------------
    // storage
    // ----------------------------------------------------------------------------------------

    struct Channel {
        ChannelStatus status;
        uint64 challengeExpiry;
        address token;
        uint256 lockedFunds;
        ChannelDefinition definition;
        State lastState;
    }

    mapping(bytes32 channelId => Channel) private _channels;
    mapping(address user => bytes32[]) private _channelIds;
    mapping(address user => bytes32[]) private _openChannels;
    /// @dev position + 1 of a channel in its user's `_openChannels` (0 = not open), so closing
    /// removes it in O(1).
    mapping(bytes32 channelId => uint256) private _openIndex;
    mapping(address token => uint256) private _nodeBalances;

    // ----------------------------------------------------------------------------------------
    // events (signatures identical to the reference ChannelHub)
    // ----------------------------------------------------------------------------------------

    event ChannelCreated(
        bytes32 indexed channelId, address indexed user, ChannelDefinition definition, State initialState
    );
    event ChannelDeposited(bytes32 indexed channelId, State candidate);
    event ChannelWithdrawn(bytes32 indexed channelId, State candidate);
    event ChannelCheckpointed(bytes32 indexed channelId, State candidate);
    event ChannelChallenged(bytes32 indexed channelId, State candidate, uint64 challengeExpireAt);
    event ChannelClosed(bytes32 indexed channelId, State finalState);
    event Deposited(address indexed token, uint256 amount);
    event Withdrawn(address indexed token, uint256 amount);
    event NodeBalanceUpdated(address indexed token, uint256 amount);

    // ----------------------------------------------------------------------------------------
    // errors (signatures identical to the reference ChannelHub / ChannelEngine)
    // ----------------------------------------------------------------------------------------

    error ChallengeExpired();
    error ChallengerVersionTooLow();
    error DecimalsMismatch();
    error EmptySignature();
    error FailedToFetchDecimals();
    error IncorrectAllocationSum();
    error IncorrectAmount();
    error IncorrectChallengeDuration();
    error IncorrectChannelId();
    error IncorrectChannelStatus();
    error IncorrectHomeChainId();
    error IncorrectMsgSender();
    error IncorrectNode();
    error IncorrectSignature();
    error IncorrectStateIntent();
    error IncorrectStateVersion();
    error IncorrectValue();
    error InsufficientBalance();
    error InsufficientNodeBalance();
    error InvalidAddress();
    error InvalidValidatorId();
    error LockedFundsConsistencyViolation();
    error NativeTransferFailed(address to, uint256 amount);
    error NonHomeStateMustBeEmpty();
    error TokenMismatch();

    constructor(ISignatureValidator _defaultSigValidator, address _node) {
        if (address(_defaultSigValidator) == address(0) || _node == address(0)) revert InvalidAddress();
        DEFAULT_SIG_VALIDATOR = _defaultSigValidator;
        NODE = _node;
    }

    // ----------------------------------------------------------------------------------------
    // channel lifecycle
    // ----------------------------------------------------------------------------------------

    /// @notice Open the channel `def` with its first co-signed state (intent DEPOSIT, WITHDRAW
    /// or OPERATE), moving the state's net flows: a deposit is pulled from `def.user` (approve
    /// the hub first) or paid as msg.value for the native token (address 0).
    function createChannel(ChannelDefinition calldata def, State calldata initState) external payable nonReentrant {
        if (def.challengeDuration < MIN_CHALLENGE_DURATION || def.challengeDuration > MAX_CHALLENGE_DURATION) {
            revert IncorrectChallengeDuration();
        }
        if (def.user == address(0)) revert InvalidAddress();
        if (def.node != NODE) revert IncorrectNode();
        StateIntent intent = initState.intent;
        if (intent != StateIntent.OPERATE && intent != StateIntent.DEPOSIT && intent != StateIntent.WITHDRAW) {
            revert IncorrectStateIntent();
        }
        bytes32 channelId = _channelIdOf(def);
        Channel storage ch = _channels[channelId];
        // a closed channel stays closed: a new epoch opens a channel with a new nonce
        if (ch.status != ChannelStatus.VOID) revert IncorrectChannelStatus();

        ch.status = ChannelStatus.OPERATING;
        ch.definition = def;
        ch.token = initState.homeLedger.token;
        _channelIds[def.user].push(channelId);
        _openChannels[def.user].push(channelId);
        _openIndex[channelId] = _openChannels[def.user].length;

        int256 userDelta = _acceptState(channelId, ch, initState);
        emit ChannelCreated(channelId, def.user, def, initState);
        _settleUser(ch, userDelta);
    }

    /// @notice Apply a co-signed DEPOSIT state; the user's net-flow increase is pulled in.
    function depositToChannel(bytes32 channelId, State calldata candidate) external payable nonReentrant {
        Channel storage ch = _liveChannel(channelId, candidate, StateIntent.DEPOSIT);
        int256 userDelta = _acceptState(channelId, ch, candidate);
        emit ChannelDeposited(channelId, candidate);
        _settleUser(ch, userDelta);
    }

    /// @notice Apply a co-signed WITHDRAW state; the user's net-flow decrease is paid out.
    function withdrawFromChannel(bytes32 channelId, State calldata candidate) external nonReentrant {
        Channel storage ch = _liveChannel(channelId, candidate, StateIntent.WITHDRAW);
        int256 userDelta = _acceptState(channelId, ch, candidate);
        emit ChannelWithdrawn(channelId, candidate);
        _settleUser(ch, userDelta);
    }

    /// @notice Record a newer co-signed OPERATE state (off-chain transfers); settles the node's
    /// net-flow change with its vault and resolves a pending challenge.
    function checkpointChannel(bytes32 channelId, State calldata candidate) external nonReentrant {
        Channel storage ch = _liveChannel(channelId, candidate, StateIntent.OPERATE);
        int256 userDelta = _acceptState(channelId, ch, candidate);
        emit ChannelCheckpointed(channelId, candidate);
        _settleUser(ch, userDelta);
    }

    /// @notice Start a dispute with `candidate` (the last on-chain state or a newer co-signed
    /// one), signed additionally by the challenger (`challengerIdx` 0 = user, 1 = node) over
    /// signingData ‖ "challenge". Unless a newer state arrives within the channel's challenge
    /// duration, `closeChannel` then closes the channel with this state.
    function challengeChannel(bytes32 channelId, State calldata candidate, bytes calldata challengerSig, uint8 challengerIdx)
        external
        payable
        nonReentrant
    {
        Channel storage ch = _channel(channelId);
        // one dispute at a time: during a dispute the answer is a newer state, not a new dispute
        if (ch.status != ChannelStatus.OPERATING) revert IncorrectChannelStatus();
        StateIntent intent = candidate.intent;
        if (intent != StateIntent.OPERATE && intent != StateIntent.DEPOSIT && intent != StateIntent.WITHDRAW) {
            revert IncorrectStateIntent();
        }
        uint64 lastVersion = ch.lastState.version;
        if (candidate.version < lastVersion) revert ChallengerVersionTooLow();

        int256 userDelta;
        if (candidate.version == lastVersion) {
            // challenging with the state already on chain: it was verified when accepted, it
            // only has to be that very state
            if (keccak256(_signingData(candidate)) != keccak256(_signingData(ch.lastState))) {
                revert IncorrectStateVersion();
            }
        } else {
            userDelta = _acceptState(channelId, ch, candidate);
        }

        address challenger;
        if (challengerIdx == USER_IDX) challenger = ch.definition.user;
        else if (challengerIdx == NODE_IDX) challenger = ch.definition.node;
        else revert IncorrectSignature();
        _verifyChallenge(channelId, _signingData(candidate), challengerSig, challenger);

        uint64 expiry = uint64(block.timestamp) + ch.definition.challengeDuration;
        ch.status = ChannelStatus.DISPUTED;
        ch.challengeExpiry = expiry;
        emit ChannelChallenged(channelId, candidate, expiry);
        _settleUser(ch, userDelta);
    }

    /// @notice Close the channel: cooperatively with a co-signed CLOSE (finalize) state, or, once
    /// a challenge has expired, with the challenged state (`candidate` is then ignored). What is
    /// still allocated is released: the user's part to the user, the node's to its vault.
    function closeChannel(bytes32 channelId, State calldata candidate) external nonReentrant {
        Channel storage ch = _channel(channelId);
        int256 userDelta;
        bool expired = ch.status == ChannelStatus.DISPUTED && block.timestamp >= ch.challengeExpiry;
        if (!expired) {
            ch = _liveChannel(channelId, candidate, StateIntent.CLOSE);
            userDelta = _acceptState(channelId, ch, candidate);
        }
        Ledger storage home = ch.lastState.homeLedger;
        uint256 userPayout = home.userAllocation;
        uint256 nodeReturn = home.nodeAllocation;
        if (userPayout + nodeReturn != ch.lockedFunds) revert LockedFundsConsistencyViolation();

        ch.status = ChannelStatus.CLOSED;
        ch.challengeExpiry = 0;
        ch.lockedFunds = 0;
        if (nodeReturn != 0) _creditNode(ch.token, nodeReturn);
        _removeOpen(channelId, ch.definition.user);
        emit ChannelClosed(channelId, ch.lastState);
        _settleUser(ch, userDelta - userPayout.toInt256());
    }

    // ----------------------------------------------------------------------------------------
    // node vault
    // ----------------------------------------------------------------------------------------

    /// @notice Fund the node's vault, from which the node's side of channels is paid (a user
    /// receiving more off chain than they deposited). Anyone may fund it; only the node withdraws.
    function depositToNode(address token, uint256 amount) external payable nonReentrant {
        if (amount == 0) revert IncorrectAmount();
        if (token == address(0)) {
            if (msg.value != amount) revert IncorrectValue();
        } else {
            if (msg.value != 0) revert IncorrectValue();
            IERC20(token).safeTransferFrom(msg.sender, address(this), amount);
        }
        _creditNode(token, amount);
        emit Deposited(token, amount);
    }

    /// @notice The node takes `amount` of `token` out of its vault, to `to`.
    function withdrawFromNode(address to, address token, uint256 amount) external nonReentrant {
        if (msg.sender != NODE) revert IncorrectMsgSender();
        if (to == address(0)) revert InvalidAddress();
        if (amount == 0) revert IncorrectAmount();
        uint256 balance = _nodeBalances[token];
        if (balance < amount) revert InsufficientBalance();
        _nodeBalances[token] = balance - amount;
        emit NodeBalanceUpdated(token, balance - amount);
        emit Withdrawn(token, amount);
        _pay(to, token, amount);
    }

    // ----------------------------------------------------------------------------------------
    // views
    // ----------------------------------------------------------------------------------------

    function getChannelData(bytes32 channelId)
        external
        view
        returns (
            ChannelStatus status,
            ChannelDefinition memory definition,
            State memory lastState,
            uint256 challengeExpiry,
            uint256 lockedFunds
        )
    {
        Channel storage ch = _channels[channelId];
        return (ch.status, ch.definition, ch.lastState, ch.challengeExpiry, ch.lockedFunds);
    }

    /// @notice Every channel `user` ever opened on this hub, oldest first.
    function getChannelIds(address user) external view returns (bytes32[] memory) {
        return _channelIds[user];
    }

    /// @notice The channels of `user` that are not closed (operating or disputed).
    function getOpenChannels(address user) external view returns (bytes32[] memory openChannels) {
        return _openChannels[user];
    }

    function getNodeBalance(address token) external view returns (uint256) {
        return _nodeBalances[token];
    }

    // ----------------------------------------------------------------------------------------
    // internals: channel checks
    // ----------------------------------------------------------------------------------------

    /// @dev The id of `def`: keccak256(abi.encode(def)) with byte 0 replaced by VERSION (§7.4).
    /// Not a public view: the reference hub has none, and clients compute ids off chain.
    function _channelIdOf(ChannelDefinition calldata def) private pure returns (bytes32) {
        bytes32 base = keccak256(abi.encode(def));
        return (base & ~bytes32(uint256(0xff) << 248)) | bytes32(uint256(VERSION) << 248);
    }

    /// @dev An existing channel; ids without our version byte are refused before any lookup.
    function _channel(bytes32 channelId) private view returns (Channel storage ch) {
        if (uint8(channelId[0]) != VERSION) revert IncorrectChannelId();
        ch = _channels[channelId];
        if (ch.status == ChannelStatus.VOID) revert IncorrectChannelStatus();
    }

    /// @dev A channel that can take a new state with `intent`: operating, or disputed with the
    /// dispute still running (a newer state is the answer to a challenge and ends it).
    function _liveChannel(bytes32 channelId, State calldata candidate, StateIntent intent)
        private
        returns (Channel storage ch)
    {
        ch = _channel(channelId);
        if (candidate.intent != intent) revert IncorrectStateIntent();
        if (ch.status == ChannelStatus.DISPUTED) {
            if (block.timestamp >= ch.challengeExpiry) revert ChallengeExpired();
            ch.status = ChannelStatus.OPERATING;
            ch.challengeExpiry = 0;
        } else if (ch.status != ChannelStatus.OPERATING) {
            revert IncorrectChannelStatus();
        }
    }

    /// @dev Validate `candidate` as the successor of the channel's last state, store it and
    /// settle the node's side with its vault. Returns the user's net-flow change, which the
    /// caller settles with the user's wallet after every state change (checks-effects-
    /// interactions).
    function _acceptState(bytes32 channelId, Channel storage ch, State calldata candidate)
        private
        returns (int256 userDelta)
    {
        if (candidate.version <= ch.lastState.version) revert IncorrectStateVersion();
        _validateLedger(ch.token, candidate.homeLedger);
        _requireEmptyLedger(candidate.nonHomeLedger);

        bytes memory signingData = _signingData(candidate);
        _verify(channelId, signingData, candidate.userSig, ch.definition.user);
        _verify(channelId, signingData, candidate.nodeSig, ch.definition.node);

        Ledger storage previous = ch.lastState.homeLedger;
        userDelta = candidate.homeLedger.userNetFlow - previous.userNetFlow;
        int256 nodeDelta = candidate.homeLedger.nodeNetFlow - previous.nodeNetFlow;

        if (nodeDelta > 0) _debitNode(ch.token, nodeDelta.toUint256());
        else if (nodeDelta < 0) _creditNode(ch.token, (-nodeDelta).toUint256());

        int256 locked = ch.lockedFunds.toInt256() + userDelta + nodeDelta;
        uint256 allocated = candidate.homeLedger.userAllocation + candidate.homeLedger.nodeAllocation;
        if (locked < 0 || locked.toUint256() != allocated) revert LockedFundsConsistencyViolation();
        ch.lockedFunds = allocated;
        ch.lastState = candidate;
    }

    /// @dev The home ledger must be on this chain, in the channel's token with that token's
    /// decimals, and balanced: allocations == net flows (so no state can create or destroy funds).
    function _validateLedger(address token, Ledger calldata ledger) private view {
        if (ledger.chainId != block.chainid) revert IncorrectHomeChainId();
        if (ledger.token != token) revert TokenMismatch();
        if (ledger.decimals != _tokenDecimals(token)) revert DecimalsMismatch();
        int256 allocations = ledger.userAllocation.toInt256() + ledger.nodeAllocation.toInt256();
        if (allocations != ledger.userNetFlow + ledger.nodeNetFlow) revert IncorrectAllocationSum();
    }

    /// @dev Escrow (the non-home ledger) is not implemented, so a state carrying one is refused
    /// rather than half-applied.
    function _requireEmptyLedger(Ledger calldata ledger) private pure {
        if (
            ledger.chainId != 0 || ledger.token != address(0) || ledger.decimals != 0 || ledger.userAllocation != 0
                || ledger.userNetFlow != 0 || ledger.nodeAllocation != 0 || ledger.nodeNetFlow != 0
        ) revert NonHomeStateMustBeEmpty();
    }

    function _tokenDecimals(address token) private view returns (uint8) {
        if (token == address(0)) return NATIVE_DECIMALS;
        try IERC20Metadata(token).decimals() returns (uint8 decimals) {
            return decimals;
        } catch {
            revert FailedToFetchDecimals();
        }
    }

    /// @dev The bytes both participants sign, wrapped with the channel id by the validator:
    /// abi.encode(version, intent, metadata, homeLedger, nonHomeLedger) (§7.1).
    function _signingData(State memory state) private pure returns (bytes memory) {
        return abi.encode(state.version, state.intent, state.metadata, state.homeLedger, state.nonHomeLedger);
    }

    // ----------------------------------------------------------------------------------------
    // internals: signatures
    // ----------------------------------------------------------------------------------------

    /// @dev Byte 0 selects the validator. Only id 0 (ECDSA) is supported: session-key and other
    /// validators need the node's validator registry, which this hub does not implement.
    function _validator(bytes calldata signature) private view returns (ISignatureValidator) {
        if (signature.length == 0) revert EmptySignature();
        if (uint8(signature[0]) != DEFAULT_VALIDATOR_ID) revert InvalidValidatorId();
        return DEFAULT_SIG_VALIDATOR;
    }

    function _verify(bytes32 channelId, bytes memory signingData, bytes calldata signature, address signer)
        private
        view
    {
        ISignatureValidator validator = _validator(signature);
        if (validator.validateSignature(channelId, signingData, signature[1:], signer) != VALIDATION_SUCCESS) {
            revert IncorrectSignature();
        }
    }

    function _verifyChallenge(bytes32 channelId, bytes memory signingData, bytes calldata signature, address signer)
        private
        view
    {
        ISignatureValidator validator = _validator(signature);
        if (validator.validateChallengeSignature(channelId, signingData, signature[1:], signer) != VALIDATION_SUCCESS)
        {
            revert IncorrectSignature();
        }
    }

    // ----------------------------------------------------------------------------------------
    // internals: funds
    // ----------------------------------------------------------------------------------------

    function _creditNode(address token, uint256 amount) private {
        uint256 balance = _nodeBalances[token] + amount;
        _nodeBalances[token] = balance;
        emit NodeBalanceUpdated(token, balance);
    }

    function _debitNode(address token, uint256 amount) private {
        uint256 balance = _nodeBalances[token];
        if (balance < amount) revert InsufficientNodeBalance();
        _nodeBalances[token] = balance - amount;
        emit NodeBalanceUpdated(token, balance - amount);
    }

    /// @dev Settle the user's side: pull `delta` from the user when positive (ERC-20 allowance,
    /// or exactly msg.value for the native token), pay it out when negative. msg.value is only
    /// ever accepted for a native pull, so ether cannot get stuck in the hub unaccounted.
    function _settleUser(Channel storage ch, int256 delta) private {
        address token = ch.token;
        address user = ch.definition.user;
        if (delta > 0) {
            uint256 amount = delta.toUint256();
            if (token == address(0)) {
                if (msg.value != amount) revert IncorrectValue();
            } else {
                if (msg.value != 0) revert IncorrectValue();
                IERC20(token).safeTransferFrom(user, address(this), amount);
            }
        } else {
            if (msg.value != 0) revert IncorrectValue();
            if (delta < 0) _pay(user, token, (-delta).toUint256());
        }
    }

    function _pay(address to, address token, uint256 amount) private {
        if (token == address(0)) {
            (bool ok,) = to.call{value: amount}("");
            if (!ok) revert NativeTransferFailed(to, amount);
        } else {
            IERC20(token).safeTransfer(to, amount);
        }
    }

    function _removeOpen(bytes32 channelId, address user) private {
        uint256 position = _openIndex[channelId];
        if (position == 0) return;
        bytes32[] storage open = _openChannels[user];
        bytes32 moved = open[open.length - 1];
        open[position - 1] = moved;
        _openIndex[moved] = position;
        open.pop();
        delete _openIndex[channelId];
    }
}
