// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

/// @title IDeposit
/// @notice The custody ledger: per-account available balances that channels lock from.
interface IDeposit {
    event Deposited(address indexed wallet, address indexed token, uint256 amount);
    event Withdrawn(address indexed wallet, address indexed token, uint256 amount);

    function deposit(address account, address token, uint256 amount) external payable;

    function withdraw(address token, uint256 amount) external;
}
