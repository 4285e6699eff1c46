// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {IERC20Metadata} from "@openzeppelin/contracts/token/ERC20/extensions/IERC20Metadata.sol";

import {Ledger} from "./ChannelHubTypes.sol";

/// @title LedgerMath
/// @notice What the channel and escrow engines share about one ledger: its declared decimals
/// (checked against the token when the ledger is on this chain) and amounts compared across
/// ledgers of different decimals, scaled to 18 decimals first (Nitrolite v1.4.1 compares a
/// home amount with a non-home one in the same "wad" unit).
library LedgerMath {
    /// @notice The most decimals a ledger may declare.
    uint8 internal constant MAX_DECIMALS = 18;
    uint8 private constant NATIVE_DECIMALS = 18;

    error DecimalsExceedMaxPrecision();
    error DecimalsMismatch();
    error FailedToFetchDecimals();

    /// @notice The declared decimals must be representable and, on this chain, the token's own
    /// (18 for the native coin, `address(0)`).
    function validateDecimals(Ledger memory ledger) internal view {
        uint8 declared = ledger.decimals;
        if (declared > MAX_DECIMALS) revert DecimalsExceedMaxPrecision();
        if (ledger.chainId != block.chainid) return;
        if (ledger.token == address(0)) {
            if (declared != NATIVE_DECIMALS) revert DecimalsMismatch();
            return;
        }
        try IERC20Metadata(ledger.token).decimals() returns (uint8 actual) {
            if (declared != actual) revert DecimalsMismatch();
        } catch {
            revert FailedToFetchDecimals();
        }
    }

    /// @notice `amount` of a `decimals`-decimal token in 18-decimal units.
    function toWad(uint256 amount, uint8 decimals) internal pure returns (uint256) {
        if (decimals > MAX_DECIMALS) revert DecimalsExceedMaxPrecision();
        return amount * 10 ** (MAX_DECIMALS - decimals);
    }

    /// @notice The signed form of `toWad`, for net flows.
    function toWad(int256 amount, uint8 decimals) internal pure returns (int256) {
        if (decimals > MAX_DECIMALS) revert DecimalsExceedMaxPrecision();
        return amount * int256(10 ** (MAX_DECIMALS - decimals));
    }
}
