// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Channel, State} from "../ChannelTypes.sol";

/// @title IChannel
/// @notice The channel lifecycle of the Nitrolite custody: events and entry points.
/// @dev Event and function signatures are ABI-identical to the deployed custody (selectors and
/// topics in custody-abi-selectors.txt).
interface IChannel {
    event Created(bytes32 indexed channelId, address indexed wallet, Channel channel, State initial);
    event Joined(bytes32 indexed channelId, uint256 index);
    event Opened(bytes32 indexed channelId);
    event Challenged(bytes32 indexed channelId, State state, uint256 expiration);
    event Checkpointed(bytes32 indexed channelId, State state);
    event Resized(bytes32 indexed channelId, int256[] deltaAllocations);
    event Closed(bytes32 indexed channelId, State finalState);

    function create(Channel calldata ch, State calldata initial) external returns (bytes32 channelId);

    function join(bytes32 channelId, uint256 index, bytes calldata sig) external returns (bytes32);

    function close(bytes32 channelId, State calldata candidate, State[] calldata proofs) external;

    function challenge(
        bytes32 channelId,
        State calldata candidate,
        State[] calldata proofs,
        bytes calldata challengerSig
    ) external;

    function checkpoint(bytes32 channelId, State calldata candidate, State[] calldata proofs) external;

    function resize(bytes32 channelId, State calldata candidate, State[] calldata proofs) external;
}
