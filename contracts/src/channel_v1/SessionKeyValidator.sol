// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {ECDSA} from "@openzeppelin/contracts/utils/cryptography/ECDSA.sol";
import {MessageHashUtils} from "@openzeppelin/contracts/utils/cryptography/MessageHashUtils.sol";

import {ISignatureValidator} from "./ISignatureValidator.sol";

/// @notice A participant's delegation to a session key: the key, a hash of what the
/// delegation is for (the node's `metadataHash`: user, version, assets, expiry) and the
/// participant's own ECDSA signature over `abi.encode(typehash, sessionKey, metadataHash)`.
struct SessionKeyAuthorization {
    address sessionKey;
    bytes32 metadataHash;
    bytes authSignature;
}

/// @title SessionKeyValidator
/// @notice Validator id 1 (once the node registers it on the hub): a state signed by a
/// session key the participant delegated to, as Nitrolite v1.4.1
/// `sigValidators/SessionKeyValidator.sol` checks it. The signature body (after the id byte)
/// is `abi.encode(SessionKeyAuthorization, bytes sessionKeySignature)`.
/// @dev Only the cryptography is checked here: the delegation's expiry and asset scope are
/// enforced off chain by the node, as in the reference. Both signatures may be EIP-191 (what
/// the SDK produces) or over the raw keccak digest. A session key cannot sign a challenge.
contract SessionKeyValidator is ISignatureValidator {
    uint256 private constant VALIDATION_SUCCESS = 0;
    uint256 private constant VALIDATION_FAILURE = 1;

    /// @notice Binds an authorization signature to this use, so an unrelated signature over
    /// `abi.encode(address, bytes32)` cannot pass for a delegation (since Nitrolite v1.3.0).
    bytes32 private constant SESSION_KEY_AUTH_TYPEHASH =
        keccak256("Nitrolite.SessionKey(address sessionKey,bytes32 metadataHash)");

    /// @notice Challenges must be signed by the participant's own key.
    error ChallengeWithSessionKeyNotSupported();

    /// @inheritdoc ISignatureValidator
    function validateSignature(
        bytes32 channelId,
        bytes calldata signingData,
        bytes calldata signature,
        address participant
    ) external pure returns (uint256) {
        if (channelId == bytes32(0)) revert EmptyChannelId();
        if (participant == address(0)) revert InvalidSignerAddress();
        (SessionKeyAuthorization memory authorization, bytes memory keySignature) =
            abi.decode(signature, (SessionKeyAuthorization, bytes));

        // the participant delegated to this key ...
        bytes memory delegation =
            abi.encode(SESSION_KEY_AUTH_TYPEHASH, authorization.sessionKey, authorization.metadataHash);
        if (!_signedBy(delegation, authorization.authSignature, participant)) return VALIDATION_FAILURE;
        // ... and the key signed this state of this channel
        if (!_signedBy(abi.encode(channelId, signingData), keySignature, authorization.sessionKey)) {
            return VALIDATION_FAILURE;
        }
        return VALIDATION_SUCCESS;
    }

    /// @inheritdoc ISignatureValidator
    function validateChallengeSignature(bytes32, bytes calldata, bytes calldata, address)
        external
        pure
        returns (uint256)
    {
        revert ChallengeWithSessionKeyNotSupported();
    }

    /// @dev EIP-191 first, then the raw digest; a malformed signature reverts (OpenZeppelin's
    /// ECDSA errors), which names the problem.
    function _signedBy(bytes memory message, bytes memory signature, address signer) private pure returns (bool) {
        if (ECDSA.recover(MessageHashUtils.toEthSignedMessageHash(message), signature) == signer) return true;
        return ECDSA.recover(keccak256(message), signature) == signer;
    }
}
