// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

/// @title ISignatureValidator
/// @notice A pluggable check of one participant's signature over a channel state. The hub strips
/// the validator-id byte and hands the rest of the signature to the validator that id selects,
/// so new signature schemes (session keys, smart wallets) need no change to the hub.
/// @dev Return value: VALIDATION_SUCCESS (0) when `participant` signed, VALIDATION_FAILURE (1)
/// otherwise, in the style of ERC-4337 validation data. Malformed input may revert instead.
interface ISignatureValidator {
    /// @notice `channelId` was zero: a signature must be bound to a channel.
    error EmptyChannelId();
    /// @notice `participant` was the zero address, which ecrecover returns for garbage.
    error InvalidSignerAddress();

    /// @notice Did `participant` sign `abi.encode(channelId, signingData)`?
    function validateSignature(
        bytes32 channelId,
        bytes calldata signingData,
        bytes calldata signature,
        address participant
    ) external view returns (uint256);

    /// @notice As validateSignature, over `abi.encode(channelId, signingData ‖ "challenge")`.
    function validateChallengeSignature(
        bytes32 channelId,
        bytes calldata signingData,
        bytes calldata signature,
        address participant
    ) external view returns (uint256);
}
