"""Channel nonces that never collide with a channel the chain, the node or the wallet knows.

A home channel's id is the hash of its definition, whose only free field is the nonce
(Nitrolite v1.4.1 ``ChannelHub.sol``: ``createChannel`` reverts for an id it has seen, in
any status). The SDK (``sdk/ts/src/utils.ts`` ``generateNonce``) takes the clock in
milliseconds × 10^6 plus a random number below 10^6, which makes a collision unlikely but
not impossible; a deterministic sandbox wants the same ids on every run instead. Counting
``getChannelIds`` does not work for that: the real hub drops a channel from it once it is
closed, so the count repeats a closed channel's nonce and the reopen reverts. Counting the
wallet's ``ChannelCreated`` events does (events are never removed). Whichever rule picks the
first candidate, :func:`free_channel_nonce` then skips every candidate whose id is taken.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING, Final

from ....errors import ChannelStateError
from ..core.client_calls import channel_nonce, now_ms
from ..core.ids import DEFAULT_CHALLENGE_DURATION, home_channel_id
from ..core.transitions import sig_validators_bitmap

if TYPE_CHECKING:
    from ..chain.hub import ChannelHubClient
    from .rpc_client import V1RpcClient

__all__ = ["NONCE_ATTEMPTS", "channels_created", "free_channel_nonce", "node_channel_ids"]

#: candidates tried before giving up (each refused one is an id already in use)
NONCE_ATTEMPTS: Final = 64
_PAGE: Final = 1000


async def channels_created(hub: ChannelHubClient, user: str) -> int:
    """How many channels ``user`` ever created on ``hub`` (its ``ChannelCreated`` events,
    ``user`` being an indexed topic of that event)."""
    events = await hub.contract.events.ChannelCreated.get_logs(
        argument_filters={"user": user}, from_block=0
    )
    return len(events)


async def node_channel_ids(client: V1RpcClient, user: str, asset: str) -> set[str]:
    """The ids of every channel the node has a record of for (user, asset), lower-case (the
    node refuses to co-sign a creation whose id it knows, even one never put on chain)."""
    known: set[str] = set()
    offset = 0
    while True:
        page = await client.get_channels(
            user, asset=asset, pagination={"offset": offset, "limit": _PAGE}
        )
        items = list(page.get("channels", ()))
        known.update(str(c["channel_id"]).lower() for c in items)
        offset += len(items)
        if not items or offset >= int(page.get("metadata", {}).get("total_count", 0)):
            return known


async def free_channel_nonce(
    hub: ChannelHubClient,
    client: V1RpcClient,
    *,
    node: str,
    user: str,
    asset: str,
    deterministic: bool,
    taken: Collection[str] = (),
) -> int:
    """A nonce for ``user``'s next ``asset`` channel with ``node`` (default challenge
    duration, the node's signature validators, as the client opens it) whose id is in none
    of: ``taken`` (the wallet's own store), the node's record, the chain (any status).

    The first candidate is the SDK's clock-based nonce, or on a ``deterministic`` sandbox
    one more than the channels ``user`` ever created on ``hub``; a taken candidate is
    followed by a fresh SDK nonce, or on the sandbox by the next integer.
    """
    nonce = await channels_created(hub, user) + 1 if deterministic else channel_nonce(now_ms())
    known = {t.lower() for t in taken} | await node_channel_ids(client, user, asset)
    config = await client.get_config()
    bitmap = sig_validators_bitmap(config["supportedSigValidators"])
    for _ in range(NONCE_ATTEMPTS):
        candidate = home_channel_id(
            node=node,
            user=user,
            asset=asset,
            nonce=nonce,
            challenge_duration=DEFAULT_CHALLENGE_DURATION,
            approved_sig_validators=bitmap,
        )
        if candidate not in known and (await hub.get_channel_data(candidate)).status_code == 0:
            return nonce
        nonce = nonce + 1 if deterministic else channel_nonce(now_ms())
    raise ChannelStateError(  # pragma: no cover - needs NONCE_ATTEMPTS taken ids in a row
        f"found no free channel nonce in {NONCE_ATTEMPTS} attempts"
    )
