// SPDX-License-Identifier: MIT
pragma solidity ^0.8.26;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";

import {IPoolManager} from "@uniswap/v4-core/src/interfaces/IPoolManager.sol";
import {IUnlockCallback} from "@uniswap/v4-core/src/interfaces/callback/IUnlockCallback.sol";
import {PoolKey} from "@uniswap/v4-core/src/types/PoolKey.sol";
import {Currency} from "@uniswap/v4-core/src/types/Currency.sol";
import {BalanceDelta, BalanceDeltaLibrary} from "@uniswap/v4-core/src/types/BalanceDelta.sol";
import {SwapParams} from "@uniswap/v4-core/src/types/PoolOperation.sol";
import {TickMath} from "@uniswap/v4-core/src/libraries/TickMath.sol";

import {SandboxBridge} from "./SandboxBridge.sol";

/// @title SandboxRouter
/// @notice The sandbox's counterpart of an aggregator's entry contract, on each chain:
///         - `swapAndBridge`: one transaction swaps in a Uniswap v4 pool and hands the output
///           to a bridge (a route's source swap step);
///         - `deliver`: the relayer's destination swap step: the bridge released tokens to
///           this router, which swaps them for the receiver, or, when the swap would pay less
///           than the sender's minimum (the price moved while bridging), hands over the
///           bridged tokens instead (LI.FI's PARTIAL outcome);
///         - `swapExactInput`: a plain swap;
///         - `quoteExactInput`: prices a swap by running it against the pool's real state and
///           reverting (the v4 quoter pattern); the route server calls it with eth_call.
/// @dev Exact-input swaps of ERC-20s only. Apart from what a bridge released for a delivery
///      still to come, everything the router receives in a transaction leaves it in the same
///      transaction.
contract SandboxRouter is IUnlockCallback {
    using SafeERC20 for IERC20;
    using BalanceDeltaLibrary for BalanceDelta;

    IPoolManager public immutable manager;
    /// @notice The bridges' relayer: the only caller of `deliver`.
    address public immutable relayer;
    mapping(bytes32 => bool) public delivered;

    error NotPoolManager();
    error NotRelayer(address caller);
    error NotSelf();
    error AlreadyDelivered(bytes32 transferId);
    error SlippageExceeded(uint256 amountOut, uint256 minAmountOut);
    error QuoteResult(uint256 amountOut);
    error NativeNotSupported();

    event SwappedAndBridged(
        address indexed sender, address tokenIn, uint256 amountIn, address tokenOut, uint256 amountOut, bytes32 transferId
    );
    event Delivered(bytes32 indexed transferId, address indexed receiver, address token, uint256 amount, bool swapped);

    constructor(IPoolManager manager_, address relayer_) {
        manager = manager_;
        relayer = relayer_;
    }

    /// @notice Swap `amountIn` (pulled from the caller) for at least `minAmountOut`, to `to`.
    function swapExactInput(PoolKey calldata key, bool zeroForOne, uint256 amountIn, uint256 minAmountOut, address to)
        external
        returns (uint256 amountOut)
    {
        (address tokenIn, address tokenOut) = _tokens(key, zeroForOne);
        IERC20(tokenIn).safeTransferFrom(msg.sender, address(this), amountIn);
        amountOut = abi.decode(manager.unlock(abi.encode(false, key, zeroForOne, amountIn)), (uint256));
        if (amountOut < minAmountOut) revert SlippageExceeded(amountOut, minAmountOut);
        IERC20(tokenOut).safeTransfer(to, amountOut);
    }

    /// @notice Destination swap of a bridged transfer (relayer only, once per transfer): swap
    ///         the `amountIn` the bridge released here for `receiver`, or give them the
    ///         bridged tokens when the swap would pay less than `minAmountOut`.
    function deliver(
        bytes32 transferId,
        PoolKey calldata key,
        bool zeroForOne,
        uint256 amountIn,
        uint256 minAmountOut,
        address receiver
    ) external {
        if (msg.sender != relayer) revert NotRelayer(msg.sender);
        if (delivered[transferId]) revert AlreadyDelivered(transferId);
        delivered[transferId] = true;
        (address tokenIn, address tokenOut) = _tokens(key, zeroForOne);
        try this.swapHeld(key, zeroForOne, amountIn, minAmountOut) returns (uint256 amountOut) {
            IERC20(tokenOut).safeTransfer(receiver, amountOut);
            emit Delivered(transferId, receiver, tokenOut, amountOut, true);
        } catch {
            IERC20(tokenIn).safeTransfer(receiver, amountIn);
            emit Delivered(transferId, receiver, tokenIn, amountIn, false);
        }
    }

    /// @notice Swap tokens the router already holds (only from `deliver`, so that a swap
    ///         paying too little reverts alone and the delivery falls back).
    function swapHeld(PoolKey calldata key, bool zeroForOne, uint256 amountIn, uint256 minAmountOut)
        external
        returns (uint256 amountOut)
    {
        if (msg.sender != address(this)) revert NotSelf();
        amountOut = abi.decode(manager.unlock(abi.encode(false, key, zeroForOne, amountIn)), (uint256));
        if (amountOut < minAmountOut) revert SlippageExceeded(amountOut, minAmountOut);
    }

    /// @notice Swap `amountIn` of the pool's input currency for the other one (at least
    ///         `minSwapOut`), then start a bridge transfer of all of it for `receiver`.
    function swapAndBridge(
        PoolKey calldata key,
        bool zeroForOne,
        uint256 amountIn,
        uint256 minSwapOut,
        address bridge,
        uint256 destinationChainId,
        address receiver,
        address destinationToken,
        uint256 minAmountOut
    ) external payable returns (bytes32 transferId, uint256 swapOut) {
        (address tokenIn, address tokenOut) = _tokens(key, zeroForOne);
        IERC20(tokenIn).safeTransferFrom(msg.sender, address(this), amountIn);
        swapOut = abi.decode(manager.unlock(abi.encode(false, key, zeroForOne, amountIn)), (uint256));
        if (swapOut < minSwapOut) revert SlippageExceeded(swapOut, minSwapOut);
        IERC20(tokenOut).forceApprove(bridge, swapOut);
        transferId = SandboxBridge(bridge).startTransfer{value: msg.value}(
            tokenOut, swapOut, destinationChainId, receiver, destinationToken, minAmountOut, msg.sender
        );
        emit SwappedAndBridged(msg.sender, tokenIn, amountIn, tokenOut, swapOut, transferId);
    }

    /// @notice What an exact-input swap of `amountIn` would pay now (state-changing and
    ///         reverting inside: call it with eth_call).
    function quoteExactInput(PoolKey calldata key, bool zeroForOne, uint256 amountIn)
        external
        returns (uint256 amountOut)
    {
        _tokens(key, zeroForOne);
        try manager.unlock(abi.encode(true, key, zeroForOne, amountIn)) {
            revert(); // unreachable: the quote path always reverts
        } catch (bytes memory reason) {
            if (reason.length != 36 || bytes4(reason) != QuoteResult.selector) {
                assembly {
                    revert(add(reason, 32), mload(reason))
                }
            }
            assembly {
                amountOut := mload(add(reason, 36))
            }
        }
    }

    function unlockCallback(bytes calldata data) external returns (bytes memory) {
        if (msg.sender != address(manager)) revert NotPoolManager();
        (bool quoteOnly, PoolKey memory key, bool zeroForOne, uint256 amountIn) =
            abi.decode(data, (bool, PoolKey, bool, uint256));
        BalanceDelta delta = manager.swap(
            key,
            SwapParams({
                zeroForOne: zeroForOne,
                amountSpecified: -int256(amountIn),
                sqrtPriceLimitX96: zeroForOne ? TickMath.MIN_SQRT_PRICE + 1 : TickMath.MAX_SQRT_PRICE - 1
            }),
            ""
        );
        int128 paid = zeroForOne ? delta.amount0() : delta.amount1();
        int128 got = zeroForOne ? delta.amount1() : delta.amount0();
        uint256 amountOut = uint256(uint128(got));
        if (quoteOnly) revert QuoteResult(amountOut);
        Currency currencyIn = zeroForOne ? key.currency0 : key.currency1;
        Currency currencyOut = zeroForOne ? key.currency1 : key.currency0;
        manager.sync(currencyIn);
        IERC20(Currency.unwrap(currencyIn)).safeTransfer(address(manager), uint256(uint128(-paid)));
        manager.settle();
        manager.take(currencyOut, address(this), amountOut);
        return abi.encode(amountOut);
    }

    function _tokens(PoolKey memory key, bool zeroForOne) private pure returns (address tokenIn, address tokenOut) {
        if (key.currency0.isAddressZero()) revert NativeNotSupported();
        tokenIn = Currency.unwrap(zeroForOne ? key.currency0 : key.currency1);
        tokenOut = Currency.unwrap(zeroForOne ? key.currency1 : key.currency0);
    }
}
