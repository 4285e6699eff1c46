// SPDX-License-Identifier: MIT
pragma solidity ^0.8.26;

import {EIP712} from "@openzeppelin/contracts/utils/cryptography/EIP712.sol";
import {SignatureChecker} from "@openzeppelin/contracts/utils/cryptography/SignatureChecker.sol";
import {ReentrancyGuardTransient} from "@openzeppelin/contracts/utils/ReentrancyGuardTransient.sol";
import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";

import {IPoolManager} from "@uniswap/v4-core/src/interfaces/IPoolManager.sol";
import {IUnlockCallback} from "@uniswap/v4-core/src/interfaces/callback/IUnlockCallback.sol";
import {PoolKey} from "@uniswap/v4-core/src/types/PoolKey.sol";
import {Currency} from "@uniswap/v4-core/src/types/Currency.sol";
import {BalanceDelta, BalanceDeltaLibrary} from "@uniswap/v4-core/src/types/BalanceDelta.sol";
import {SwapParams} from "@uniswap/v4-core/src/types/PoolOperation.sol";

/// @notice The two functions of the policy hook the adapter relies on.
interface IPolicyHook {
    function poolManager() external view returns (IPoolManager);
    function checkPolicy(bytes32 intentId, uint256 quotedAmountOut) external view returns (bool, bytes32);
}

/// @title SettlementAdapter
/// @notice Settles a user's EIP-712 signed intent by swapping in a v4 pool guarded by the
///         policy hook: the user's `amountIn` of `tokenIn` goes in, all of the output goes to
///         the user.
/// @dev ABI-compatible with the deployed JACKSettlementAdapter (same Intent type and struct,
///      same settleIntent/hashIntent/setAuthorizedSolver selectors, events and errors). Fixes:
///      - v4 delta signs: a negative delta is owed by us (sync, transferFrom the user, settle);
///        a positive delta is a credit (take it to the user). The deployed adapter had them
///        reversed, so no real swap could ever settle.
///      - replay protection (`settledIntents`, `IntentAlreadySettled`);
///      - the pool must be the policy hook's and trade exactly tokenIn -> tokenOut, the swap
///        must be exact input of `amountIn`, fully filled, and pay at least `minAmountOut`;
///      - native ETH is rejected; the owner is a constructor argument.
///      EIP-712 domain: name "SettlementAdapter", version "1" (the Sepolia adapter uses
///      "JACKSettlementAdapter"/"1"); clients read it through ERC-5267 `eip712Domain()`.
contract SettlementAdapter is EIP712, ReentrancyGuardTransient, IUnlockCallback {
    using SafeERC20 for IERC20;
    using BalanceDeltaLibrary for BalanceDelta;

    struct Intent {
        bytes32 id;
        address user;
        address tokenIn;
        address tokenOut;
        uint256 amountIn;
        uint256 minAmountOut;
        uint256 deadline;
        bytes signature;
    }

    struct SettlementData {
        Intent intent;
        PoolKey poolKey;
        SwapParams swapParams;
        uint256 quotedAmountOut;
        address solver;
    }

    bytes32 public constant INTENT_TYPEHASH = keccak256(
        "Intent(bytes32 id,address user,address tokenIn,address tokenOut,uint256 amountIn,uint256 minAmountOut,uint256 deadline)"
    );

    IPolicyHook public immutable policyHook;
    IPoolManager public immutable poolManager;
    address public owner;
    mapping(address => bool) public authorizedSolvers;
    /// @notice intents that have been settled (an intent settles at most once)
    mapping(bytes32 => bool) public settledIntents;

    event IntentSettled(bytes32 indexed intentId, address indexed solver);
    event OwnershipTransferred(address indexed previousOwner, address indexed newOwner);
    event SolverAuthorizationUpdated(address indexed solver, bool authorized);
    /// @notice new: what the settlement moved (emitted with IntentSettled)
    event IntentSwapped(
        bytes32 indexed intentId,
        address indexed user,
        address tokenIn,
        address tokenOut,
        uint256 amountIn,
        uint256 amountOut
    );

    error PolicyRejected(bytes32 intentId, bytes32 reason);
    error InvalidSignature();
    error UnauthorizedSolver(address caller);
    error UnauthorizedPoolManager(address caller);
    error IntentExpired(uint256 deadline, uint256 currentTime);
    error QuotedAmountOutTooLow(uint256 quotedAmountOut, uint256 minAmountOut);
    error Unauthorized();
    // new errors
    error IntentAlreadySettled(bytes32 intentId);
    error NativeEthNotSupported();
    error PoolMismatch(address currency0, address currency1, address hooks);
    error SwapDirectionMismatch(bool zeroForOne);
    error AmountMismatch(int256 amountSpecified, uint256 amountIn);
    error PartialFill(uint256 amountInUsed, uint256 amountIn);
    error InsufficientOutput(uint256 amountOut, uint256 minAmountOut);
    error InvalidOwner();

    modifier onlyOwner() {
        if (msg.sender != owner) revert Unauthorized();
        _;
    }

    modifier onlySolver() {
        if (msg.sender != owner && !authorizedSolvers[msg.sender]) revert UnauthorizedSolver(msg.sender);
        _;
    }

    constructor(address _policyHook, address _owner) EIP712("SettlementAdapter", "1") {
        if (_owner == address(0)) revert InvalidOwner();
        policyHook = IPolicyHook(_policyHook);
        poolManager = IPolicyHook(_policyHook).poolManager();
        owner = _owner;
        emit OwnershipTransferred(address(0), _owner);
    }

    // --- administration -------------------------------------------------------------------

    function transferOwnership(address newOwner) external onlyOwner {
        if (newOwner == address(0)) revert Unauthorized();
        emit OwnershipTransferred(owner, newOwner);
        owner = newOwner;
    }

    function setAuthorizedSolver(address solver, bool authorized) external onlyOwner {
        authorizedSolvers[solver] = authorized;
        emit SolverAuthorizationUpdated(solver, authorized);
    }

    // --- intents --------------------------------------------------------------------------

    /// @notice The EIP-712 digest the user signs (the `signature` field is not part of it).
    function hashIntent(Intent calldata intent) public view returns (bytes32) {
        return _hashTypedDataV4(
            keccak256(
                abi.encode(
                    INTENT_TYPEHASH,
                    intent.id,
                    intent.user,
                    intent.tokenIn,
                    intent.tokenOut,
                    intent.amountIn,
                    intent.minAmountOut,
                    intent.deadline
                )
            )
        );
    }

    /// @notice Settle `intent` by an exact-input swap in `poolKey`; only the owner or an
    ///         authorized solver may call. The user must have approved this adapter for
    ///         `amountIn` of `tokenIn`.
    function settleIntent(
        Intent calldata intent,
        PoolKey calldata poolKey,
        SwapParams calldata swapParams,
        uint256 quotedAmountOut
    ) external nonReentrant onlySolver {
        if (intent.deadline < block.timestamp) revert IntentExpired(intent.deadline, block.timestamp);
        if (settledIntents[intent.id]) revert IntentAlreadySettled(intent.id);
        _checkPoolAndSwap(intent, poolKey, swapParams);
        if (quotedAmountOut < intent.minAmountOut) {
            revert QuotedAmountOutTooLow(quotedAmountOut, intent.minAmountOut);
        }
        if (!SignatureChecker.isValidSignatureNow(intent.user, hashIntent(intent), intent.signature)) {
            revert InvalidSignature();
        }
        (bool allowed, bytes32 reason) = policyHook.checkPolicy(intent.id, quotedAmountOut);
        if (!allowed) revert PolicyRejected(intent.id, reason);

        settledIntents[intent.id] = true;
        bytes memory result = poolManager.unlock(
            abi.encode(
                SettlementData({
                    intent: intent,
                    poolKey: poolKey,
                    swapParams: swapParams,
                    quotedAmountOut: quotedAmountOut,
                    solver: msg.sender
                })
            )
        );
        (uint256 amountIn, uint256 amountOut) = abi.decode(result, (uint256, uint256));
        emit IntentSwapped(intent.id, intent.user, intent.tokenIn, intent.tokenOut, amountIn, amountOut);
        emit IntentSettled(intent.id, msg.sender);
    }

    function _checkPoolAndSwap(Intent calldata intent, PoolKey calldata key, SwapParams calldata params)
        internal
        view
    {
        if (intent.tokenIn == address(0) || intent.tokenOut == address(0)) revert NativeEthNotSupported();
        address c0 = Currency.unwrap(key.currency0);
        address c1 = Currency.unwrap(key.currency1);
        bool forward = c0 == intent.tokenIn && c1 == intent.tokenOut;
        bool backward = c0 == intent.tokenOut && c1 == intent.tokenIn;
        if (address(key.hooks) != address(policyHook) || !(forward || backward)) {
            revert PoolMismatch(c0, c1, address(key.hooks));
        }
        if (params.zeroForOne != forward) revert SwapDirectionMismatch(params.zeroForOne);
        if (intent.amountIn == 0 || intent.amountIn > uint256(uint128(type(int128).max))) {
            revert AmountMismatch(params.amountSpecified, intent.amountIn);
        }
        if (params.amountSpecified != -int256(intent.amountIn)) {
            revert AmountMismatch(params.amountSpecified, intent.amountIn);
        }
    }

    // --- inside the PoolManager lock ------------------------------------------------------

    /// @notice Swap, then settle what we owe and take what we are owed, for the user.
    /// @dev v4 sign convention: a negative delta is a debt of the caller, a positive one a credit.
    function unlockCallback(bytes calldata rawData) external returns (bytes memory) {
        if (msg.sender != address(poolManager)) revert UnauthorizedPoolManager(msg.sender);
        SettlementData memory data = abi.decode(rawData, (SettlementData));
        Intent memory intent = data.intent;

        BalanceDelta delta =
            poolManager.swap(data.poolKey, data.swapParams, abi.encode(intent.id, data.quotedAmountOut));
        int128 d0 = delta.amount0();
        int128 d1 = delta.amount1();
        (int128 dIn, int128 dOut) = data.swapParams.zeroForOne ? (d0, d1) : (d1, d0);
        uint256 paid = dIn < 0 ? uint256(uint128(-dIn)) : 0;
        uint256 received = dOut > 0 ? uint256(uint128(dOut)) : 0;
        if (paid != intent.amountIn) revert PartialFill(paid, intent.amountIn);
        if (received < intent.minAmountOut) revert InsufficientOutput(received, intent.minAmountOut);

        _settleDelta(data.poolKey.currency0, d0, intent.user);
        _settleDelta(data.poolKey.currency1, d1, intent.user);
        return abi.encode(paid, received);
    }

    function _settleDelta(Currency currency, int128 amount, address user) internal {
        if (amount < 0) {
            // owed to the PoolManager: sync, pay from the user's approved balance, settle
            poolManager.sync(currency);
            IERC20(Currency.unwrap(currency)).safeTransferFrom(
                user, address(poolManager), uint256(uint128(-amount))
            );
            poolManager.settle();
        } else if (amount > 0) {
            // credit: take it straight to the user
            poolManager.take(currency, user, uint256(uint128(amount)));
        }
    }
}
