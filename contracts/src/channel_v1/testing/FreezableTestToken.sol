// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";

/// @title FreezableTestToken
/// @notice Test-only 6-decimal ERC-20 whose transfers to a frozen address revert, as a
/// stablecoin's blacklist does. It makes a ChannelHub payout fail on purpose, to show that a
/// failed payout becomes a reclaim balance (`getReclaimBalance`, `claimFunds`) instead of
/// blocking the channel.
contract FreezableTestToken is ERC20 {
    error RecipientFrozen(address recipient);

    mapping(address account => bool) public frozen;

    constructor() ERC20("Freezable Test Token", "FRZ") {}

    function decimals() public pure override returns (uint8) {
        return 6;
    }

    function mint(address to, uint256 amount) external {
        _mint(to, amount);
    }

    function setFrozen(address account, bool value) external {
        frozen[account] = value;
    }

    function _update(address from, address to, uint256 value) internal override {
        if (to != address(0) && frozen[to]) revert RecipientFrozen(to);
        super._update(from, to, value);
    }
}
