"""Deploy a compiled contract onto a chain, and where its deployment says it lives.

:func:`deploy_contract` deploys any artifact from ``settlement_widgets/_artifacts`` (built by
``make contracts``) from a wallet and waits for the receipt. Each method's deployment
(the channel's custody and hub, v4's hook, the sandbox's bridges) is built on it; it sits
here, below all of them, so that none of them imports the sandbox to deploy. A contract that
calls external libraries (our v1 ``ChannelHub`` and its engines, linked as the reference
links them) gets them deployed first and their addresses written into its code, so every
caller deploys it the same way on every backend.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .addresses import validate_address
from .contracts import link_bytecode, load_artifact
from .errors import TransactionFailedError
from .wallet import WalletClient

__all__ = [
    "DEFAULT_TOKEN_NAME",
    "DEFAULT_TOKEN_SYMBOL",
    "DeployedContract",
    "deploy_contract",
    "deployment_chain_id",
]

#: the test token standing in for Yellow's ``ytest.usd``
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
    #: the external libraries deployed for it (in deployment order), empty for most contracts
    libraries: tuple[DeployedContract, ...] = ()

    def __post_init__(self) -> None:
        # a deployment read back from JSON (a sandbox snapshot) has lists of dicts here:
        # equal deployments must compare equal however they were made
        libraries = tuple(
            lib if isinstance(lib, DeployedContract) else DeployedContract(**lib)
            for lib in self.libraries
        )
        object.__setattr__(self, "libraries", libraries)


async def deploy_contract(
    wallet: WalletClient,
    artifact_name: str,
    *args: Any,
    libraries: Mapping[str, str] | None = None,
) -> DeployedContract:
    """Deploy ``artifact_name`` with constructor ``args`` from ``wallet``; wait for the receipt.

    The external libraries it calls are linked at ``libraries`` (name to address) where
    given, and otherwise deployed first from ``wallet`` (reported in the result's
    ``libraries``)."""
    artifact = load_artifact(artifact_name)
    bytecode = artifact.bytecode
    deployed_libraries: list[DeployedContract] = []
    if artifact.link_references:
        addresses = dict(libraries or {})
        for name in artifact.libraries:
            if name not in addresses:
                library = await deploy_contract(wallet, name)
                deployed_libraries.append(library)
                addresses[name] = library.address
        bytecode = link_bytecode(bytecode, artifact.link_references, addresses)
    factory = wallet.w3.eth.contract(abi=artifact.abi, bytecode=bytecode)
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
        libraries=tuple(deployed_libraries),
    )


async def deployment_chain_id(w3_or_chain: Any, wallet: WalletClient) -> int:
    """The chain id from a ``Chain``, an ``AsyncWeb3`` or, for ``None``, the wallet's node."""
    chain_id = getattr(w3_or_chain, "chain_id", None)
    if isinstance(chain_id, int):  # a Chain
        return chain_id
    if w3_or_chain is not None and hasattr(w3_or_chain, "eth"):
        return int(await w3_or_chain.eth.chain_id)
    return await wallet.chain_id()
