// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";

interface ICallbackTestReceiver {
    function onTokenTransfer(address from, uint256 amount, bytes calldata data) external;
}

/// @title CallbackTestToken
/// @notice Test-only ERC-20 with an ERC-1363-style `transferAndCall` that calls the recipient
/// back; used to show that an ERC-6492 signature cannot make the custody pay out.
contract CallbackTestToken is ERC20 {
    constructor() ERC20("Callback Test Token", "CBT") {}

    function mint(address to, uint256 amount) external {
        _mint(to, amount);
    }

    function transferAndCall(address to, uint256 amount, bytes calldata data) external returns (bool) {
        _transfer(msg.sender, to, amount);
        ICallbackTestReceiver(to).onTokenTransfer(msg.sender, amount, data);
        return true;
    }
}

/// @title ERC6492Thief
/// @notice Test-only receiver: on the token callback it calls a wallet factory, so the signer an
/// ERC-6492 signature names exists by the time its signature is checked.
contract ERC6492Thief is ICallbackTestReceiver {
    function onTokenTransfer(address, uint256, bytes calldata data) external {
        (address factory, bytes memory factoryCalldata) = abi.decode(data, (address, bytes));
        (bool ok,) = factory.call(factoryCalldata);
        require(ok, "deploy failed");
    }
}
