// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Channel, ChannelStatus, State} from "../ChannelTypes.sol";

/// @title IChannelReader
/// @notice Read access to the custody's ledgers and channels.
interface IChannelReader {
    function getAccountsBalances(address[] calldata accounts, address[] calldata tokens)
        external
        view
        returns (uint256[][] memory);

    function getOpenChannels(address[] calldata accounts) external view returns (bytes32[][] memory);

    function getChannelData(bytes32 channelId)
        external
        view
        returns (
            Channel memory channel,
            ChannelStatus status,
            address[] memory wallets,
            uint256 challengeExpiry,
            State memory lastValidState
        );

    function getChannelBalances(bytes32 channelId, address[] calldata tokens)
        external
        view
        returns (uint256[] memory balances);
}
