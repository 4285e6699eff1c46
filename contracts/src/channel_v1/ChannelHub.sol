// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {ECDSA} from "@openzeppelin/contracts/utils/cryptography/ECDSA.sol";
import {MessageHashUtils} from "@openzeppelin/contracts/utils/cryptography/MessageHashUtils.sol";
import {SafeCast} from "@openzeppelin/contracts/utils/math/SafeCast.sol";
import {ReentrancyGuard} from "@openzeppelin/contracts/utils/ReentrancyGuard.sol";
import {EnumerableSet} from "@openzeppelin/contracts/utils/structs/EnumerableSet.sol";

import {ChannelEngine} from "./ChannelEngine.sol";
import {
    ChannelDefinition,
    ChannelStatus,
    DEFAULT_SIG_VALIDATOR_ID,
    EscrowStatus,
    Ledger,
    ParticipantIndex,
    State,
    StateIntent
} from "./ChannelHubTypes.sol";
import {EscrowDepositEngine} from "./EscrowDepositEngine.sol";
import {EscrowWithdrawalEngine} from "./EscrowWithdrawalEngine.sol";
import {ISignatureValidator} from "./ISignatureValidator.sol";

/// @title ChannelHub (home channels and cross-chain escrow)
/// @notice Our own implementation of the Nitrolite v1.4.1 `ChannelHub` for home channels and
/// cross-chain escrow deposits and withdrawals, with its rules: the same entry points, events
/// (in the same order), custom errors (with the same precedence), channel-id set semantics,
/// escrow records and their unlock queue, node validator registry with its activation delay,
/// and reclaim balances for payouts that fail. The SDK's calldata and the node's log decoding
/// work unchanged against it (nitrolite-v1.md §8).
/// Migration of a home channel to another chain follows the reference's rules
/// (`initiateMigration` / `finalizeMigration` on both chains, statuses MIGRATING_IN and
/// MIGRATED_OUT); the off-chain protocol that produces its states is ours (upstream has none).
/// @dev Transition rules live in `ChannelEngine` (home chain) and the two escrow engines
/// (non-home chain), externally linked libraries as in the reference (inlined, the hub would
/// exceed EIP-170's 24,576 bytes); this contract checks signatures, applies the engines' effects (pull from / push
/// to the user, take from / return to the node's vault) and keeps `lockedFunds` equal to the
/// last state's allocations. An escrow's side is chosen as the reference chooses it: the home
/// side when this hub holds the channel with its home ledger on this chain, else the non-home
/// side (whose records never become home-side ones).
contract ChannelHub is ReentrancyGuard {
    using EnumerableSet for EnumerableSet.Bytes32Set;
    using SafeERC20 for IERC20;
    using SafeCast for int256;

    // ----------------------------------------------------------------------------------------
    // constants and immutables (values of the reference hub)
    // ----------------------------------------------------------------------------------------

    /// @notice Written over byte 0 of every channel id, so ids of another hub version differ.
    uint8 public constant VERSION = 1;
    uint32 public constant MIN_CHALLENGE_DURATION = 1 days;
    uint32 public constant MAX_CHALLENGE_DURATION = 7 days;
    /// @notice Gas forwarded to a channel payout, so a recipient cannot burn the caller's gas;
    /// a payout that fails is kept as a reclaim balance instead of blocking the channel.
    uint256 public constant TRANSFER_GAS_LIMIT = 100000;
    /// @notice Time between a validator's registration and its first use: users can see a new
    /// validator on chain (and revoke approvals) before a compromised node key could use it.
    uint64 public constant VALIDATOR_ACTIVATION_DELAY = 1 days;
    /// @notice How long an unchallenged escrow deposit can be disputed by the user; after it,
    /// the deposit goes to the node's vault (the node locked as much on the home chain).
    uint32 public constant ESCROW_DEPOSIT_UNLOCK_DELAY = 3 hours;
    /// @notice Queue entries a purge inspects at most (skipped ones count), bounding its gas.
    uint32 public constant MAX_DEPOSIT_ESCROW_STEPS = 64;

    uint256 private constant VALIDATION_FAILURE = 1;

    /// @notice Validator id 0 (ECDSA by the participant's key), always available.
    ISignatureValidator public immutable DEFAULT_SIG_VALIDATOR;
    /// @notice The node every channel of this hub is opened with (one hub per node and chain).
    address public immutable NODE;

    // ----------------------------------------------------------------------------------------
    // storage
    // ----------------------------------------------------------------------------------------

    struct ChannelMeta {
        ChannelStatus status;
        ChannelDefinition definition;
        State lastState;
        uint256 lockedFunds;
        uint64 challengeExpireAt;
    }

    /// @dev One escrow record on its non-home chain; `channelId` is zero for no record.
    struct EscrowDepositMeta {
        bytes32 channelId;
        EscrowStatus status;
        address user;
        uint256 approvedSignatureValidators;
        uint64 unlockAt;
        uint64 challengeExpireAt;
        uint256 lockedAmount;
        State initState;
    }

    struct EscrowWithdrawalMeta {
        bytes32 channelId;
        EscrowStatus status;
        address user;
        uint256 approvedSignatureValidators;
        uint64 challengeExpireAt;
        uint256 lockedAmount;
        State initState;
    }

    struct NodeValidator {
        ISignatureValidator validator;
        uint64 registeredAt;
    }

    mapping(bytes32 channelId => ChannelMeta) private _channels;
    /// @dev a user's channels that are not closed; a closed channel leaves the set
    mapping(address user => EnumerableSet.Bytes32Set) private _userChannels;
    mapping(address token => uint256) private _nodeBalances;
    mapping(uint8 validatorId => NodeValidator) private _validatorRegistry;
    mapping(address account => mapping(address token => uint256)) private _reclaims;
    mapping(bytes32 escrowId => EscrowDepositMeta) private _escrowDeposits;
    /// @dev escrow deposits in creation order, hence by unlock time (a constant delay)
    bytes32[] private _escrowDepositIds;
    /// @notice Index in the deposit queue of the first entry not yet purged or skipped.
    uint256 public escrowHead;
    mapping(bytes32 escrowId => EscrowWithdrawalMeta) private _escrowWithdrawals;

    // ----------------------------------------------------------------------------------------
    // events (signatures identical to the reference ChannelHub)
    // ----------------------------------------------------------------------------------------

    event Deposited(address indexed token, uint256 amount);
    event Withdrawn(address indexed token, uint256 amount);
    event ChannelCreated(
        bytes32 indexed channelId, address indexed user, ChannelDefinition definition, State initialState
    );
    event ChannelDeposited(bytes32 indexed channelId, State candidate);
    event ChannelWithdrawn(bytes32 indexed channelId, State candidate);
    event ChannelCheckpointed(bytes32 indexed channelId, State candidate);
    event ChannelChallenged(bytes32 indexed channelId, State candidate, uint64 challengeExpireAt);
    event ChannelClosed(bytes32 indexed channelId, State finalState);
    event ValidatorRegistered(uint8 indexed validatorId, ISignatureValidator indexed validator);
    event TransferFailed(address indexed recipient, address indexed token, uint256 amount);
    event FundsClaimed(address indexed account, address indexed token, address indexed destination, uint256 amount);
    event NodeBalanceUpdated(address indexed token, uint256 amount);
    event EscrowDepositsPurged(bytes32[] escrowIds, uint256 purgedCount);
    event EscrowDepositInitiated(bytes32 indexed escrowId, bytes32 indexed channelId, State state);
    event EscrowDepositInitiatedOnHome(bytes32 indexed escrowId, bytes32 indexed channelId, State state);
    event EscrowDepositChallenged(bytes32 indexed escrowId, State state, uint64 challengeExpireAt);
    event EscrowDepositFinalized(bytes32 indexed escrowId, bytes32 indexed channelId, State state);
    event EscrowDepositFinalizedOnHome(bytes32 indexed escrowId, bytes32 indexed channelId, State state);
    event EscrowWithdrawalInitiated(bytes32 indexed escrowId, bytes32 indexed channelId, State state);
    event EscrowWithdrawalInitiatedOnHome(bytes32 indexed escrowId, bytes32 indexed channelId, State state);
    event EscrowWithdrawalChallenged(bytes32 indexed escrowId, State state, uint64 challengeExpireAt);
    event EscrowWithdrawalFinalized(bytes32 indexed escrowId, bytes32 indexed channelId, State state);
    event EscrowWithdrawalFinalizedOnHome(bytes32 indexed escrowId, bytes32 indexed channelId, State state);
    event MigrationOutInitiated(bytes32 indexed channelId, State state);
    event MigrationInInitiated(bytes32 indexed channelId, State state);
    event MigrationOutFinalized(bytes32 indexed channelId, State state);
    event MigrationInFinalized(bytes32 indexed channelId, State state);

    // ----------------------------------------------------------------------------------------
    // errors (signatures identical to the reference ChannelHub; the engine's are in
    // ChannelEngine)
    // ----------------------------------------------------------------------------------------

    error InvalidAddress();
    error IncorrectAmount();
    error IncorrectValue();
    error NativeTransferFailed(address to, uint256 amount);
    error AddressCollision(address collision);
    error IncorrectChallengeDuration();
    error InvalidValidatorId();
    error ValidatorAlreadyRegistered(uint8 validatorId);
    error ValidatorNotRegistered(uint8 validatorId);
    error ValidatorNotApproved();
    error ValidatorNotActive(uint8 validatorId, uint64 activatesAt);
    error EmptySignature();
    error IncorrectSignature();
    error InsufficientBalance();
    error IncorrectStateIntent();
    error IncorrectChannelStatus();
    error ChallengerVersionTooLow();
    error IncorrectNode();
    error IncorrectMsgSender();
    error NoChannelIdFoundForEscrow();
    error IncorrectChannelId();

    constructor(ISignatureValidator _defaultSigValidator, address _node) {
        if (address(_defaultSigValidator) == address(0)) revert InvalidAddress();
        if (_node == address(0)) revert InvalidAddress();
        DEFAULT_SIG_VALIDATOR = _defaultSigValidator;
        NODE = _node;
    }

    // ----------------------------------------------------------------------------------------
    // views
    // ----------------------------------------------------------------------------------------

    function getNodeBalance(address token) external view returns (uint256) {
        return _nodeBalances[token];
    }

    /// @notice The validator registered under `validatorId` and when (0, 0 if none).
    function getNodeValidator(uint8 validatorId)
        external
        view
        returns (ISignatureValidator validator, uint64 registeredAt)
    {
        NodeValidator storage entry = _validatorRegistry[validatorId];
        return (entry.validator, entry.registeredAt);
    }

    /// @notice The channels of `user` that are not closed (a closed channel is dropped; the
    /// order is the set's: a removal moves the last id into the freed slot).
    function getChannelIds(address user) external view returns (bytes32[] memory) {
        return _userChannels[user].values();
    }

    /// @notice `getChannelIds` without closed or migrated-out channels.
    function getOpenChannels(address user) external view returns (bytes32[] memory openChannels) {
        bytes32[] memory ids = _userChannels[user].values();
        uint256 count;
        for (uint256 i = 0; i < ids.length; i++) {
            ChannelStatus status = _channels[ids[i]].status;
            if (status != ChannelStatus.CLOSED && status != ChannelStatus.MIGRATED_OUT) ids[count++] = ids[i];
        }
        openChannels = new bytes32[](count);
        for (uint256 i = 0; i < count; i++) {
            openChannels[i] = ids[i];
        }
    }

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
        ChannelMeta storage meta = _channels[channelId];
        return (meta.status, meta.definition, meta.lastState, meta.challengeExpireAt, meta.lockedFunds);
    }

    /// @notice What `account` can take with `claimFunds` (payouts to it that failed).
    function getReclaimBalance(address account, address token) external view returns (uint256) {
        return _reclaims[account][token];
    }

    function getEscrowDepositData(bytes32 escrowId)
        external
        view
        returns (
            bytes32 channelId,
            EscrowStatus status,
            uint64 unlockAt,
            uint64 challengeExpiry,
            uint256 lockedAmount,
            State memory initState
        )
    {
        EscrowDepositMeta storage meta = _escrowDeposits[escrowId];
        return (meta.channelId, meta.status, meta.unlockAt, meta.challengeExpireAt, meta.lockedAmount, meta.initState);
    }

    function getEscrowWithdrawalData(bytes32 escrowId)
        external
        view
        returns (
            bytes32 channelId,
            EscrowStatus status,
            uint64 challengeExpiry,
            uint256 lockedAmount,
            State memory initState
        )
    {
        EscrowWithdrawalMeta storage meta = _escrowWithdrawals[escrowId];
        return (meta.channelId, meta.status, meta.challengeExpireAt, meta.lockedAmount, meta.initState);
    }

    /// @notice Page `page` (of `pageSize` ids) of the escrow deposit queue, purged ones included.
    function getEscrowDepositIds(uint256 page, uint256 pageSize) external view returns (bytes32[] memory ids) {
        uint256 total = _escrowDepositIds.length;
        uint256 start = page * pageSize;
        if (start >= total) return new bytes32[](0);
        uint256 end = start + pageSize;
        if (end > total) end = total;
        ids = new bytes32[](end - start);
        for (uint256 i = start; i < end; i++) {
            ids[i - start] = _escrowDepositIds[i];
        }
    }

    /// @notice What a purge without a step limit would release now: the unlocked deposits from
    /// the queue head up to the first one still locked (finalized and disputed ones skipped).
    function getUnlockableEscrowDepositStats() external view returns (uint256 count, uint256 totalAmount) {
        uint256 total = _escrowDepositIds.length;
        for (uint256 i = escrowHead; i < total; i++) {
            EscrowDepositMeta storage meta = _escrowDeposits[_escrowDepositIds[i]];
            if (_isSkippable(meta.status)) continue;
            if (!_isUnlockable(meta)) break;
            count++;
            totalAmount += meta.lockedAmount;
        }
    }

    // ----------------------------------------------------------------------------------------
    // node vault and reclaims
    // ----------------------------------------------------------------------------------------

    /// @notice Fund the node's vault, from which the node's side of channels is paid. Anyone
    /// may fund it (ERC-20: approve first; native: exactly `amount` as value).
    function depositToNode(address token, uint256 amount) external payable nonReentrant {
        if (amount == 0) revert IncorrectAmount();
        _pullFunds(msg.sender, token, amount);
        uint256 balance = _nodeBalances[token] + amount;
        _nodeBalances[token] = balance;
        emit Deposited(token, amount);
        emit NodeBalanceUpdated(token, balance);
    }

    /// @notice The node takes `amount` of `token` out of its vault, to `to`.
    function withdrawFromNode(address to, address token, uint256 amount) external nonReentrant {
        if (to == address(0)) revert InvalidAddress();
        if (amount == 0) revert IncorrectAmount();
        if (msg.sender != NODE) revert IncorrectMsgSender();
        uint256 balance = _nodeBalances[token];
        if (balance < amount) revert InsufficientBalance();
        balance -= amount;
        _nodeBalances[token] = balance;
        _pushFunds(to, token, amount);
        emit Withdrawn(token, amount);
        emit NodeBalanceUpdated(token, balance);
    }

    /// @notice Take the caller's reclaim balance of `token` to `destination` (which may differ
    /// from the caller, e.g. when the caller itself cannot receive the token).
    function claimFunds(address token, address destination) external nonReentrant {
        if (destination == address(0)) revert InvalidAddress();
        uint256 amount = _reclaims[msg.sender][token];
        if (amount == 0) revert IncorrectAmount();
        _reclaims[msg.sender][token] = 0;
        // the claimant chose the destination and pays the gas: no cap, no second reclaim
        _pushFunds(destination, token, amount);
        emit FundsClaimed(msg.sender, token, destination, amount);
    }

    // ----------------------------------------------------------------------------------------
    // validator registry
    // ----------------------------------------------------------------------------------------

    /// @notice Register `validator` under `validatorId` (1-255) for this hub's channels,
    /// authorised by the NODE's signature over `abi.encode(chainid, hub, validatorId,
    /// validator)` (EIP-191 or raw digest), so anyone can relay it. Usable after
    /// `VALIDATOR_ACTIVATION_DELAY`, in channels whose bitmap approves the id; never replaced.
    function registerNodeValidator(uint8 validatorId, ISignatureValidator validator, bytes calldata signature)
        external
    {
        if (validatorId == DEFAULT_SIG_VALIDATOR_ID) revert InvalidValidatorId();
        if (address(validator) == address(0)) revert InvalidAddress();
        if (address(_validatorRegistry[validatorId].validator) != address(0)) {
            revert ValidatorAlreadyRegistered(validatorId);
        }
        bytes memory message = abi.encode(block.chainid, address(this), validatorId, address(validator));
        if (!_signedBy(message, signature, NODE)) revert IncorrectSignature();
        _validatorRegistry[validatorId] = NodeValidator(validator, uint64(block.timestamp));
        emit ValidatorRegistered(validatorId, validator);
    }

    // ----------------------------------------------------------------------------------------
    // channel lifecycle
    // ----------------------------------------------------------------------------------------

    /// @notice Open `def` with its first co-signed state (intent DEPOSIT, WITHDRAW or OPERATE).
    /// Emits the intent's event, then `ChannelCreated`.
    function createChannel(ChannelDefinition calldata def, State calldata initState) external payable nonReentrant {
        StateIntent intent = initState.intent;
        if (intent != StateIntent.DEPOSIT && intent != StateIntent.WITHDRAW && intent != StateIntent.OPERATE) {
            revert IncorrectStateIntent();
        }
        if (intent != StateIntent.DEPOSIT && msg.value != 0) revert IncorrectValue();
        bytes32 channelId = _channelIdOf(def);
        // a channel id is used once: a closed channel is not reopened, a new nonce is
        if (_channels[channelId].status != ChannelStatus.VOID) revert IncorrectChannelStatus();
        _requireValidDefinition(def);
        _validateSignatures(channelId, initState, def.user, def.approvedSignatureValidators);

        ChannelEngine.TransitionEffects memory effects =
            ChannelEngine.validateTransition(_context(channelId, initState.homeLedger.token), initState);
        _channels[channelId].definition = def;
        _applyEffects(channelId, def.user, initState, effects);
        _userChannels[def.user].add(channelId);

        _emitStateEvent(channelId, initState);
        emit ChannelCreated(channelId, def.user, def, initState);
    }

    /// @notice Apply a co-signed DEPOSIT state: the user's net-flow increase is pulled in.
    function depositToChannel(bytes32 channelId, State calldata candidate) external payable nonReentrant {
        _advance(channelId, candidate, StateIntent.DEPOSIT);
        emit ChannelDeposited(channelId, candidate);
    }

    /// @notice Apply a co-signed WITHDRAW state: the user's net-flow decrease is paid out.
    function withdrawFromChannel(bytes32 channelId, State calldata candidate) external nonReentrant {
        _advance(channelId, candidate, StateIntent.WITHDRAW);
        emit ChannelWithdrawn(channelId, candidate);
    }

    /// @notice Record a newer co-signed OPERATE state; the node's net-flow change is settled
    /// with its vault, and a pending dispute is resolved.
    function checkpointChannel(bytes32 channelId, State calldata candidate) external nonReentrant {
        _advance(channelId, candidate, StateIntent.OPERATE);
        emit ChannelCheckpointed(channelId, candidate);
    }

    /// @notice Dispute with `candidate` (the last on-chain state, or a newer co-signed one that
    /// is applied first), signed by the challenger over signingData ‖ "challenge". Unless a
    /// newer state arrives by the expiry (inclusive), `closeChannel` then closes with it.
    function challengeChannel(
        bytes32 channelId,
        State calldata candidate,
        bytes calldata challengerSig,
        ParticipantIndex challengerIdx
    ) external payable nonReentrant {
        ChannelMeta storage meta = _channels[channelId];
        ChannelStatus status = meta.status;
        // one dispute at a time: during a dispute the answer is a newer state
        if (status != ChannelStatus.OPERATING && status != ChannelStatus.MIGRATING_IN) {
            revert IncorrectChannelStatus();
        }
        uint64 lastVersion = meta.lastState.version;
        if (candidate.version < lastVersion) revert ChallengerVersionTooLow();
        address user = meta.definition.user;
        uint256 approved = meta.definition.approvedSignatureValidators;

        if (candidate.version > lastVersion) {
            // a final state closes instead (`closeChannel`)
            if (candidate.intent == StateIntent.CLOSE) revert IncorrectStateIntent();
            if (status == ChannelStatus.OPERATING && candidate.intent == StateIntent.FINALIZE_MIGRATION) {
                revert IncorrectStateIntent();
            }
            if (candidate.intent == StateIntent.INITIATE_ESCROW_DEPOSIT && msg.sender != NODE) {
                revert IncorrectMsgSender();
            }
            _validateSignatures(channelId, candidate, user, approved);
            ChannelEngine.TransitionEffects memory effects =
                ChannelEngine.validateTransition(_context(channelId, candidate.homeLedger.token), candidate);
            // the funds move, the status does not: the channel becomes disputed below
            _applyTransitionEffects(channelId, user, candidate, effects);
        } else if (msg.value != 0) {
            // the same version was applied already; nothing is pulled
            revert IncorrectValue();
        }

        _validateChallenger(channelId, _signingData(candidate), challengerSig, challengerIdx, user, approved);

        uint64 expiry = uint64(block.timestamp) + meta.definition.challengeDuration;
        meta.status = ChannelStatus.DISPUTED;
        meta.challengeExpireAt = expiry;
        emit ChannelChallenged(channelId, candidate, expiry);
    }

    /// @notice Close the channel: once a dispute has expired (expiry < now) with the disputed
    /// state, paying its allocations to the user and to the NODE's address (`candidate` is then
    /// ignored); otherwise with a co-signed CLOSE state, which allocates nothing and pays out
    /// through its net flows (the node's part back into its vault).
    function closeChannel(bytes32 channelId, State calldata candidate) external nonReentrant {
        ChannelMeta storage meta = _channels[channelId];
        address user = meta.definition.user;

        if (meta.status == ChannelStatus.DISPUTED && meta.challengeExpireAt < block.timestamp) {
            meta.status = ChannelStatus.CLOSED;
            meta.lockedFunds = 0;
            meta.challengeExpireAt = 0;
            Ledger storage home = meta.lastState.homeLedger;
            address token = home.token;
            _nonRevertingPushFunds(user, token, home.userAllocation);
            _nonRevertingPushFunds(NODE, token, home.nodeAllocation);
            _userChannels[user].remove(channelId);
            emit ChannelClosed(channelId, meta.lastState);
            return;
        }

        if (candidate.intent != StateIntent.CLOSE) revert IncorrectStateIntent();
        _validateSignatures(channelId, candidate, user, meta.definition.approvedSignatureValidators);
        ChannelEngine.TransitionEffects memory effects =
            ChannelEngine.validateTransition(_context(channelId, candidate.homeLedger.token), candidate);
        _applyEffects(channelId, user, candidate, effects);
        _userChannels[user].remove(channelId);
        emit ChannelClosed(channelId, candidate);
    }

    // ----------------------------------------------------------------------------------------
    // cross-chain escrow
    // ----------------------------------------------------------------------------------------

    /// @notice An INITIATE_ESCROW_DEPOSIT state (the user's mutual lock). On the home chain
    /// (only the NODE may submit it there) it advances the home channel, where the node locks
    /// the deposit from its vault; elsewhere it opens the escrow record and pulls the deposit
    /// from the user (native: exactly as value), to be released by `finalizeEscrowDeposit` or,
    /// unchallenged, to the node's vault after `ESCROW_DEPOSIT_UNLOCK_DELAY`.
    function initiateEscrowDeposit(ChannelDefinition calldata def, State calldata candidate)
        external
        payable
        nonReentrant
    {
        if (candidate.intent != StateIntent.INITIATE_ESCROW_DEPOSIT) revert IncorrectStateIntent();
        _requireValidDefinition(def);
        bytes32 channelId = _channelIdOf(def);
        _validateSignatures(channelId, candidate, def.user, def.approvedSignatureValidators);
        bytes32 escrowId = _escrowIdOf(channelId, candidate.version);

        if (_isChannelHomeChain(channelId)) {
            if (msg.sender != NODE) revert IncorrectMsgSender();
            if (msg.value != 0) revert IncorrectValue();
            _processHomeChainEscrow(channelId, candidate);
            emit EscrowDepositInitiatedOnHome(escrowId, channelId, candidate);
            return;
        }
        EscrowDepositMeta storage meta = _escrowDeposits[escrowId];
        EscrowDepositEngine.TransitionEffects memory effects =
            EscrowDepositEngine.validateTransition(_depositContext(meta), meta.initState, candidate);
        if (effects.updateInitState) {
            _record(meta, channelId, candidate, def.user, def.approvedSignatureValidators);
        }
        _applyEscrowDepositEffects(meta, candidate.nonHomeLedger.token, effects);
        _escrowDepositIds.push(escrowId);
        emit EscrowDepositInitiated(escrowId, channelId, candidate);
    }

    /// @notice Dispute an initialized escrow deposit before its unlock time, signed by the
    /// challenger over the initiating state ‖ "challenge": it is frozen for a day and returned
    /// to the user by `finalizeEscrowDeposit` after that unless finalized first.
    function challengeEscrowDeposit(bytes32 escrowId, bytes calldata challengerSig, ParticipantIndex challengerIdx)
        external
        nonReentrant
    {
        EscrowDepositMeta storage meta = _escrowDeposits[escrowId];
        bytes32 channelId = meta.channelId;
        if (channelId == bytes32(0)) revert NoChannelIdFoundForEscrow();
        // the signature first, then the record's status (the reference's order)
        _validateChallenger(
            channelId,
            _storedSigningData(meta.initState),
            challengerSig,
            challengerIdx,
            meta.user,
            meta.approvedSignatureValidators
        );
        EscrowDepositEngine.TransitionEffects memory effects =
            EscrowDepositEngine.validateChallenge(_depositContext(meta));
        _applyEscrowDepositEffects(meta, meta.initState.nonHomeLedger.token, effects);
        emit EscrowDepositChallenged(escrowId, meta.initState, effects.newChallengeExpiry);
    }

    /// @notice A FINALIZE_ESCROW_DEPOSIT state: on the home chain it credits the user in the
    /// home channel with the node's lock; on the non-home chain it releases the record's
    /// deposit to the node's vault. A non-home record whose dispute has expired is instead
    /// returned to the user, whatever `candidate` is.
    function finalizeEscrowDeposit(bytes32 channelId, bytes32 escrowId, State calldata candidate)
        external
        nonReentrant
    {
        EscrowDepositMeta storage meta = _escrowDeposits[escrowId];
        if (meta.channelId == bytes32(0) && _isChannelHomeChain(channelId)) {
            if (candidate.intent != StateIntent.FINALIZE_ESCROW_DEPOSIT) revert IncorrectStateIntent();
            _validateHomeSignatures(channelId, candidate);
            _processHomeChainEscrow(channelId, candidate);
            emit EscrowDepositFinalizedOnHome(escrowId, channelId, candidate);
            return;
        }
        if (meta.channelId != channelId) revert IncorrectChannelId();
        address user = meta.user;
        if (meta.status == EscrowStatus.DISPUTED && meta.challengeExpireAt < block.timestamp) {
            meta.status = EscrowStatus.FINALIZED;
            uint256 amount = meta.lockedAmount;
            meta.lockedAmount = 0;
            meta.challengeExpireAt = 0;
            // the deposit was never exchanged on the home chain: it is the user's again
            _nonRevertingPushFunds(user, meta.initState.nonHomeLedger.token, amount);
            _purgeEscrowDeposits(MAX_DEPOSIT_ESCROW_STEPS);
            emit EscrowDepositFinalized(escrowId, channelId, meta.initState);
            return;
        }
        if (candidate.intent != StateIntent.FINALIZE_ESCROW_DEPOSIT) revert IncorrectStateIntent();
        _validateSignatures(channelId, candidate, user, meta.approvedSignatureValidators);
        EscrowDepositEngine.TransitionEffects memory effects =
            EscrowDepositEngine.validateTransition(_depositContext(meta), meta.initState, candidate);
        _applyEscrowDepositEffects(meta, meta.initState.nonHomeLedger.token, effects);
        emit EscrowDepositFinalized(escrowId, channelId, candidate);
    }

    /// @notice An INITIATE_ESCROW_WITHDRAWAL state (the node's escrow lock). On the home chain
    /// it advances the home channel; elsewhere it opens the escrow record and locks the amount
    /// from the node's vault, to be paid to the user by `finalizeEscrowWithdrawal`.
    function initiateEscrowWithdrawal(ChannelDefinition calldata def, State calldata candidate) external nonReentrant {
        if (candidate.intent != StateIntent.INITIATE_ESCROW_WITHDRAWAL) revert IncorrectStateIntent();
        _requireValidDefinition(def);
        bytes32 channelId = _channelIdOf(def);
        _validateSignatures(channelId, candidate, def.user, def.approvedSignatureValidators);
        bytes32 escrowId = _escrowIdOf(channelId, candidate.version);

        if (_isChannelHomeChain(channelId)) {
            _processHomeChainEscrow(channelId, candidate);
            emit EscrowWithdrawalInitiatedOnHome(escrowId, channelId, candidate);
            return;
        }
        EscrowWithdrawalMeta storage meta = _escrowWithdrawals[escrowId];
        EscrowWithdrawalEngine.TransitionEffects memory effects = EscrowWithdrawalEngine.validateTransition(
            _withdrawalContext(meta, _nodeBalances[candidate.nonHomeLedger.token]), meta.initState, candidate
        );
        if (effects.updateInitState) {
            _record(meta, channelId, candidate, def.user, def.approvedSignatureValidators);
        }
        _applyEscrowWithdrawalEffects(meta, candidate.nonHomeLedger.token, effects);
        emit EscrowWithdrawalInitiated(escrowId, channelId, candidate);
    }

    /// @notice Dispute an initialized escrow withdrawal, signed by the challenger over the
    /// initiating state ‖ "challenge": frozen for a day, then returned to the node's vault by
    /// `finalizeEscrowWithdrawal` unless finalized first.
    function challengeEscrowWithdrawal(bytes32 escrowId, bytes calldata challengerSig, ParticipantIndex challengerIdx)
        external
        nonReentrant
    {
        EscrowWithdrawalMeta storage meta = _escrowWithdrawals[escrowId];
        bytes32 channelId = meta.channelId;
        if (channelId == bytes32(0)) revert NoChannelIdFoundForEscrow();
        // the record's status first, then the signature (the reference's order)
        EscrowWithdrawalEngine.TransitionEffects memory effects =
            EscrowWithdrawalEngine.validateChallenge(_withdrawalContext(meta, 0));
        _validateChallenger(
            channelId,
            _storedSigningData(meta.initState),
            challengerSig,
            challengerIdx,
            meta.user,
            meta.approvedSignatureValidators
        );
        _applyEscrowWithdrawalEffects(meta, meta.initState.nonHomeLedger.token, effects);
        emit EscrowWithdrawalChallenged(escrowId, meta.initState, effects.newChallengeExpiry);
    }

    /// @notice A FINALIZE_ESCROW_WITHDRAWAL state: on the home chain it debits the user in the
    /// home channel (to the node's vault); on the non-home chain it pays the record's lock to
    /// the user. A non-home record whose dispute has expired is instead returned to the node's
    /// vault, whatever `candidate` is.
    function finalizeEscrowWithdrawal(bytes32 channelId, bytes32 escrowId, State calldata candidate)
        external
        nonReentrant
    {
        EscrowWithdrawalMeta storage meta = _escrowWithdrawals[escrowId];
        if (meta.channelId == bytes32(0) && _isChannelHomeChain(channelId)) {
            if (candidate.intent != StateIntent.FINALIZE_ESCROW_WITHDRAWAL) revert IncorrectStateIntent();
            _validateHomeSignatures(channelId, candidate);
            _processHomeChainEscrow(channelId, candidate);
            emit EscrowWithdrawalFinalizedOnHome(escrowId, channelId, candidate);
            return;
        }
        if (meta.channelId != channelId) revert IncorrectChannelId();
        address user = meta.user;
        if (meta.status == EscrowStatus.DISPUTED && meta.challengeExpireAt < block.timestamp) {
            meta.status = EscrowStatus.FINALIZED;
            uint256 amount = meta.lockedAmount;
            meta.lockedAmount = 0;
            meta.challengeExpireAt = 0;
            // the withdrawal was never debited on the home chain: the node's lock is its own
            address token = meta.initState.nonHomeLedger.token;
            uint256 balance = _nodeBalances[token] + amount;
            _nodeBalances[token] = balance;
            emit NodeBalanceUpdated(token, balance);
            _purgeEscrowDeposits(MAX_DEPOSIT_ESCROW_STEPS);
            emit EscrowWithdrawalFinalized(escrowId, channelId, meta.initState);
            return;
        }
        if (candidate.intent != StateIntent.FINALIZE_ESCROW_WITHDRAWAL) revert IncorrectStateIntent();
        _validateSignatures(channelId, candidate, user, meta.approvedSignatureValidators);
        EscrowWithdrawalEngine.TransitionEffects memory effects =
            EscrowWithdrawalEngine.validateTransition(_withdrawalContext(meta, 0), meta.initState, candidate);
        _applyEscrowWithdrawalEffects(meta, meta.initState.nonHomeLedger.token, effects);
        emit EscrowWithdrawalFinalized(escrowId, channelId, candidate);
    }

    // ----------------------------------------------------------------------------------------
    // migration
    // ----------------------------------------------------------------------------------------

    /// @notice An INITIATE_MIGRATION state, whose home ledger is the old home chain and whose
    /// non-home ledger the new one. On the old home chain (where this hub holds the channel)
    /// it advances the channel like a checkpoint; on the new home chain it creates the channel
    /// as MIGRATING_IN (or revives a channel that migrated away from here), the node locking
    /// from its vault what the user holds on the old home. Either chain may come first.
    function initiateMigration(ChannelDefinition calldata def, State calldata candidate) external nonReentrant {
        if (candidate.intent != StateIntent.INITIATE_MIGRATION) revert IncorrectStateIntent();
        bytes32 channelId = _channelIdOf(def);
        address user = def.user;
        _validateSignatures(channelId, candidate, user, def.approvedSignatureValidators);

        bool isHomeChain = _isChannelHomeChain(channelId);
        State memory target = candidate;
        if (!isHomeChain) {
            _requireValidDefinition(def);
            // the engine reads `homeLedger` as this chain: swap, and drop the signatures that
            // no longer match the swapped bytes (they were checked above)
            target = _swapped(candidate);
            ChannelMeta storage meta = _channels[channelId];
            if (meta.status == ChannelStatus.VOID) meta.definition = def;
            _userChannels[user].add(channelId);
        }
        ChannelEngine.TransitionEffects memory effects =
            ChannelEngine.validateTransition(_context(channelId, target.homeLedger.token), target);
        _applyEffects(channelId, user, target, effects);

        if (isHomeChain) emit MigrationOutInitiated(channelId, candidate);
        else emit MigrationInInitiated(channelId, candidate);
    }

    /// @notice A FINALIZE_MIGRATION state (home ledger: the new home chain). On the new home
    /// chain it turns the MIGRATING_IN channel into an OPERATING one holding the user's funds;
    /// on the old home chain (the state's non-home ledger) the channel's funds go back to the
    /// node's vault and it is MIGRATED_OUT, leaving the user's open channels.
    function finalizeMigration(bytes32 channelId, State calldata candidate) external nonReentrant {
        if (candidate.intent != StateIntent.FINALIZE_MIGRATION) revert IncorrectStateIntent();
        ChannelDefinition storage def = _channels[channelId].definition;
        address user = def.user;
        _validateSignatures(channelId, candidate, user, def.approvedSignatureValidators);

        // the channel exists on both chains, so the side is the state's, not this hub's
        bool isOldHomeChain = candidate.nonHomeLedger.chainId == block.chainid;
        State memory target = candidate;
        if (isOldHomeChain) {
            target = _swapped(candidate);
            _userChannels[user].remove(channelId);
        }
        ChannelEngine.TransitionEffects memory effects =
            ChannelEngine.validateTransition(_context(channelId, target.homeLedger.token), target);
        _applyEffects(channelId, user, target, effects);

        if (isOldHomeChain) emit MigrationOutFinalized(channelId, candidate);
        else emit MigrationInFinalized(channelId, candidate);
    }

    /// @dev `state` with its two ledgers exchanged and no signatures (what the hub stores for a
    /// migration state arriving on the chain of its non-home ledger).
    function _swapped(State calldata state) private pure returns (State memory swapped) {
        swapped.version = state.version;
        swapped.intent = state.intent;
        swapped.metadata = state.metadata;
        swapped.homeLedger = state.nonHomeLedger;
        swapped.nonHomeLedger = state.homeLedger;
    }

    /// @notice Release unlocked escrow deposits to the node's vault, inspecting at most
    /// `maxSteps` queue entries from the head. Anyone may call it; every state the hub accepts
    /// also runs it with `MAX_DEPOSIT_ESCROW_STEPS`.
    function purgeEscrowDeposits(uint256 maxSteps) external nonReentrant {
        _purgeEscrowDeposits(maxSteps);
    }

    // ----------------------------------------------------------------------------------------
    // internals: escrow
    // ----------------------------------------------------------------------------------------

    /// @dev keccak256(abi.encode(homeChannelId, uint64 version of the initiating state)) (§7.5)
    function _escrowIdOf(bytes32 channelId, uint64 version) private pure returns (bytes32) {
        return keccak256(abi.encode(channelId, version));
    }

    /// @dev This hub holds the channel (not VOID, not migrated away) with its home ledger on
    /// this chain (a MIGRATING_IN channel's stored home ledger is this chain's).
    function _isChannelHomeChain(bytes32 channelId) private view returns (bool) {
        ChannelMeta storage meta = _channels[channelId];
        ChannelStatus status = meta.status;
        if (status == ChannelStatus.VOID || status == ChannelStatus.MIGRATED_OUT) return false;
        return meta.lastState.homeLedger.chainId == block.chainid;
    }

    /// @dev The home side of an escrow: the home channel's own transition rules and effects.
    function _processHomeChainEscrow(bytes32 channelId, State calldata candidate) private {
        address user = _channels[channelId].definition.user;
        ChannelEngine.TransitionEffects memory effects =
            ChannelEngine.validateTransition(_context(channelId, candidate.homeLedger.token), candidate);
        _applyEffects(channelId, user, candidate, effects);
    }

    function _validateHomeSignatures(bytes32 channelId, State calldata candidate) private view {
        ChannelDefinition storage def = _channels[channelId].definition;
        _validateSignatures(channelId, candidate, def.user, def.approvedSignatureValidators);
    }

    function _depositContext(EscrowDepositMeta storage meta)
        private
        view
        returns (EscrowDepositEngine.TransitionContext memory ctx)
    {
        ctx.status = meta.status;
        ctx.lockedAmount = meta.lockedAmount;
        ctx.unlockAt = meta.unlockAt;
        ctx.challengeExpiry = meta.challengeExpireAt;
    }

    function _withdrawalContext(EscrowWithdrawalMeta storage meta, uint256 nodeAvailableFunds)
        private
        view
        returns (EscrowWithdrawalEngine.TransitionContext memory ctx)
    {
        ctx.status = meta.status;
        ctx.lockedAmount = meta.lockedAmount;
        ctx.challengeExpiry = meta.challengeExpireAt;
        ctx.nodeAvailableFunds = nodeAvailableFunds;
    }

    /// @dev A new record from its initiating state (deposit or withdrawal alike).
    function _record(
        EscrowDepositMeta storage meta,
        bytes32 channelId,
        State calldata candidate,
        address user,
        uint256 approved
    ) private {
        meta.channelId = channelId;
        meta.initState = candidate;
        meta.user = user;
        meta.approvedSignatureValidators = approved;
    }

    function _record(
        EscrowWithdrawalMeta storage meta,
        bytes32 channelId,
        State calldata candidate,
        address user,
        uint256 approved
    ) private {
        meta.channelId = channelId;
        meta.initState = candidate;
        meta.user = user;
        meta.approvedSignatureValidators = approved;
    }

    /// @dev Record the engine's status and times, move `token` (the record's) and purge.
    function _applyEscrowDepositEffects(
        EscrowDepositMeta storage meta,
        address token,
        EscrowDepositEngine.TransitionEffects memory effects
    ) private {
        if (effects.newStatus != EscrowStatus.VOID) meta.status = effects.newStatus;
        if (effects.newUnlockAt > 0) meta.unlockAt = effects.newUnlockAt;
        meta.challengeExpireAt = effects.newChallengeExpiry;
        meta.lockedAmount =
            _moveEscrowFunds(meta.user, token, meta.lockedAmount, effects.userFundsDelta, effects.nodeFundsDelta);
        _purgeEscrowDeposits(MAX_DEPOSIT_ESCROW_STEPS);
    }

    /// @dev As `_applyEscrowDepositEffects`, for a withdrawal record (no unlock time).
    function _applyEscrowWithdrawalEffects(
        EscrowWithdrawalMeta storage meta,
        address token,
        EscrowWithdrawalEngine.TransitionEffects memory effects
    ) private {
        if (effects.newStatus != EscrowStatus.VOID) meta.status = effects.newStatus;
        meta.challengeExpireAt = effects.newChallengeExpiry;
        meta.lockedAmount =
            _moveEscrowFunds(meta.user, token, meta.lockedAmount, effects.userFundsDelta, effects.nodeFundsDelta);
        _purgeEscrowDeposits(MAX_DEPOSIT_ESCROW_STEPS);
    }

    /// @dev The user's side first (pull, or no value and a non-reverting push), then the
    /// vault's; returns the record's new locked amount.
    function _moveEscrowFunds(address user, address token, uint256 locked, int256 userDelta, int256 nodeDelta)
        private
        returns (uint256)
    {
        if (userDelta > 0) {
            uint256 amount = userDelta.toUint256();
            _pullFunds(user, token, amount);
            locked += amount;
        } else {
            if (msg.value != 0) revert IncorrectValue();
            if (userDelta < 0) {
                uint256 amount = (-userDelta).toUint256();
                _nonRevertingPushFunds(user, token, amount);
                locked -= amount;
            }
        }
        if (nodeDelta > 0) {
            uint256 amount = nodeDelta.toUint256();
            uint256 balance = _nodeBalances[token] - amount;
            _nodeBalances[token] = balance;
            locked += amount;
            emit NodeBalanceUpdated(token, balance);
        } else if (nodeDelta < 0) {
            uint256 amount = (-nodeDelta).toUint256();
            uint256 balance = _nodeBalances[token] + amount;
            _nodeBalances[token] = balance;
            locked -= amount;
            emit NodeBalanceUpdated(token, balance);
        }
        return locked;
    }

    /// @dev Walk the deposit queue from its head for at most `maxSteps` entries: finalized and
    /// disputed ones are passed over, unlocked ones go to the node's vault (one
    /// `NodeBalanceUpdated` each, then one `EscrowDepositsPurged`), the first still-locked one
    /// stops the walk. The head moves past everything walked.
    function _purgeEscrowDeposits(uint256 maxSteps) private {
        uint256 total = _escrowDepositIds.length;
        uint256 head = escrowHead;
        uint256 remaining = total > head ? total - head : 0;
        bytes32[] memory purged = new bytes32[](maxSteps < remaining ? maxSteps : remaining);
        uint256 count;
        for (uint256 steps; head < total && steps < maxSteps; steps++) {
            bytes32 escrowId = _escrowDepositIds[head];
            EscrowDepositMeta storage meta = _escrowDeposits[escrowId];
            if (!_isSkippable(meta.status)) {
                if (!_isUnlockable(meta)) break;
                address token = meta.initState.nonHomeLedger.token;
                uint256 balance = _nodeBalances[token] + meta.lockedAmount;
                _nodeBalances[token] = balance;
                meta.status = EscrowStatus.FINALIZED;
                meta.lockedAmount = 0;
                purged[count++] = escrowId;
                emit NodeBalanceUpdated(token, balance);
            }
            head++;
        }
        escrowHead = head;
        if (count != 0) {
            assembly ("memory-safe") {
                mstore(purged, count)
            }
            emit EscrowDepositsPurged(purged, count);
        }
    }

    function _isSkippable(EscrowStatus status) private pure returns (bool) {
        return status == EscrowStatus.FINALIZED || status == EscrowStatus.DISPUTED;
    }

    function _isUnlockable(EscrowDepositMeta storage meta) private view returns (bool) {
        return meta.unlockAt <= block.timestamp && meta.status == EscrowStatus.INITIALIZED;
    }

    // ----------------------------------------------------------------------------------------
    // internals: transitions
    // ----------------------------------------------------------------------------------------

    /// @dev deposit / withdraw / checkpoint: the intent, both signatures (an unknown channel has
    /// the zero user, which the validator refuses), then the engine.
    function _advance(bytes32 channelId, State calldata candidate, StateIntent intent) private {
        if (candidate.intent != intent) revert IncorrectStateIntent();
        ChannelDefinition storage def = _channels[channelId].definition;
        address user = def.user;
        _validateSignatures(channelId, candidate, user, def.approvedSignatureValidators);
        ChannelEngine.TransitionEffects memory effects =
            ChannelEngine.validateTransition(_context(channelId, candidate.homeLedger.token), candidate);
        _applyEffects(channelId, user, candidate, effects);
    }

    function _emitStateEvent(bytes32 channelId, State calldata state) private {
        if (state.intent == StateIntent.DEPOSIT) emit ChannelDeposited(channelId, state);
        else if (state.intent == StateIntent.WITHDRAW) emit ChannelWithdrawn(channelId, state);
        else emit ChannelCheckpointed(channelId, state);
    }

    function _context(bytes32 channelId, address token)
        private
        view
        returns (ChannelEngine.TransitionContext memory ctx)
    {
        ChannelMeta storage meta = _channels[channelId];
        Ledger storage home = meta.lastState.homeLedger;
        ctx.status = meta.status;
        ctx.hasPrevious = home.chainId != 0 || meta.lastState.nonHomeLedger.chainId != 0;
        ctx.prevVersion = meta.lastState.version;
        ctx.prevIntent = meta.lastState.intent;
        ctx.prevToken = home.token;
        ctx.prevUserNetFlow = home.userNetFlow;
        ctx.prevNodeNetFlow = home.nodeNetFlow;
        ctx.prevUserAllocation = home.userAllocation;
        ctx.prevNonHomeUserAllocation = meta.lastState.nonHomeLedger.userAllocation;
        ctx.prevNonHomeDecimals = meta.lastState.nonHomeLedger.decimals;
        ctx.lockedFunds = meta.lockedFunds;
        ctx.nodeAvailableFunds = _nodeBalances[token];
        ctx.challengeExpiry = meta.challengeExpireAt;
    }

    /// @dev Store the state, move the funds, then take the engine's status and expiry.
    function _applyEffects(
        bytes32 channelId,
        address user,
        State memory candidate,
        ChannelEngine.TransitionEffects memory effects
    ) private {
        _applyTransitionEffects(channelId, user, candidate, effects);
        ChannelMeta storage meta = _channels[channelId];
        meta.status = effects.newStatus;
        meta.challengeExpireAt = effects.newChallengeExpiry;
        if (effects.closeChannel) meta.lockedFunds = 0;
    }

    /// @dev Additions to the locked funds first (pull from the user, take from the vault), then
    /// releases (push to the user without reverting, return to the vault). msg.value is taken
    /// only as a native deposit's exact amount.
    function _applyTransitionEffects(
        bytes32 channelId,
        address user,
        State memory candidate,
        ChannelEngine.TransitionEffects memory effects
    ) private {
        ChannelMeta storage meta = _channels[channelId];
        address token = candidate.homeLedger.token;
        meta.lastState = candidate;

        if (effects.userFundsDelta > 0) {
            uint256 amount = effects.userFundsDelta.toUint256();
            _pullFunds(user, token, amount);
            meta.lockedFunds += amount;
        } else if (msg.value != 0) {
            revert IncorrectValue();
        }
        if (effects.nodeFundsDelta > 0) {
            uint256 amount = effects.nodeFundsDelta.toUint256();
            uint256 balance = _nodeBalances[token] - amount;
            _nodeBalances[token] = balance;
            meta.lockedFunds += amount;
            emit NodeBalanceUpdated(token, balance);
        }
        if (effects.userFundsDelta < 0) {
            uint256 amount = (-effects.userFundsDelta).toUint256();
            _nonRevertingPushFunds(user, token, amount);
            meta.lockedFunds -= amount;
        }
        if (effects.nodeFundsDelta < 0) {
            uint256 amount = (-effects.nodeFundsDelta).toUint256();
            uint256 balance = _nodeBalances[token] + amount;
            _nodeBalances[token] = balance;
            meta.lockedFunds -= amount;
            emit NodeBalanceUpdated(token, balance);
        }
        // every accepted state also releases unlocked escrow deposits to the node's vault
        _purgeEscrowDeposits(MAX_DEPOSIT_ESCROW_STEPS);
    }

    // ----------------------------------------------------------------------------------------
    // internals: definitions and signatures
    // ----------------------------------------------------------------------------------------

    /// @dev The id of `def`: keccak256(abi.encode(def)) with byte 0 replaced by VERSION (§7.4).
    function _channelIdOf(ChannelDefinition calldata def) private pure returns (bytes32) {
        bytes32 base = keccak256(abi.encode(def));
        return (base & ~bytes32(uint256(0xff) << 248)) | bytes32(uint256(VERSION) << 248);
    }

    function _requireValidDefinition(ChannelDefinition calldata def) private view {
        address user = def.user;
        if (user == address(0)) revert InvalidAddress();
        if (def.node != NODE) revert IncorrectNode();
        if (user == NODE) revert AddressCollision(user);
        if (def.challengeDuration < MIN_CHALLENGE_DURATION || def.challengeDuration > MAX_CHALLENGE_DURATION) {
            revert IncorrectChallengeDuration();
        }
    }

    /// @dev The bytes both participants sign, wrapped with the channel id by the validator:
    /// abi.encode(version, intent, metadata, homeLedger, nonHomeLedger) (§7.1).
    function _signingData(State calldata state) private pure returns (bytes memory) {
        return abi.encode(state.version, state.intent, state.metadata, state.homeLedger, state.nonHomeLedger);
    }

    /// @dev The signing data of a stored state (an escrow record's initiating state).
    function _storedSigningData(State storage state) private view returns (bytes memory) {
        return abi.encode(state.version, state.intent, state.metadata, state.homeLedger, state.nonHomeLedger);
    }

    /// @dev A challenger's signature over `signingData` ‖ "challenge" (the validator appends it).
    function _validateChallenger(
        bytes32 channelId,
        bytes memory signingData,
        bytes calldata challengerSig,
        ParticipantIndex challengerIdx,
        address user,
        uint256 approved
    ) private view {
        (ISignatureValidator validator, bytes calldata sigBody) = _extractValidator(challengerSig, approved);
        address challenger = challengerIdx == ParticipantIndex.USER ? user : NODE;
        if (validator.validateChallengeSignature(channelId, signingData, sigBody, challenger) == VALIDATION_FAILURE) {
            revert IncorrectSignature();
        }
    }

    /// @dev The user's signature, then the NODE's, each through the validator its first byte names.
    function _validateSignatures(bytes32 channelId, State calldata state, address user, uint256 approved)
        private
        view
    {
        bytes memory signingData = _signingData(state);
        (ISignatureValidator userValidator, bytes calldata userBody) = _extractValidator(state.userSig, approved);
        if (userValidator.validateSignature(channelId, signingData, userBody, user) == VALIDATION_FAILURE) {
            revert IncorrectSignature();
        }
        (ISignatureValidator nodeValidator, bytes calldata nodeBody) = _extractValidator(state.nodeSig, approved);
        if (nodeValidator.validateSignature(channelId, signingData, nodeBody, NODE) == VALIDATION_FAILURE) {
            revert IncorrectSignature();
        }
    }

    /// @dev Byte 0 selects the validator: 0 is the built-in one; any other id must be approved
    /// in the channel's bitmap, registered by the node and past its activation delay.
    function _extractValidator(bytes calldata signature, uint256 approved)
        private
        view
        returns (ISignatureValidator validator, bytes calldata body)
    {
        if (signature.length == 0) revert EmptySignature();
        uint8 validatorId = uint8(signature[0]);
        if (validatorId == DEFAULT_SIG_VALIDATOR_ID) {
            validator = DEFAULT_SIG_VALIDATOR;
        } else {
            if ((approved >> validatorId) & 1 != 1) revert ValidatorNotApproved();
            NodeValidator storage entry = _validatorRegistry[validatorId];
            if (address(entry.validator) == address(0)) revert ValidatorNotRegistered(validatorId);
            uint64 activatesAt = entry.registeredAt + VALIDATOR_ACTIVATION_DELAY;
            if (block.timestamp < activatesAt) revert ValidatorNotActive(validatorId, activatesAt);
            validator = entry.validator;
        }
        body = signature[1:];
    }

    /// @dev EIP-191 first, then the raw digest; a malformed signature reverts with
    /// OpenZeppelin's ECDSA error.
    function _signedBy(bytes memory message, bytes calldata signature, address signer) private pure returns (bool) {
        if (ECDSA.recover(MessageHashUtils.toEthSignedMessageHash(message), signature) == signer) return true;
        return ECDSA.recover(keccak256(message), signature) == signer;
    }

    // ----------------------------------------------------------------------------------------
    // internals: funds
    // ----------------------------------------------------------------------------------------

    /// @dev Native: exactly `amount` as msg.value; ERC-20: no value, `transferFrom`.
    function _pullFunds(address from, address token, uint256 amount) private {
        if (amount == 0) return;
        if (token == address(0)) {
            if (msg.value != amount) revert IncorrectValue();
        } else {
            if (msg.value != 0) revert IncorrectValue();
            IERC20(token).safeTransferFrom(from, address(this), amount);
        }
    }

    /// @dev A payout whose failure must revert (the caller chose the recipient).
    function _pushFunds(address to, address token, uint256 amount) private {
        if (amount == 0) return;
        if (token == address(0)) {
            (bool ok,) = to.call{value: amount}("");
            if (!ok) revert NativeTransferFailed(to, amount);
        } else {
            IERC20(token).safeTransfer(to, amount);
        }
    }

    /// @dev A channel payout: gas-capped and never reverting, so a recipient that cannot (or
    /// will not) receive cannot block the channel; what fails is kept for `claimFunds`.
    function _nonRevertingPushFunds(address to, address token, uint256 amount) private {
        if (amount == 0) return;
        bool ok;
        if (token == address(0)) {
            (ok,) = to.call{value: amount, gas: TRANSFER_GAS_LIMIT}("");
        } else {
            ok = _tryTransfer(token, to, amount);
        }
        if (!ok) {
            _reclaims[to][token] += amount;
            emit TransferFailed(to, token, amount);
        }
    }

    /// @dev ERC-20 `transfer` with capped gas and without copying the return data (a token
    /// returning megabytes cannot exhaust the caller): success is a call that did not revert
    /// and returned nothing from a contract, or a non-zero first word.
    function _tryTransfer(address token, address to, uint256 amount) private returns (bool) {
        bytes memory data = abi.encodeCall(IERC20.transfer, (to, amount));
        bool success;
        uint256 returned;
        uint256 firstWord;
        assembly ("memory-safe") {
            success := call(TRANSFER_GAS_LIMIT, token, 0, add(data, 0x20), mload(data), 0x00, 0x20)
            returned := returndatasize()
            firstWord := mload(0x00)
        }
        if (!success) return false;
        if (returned == 0) return token.code.length > 0;
        return returned >= 32 && firstWord != 0;
    }
}
