// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {ECDSA} from "@openzeppelin/contracts/utils/cryptography/ECDSA.sol";
import {MessageHashUtils} from "@openzeppelin/contracts/utils/cryptography/MessageHashUtils.sol";
import {SignatureChecker} from "@openzeppelin/contracts/utils/cryptography/SignatureChecker.sol";

import {
    ALLOCATION_TYPEHASH, STATE_TYPEHASH, Allocation, Channel, State, StateIntent
} from "./ChannelTypes.sol";
import {ERC6492Deployer} from "./ERC6492Deployer.sol";

/// @title ChannelUtils
/// @notice Channel ids, packed states and the state-signature rules of the Nitrolite custody
/// (erc7824-nitrolite.md §1.2-§1.4), shared by the custody and the adjudicators.
/// @dev Signature acceptance order, per signature: ERC-6492 (wrapped, counterfactual wallet) ->
/// ERC-1271 (signer has code) -> EOA: raw ECDSA over keccak(packedState), EIP-191 over the packed
/// bytes, EIP-712 `AllowStateHash`. Malformed 65-byte signatures revert with OpenZeppelin's
/// ECDSA errors, as the deployed contract does.
library ChannelUtils {
    error ERC6492DeploymentFailed(address factory, bytes calldata_);
    error ERC6492NoCode(address expectedSigner);

    uint256 internal constant CLIENT = 0;
    uint256 internal constant SERVER = 1;

    /// @dev Used as the domain separator when the custody offers no EIP-712 domain: disables
    /// the EIP-712 path instead of failing.
    bytes32 internal constant NO_EIP712_SUPPORT = keccak256("NoEIP712Support");

    /// @dev ERC-6492: a wrapped signature ends with these 32 bytes.
    bytes32 internal constant ERC6492_DETECTION_SUFFIX =
        0x6492649264926492649264926492649264926492649264926492649264926492;

    /// @notice keccak256(abi.encode(participants, adjudicator, challenge, nonce, chainid)).
    function getChannelId(Channel memory ch) internal view returns (bytes32) {
        return keccak256(abi.encode(ch.participants, ch.adjudicator, ch.challenge, ch.nonce, block.chainid));
    }

    /// @notice The bytes every participant signs: the state without its signatures, bound to the
    /// channel id (and so to the chain).
    function getPackedState(bytes32 channelId, State memory state) internal pure returns (bytes memory) {
        return abi.encode(channelId, state.intent, state.version, state.data, state.allocations);
    }

    /// @notice Equality of two states including their signatures (what `challenge` compares).
    function statesAreEqual(State memory a, State memory b) internal pure returns (bool) {
        return keccak256(abi.encode(a)) == keccak256(abi.encode(b));
    }

    /// @notice EIP-712 struct hash of a state as the deployed Nitrolite custody computes it:
    /// `allocations` hashed as `keccak256(abi.encode(allocations))`.
    function legacyStructHash(bytes32 typeHash, bytes32 channelId, State memory state)
        internal
        pure
        returns (bytes32)
    {
        return keccak256(
            abi.encode(
                typeHash,
                channelId,
                state.intent,
                state.version,
                keccak256(state.data),
                keccak256(abi.encode(state.allocations))
            )
        );
    }

    /// @notice EIP-712 struct hash of a state as the EIP-712 standard (and eth_signTypedData_v4,
    /// viem, eth-account) encodes it: `Allocation[]` as the hash of the concatenated struct hashes.
    function standardStructHash(bytes32 typeHash, bytes32 channelId, State memory state)
        internal
        pure
        returns (bytes32)
    {
        Allocation[] memory allocs = state.allocations;
        bytes32[] memory hashes = new bytes32[](allocs.length);
        for (uint256 i = 0; i < allocs.length; i++) {
            hashes[i] =
                keccak256(abi.encode(ALLOCATION_TYPEHASH, allocs[i].destination, allocs[i].token, allocs[i].amount));
        }
        return keccak256(
            abi.encode(
                typeHash,
                channelId,
                state.intent,
                state.version,
                keccak256(state.data),
                keccak256(abi.encodePacked(hashes))
            )
        );
    }

    /// @notice True if `sig` over `message` recovers to `signer` as raw ECDSA, EIP-191, or
    /// EIP-712 of `state` under `typeHash` (both struct-hash encodings).
    /// @dev Accepting both EIP-712 encodings keeps signatures made for the deployed custody valid
    /// here and also accepts signatures from standard EIP-712 signers, which the deployed
    /// custody rejects (its `keccak256(abi.encode(allocations))` is not the EIP-712 array rule).
    function isSignedByEOA(
        bytes memory message,
        bytes32 typeHash,
        bytes32 channelId,
        State memory state,
        bytes32 domainSeparator,
        bytes memory sig,
        address signer
    ) internal pure returns (bool) {
        if (ECDSA.recover(keccak256(message), sig) == signer) return true;
        if (ECDSA.recover(MessageHashUtils.toEthSignedMessageHash(message), sig) == signer) return true;
        if (domainSeparator == NO_EIP712_SUPPORT) return false;
        bytes32 legacy = MessageHashUtils.toTypedDataHash(domainSeparator, legacyStructHash(typeHash, channelId, state));
        if (ECDSA.recover(legacy, sig) == signer) return true;
        bytes32 standard =
            MessageHashUtils.toTypedDataHash(domainSeparator, standardStructHash(typeHash, channelId, state));
        return ECDSA.recover(standard, sig) == signer;
    }

    /// @notice Verify one participant's signature of `state` (6492 -> 1271 -> EOA).
    /// @param deployer the ERC6492Deployer that makes ERC-6492 factory calls for a contract that
    /// holds funds; address(0) makes them directly (only for contracts holding nothing).
    function verifyStateSignature(
        State memory state,
        bytes32 channelId,
        bytes32 domainSeparator,
        bytes memory sig,
        address signer,
        address deployer
    ) internal returns (bool) {
        bytes memory packed = getPackedState(channelId, state);
        bytes32 stateHash = keccak256(packed);

        if (trailingBytes32(sig) == ERC6492_DETECTION_SUFFIX) {
            return isValidERC6492Signature(stateHash, sig, signer, deployer);
        }
        if (signer.code.length != 0) {
            return SignatureChecker.isValidERC1271SignatureNow(signer, stateHash, sig);
        }
        return isSignedByEOA(packed, STATE_TYPEHASH, channelId, state, domainSeparator, sig, signer);
    }

    /// @notice Both participants signed `state`, each at their own index.
    function verifyUnanimous(State memory state, Channel memory chan, bytes32 domainSeparator, address deployer)
        internal
        returns (bool)
    {
        if (state.sigs.length != 2 || chan.participants.length != 2) return false;
        bytes32 channelId = getChannelId(chan);
        return verifyStateSignature(
            state, channelId, domainSeparator, state.sigs[CLIENT], chan.participants[CLIENT], deployer
        ) && verifyStateSignature(state, channelId, domainSeparator, state.sigs[SERVER], chan.participants[SERVER], deployer);
    }

    /// @notice ERC-6492: `sig` is `abi.encode(factory, factoryCalldata, innerSig) ++ suffix`. If the
    /// signer is not deployed yet, deploy it through the factory, then check ERC-1271.
    /// @dev FIX: the deployed custody makes the factory call itself, so the signature chooses an
    /// arbitrary call made *by the custody*, which holds every deposit: with a token that calls
    /// back on transfer (ERC-1363, ERC-777) "factory = token, calldata = transferAndCall(thief,
    /// ...)" pays out the custody's tokens and the callback deploys the signer in time for the
    /// check. Here a contract that holds funds passes a fund-less ERC6492Deployer that makes the
    /// call instead.
    function isValidERC6492Signature(bytes32 digest, bytes memory sig, address signer, address deployer)
        internal
        returns (bool)
    {
        (address factory, bytes memory factoryCalldata, bytes memory innerSig) =
            abi.decode(sig, (address, bytes, bytes));
        if (signer.code.length == 0) {
            bool ok;
            if (deployer == address(0)) {
                (ok,) = factory.call(factoryCalldata);
            } else {
                ok = ERC6492Deployer(deployer).deploy(factory, factoryCalldata);
            }
            if (!ok) revert ERC6492DeploymentFailed(factory, factoryCalldata);
            if (signer.code.length == 0) revert ERC6492NoCode(signer);
        }
        return SignatureChecker.isValidERC1271SignatureNow(signer, digest, innerSig);
    }

    /// @notice The last 32 bytes of `data` (zero if shorter).
    function trailingBytes32(bytes memory data) internal pure returns (bytes32 result) {
        if (data.length < 32) return bytes32(0);
        assembly ("memory-safe") {
            result := mload(add(data, mload(data)))
        }
    }

    /// @notice A fully signed, well-formed initial state (version 0, INITIALIZE).
    function isValidInitialState(State memory state, Channel memory chan, bytes32 domainSeparator, address deployer)
        internal
        returns (bool)
    {
        return state.version == 0 && state.intent == StateIntent.INITIALIZE
            && verifyUnanimous(state, chan, domainSeparator, deployer);
    }
}
