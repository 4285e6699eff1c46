"""Deploy our Nitrolite v1 ``ChannelHub`` (home channels) onto a sandbox chain.

Why a separate module: the v0.5 ``channel`` contracts (:mod:`.deploy`) and the v1 hub live
side by side, and the sandbox integrates v1 later; :func:`deploy_channel_hub` is a single
call that leaves a hub ready for a node: the ``ECDSAValidator`` (validator id 0), the
``ChannelHub`` pointing at it and at the node (constructor ``(defaultSigValidator, node)`` as
in the reference; its three engines are external libraries, deployed and linked first as the
reference deploys them), the ``SessionKeyValidator`` the node registers as validator id 1, and the
6-decimal test token (a new one, or an existing deployment's), minted to the accounts to fund.
The node's vault is left empty and the session-key validator unregistered: both are the
node's decisions (``ChannelHubClient.deposit_to_node``, and
:func:`~.nitronode.validators.register_node_validators`, which needs the node's signature).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ....addresses import validate_address
from ....contracts import load_artifact
from ....deployment import (
    DEFAULT_TOKEN_NAME,
    DEFAULT_TOKEN_SYMBOL,
    DeployedContract,
    deploy_contract,
    deployment_chain_id,
)
from ....errors import InvalidAmountError, InvalidStateError

if TYPE_CHECKING:
    from web3 import AsyncWeb3

    from ....keys import PrivateKey
    from ....sandbox.chain import Chain
    from ....wallet import WalletClient

__all__ = ["ChannelHubDeployment", "deploy_channel_hub", "register_session_key_validator"]


@dataclass(frozen=True)
class ChannelHubDeployment:
    """Addresses of a v1 ChannelHub deployment on one chain."""

    chain_id: int
    hub: str
    validator: str
    token: str
    node: str
    deployer: str
    token_decimals: int = 6
    token_symbol: str = DEFAULT_TOKEN_SYMBOL
    #: the ``SessionKeyValidator`` (to be registered by the node as validator id 1)
    session_key_validator: str = ""
    contracts: tuple[DeployedContract, ...] = field(default=(), repr=False)

    def to_json(self) -> dict[str, Any]:
        return {
            "chainId": self.chain_id,
            "channelHub": self.hub,
            "ecdsaValidator": self.validator,
            "sessionKeyValidator": self.session_key_validator,
            "token": self.token,
            "node": self.node,
            "deployer": self.deployer,
            "tokenDecimals": self.token_decimals,
            "tokenSymbol": self.token_symbol,
        }


async def deploy_channel_hub(
    chain: Chain | AsyncWeb3 | None,
    wallet: WalletClient,
    node_address: str,
    *,
    token: str | None = None,
    fund: Iterable[str] = (),
    fund_amount: int = 1_000_000 * 10**6,
    token_name: str = DEFAULT_TOKEN_NAME,
    token_symbol: str = DEFAULT_TOKEN_SYMBOL,
) -> ChannelHubDeployment:
    """Deploy ECDSAValidator, ChannelHub and SessionKeyValidator for ``node_address`` from
    ``wallet``.

    ``token`` reuses an already deployed test token (e.g. ``ChannelDeployment.token``) instead
    of deploying a new ``TestToken``; ``fund`` accounts are minted ``fund_amount`` of it, which
    needs ``wallet`` to own the token. ``chain`` only supplies the chain id (``None``: ask the
    wallet's node).
    """
    if isinstance(fund_amount, bool) or not isinstance(fund_amount, int) or fund_amount < 0:
        raise InvalidAmountError(f"fund_amount must be a non-negative integer, got {fund_amount!r}")
    node = validate_address(node_address, field="node_address", allow_zero=False)
    recipients = [validate_address(a, field="fund") for a in fund]
    chain_id = await deployment_chain_id(chain, wallet)

    validator = await deploy_contract(wallet, "ECDSAValidator")
    hub = await deploy_contract(wallet, "ChannelHub", validator.address, node)
    session_keys = await deploy_contract(wallet, "SessionKeyValidator")
    # the hub's engines (external libraries, deployed and linked by deploy_contract) first
    deployed = [validator, *hub.libraries, hub, session_keys]
    if token is None:
        test_token = await deploy_contract(
            wallet, "TestToken", token_name, token_symbol, wallet.address
        )
        deployed.append(test_token)
        token_address = test_token.address
    else:
        token_address = validate_address(token, field="token", allow_zero=False)

    if fund_amount and recipients:
        abi = load_artifact("TestToken").abi
        contract = wallet.w3.eth.contract(address=token_address, abi=abi)  # type: ignore[call-overload]
        for recipient in recipients:
            await wallet.transact(contract.functions.mint(recipient, fund_amount), abis=[abi])

    return ChannelHubDeployment(
        chain_id=chain_id,
        hub=hub.address,
        validator=validator.address,
        token=token_address,
        node=node,
        deployer=wallet.address,
        token_symbol=token_symbol,
        session_key_validator=session_keys.address,
        contracts=tuple(deployed),
    )


async def register_session_key_validator(
    chain: Chain,
    deployment: ChannelHubDeployment,
    node_key: PrivateKey,
    relayer: WalletClient,
    *,
    activate: bool = True,
) -> int:
    """Have the node register the deployment's ``SessionKeyValidator`` as validator id 1,
    relayed by ``relayer``; with ``activate``, move the chain clock past the hub's
    ``VALIDATOR_ACTIVATION_DELAY`` so session-key states verify on chain at once (a sandbox
    needs no day-long wait). Returns the timestamp from which the validator is active.
    Idempotent: a validator already registered is not registered again.
    """
    from ..chain.hub import ChannelHubClient
    from .validators import SESSION_KEY_VALIDATOR_ID, register_node_validators

    if not deployment.session_key_validator:
        raise InvalidStateError("this ChannelHub deployment has no SessionKeyValidator")
    hub = ChannelHubClient(relayer, deployment.hub)
    await register_node_validators(
        hub,
        node_key,
        {SESSION_KEY_VALIDATOR_ID: deployment.session_key_validator},
        chain_id=deployment.chain_id,
    )
    _validator, registered_at = await hub.get_node_validator(SESSION_KEY_VALIDATOR_ID)
    active_from = registered_at + await hub.validator_activation_delay()
    if activate:
        now = await chain.timestamp()
        if now < active_from:
            await chain.time_travel(active_from - now)
    return active_from
