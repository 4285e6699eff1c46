// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";
import {Ownable2Step} from "@openzeppelin/contracts/access/Ownable2Step.sol";
import {IERC5267} from "@openzeppelin/contracts/interfaces/IERC5267.sol";

import {Channel, State, StateIntent} from "./ChannelTypes.sol";
import {ChannelUtils} from "./ChannelUtils.sol";
import {IAdjudicator} from "./interfaces/IAdjudicator.sol";
import {IComparable} from "./interfaces/IComparable.sol";

/// @title SimpleConsensus
/// @notice Mutual-consent adjudicator: a state is valid when both participants signed it.
/// @dev ABI-compatible with the SimpleConsensus deployed next to the Sepolia custody
/// (0x7c7c...11F2): constructor `(owner, channelImpl)`, `adjudicate` (0x0c08cabc),
/// `getChannelImplDomainSeparator`, `channelImpl`, `setChannelImpl`, `owner` (Ownable2Step).
/// Signatures are checked under the channel implementation's (the custody's) EIP-712 domain,
/// read through ERC-5267 so the adjudicator follows whatever custody it is pointed at.
/// It holds no funds, so it makes ERC-6492 factory calls itself (deployer address(0)).
/// It also implements the optional IComparable (`compare`) by version, which gives the custody
/// exactly the ordering it falls back to without it.
contract SimpleConsensus is IAdjudicator, IComparable, Ownable2Step {
    bytes32 private constant DOMAIN_TYPEHASH =
        keccak256("EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)");

    /// @notice The custody whose EIP-712 domain signatures are checked against.
    IERC5267 public channelImpl;

    constructor(address owner, address channelImpl_) Ownable(owner) {
        channelImpl = IERC5267(channelImpl_);
    }

    /// @notice Valid iff there are no proofs and both participants signed `candidate`; version 0
    /// must be an INITIALIZE state, later versions must not be.
    function adjudicate(Channel calldata chan, State calldata candidate, State[] calldata proofs)
        external
        returns (bool valid)
    {
        if (proofs.length != 0) return false;
        bytes32 domainSeparator = getChannelImplDomainSeparator();
        if (candidate.version == 0) {
            return ChannelUtils.isValidInitialState(candidate, chan, domainSeparator, address(0));
        }
        return candidate.intent != StateIntent.INITIALIZE
            && ChannelUtils.verifyUnanimous(candidate, chan, domainSeparator, address(0));
    }

    /// @inheritdoc IComparable
    function compare(State calldata candidate, State calldata previous) external pure returns (int8 result) {
        if (candidate.version > previous.version) return 1;
        if (candidate.version < previous.version) return -1;
        return 0;
    }

    /// @notice The EIP-712 domain separator of `channelImpl` (ERC-5267), or a marker that disables
    /// EIP-712 signatures when it has none.
    function getChannelImplDomainSeparator() public view returns (bytes32) {
        if (address(channelImpl).code.length == 0) return ChannelUtils.NO_EIP712_SUPPORT;
        try channelImpl.eip712Domain() returns (
            bytes1, string memory name, string memory version, uint256 chainId, address verifyingContract, bytes32, uint256[] memory
        ) {
            return keccak256(
                abi.encode(DOMAIN_TYPEHASH, keccak256(bytes(name)), keccak256(bytes(version)), chainId, verifyingContract)
            );
        } catch {
            return ChannelUtils.NO_EIP712_SUPPORT;
        }
    }

    /// @notice Point the adjudicator at another custody (owner only).
    function setChannelImpl(address channelImpl_) external onlyOwner {
        channelImpl = IERC5267(channelImpl_);
    }
}
