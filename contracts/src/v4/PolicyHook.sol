// SPDX-License-Identifier: MIT
pragma solidity ^0.8.26;

import {IHooks} from "@uniswap/v4-core/src/interfaces/IHooks.sol";
import {IPoolManager} from "@uniswap/v4-core/src/interfaces/IPoolManager.sol";
import {Hooks} from "@uniswap/v4-core/src/libraries/Hooks.sol";
import {PoolKey} from "@uniswap/v4-core/src/types/PoolKey.sol";
import {BalanceDelta} from "@uniswap/v4-core/src/types/BalanceDelta.sol";
import {BeforeSwapDelta, BeforeSwapDeltaLibrary} from "@uniswap/v4-core/src/types/BeforeSwapDelta.sol";
import {ModifyLiquidityParams, SwapParams} from "@uniswap/v4-core/src/types/PoolOperation.sol";

/// @title PolicyHook
/// @notice A Uniswap v4 hook that enforces a per-intent output policy in `beforeSwap`.
/// @dev ABI-compatible with the deployed JACKPolicyHook (same functions, events, errors and
///      reason constants) with one deliberate fix: the owner is a constructor argument. The
///      deployed hook took `msg.sender`, which under a CREATE2 factory is the factory, so no
///      policy could ever be set. Only `beforeSwap` is enabled; the constructor checks that the
///      address this contract was deployed at carries exactly that flag (low 14 bits 0x0080),
///      so a wrongly mined salt fails at deployment rather than at pool initialisation.
contract PolicyHook is IHooks {
    using Hooks for IHooks;

    bytes32 public constant REASON_OK = bytes32(0);
    bytes32 public constant REASON_POLICY_MISSING = keccak256("POLICY_MISSING");
    bytes32 public constant REASON_POLICY_EXPIRED = keccak256("POLICY_EXPIRED");
    bytes32 public constant REASON_SLIPPAGE_EXCEEDED = keccak256("SLIPPAGE_EXCEEDED");

    uint256 internal constant BPS_DENOMINATOR = 10_000;

    struct Policy {
        uint256 minAmountOut;
        uint256 referenceAmountOut;
        uint256 deadline;
        uint16 maxSlippageBps;
        address updater;
        bool exists;
    }

    IPoolManager public immutable poolManager;
    address public owner;
    mapping(bytes32 => Policy) public policies;

    event OwnershipTransferred(address indexed previousOwner, address indexed newOwner);
    event PolicyUpdated(
        bytes32 indexed intentId,
        uint256 minAmountOut,
        uint256 referenceAmountOut,
        uint16 maxSlippageBps,
        uint256 deadline,
        address indexed updater
    );
    event PolicyChecked(bytes32 indexed intentId, bool allowed, bytes32 reason);

    error Unauthorized();
    error InvalidSlippageBps(uint16 maxSlippageBps);
    error PolicyViolation(bytes32 intentId, bytes32 reason);
    /// @dev new: a hook callback other than beforeSwap was called (its flag is not set)
    error HookNotImplemented();
    /// @dev new: a hook callback was called by someone other than the PoolManager
    error NotPoolManager();
    /// @dev new: beforeSwap hookData is not abi.encode(bytes32 intentId, uint256 quotedAmountOut)
    error InvalidHookData();
    /// @dev new: the constructor's owner argument was the zero address
    error InvalidOwner();

    modifier onlyOwner() {
        if (msg.sender != owner) revert Unauthorized();
        _;
    }

    modifier onlyPoolManager() {
        if (msg.sender != address(poolManager)) revert NotPoolManager();
        _;
    }

    constructor(IPoolManager _poolManager, address _owner) {
        if (_owner == address(0)) revert InvalidOwner();
        poolManager = _poolManager;
        owner = _owner;
        emit OwnershipTransferred(address(0), _owner);
        Hooks.validateHookPermissions(IHooks(address(this)), getHookPermissions());
    }

    /// @notice The permissions this hook needs: beforeSwap only.
    function getHookPermissions() public pure returns (Hooks.Permissions memory permissions) {
        permissions.beforeSwap = true;
    }

    // --- administration -------------------------------------------------------------------

    function transferOwnership(address newOwner) external onlyOwner {
        if (newOwner == address(0)) revert Unauthorized();
        emit OwnershipTransferred(owner, newOwner);
        owner = newOwner;
    }

    function setPolicy(bytes32 intentId, uint256 minAmountOut, uint256 deadline, address updater)
        external
        onlyOwner
    {
        _store(intentId, minAmountOut, minAmountOut, 0, deadline, updater);
    }

    function setPolicyWithSlippage(
        bytes32 intentId,
        uint256 minAmountOut,
        uint256 referenceAmountOut,
        uint16 maxSlippageBps,
        uint256 deadline,
        address updater
    ) external onlyOwner {
        _store(intentId, minAmountOut, referenceAmountOut, maxSlippageBps, deadline, updater);
    }

    /// @notice Change the bounds of an existing policy; the owner or the policy's updater may.
    function updatePolicyBounds(
        bytes32 intentId,
        uint256 minAmountOut,
        uint256 referenceAmountOut,
        uint16 maxSlippageBps,
        uint256 deadline
    ) external {
        Policy storage p = policies[intentId];
        if (!p.exists) revert PolicyViolation(intentId, REASON_POLICY_MISSING);
        if (msg.sender != owner && msg.sender != p.updater) revert Unauthorized();
        _store(intentId, minAmountOut, referenceAmountOut, maxSlippageBps, deadline, p.updater);
    }

    function _store(
        bytes32 intentId,
        uint256 minAmountOut,
        uint256 referenceAmountOut,
        uint16 maxSlippageBps,
        uint256 deadline,
        address updater
    ) internal {
        if (maxSlippageBps > BPS_DENOMINATOR) revert InvalidSlippageBps(maxSlippageBps);
        policies[intentId] = Policy({
            minAmountOut: minAmountOut,
            referenceAmountOut: referenceAmountOut,
            deadline: deadline,
            maxSlippageBps: maxSlippageBps,
            updater: updater,
            exists: true
        });
        emit PolicyUpdated(intentId, minAmountOut, referenceAmountOut, maxSlippageBps, deadline, updater);
    }

    // --- the policy -----------------------------------------------------------------------

    /// @notice Whether `quotedAmountOut` satisfies the policy of `intentId`, and why not.
    /// @dev A deadline equal to the current block time is still valid. The bound is
    ///      max(minAmountOut, referenceAmountOut * (10000 - maxSlippageBps) / 10000).
    function checkPolicy(bytes32 intentId, uint256 quotedAmountOut) public view returns (bool, bytes32) {
        Policy storage p = policies[intentId];
        if (!p.exists) return (false, REASON_POLICY_MISSING);
        if (p.deadline < block.timestamp) return (false, REASON_POLICY_EXPIRED);
        uint256 slippageBound = (p.referenceAmountOut * (BPS_DENOMINATOR - p.maxSlippageBps)) / BPS_DENOMINATOR;
        uint256 effectiveMin = p.minAmountOut > slippageBound ? p.minAmountOut : slippageBound;
        if (quotedAmountOut < effectiveMin) return (false, REASON_SLIPPAGE_EXCEEDED);
        return (true, REASON_OK);
    }

    // --- IHooks ---------------------------------------------------------------------------

    function beforeSwap(address, PoolKey calldata, SwapParams calldata, bytes calldata hookData)
        external
        onlyPoolManager
        returns (bytes4, BeforeSwapDelta, uint24)
    {
        if (hookData.length != 64) revert InvalidHookData();
        (bytes32 intentId, uint256 quotedAmountOut) = abi.decode(hookData, (bytes32, uint256));
        (bool allowed, bytes32 reason) = checkPolicy(intentId, quotedAmountOut);
        emit PolicyChecked(intentId, allowed, reason);
        if (!allowed) revert PolicyViolation(intentId, reason);
        return (IHooks.beforeSwap.selector, BeforeSwapDeltaLibrary.ZERO_DELTA, 0);
    }

    function beforeInitialize(address, PoolKey calldata, uint160) external pure returns (bytes4) {
        revert HookNotImplemented();
    }

    function afterInitialize(address, PoolKey calldata, uint160, int24) external pure returns (bytes4) {
        revert HookNotImplemented();
    }

    function beforeAddLiquidity(address, PoolKey calldata, ModifyLiquidityParams calldata, bytes calldata)
        external
        pure
        returns (bytes4)
    {
        revert HookNotImplemented();
    }

    function afterAddLiquidity(
        address,
        PoolKey calldata,
        ModifyLiquidityParams calldata,
        BalanceDelta,
        BalanceDelta,
        bytes calldata
    ) external pure returns (bytes4, BalanceDelta) {
        revert HookNotImplemented();
    }

    function beforeRemoveLiquidity(address, PoolKey calldata, ModifyLiquidityParams calldata, bytes calldata)
        external
        pure
        returns (bytes4)
    {
        revert HookNotImplemented();
    }

    function afterRemoveLiquidity(
        address,
        PoolKey calldata,
        ModifyLiquidityParams calldata,
        BalanceDelta,
        BalanceDelta,
        bytes calldata
    ) external pure returns (bytes4, BalanceDelta) {
        revert HookNotImplemented();
    }

    function afterSwap(address, PoolKey calldata, SwapParams calldata, BalanceDelta, bytes calldata)
        external
        pure
        returns (bytes4, int128)
    {
        revert HookNotImplemented();
    }

    function beforeDonate(address, PoolKey calldata, uint256, uint256, bytes calldata)
        external
        pure
        returns (bytes4)
    {
        revert HookNotImplemented();
    }

    function afterDonate(address, PoolKey calldata, uint256, uint256, bytes calldata)
        external
        pure
        returns (bytes4)
    {
        revert HookNotImplemented();
    }
}
