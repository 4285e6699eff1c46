// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

// ERC-7824 (Nitrolite v0.3-v0.5) on-chain types. Field order and types are part of the ABI: the
// selectors of every Custody function and event are computed from these tuples, so they must stay
// exactly as deployed on Sepolia (erc7824-nitrolite.md §1.1).

/// @notice What a state is for. INITIALIZE opens, RESIZE moves funds in/out, FINALIZE closes.
enum StateIntent {
    OPERATE,
    INITIALIZE,
    RESIZE,
    FINALIZE
}

/// @notice Status of a channel in the custody. FINAL is transient: the record is deleted in the
/// same transaction.
enum ChannelStatus {
    VOID,
    INITIAL,
    ACTIVE,
    DISPUTE,
    FINAL
}

/// @notice A share of the channel: `token == address(0)` means the native coin.
struct Allocation {
    address destination;
    address token;
    uint256 amount;
}

/// @notice The immutable channel definition; its hash (with the chain id) is the channel id.
struct Channel {
    address[] participants; // [client, server]
    address adjudicator;
    uint64 challenge; // challenge period in seconds
    uint64 nonce;
}

/// @notice A channel state. `sigs[i]` is participant i's signature over the packed state.
struct State {
    StateIntent intent;
    uint256 version;
    bytes data;
    Allocation[] allocations;
    bytes[] sigs;
}

/// @notice A token amount (internal bookkeeping).
struct Amount {
    address token;
    uint256 amount;
}

/// @dev EIP-712 type of a state signature ("AllowStateHash"); not exposed as a getter, as deployed.
bytes32 constant STATE_TYPEHASH = keccak256(
    "AllowStateHash(bytes32 channelId,uint8 intent,uint256 version,bytes data,Allocation[] allocations)Allocation(address destination,address token,uint256 amount)"
);

/// @dev EIP-712 type of a challenger signature.
bytes32 constant CHALLENGE_TYPEHASH = keccak256(
    "AllowChallengeStateHash(bytes32 channelId,uint8 intent,uint256 version,bytes data,Allocation[] allocations)Allocation(address destination,address token,uint256 amount)"
);

/// @dev EIP-712 type of one allocation, for the standard encoding of `Allocation[]`.
bytes32 constant ALLOCATION_TYPEHASH = keccak256("Allocation(address destination,address token,uint256 amount)");
