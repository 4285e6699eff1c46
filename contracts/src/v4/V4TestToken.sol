// SPDX-License-Identifier: MIT
pragma solidity ^0.8.26;

import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";

/// @title V4TestToken
/// @notice An 18-decimal ERC-20 with open minting, for the sandbox's v4 pool only.
/// @dev Anyone may mint: it exists so the local pool has two tokens to trade and tests can
///      fund users. Never deploy it anywhere that matters.
contract V4TestToken is ERC20 {
    constructor(string memory name_, string memory symbol_) ERC20(name_, symbol_) {}

    function mint(address to, uint256 amount) external {
        _mint(to, amount);
    }
}
