// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

/// @title ERC6492Deployer
/// @notice Makes the "deploy the signer first" call of an ERC-6492 signature on behalf of a
/// contract that holds funds. It holds nothing and is approved for nothing, so whatever call a
/// signature asks for runs with no authority: a token called from here moves only this
/// contract's (empty) balance.
contract ERC6492Deployer {
    function deploy(address factory, bytes calldata factoryCalldata) external returns (bool ok) {
        (ok,) = factory.call(factoryCalldata);
    }
}
