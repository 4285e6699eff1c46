"""``split_data_frames`` with ``at_frame_start`` (both relay ends' frame reading, issue 37)
against websockets' own parser: any byte stream, cut into reads anywhere, gives the same
messages in the same order, and whatever is not a plain complete data frame (control
frames, fragments, protocol errors, oversize frames) still gets websockets' handling."""

from __future__ import annotations

import itertools
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from websockets.frames import Frame, Opcode
from websockets.protocol import Protocol, Side, State

from settlement_widgets.ws_write import MessageJoiner, at_frame_start, split_data_frames

MASK = b"\x37\xfa\x21\x3d"


def _frame(opcode: int, payload: bytes, *, masked: bool, fin: bool = True, rsv: int = 0) -> bytes:
    head1 = (0x80 if fin else 0) | rsv | opcode
    length = len(payload)
    bit = 0x80 if masked else 0
    if length < 126:
        head = struct.pack("!BB", head1, bit | length)
    elif length < 65536:
        head = struct.pack("!BBH", head1, bit | 126, length)
    else:
        head = struct.pack("!BBQ", head1, bit | 127, length)
    if not masked:
        return head + payload
    body = bytes(b ^ MASK[i % 4] for i, b in enumerate(payload))
    return head + MASK + body


def _reader(side: Side) -> Protocol:
    """An open connection's reader: the side that receives (client frames are masked)."""
    return Protocol(side, max_size=70_000)


def _reference(stream: bytes, side: Side) -> list[tuple[str, bytes]]:
    proto = _reader(side)
    proto.receive_data(stream)
    return _events(proto)


def _events(proto: Protocol) -> list[tuple[str, bytes]]:
    out = []
    for event in proto.events_received():
        assert isinstance(event, Frame)
        out.append((event.opcode.name, bytes(event.data)))
    return out


def _split_reads(
    stream: bytes, cuts: list[int], side: Side
) -> tuple[list[tuple[str, bytes]], Protocol]:
    """What a connection using the fast path delivers, the reads cut at ``cuts``."""
    proto = _reader(side)
    delivered: list[tuple[str, bytes]] = []
    bounds = sorted({c % (len(stream) + 1) for c in cuts} | {0, len(stream)})
    for start, end in itertools.pairwise(bounds):
        data = stream[start:end]
        if at_frame_start(proto):
            payloads, used = split_data_frames(proto, data, masked=side is Side.SERVER)
            delivered += [("TEXT_OR_BINARY", p) for p in payloads]
            if used < len(data):
                proto.receive_data(data[used:])
        else:
            proto.receive_data(data)
        delivered += _events(proto)
    return delivered, proto


def _normalise(events: list[tuple[str, bytes]]) -> list[tuple[str, bytes]]:
    return [("TEXT_OR_BINARY" if k in ("TEXT", "BINARY") else k, p) for k, p in events]


payloads = st.binary(max_size=300) | st.sampled_from([b"x" * 125, b"y" * 126, b"z" * 65_536])
frames = st.lists(
    st.tuples(st.sampled_from(["text", "binary", "ping", "pong", "fragmented"]), payloads),
    max_size=8,
)


def _stream(items: list[tuple[str, bytes]], masked: bool) -> bytes:
    out = b""
    for kind, payload in items:
        if kind == "text":
            out += _frame(0x1, payload, masked=masked)
        elif kind == "binary":
            out += _frame(0x2, payload, masked=masked)
        elif kind == "ping":
            out += _frame(0x9, payload[:125], masked=masked)
        elif kind == "pong":
            out += _frame(0xA, payload[:125], masked=masked)
        else:
            half = len(payload) // 2
            out += _frame(0x1, payload[:half], masked=masked, fin=False)
            out += _frame(0x0, payload[half:], masked=masked)
    return out


@settings(max_examples=300, deadline=None)
@given(items=frames, cuts=st.lists(st.integers(0, 200_000), max_size=12), server=st.booleans())
def test_any_stream_cut_anywhere_gives_websockets_messages(
    items: list[tuple[str, bytes]], cuts: list[int], server: bool
) -> None:
    side = Side.SERVER if server else Side.CLIENT
    stream = _stream(items, masked=server)
    delivered, proto = _split_reads(stream, cuts, side)
    assert _normalise(delivered) == _normalise(_reference(stream, side))
    assert proto.state is State.OPEN and not proto.reader.buffer


@pytest.mark.parametrize(
    "bad",
    [
        _frame(0x1, b"rsv", masked=False, rsv=0x40),  # a reserved bit: protocol error
        _frame(0x1, b"masked", masked=True),  # a server frame must not be masked
        _frame(0x3, b"op", masked=False),  # an unknown opcode
        _frame(0x1, b"a" * 70_001, masked=False),  # over max_size
        _frame(0x0, b"cont", masked=False),  # a continuation with no message
        _frame(0x8, b"\x03\xe8bye", masked=False),  # close
    ],
)
def test_frames_that_are_not_plain_data_get_websockets_handling(bad: bytes) -> None:
    good = _frame(0x1, b'{"res":[1]}', masked=False)
    stream = good + bad + good
    reference = _reader(Side.CLIENT)
    reference.receive_data(stream)
    expected = _events(reference)
    delivered, proto = _split_reads(stream, [], Side.CLIENT)
    assert _normalise(delivered) == _normalise(expected)
    assert proto.state is reference.state
    assert type(proto.parser_exc) is type(reference.parser_exc)
    assert proto.close_sent == reference.close_sent  # the same close frame sent back (masked)
    assert [len(d) for d in proto.data_to_send()] == [len(d) for d in reference.data_to_send()]


def test_not_at_a_frame_start_mid_frame_mid_message_or_closed() -> None:
    proto = _reader(Side.CLIENT)
    assert at_frame_start(proto)
    frame = _frame(0x1, b"x" * 200, masked=False)
    for cut in (1, 2, 4, 100):  # inside the header, after it, after the length, in the payload
        proto = _reader(Side.CLIENT)
        proto.receive_data(frame[:cut])
        assert not at_frame_start(proto)
        proto.receive_data(frame[cut:])
        assert at_frame_start(proto) and _events(proto) == [("TEXT", b"x" * 200)]
    proto.receive_data(_frame(0x1, b"part", masked=False, fin=False))
    assert not at_frame_start(proto)  # a fragmented message is in progress
    proto = _reader(Side.CLIENT)
    proto.state = State.CLOSED
    assert not at_frame_start(proto)
    assert split_data_frames(_reader(Side.CLIENT), b"", masked=False) == ([], 0)
    assert Opcode.TEXT.value == 0x1


def test_the_message_joiner_joins_fragments_and_leaves_control_frames() -> None:
    """Both relay ends join websockets' data frames with MessageJoiner: whole frames pass,
    a fragmented message comes out once, at its FIN frame, and control frames are not its."""
    joiner = MessageJoiner()
    whole = Frame(Opcode.TEXT, b'{"res":[1]}')
    assert joiner.takes(whole) and joiner.join(whole) == b'{"res":[1]}'
    parts = [
        Frame(Opcode.TEXT, b"ab", fin=False),
        Frame(Opcode.CONT, b"cd", fin=False),
        Frame(Opcode.CONT, b"ef"),
    ]
    assert [joiner.join(p) for p in parts] == [None, None, b"abcdef"]
    assert joiner.join(Frame(Opcode.BINARY, b"\x00\x01")) == b"\x00\x01"  # nothing left over
    for control in (Opcode.PING, Opcode.PONG, Opcode.CLOSE):
        assert not joiner.takes(Frame(control, b""))
    assert not joiner.takes(b"not a frame")
