// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {ECDSA} from "@openzeppelin/contracts/utils/cryptography/ECDSA.sol";
import {MessageHashUtils} from "@openzeppelin/contracts/utils/cryptography/MessageHashUtils.sol";

import {ISignatureValidator} from "./ISignatureValidator.sol";

/// @title ECDSAValidator
/// @notice Validator id 0: a plain 65-byte ECDSA signature by the participant's own key.
/// @dev The SDK signs the EIP-191 personal-message digest of the packed state (§7.1); a raw
/// keccak digest is accepted too, so a signer that cannot do personal_sign (an HSM, a
/// `sign_hash` API) can still co-sign. Both digests cover the channel id, so a signature
/// never transfers to another channel.
contract ECDSAValidator is ISignatureValidator {
    uint256 private constant VALIDATION_SUCCESS = 0;
    uint256 private constant VALIDATION_FAILURE = 1;
    bytes private constant CHALLENGE_SUFFIX = "challenge";

    /// @inheritdoc ISignatureValidator
    function validateSignature(
        bytes32 channelId,
        bytes calldata signingData,
        bytes calldata signature,
        address participant
    ) external pure returns (uint256) {
        return _validate(channelId, signingData, signature, participant);
    }

    /// @inheritdoc ISignatureValidator
    function validateChallengeSignature(
        bytes32 channelId,
        bytes calldata signingData,
        bytes calldata signature,
        address participant
    ) external pure returns (uint256) {
        // the suffix makes a challenge signature useless as an ordinary state signature
        return _validate(channelId, bytes.concat(signingData, CHALLENGE_SUFFIX), signature, participant);
    }

    function _validate(bytes32 channelId, bytes memory signingData, bytes calldata signature, address participant)
        private
        pure
        returns (uint256)
    {
        if (channelId == bytes32(0)) revert EmptyChannelId();
        if (participant == address(0)) revert InvalidSignerAddress();
        bytes memory message = abi.encode(channelId, signingData);
        // ECDSA.recover reverts on a malformed signature (wrong length, high s), which names
        // the problem better than a generic "incorrect signature" from the hub.
        if (ECDSA.recoverCalldata(MessageHashUtils.toEthSignedMessageHash(message), signature) == participant) {
            return VALIDATION_SUCCESS;
        }
        if (ECDSA.recoverCalldata(keccak256(message), signature) == participant) {
            return VALIDATION_SUCCESS;
        }
        return VALIDATION_FAILURE;
    }
}
