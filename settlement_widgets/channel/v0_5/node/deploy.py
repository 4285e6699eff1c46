"""Deploy what the v0.5 ``channel`` method needs onto a chain (the sandbox's, a twin's).

:func:`deploy_channel_contracts` deploys in the order the Sepolia deployment used: the
``Custody``, then the ``SimpleConsensus`` adjudicator pointing at it (constructor
``(owner, channelImpl)``), plus a 6-decimal ``TestToken`` standing in for ``ytest.usd``,
minted to the accounts to fund.
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
from ....errors import InvalidAmountError
from ....wallet import WalletClient

if TYPE_CHECKING:
    from web3 import AsyncWeb3

    from ....sandbox.chain import Chain

__all__ = ["ChannelDeployment", "deploy_channel_contracts"]


@dataclass(frozen=True)
class ChannelDeployment:
    """Addresses of the ``channel`` method's contracts on one chain."""

    chain_id: int
    custody: str
    adjudicator: str
    token: str
    deployer: str
    token_decimals: int = 6
    token_symbol: str = DEFAULT_TOKEN_SYMBOL
    contracts: tuple[DeployedContract, ...] = field(default=(), repr=False)

    def to_json(self) -> dict[str, Any]:
        return {
            "chainId": self.chain_id,
            "custody": self.custody,
            "adjudicator": self.adjudicator,
            "token": self.token,
            "deployer": self.deployer,
            "tokenDecimals": self.token_decimals,
            "tokenSymbol": self.token_symbol,
        }


async def deploy_channel_contracts(
    w3_or_chain: Chain | AsyncWeb3 | None,
    deployer_wallet: WalletClient,
    *,
    fund: Iterable[str] = (),
    fund_amount: int = 1_000_000 * 10**6,
    token_name: str = DEFAULT_TOKEN_NAME,
    token_symbol: str = DEFAULT_TOKEN_SYMBOL,
) -> ChannelDeployment:
    """Deploy Custody, SimpleConsensus and TestToken; mint ``fund_amount`` to each of ``fund``.

    ``w3_or_chain`` is only used to read the chain id (the wallet carries the connection);
    ``None`` means "ask the wallet's node". The deployer owns the adjudicator and the token
    (so it can mint, e.g. for a faucet).
    """
    if isinstance(fund_amount, bool) or not isinstance(fund_amount, int) or fund_amount < 0:
        raise InvalidAmountError(f"fund_amount must be a non-negative integer, got {fund_amount!r}")
    recipients = [validate_address(a, field="fund") for a in fund]
    chain_id = await deployment_chain_id(w3_or_chain, deployer_wallet)
    owner = deployer_wallet.address

    custody = await deploy_contract(deployer_wallet, "Custody")
    adjudicator = await deploy_contract(deployer_wallet, "SimpleConsensus", owner, custody.address)
    token = await deploy_contract(deployer_wallet, "TestToken", token_name, token_symbol, owner)

    if fund_amount and recipients:
        abi = load_artifact("TestToken").abi
        contract = deployer_wallet.w3.eth.contract(address=token.address, abi=abi)  # type: ignore[call-overload]
        for recipient in recipients:
            await deployer_wallet.transact(
                contract.functions.mint(recipient, fund_amount), abis=[abi]
            )

    return ChannelDeployment(
        chain_id=chain_id,
        custody=custody.address,
        adjudicator=adjudicator.address,
        token=token.address,
        deployer=owner,
        token_symbol=token_symbol,
        contracts=(custody, adjudicator, token),
    )
