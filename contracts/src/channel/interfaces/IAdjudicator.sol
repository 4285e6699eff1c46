// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Channel, State} from "../ChannelTypes.sol";

/// @title IAdjudicator
/// @notice Decides whether a candidate state is valid for a channel, given supporting proofs.
/// @dev Not `view`: validating an ERC-6492 signature may deploy the signer's wallet.
interface IAdjudicator {
    function adjudicate(Channel calldata chan, State calldata candidate, State[] calldata proofs)
        external
        returns (bool valid);
}
