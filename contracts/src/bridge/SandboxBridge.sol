// SPDX-License-Identifier: MIT
pragma solidity ^0.8.26;

import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";
import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";

/// @title SandboxBridge
/// @notice A lock-and-release token bridge for the local sandbox: one instance per chain per
///         bridge, all driven by the sandbox's relayer. On the source chain `startTransfer`
///         locks the sender's tokens and emits `TransferStarted`; the relayer waits for
///         `confirmations` blocks, then calls `release` on the destination chain's instance,
///         which pays the receiver from its liquidity the amount minus the fee. If the
///         release cannot happen (paused destination, too little liquidity, an unknown token,
///         an amount below the sender's minimum) the relayer calls `refund` on the source
///         instance and the whole locked amount goes back.
/// @dev Two economic knobs make bridges differ the way real ones do: `feeBps` is taken out of
///      the transferred amount (a fee LI.FI reports as `included: true`), `messagingFee` is
///      paid on top in the native coin as `msg.value` (`included: false`). Written for the
///      sandbox only: the relayer is trusted, nothing here is meant for a real network.
contract SandboxBridge is Ownable {
    using SafeERC20 for IERC20;

    enum DepositState {
        None,
        Pending,
        Refunded
    }

    struct Deposit {
        address refundTo;
        address token;
        uint256 amount;
        DepositState state;
    }

    /// @notice The tool key routes name this bridge by (e.g. "fastlane").
    string public name;
    address public relayer;
    /// @notice Fee taken out of the amount, in basis points.
    uint16 public feeBps;
    /// @notice Native coin paid on top of every transfer (wei), kept by the bridge.
    uint256 public messagingFee;
    /// @notice Source-chain blocks the relayer waits for before releasing.
    uint32 public confirmations;
    bool public paused;
    uint256 public transferCount;
    mapping(bytes32 => Deposit) public deposits;
    mapping(bytes32 => bool) public released;

    event TransferStarted(
        bytes32 indexed transferId,
        address indexed sender,
        address indexed receiver,
        address token,
        uint256 amount,
        uint256 fee,
        uint256 destinationChainId,
        address destinationToken,
        uint256 minAmountOut
    );
    event TransferReleased(
        bytes32 indexed transferId,
        uint256 indexed sourceChainId,
        address indexed receiver,
        address token,
        uint256 amount
    );
    event TransferRefunded(
        bytes32 indexed transferId, address indexed refundTo, address token, uint256 amount, string reason
    );
    event PausedSet(bool paused);

    error NotRelayer(address caller);
    error BridgePaused();
    error WrongMessagingFee(uint256 expected, uint256 received);
    error AmountTooSmall(uint256 amount, uint256 fee);
    error SameChain(uint256 chainId);
    error ZeroAddress();
    error AlreadyReleased(bytes32 transferId);
    error NotPending(bytes32 transferId);
    error BelowMinimum(uint256 amountOut, uint256 minAmountOut);
    error InsufficientLiquidity(uint256 available, uint256 needed);

    modifier onlyRelayer() {
        if (msg.sender != relayer) revert NotRelayer(msg.sender);
        _;
    }

    constructor(
        string memory name_,
        address owner_,
        address relayer_,
        uint16 feeBps_,
        uint256 messagingFee_,
        uint32 confirmations_
    ) Ownable(owner_) {
        if (relayer_ == address(0)) revert ZeroAddress();
        require(feeBps_ < 10_000, "fee");
        name = name_;
        relayer = relayer_;
        feeBps = feeBps_;
        messagingFee = messagingFee_;
        confirmations = confirmations_;
    }

    /// @notice The fee `startTransfer` takes out of `amount`.
    function feeFor(uint256 amount) public view returns (uint256) {
        return (amount * feeBps) / 10_000;
    }

    /// @notice Lock `amount` of `token` (pulled from the caller) for `receiver` on
    ///         `destinationChainId`; pay `messagingFee` as msg.value. `refundTo` gets the
    ///         tokens back if the transfer fails (a router passes the user here).
    function startTransfer(
        address token,
        uint256 amount,
        uint256 destinationChainId,
        address receiver,
        address destinationToken,
        uint256 minAmountOut,
        address refundTo
    ) external payable returns (bytes32 transferId) {
        if (paused) revert BridgePaused();
        if (msg.value != messagingFee) revert WrongMessagingFee(messagingFee, msg.value);
        if (destinationChainId == block.chainid) revert SameChain(destinationChainId);
        if (receiver == address(0) || token == address(0) || destinationToken == address(0)) {
            revert ZeroAddress();
        }
        uint256 fee = feeFor(amount);
        if (amount == 0 || fee >= amount) revert AmountTooSmall(amount, fee);
        address payer = refundTo == address(0) ? msg.sender : refundTo;
        IERC20(token).safeTransferFrom(msg.sender, address(this), amount);
        transferId = keccak256(abi.encode(block.chainid, address(this), ++transferCount));
        deposits[transferId] = Deposit(payer, token, amount, DepositState.Pending);
        emit TransferStarted(
            transferId, payer, receiver, token, amount, fee, destinationChainId, destinationToken, minAmountOut
        );
    }

    /// @notice Destination side: pay `amount` of `token` to `receiver` for `transferId`, once.
    function release(
        bytes32 transferId,
        uint256 sourceChainId,
        address token,
        address receiver,
        uint256 amount,
        uint256 minAmountOut
    ) external onlyRelayer {
        if (paused) revert BridgePaused();
        if (released[transferId]) revert AlreadyReleased(transferId);
        if (amount < minAmountOut) revert BelowMinimum(amount, minAmountOut);
        uint256 available = IERC20(token).balanceOf(address(this));
        if (available < amount) revert InsufficientLiquidity(available, amount);
        released[transferId] = true;
        IERC20(token).safeTransfer(receiver, amount);
        emit TransferReleased(transferId, sourceChainId, receiver, token, amount);
    }

    /// @notice Source side: give a pending transfer's whole locked amount back.
    function refund(bytes32 transferId, string calldata reason) external onlyRelayer {
        Deposit storage d = deposits[transferId];
        if (d.state != DepositState.Pending) revert NotPending(transferId);
        d.state = DepositState.Refunded;
        IERC20(d.token).safeTransfer(d.refundTo, d.amount);
        emit TransferRefunded(transferId, d.refundTo, d.token, d.amount, reason);
    }

    function setPaused(bool paused_) external onlyOwner {
        paused = paused_;
        emit PausedSet(paused_);
    }

    function setRelayer(address relayer_) external onlyOwner {
        if (relayer_ == address(0)) revert ZeroAddress();
        relayer = relayer_;
    }

    /// @notice The owner collects the messaging fees paid on top.
    function withdrawFees(address payable to) external onlyOwner {
        (bool ok,) = to.call{value: address(this).balance}("");
        require(ok, "withdraw");
    }
}
