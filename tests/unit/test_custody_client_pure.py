"""CustodyClient and its event decoder without a chain: decoding synthetic logs, and bad input
refused before anything is sent."""

from __future__ import annotations

import pytest
from eth_abi import encode
from eth_utils import keccak

from settlement_widgets.channel.v0_5.chain.custody import CustodyClient, CustodyTx
from settlement_widgets.channel.v0_5.chain.custody_events import (
    EVENT_NAMES,
    Created,
    Deposited,
    EventDecoder,
    Resized,
)
from settlement_widgets.channel.v0_5.core.types import Allocation, Channel, State, StateIntent
from settlement_widgets.contracts import load_artifact
from settlement_widgets.errors import (
    InvalidAddressError,
    InvalidAmountError,
    InvalidStateError,
    UnknownOptionError,
)
from settlement_widgets.networks import SEPOLIA
from settlement_widgets.wallet import WalletClient

CUSTODY = SEPOLIA.contracts.custody
USER = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"
BROKER = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"
assert SEPOLIA.token is not None
TOKEN: str = SEPOLIA.token
CID = "0x" + "9b" * 32
STATE_T = "(uint8,uint256,bytes,(address,address,uint256)[],bytes[])"


def _log(topics: list[bytes], data: bytes, *, address: str = CUSTODY, index: int = 0) -> dict:
    return {
        "address": address,
        "topics": topics,
        "data": data,
        "blockNumber": 7,
        "logIndex": index,
        "transactionHash": b"\x01" * 32,
    }


def _decoder() -> EventDecoder:
    return EventDecoder(load_artifact("Custody").abi, CUSTODY.lower())


def test_decodes_created_with_protocol_types() -> None:
    channel = Channel((USER, BROKER), BROKER, 3600, 1_700_000_000_000)
    state = State(
        StateIntent.INITIALIZE,
        0,
        b"",
        (Allocation(USER, TOKEN, 5), Allocation(BROKER, TOKEN, 0)),
        ("0x" + "11" * 65,),
    )
    topic0 = keccak(
        text="Created(bytes32,address,(address[],address,uint64,uint64),"
        "(uint8,uint256,bytes,(address,address,uint256)[],bytes[]))"
    )
    data = encode(
        ["(address[],address,uint64,uint64)", STATE_T], [channel.to_abi(), state.to_abi()]
    )
    log = _log([topic0, bytes.fromhex(CID[2:]), bytes(12) + bytes.fromhex(USER[2:])], data, index=3)

    event = _decoder().decode_log(log)

    assert isinstance(event, Created)
    assert (event.channel_id, event.wallet, event.channel, event.initial) == (
        CID,
        USER,
        channel,
        state,
    )
    assert event.cursor == (7, 3) and event.tx_hash == "0x" + "01" * 32 and event.address == CUSTODY


def test_decodes_signed_deltas_and_skips_foreign_logs() -> None:
    topic0 = keccak(text="Resized(bytes32,int256[])")
    resized = _log([topic0, bytes.fromhex(CID[2:])], encode(["int256[]"], [[5, -5]]), index=1)
    deposited = _log(
        [
            keccak(text="Deposited(address,address,uint256)"),
            bytes(12) + bytes.fromhex(USER[2:]),
            bytes(12) + bytes.fromhex(TOKEN[2:]),
        ],
        encode(["uint256"], [9]),
        index=0,
    )
    foreign = _log([topic0, bytes.fromhex(CID[2:])], encode(["int256[]"], [[1, 1]]), address=TOKEN)
    transfer = _log([keccak(text="Transfer(address,address,uint256)")], b"")

    events = _decoder().decode_logs([resized, foreign, transfer, deposited])

    assert [type(e) for e in events] == [Deposited, Resized]  # ordered by log index
    assert events[1].delta_allocations == (5, -5)  # type: ignore[attr-defined]
    assert (events[0].wallet, events[0].token, events[0].amount) == (USER, TOKEN, 9)  # type: ignore[attr-defined]


def test_every_event_class_has_a_topic() -> None:
    decoder = _decoder()
    topics = {decoder.topic(name) for name in EVENT_NAMES}
    assert len(topics) == len(EVENT_NAMES) == 9
    with pytest.raises(UnknownOptionError):
        decoder.topic("Transfer")


def test_custody_tx_event_lookup() -> None:
    tx = CustodyTx(tx_hash="0x" + "00" * 32, block_number=1, gas_used=1, events=())
    with pytest.raises(InvalidStateError, match="emitted no Created"):
        tx.event("Created")
    with pytest.raises(UnknownOptionError):
        tx.event("Creatd")


async def test_bad_input_is_refused_before_anything_is_sent() -> None:
    # A wallet pointed at a dead port: any network use would fail differently.
    wallet = WalletClient("0x" + "01" * 32, rpc_url="http://127.0.0.1:1")
    client = CustodyClient(wallet, CUSTODY)
    with pytest.raises(InvalidAmountError):
        await client.deposit(TOKEN, -1)
    with pytest.raises(InvalidAmountError):
        await client.withdraw(TOKEN, True)  # type: ignore[arg-type]
    with pytest.raises(InvalidAddressError):
        await client.deposit("0x1234", 1)
    with pytest.raises(InvalidStateError):
        await client.close("0x1234", State(StateIntent.FINALIZE, 1, b"", ()))
    with pytest.raises(InvalidStateError):
        await client.create({"participants": []}, State(StateIntent.INITIALIZE, 0, b"", ()))  # type: ignore[arg-type]
    with pytest.raises(UnknownOptionError):
        await client.get_events(0, names=["Opend"])
    with pytest.raises(InvalidAddressError):
        CustodyClient(wallet, "0x0000000000000000000000000000000000000000")
    assert "CustodyClient(custody='0x019B" in repr(client) and "01" * 32 not in repr(client)
