"""Replay the TS SDK's recorded request frames (``rpc_client_frames``) into the local node.

The vectors are a scripted session signed by fixed keys (user 0x01…01, peer 0x04…04, node
0x02…02). With the node key 0x02…02 and the vectors' asset table and chains, our node must
answer each request as the scripted node did: the node signatures are deterministic
(RFC 6979), so equal signatures mean equal packed states, and the states it returns from
``get_latest_state`` (including the receive and release states it issued itself) must equal
the scripted ones field for field. Frames whose scripted answer depends on facts our node
has differently (the on-chain status ``void`` of a channel, the ``unknown method`` answers of
a scripted node without those methods) are sent but their payloads are not compared.
"""

from __future__ import annotations

import json
from pathlib import Path

from nitronode_helpers import V1Client

from settlement_widgets.channel.v1.core.wire import decode_frame
from settlement_widgets.channel.v1.node import NitronodeConfig, NitronodeNode, NodeChain
from settlement_widgets.keys import PrivateKey

VECTORS = Path(__file__).parents[1] / "unit" / "data" / "nitrolite-v1-vectors.json"
#: scripted answers our node legitimately differs from (see the module docstring)
NOT_COMPARED = {
    "channels.v1.get_home_channel",
    "channels.v1.get_channels",
    "user.v1.get_transactions",
}


async def test_sdk_session_replays_against_the_node(tmp_path: Path) -> None:
    data = json.loads(VECTORS.read_text())
    meta = data["meta"]
    config = NitronodeConfig(
        db_path=tmp_path / "node.sqlite",
        node_key=PrivateKey(meta["keys"]["node"]["private_key"]),
        chains=tuple(
            NodeChain(
                int(c["id"]),
                meta["channel_hub_address_used"],
                c["name"],
                c["confirmation_delay_secs"],
            )
            for c in meta["chains"]
        ),
        assets=NitronodeConfig.assets_from_table(meta["asset_table"]),
        node_version="v1.4.1",
        # the replay sends 50+ requests at once on one connection: a real node's 10/s,
        # burst 20 would refuse most of them (limits: test_nitronode_rate_limits.py)
        rate_limit_burst=1_000_000,
    )
    compared = 0
    async with NitronodeNode(config) as node, V1Client(node.url) as client:
        for vector in data["vectors"]["rpc_client_frames"]:
            for exchange in vector["outputs"]["frames"]:
                request = exchange["request_frame"]
                expected = decode_frame(exchange["response_frame"])
                reply = decode_frame(await client.raw(request))
                assert reply.request_id == expected.request_id, vector["id"]
                assert reply.method == expected.method, vector["id"]
                if expected.method in NOT_COMPARED:
                    continue
                assert reply.type == expected.type, (vector["id"], reply.payload)
                assert reply.payload == expected.payload, (vector["id"], expected.method)
                compared += 1
    assert compared == 36  # every exchange but the NOT_COMPARED ones
