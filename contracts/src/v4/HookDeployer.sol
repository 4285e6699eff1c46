// SPDX-License-Identifier: MIT
pragma solidity ^0.8.26;

import {Create2} from "@openzeppelin/contracts/utils/Create2.sol";

/// @title HookDeployer
/// @notice A minimal CREATE2 factory: v4 reads a hook's permissions from the low 14 bits of
///         its address, so the hook is deployed at a salt mined off-chain for those bits.
/// @dev Like the deterministic-deployment proxy the Sepolia hook was deployed through, this
///      contract can only deploy; it can make no other call. A hook that took `msg.sender` as
///      its owner would be owned by this factory and could never be configured, which is why
///      PolicyHook takes its owner as a constructor argument.
contract HookDeployer {
    event Deployed(address indexed deployed, bytes32 indexed salt);

    /// @notice Deploy `initCode` (creation code + constructor args) at the CREATE2 address of `salt`.
    function deploy(bytes32 salt, bytes calldata initCode) external returns (address deployed) {
        deployed = Create2.deploy(0, salt, initCode);
        emit Deployed(deployed, salt);
    }

    /// @notice The address `deploy(salt, initCode)` would use, given keccak256(initCode).
    function computeAddress(bytes32 salt, bytes32 initCodeHash) external view returns (address) {
        return Create2.computeAddress(salt, initCodeHash);
    }
}
