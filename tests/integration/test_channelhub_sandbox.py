"""Session keys end to end on the v1 sandbox: the node registered its session-key validator
on the hub at start, the sandbox moved the clock past the activation delay, and a state signed
through a channel session key and co-signed by our Nitronode opens a channel on chain.

Before, the node advertised validators 0 and 1 but never registered validator 1, so such a
state was refused by the hub (our hub did not know validator 1 at all; the real one reverts
``ValidatorNotRegistered``). Runs on both chain backends.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from channel_helpers import BACKENDS

from settlement_widgets.channel.v1.chain.hub import (
    ChannelHubClient,
    channel_id_of,
    contract_definition,
)
from settlement_widgets.channel.v1.client.rpc_client import V1RpcClient
from settlement_widgets.channel.v1.core.calldata import contract_state_from_wire
from settlement_widgets.channel.v1.core.client_calls import (
    ChannelSessionKeySigner,
    KeyMessageSigner,
)
from settlement_widgets.channel.v1.core.state import (
    channel_session_key_metadata_hash,
    decimals_from_map,
    pack_channel_session_key_auth,
    sign_eip191,
)
from settlement_widgets.channel.v1.node.validators import SESSION_KEY_VALIDATOR_ID
from settlement_widgets.contracts import load_artifact
from settlement_widgets.keys import PrivateKey
from settlement_widgets.sandbox import LocalSandbox

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.slow]

U = 10**6
NONCE = 424242


@pytest_asyncio.fixture(scope="module", loop_scope="module", params=BACKENDS)
async def sb(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[LocalSandbox]:
    data = tmp_path_factory.mktemp("sandbox-v1-session-keys")
    async with LocalSandbox(
        chain=request.param, protocol="v1", v4=False, wallets=1, data_dir=data
    ) as sandbox:
        yield sandbox


def _hub(sb: LocalSandbox, key: PrivateKey | None = None) -> ChannelHubClient:
    assert sb.chain is not None and sb.network.contracts.channel_hub
    wallet = sb.chain.wallet_for(key) if key is not None else sb.chain.wallet(0)
    return ChannelHubClient(wallet, sb.network.contracts.channel_hub)


async def test_the_sandbox_node_registered_and_activated_its_session_key_validator(
    sb: LocalSandbox,
) -> None:
    assert sb.chain is not None and sb.hub is not None
    hub = _hub(sb)
    address, registered_at = await hub.get_node_validator(SESSION_KEY_VALIDATOR_ID)
    assert address == sb.hub.session_key_validator
    assert registered_at > 0
    assert await sb.chain.timestamp() >= registered_at + await hub.validator_activation_delay()


async def test_a_session_key_state_cosigned_by_the_node_opens_a_channel_on_chain(
    sb: LocalSandbox,
) -> None:
    assert sb.chain is not None and sb.hub is not None
    user, session = PrivateKey.generate(), PrivateKey.generate()
    deployer = sb.chain.wallet(0)
    await deployer.transact(to=user.address, value=10**18)
    token_abi = load_artifact("TestToken").abi
    token = deployer.w3.eth.contract(address=sb.token, abi=token_abi)  # type: ignore[call-overload]
    await deployer.transact(token.functions.mint(user.address, 10 * U), abis=[token_abi])
    asset = sb.hub.token_symbol
    node_url = sb.network.node_url

    # the wallet registers a channel session key with the node
    expires_at = int(time.time()) + 10 * 86400
    registration = {
        "user_address": user.address,
        "session_key": session.address,
        "version": "1",
        "assets": [asset],
        "expires_at": str(expires_at),
    }
    metadata = channel_session_key_metadata_hash(user.address, 1, [asset], expires_at)
    payload = pack_channel_session_key_auth(session.address, metadata)
    user_sig = "0x" + sign_eip191(user, payload).hex()
    async with V1RpcClient.for_signer(node_url, sb.chain.wallet_for(user)) as wallet_client:
        await wallet_client.submit_channel_session_key_state(
            {
                **registration,
                "user_sig": user_sig,
                "session_key_sig": "0x" + sign_eip191(session, payload).hex(),
            }
        )

    # the session key signs the opening deposit; the node co-signs it
    signer = ChannelSessionKeySigner(
        KeyMessageSigner(session), user.address, "0x" + metadata.hex(), user_sig
    )
    async with V1RpcClient(node_url, state_signer=signer) as client:
        state = await client.open_home_channel(sb.chain.chain_id, asset, "5", nonce=NONCE)
    assert state["user_sig"].startswith("0x01") and state["node_sig"].startswith("0x00")

    # ... and the hub takes it
    hub = _hub(sb, user)
    definition = contract_definition(
        user=user.address,
        node=await hub.node(),
        asset=asset,
        nonce=NONCE,
        approved_sig_validators="0x03",
    )
    assert channel_id_of(definition) == state["home_channel_id"]
    decimals = decimals_from_map({f"{sb.chain.chain_id}:{sb.token}": sb.hub.token_decimals})
    await hub.approve(sb.token, 5 * U)
    tx = await hub.create_channel(definition, contract_state_from_wire(state, decimals))
    assert tx.event_names[-2:] == ("ChannelDeposited", "ChannelCreated")
    data = await hub.get_channel_data(state["home_channel_id"])
    assert (data.status, data.locked_funds) == ("OPERATING", 5 * U)
    assert data.last_state["userSig"].startswith("0x01")
