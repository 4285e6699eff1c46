"""Deploy compiled contracts onto a sandbox chain.

:func:`deploy_contract` deploys any artifact from ``settlement_widgets/_artifacts`` (built by
``make contracts``); :func:`deploy_channel_contracts` deploys what the ``channel`` method
needs, in the order the Sepolia deployment used: the ``Custody``, then the ``SimpleConsensus``
adjudicator pointing at it (constructor ``(owner, channelImpl)``), plus a 6-decimal
``TestToken`` standing in for ``ytest.usd``, minted to the accounts to fund.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..addresses import validate_address
from ..contracts import load_artifact
from ..errors import InvalidAmountError, TransactionFailedError
from ..wallet import WalletClient

if TYPE_CHECKING:
    from web3 import AsyncWeb3

    from .chain import Chain

__all__ = [
    "DEFAULT_TOKEN_NAME",
    "DEFAULT_TOKEN_SYMBOL",
    "ChannelDeployment",
    "DeployedContract",
    "deploy_channel_contracts",
    "deploy_contract",
]

DEFAULT_TOKEN_NAME = "ytest.USD"
DEFAULT_TOKEN_SYMBOL = "ytest.usd"


@dataclass(frozen=True)
class DeployedContract:
    """One deployment: artifact name, EIP-55 address, creation transaction and its gas."""

    name: str
    address: str
    tx_hash: str
    gas_used: int
    block_number: int


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


async def deploy_contract(wallet: WalletClient, artifact_name: str, *args: Any) -> DeployedContract:
    """Deploy ``artifact_name`` with constructor ``args`` from ``wallet``; wait for the receipt."""
    artifact = load_artifact(artifact_name)
    factory = wallet.w3.eth.contract(abi=artifact.abi, bytecode=artifact.bytecode)
    receipt = await wallet.transact(factory.constructor(*args), abis=[artifact.abi])
    address = receipt.get("contractAddress")
    if not address:  # pragma: no cover - a mined creation always has an address
        raise TransactionFailedError(f"deploying {artifact_name} produced no contract address")
    tx_hash = receipt["transactionHash"]
    return DeployedContract(
        name=artifact_name,
        address=validate_address(address, field=artifact_name),
        tx_hash="0x" + bytes(tx_hash).hex() if not isinstance(tx_hash, str) else tx_hash,
        gas_used=int(receipt["gasUsed"]),
        block_number=int(receipt["blockNumber"]),
    )


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
    chain_id = await _chain_id(w3_or_chain, deployer_wallet)
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


async def _chain_id(w3_or_chain: Any, wallet: WalletClient) -> int:
    chain_id = getattr(w3_or_chain, "chain_id", None)
    if isinstance(chain_id, int):  # a Chain
        return chain_id
    if w3_or_chain is not None and hasattr(w3_or_chain, "eth"):
        return int(await w3_or_chain.eth.chain_id)
    return await wallet.chain_id()
