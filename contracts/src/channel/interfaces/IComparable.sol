// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {State} from "../ChannelTypes.sol";

/// @title IComparable
/// @notice Optional adjudicator extension: orders two states by recency.
interface IComparable {
    /// @return result -1 if `candidate` is older than `previous`, 0 if as recent, 1 if newer.
    function compare(State calldata candidate, State calldata previous) external view returns (int8 result);
}
