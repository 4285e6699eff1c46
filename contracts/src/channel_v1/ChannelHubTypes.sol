// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

// The Nitrolite v1 on-chain types (nitrolite-v1.md §7.1, §7.4, §8). Field order and types are
// fixed by what users and the node sign and by the ChannelHub ABI: one change here changes
// every function selector and every signature, so they are declared once, at file level, for
// the hub and its validators.

/// @notice What the hub does with a state. The order is the protocol's intent numbering
/// (signed as uint8). This hub implements every intent, migration included.
enum StateIntent {
    OPERATE,
    CLOSE,
    DEPOSIT,
    WITHDRAW,
    INITIATE_ESCROW_DEPOSIT,
    FINALIZE_ESCROW_DEPOSIT,
    INITIATE_ESCROW_WITHDRAWAL,
    FINALIZE_ESCROW_WITHDRAWAL,
    INITIATE_MIGRATION,
    FINALIZE_MIGRATION
}

/// @notice Lifecycle of a channel, numbered as in Nitrolite v1.4.1 `interfaces/Types.sol`.
/// The first four are the node's `channel.status` (void, open, challenged, closed); a channel
/// is MIGRATING_IN on its new home chain between `initiateMigration` and `finalizeMigration`,
/// and MIGRATED_OUT on its old home chain once `finalizeMigration` ran there.
enum ChannelStatus {
    VOID,
    OPERATING,
    DISPUTED,
    CLOSED,
    MIGRATING_IN,
    MIGRATED_OUT
}

/// @notice Lifecycle of one cross-chain escrow record on its non-home chain (Nitrolite v1.4.1
/// `interfaces/Types.sol` numbering): created by an initiate state, disputed by a challenge,
/// finalized by the next state, a purge (deposits) or an expired dispute.
enum EscrowStatus {
    VOID,
    INITIALIZED,
    DISPUTED,
    FINALIZED
}

/// @notice Who signed a challenge (`challengeChannel`'s last argument). An enum, as in the
/// reference, so an index other than 0 or 1 is refused by the ABI decoder itself.
enum ParticipantIndex {
    USER,
    NODE
}

// Validator id 0: the hub's built-in ECDSA validator, always allowed; ids 1-255 are
// registered by the node (`registerNodeValidator`) and must be approved in the channel's bitmap.
uint8 constant DEFAULT_SIG_VALIDATOR_ID = 0;

/// @notice The immutable part of a channel; its hash (with byte 0 = hub VERSION) is the id.
struct ChannelDefinition {
    uint32 challengeDuration;
    address user;
    address node;
    uint64 nonce;
    uint256 approvedSignatureValidators;
    bytes32 metadata;
}

/// @notice One chain's view of a channel. Allocations are what each side may take out;
/// net flows are cumulative funds moved in (+) or out (-) since creation; the hub keeps
/// `userAllocation + nodeAllocation == userNetFlow + nodeNetFlow`.
struct Ledger {
    uint64 chainId;
    address token;
    uint8 decimals;
    uint256 userAllocation;
    int256 userNetFlow;
    uint256 nodeAllocation;
    int256 nodeNetFlow;
}

/// @notice A co-signed channel state. Both signatures start with a validator-id byte.
struct State {
    uint64 version;
    StateIntent intent;
    bytes32 metadata;
    Ledger homeLedger;
    Ledger nonHomeLedger;
    bytes userSig;
    bytes nodeSig;
}
