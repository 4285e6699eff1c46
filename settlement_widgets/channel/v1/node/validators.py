"""The node's signature validators on a ChannelHub: what it signs to register them.

Why this module exists: a channel state signed through a session key carries validator id 1,
and the ChannelHub accepts it only once the hub's NODE has registered a validator under that
id and ``VALIDATOR_ACTIVATION_DELAY`` (one day) has passed (Nitrolite v1.4.1 `ChannelHub.sol`
``registerNodeValidator``). The node advertises validators 0 and 1 in ``get_config``, so at
start it must register validator 1 or the session-key states it co-signs would not hold on
chain. Registration is authorised by the node's signature alone, over
``abi.encode(uint256 chainid, address hub, uint8 validatorId, address validator)`` as an
EIP-191 message, so any account may relay the transaction; the node key never has to send it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Final

from ....addresses import ZERO_ADDRESS, validate_address
from ....errors import InvalidStateError, SettlementValueError
from ..core.abi import abi_encode
from ..core.state import SIG_VALIDATOR_SESSION_KEY, sign_eip191

if TYPE_CHECKING:
    from ....keys import PrivateKey
    from ..chain.hub import ChannelHubClient, HubTx

__all__ = [
    "SESSION_KEY_VALIDATOR_ID",
    "register_node_validators",
    "sign_validator_registration",
    "validator_registration_message",
]

#: the id the SDK and the node give channel session-key signatures (Nitrolite v1.4.1)
SESSION_KEY_VALIDATOR_ID: Final = SIG_VALIDATOR_SESSION_KEY


def validator_registration_message(
    *, chain_id: int, hub: str, validator_id: int, validator: str
) -> bytes:
    """What the node signs to register ``validator`` under ``validator_id`` on ``hub``.

    The chain id and hub address are inside, so a registration cannot be replayed on another
    chain or another deployment.
    """
    if isinstance(validator_id, bool) or not 1 <= int(validator_id) <= 255:
        raise SettlementValueError(
            f"validator_id must be 1..255 (0 is built in), got {validator_id}"
        )
    return abi_encode(
        ["uint256", "address", "uint8", "address"],
        [
            int(chain_id),
            validate_address(hub, field="hub", allow_zero=False),
            int(validator_id),
            validate_address(validator, field="validator", allow_zero=False),
        ],
    )


def sign_validator_registration(
    node_key: PrivateKey, *, chain_id: int, hub: str, validator_id: int, validator: str
) -> bytes:
    """The node's 65-byte EIP-191 signature for ``registerNodeValidator``."""
    message = validator_registration_message(
        chain_id=chain_id, hub=hub, validator_id=validator_id, validator=validator
    )
    return sign_eip191(node_key, message)


async def register_node_validators(
    hub: ChannelHubClient, node_key: PrivateKey, validators: Mapping[int, str], *, chain_id: int
) -> list[HubTx]:
    """Register each ``{id: validator address}`` on ``hub`` for the node ``node_key``.

    Idempotent: an id already registered to the same validator is skipped (a restarted node
    must not fail), while one registered to another validator is an error, since the hub
    never replaces a registration. ``hub``'s signer only relays (it pays the gas); the
    authority is the node's signature. Returns the registration transactions sent.
    """
    if validate_address(await hub.node()) != node_key.address:
        raise InvalidStateError(
            f"the hub at {hub.address} belongs to node {await hub.node()}, not {node_key.address}"
        )
    sent: list[HubTx] = []
    for validator_id, address in sorted(validators.items()):
        wanted = validate_address(address, field="validator", allow_zero=False)
        current, _registered_at = await hub.get_node_validator(validator_id)
        if current == wanted:
            continue
        if current != ZERO_ADDRESS:
            raise InvalidStateError(
                f"validator id {validator_id} is registered to {current} on {hub.address}; "
                f"the hub never replaces a registration, so {wanted} cannot take that id"
            )
        signature = sign_validator_registration(
            node_key,
            chain_id=chain_id,
            hub=hub.address,
            validator_id=validator_id,
            validator=wanted,
        )
        sent.append(await hub.register_node_validator(validator_id, wanted, signature))
    return sent
