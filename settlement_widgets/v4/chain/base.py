"""The v4 provider's shared plumbing: contracts, reads, transactions and the proof log.

:class:`V4ProviderBase` is what every part of
:class:`~settlement_widgets.v4.client.provider.V4Provider` needs: the wallet and network,
contract handles, chain reads that turn failures into the toolkit's errors, transactions
whose reverts are explained (:mod:`.reverts`), the adapter's EIP-712 domain and proof
recording. The parts themselves are mixins over it, one module each:
:mod:`..client.inspection` (what the chain allows), :mod:`..client.policy_registration`
(the hook's policies) and :mod:`..client.settlement` (solvers, approvals, intents).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...addresses import validate_address
from ...contracts import decode_revert, load_artifact
from ...errors import (
    ChainUnavailableError,
    ConfigurationError,
    InvalidAmountError,
    SettlementError,
    TransactionFailedError,
)
from ..core.intents import Eip712Domain
from .events import DecodedEvent, decode_logs, event_table
from .reverts import LIBRARY_ERRORS, explain_revert

if TYPE_CHECKING:
    from ...networks import Network
    from ...signer import Signer

__all__ = ["Tx", "V4ProviderBase", "check_uint"]

#: the provider's logger keeps the name it had before the provider was split into modules,
#: so logging configuration that targets it still applies
_log = logging.getLogger("settlement_widgets.v4.provider")  # the name users configure


@dataclass(frozen=True)
class Tx:
    """A mined transaction: hash, explorer link, receipt facts and its decoded events."""

    step: str
    hash: str
    explorer_url: str
    block_number: int
    gas_used: int
    status: int
    events: tuple[DecodedEvent, ...] = ()

    def event(self, name: str) -> DecodedEvent | None:
        """The first event called ``name``, or None."""
        return next((e for e in self.events if e.name == name), None)

    def to_json(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "hash": self.hash,
            "explorerUrl": self.explorer_url,
            "blockNumber": self.block_number,
            "gasUsed": self.gas_used,
            "status": self.status,
            "events": [e.to_json() for e in self.events],
        }


def check_uint(value: object, field_name: str, *, bits: int = 256) -> int:
    """``value`` if it is a uint of ``bits`` bits, else :class:`InvalidAmountError`: checked
    here so a bad amount is refused before anything is signed or sent."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**bits:
        raise InvalidAmountError(f"{field_name} must be a uint{bits} integer, got {value!r}")
    return value


class V4ProviderBase:
    """Wallet, network, contracts and the read/transact/record plumbing of the v4 provider.

    Not used on its own: :class:`~..client.provider.V4Provider` combines it with
    the inspection, policy-registration and settlement mixins.
    """

    def __init__(
        self,
        wallet: Signer,
        chain_id: int | None = None,
        network: Network | None = None,
        *,
        proof_path: str | Path | None = None,
    ) -> None:
        if network is None:
            from ...networks import get_network

            network = get_network()
        if chain_id is not None and chain_id != network.chain_id:
            raise ConfigurationError(
                f"chain_id {chain_id} does not match the {network.name} network's chain "
                f"{network.chain_id}: pick the network with network=..."
            )
        self.wallet = wallet
        self.network = network
        self.chain_id = network.chain_id
        self._proof_path = proof_path
        self._domain: Eip712Domain | None = None
        self._chain_checked = False
        self._hook_abi = load_artifact("PolicyHook").abi
        self._adapter_abi = load_artifact("SettlementAdapter").abi
        self._pm_abi = load_artifact("PoolManager").abi
        self._erc20_abi = load_artifact("V4TestToken").abi
        self._abis = [
            self._adapter_abi,
            self._hook_abi,
            self._pm_abi,
            self._erc20_abi,
            LIBRARY_ERRORS,
        ]
        self._events = event_table(self._erc20_abi, self._pm_abi, self._hook_abi, self._adapter_abi)

    def __repr__(self) -> str:
        return f"V4Provider(network={self.network.name!r}, wallet={self.wallet.address!r})"

    async def close(self) -> None:
        """Nothing to release (the wallet owns the connection); here for the singletons."""

    # --- addresses and contracts ----------------------------------------------------------

    def contracts(self) -> dict[str, str]:
        """``{"policyHook", "settlementAdapter", "poolManager"}`` of the configured network."""
        c = self.network.contracts
        return {
            "policyHook": c.policy_hook,
            "settlementAdapter": c.settlement_adapter,
            "poolManager": c.pool_manager,
        }

    def _contract(self, address: str, abi: list[dict[str, Any]]) -> Any:
        return self.wallet.w3.eth.contract(address=address, abi=abi)  # type: ignore[call-overload]

    @property
    def _hook(self) -> Any:
        return self._contract(self.network.contracts.policy_hook, self._hook_abi)

    @property
    def _adapter(self) -> Any:
        return self._contract(self.network.contracts.settlement_adapter, self._adapter_abi)

    def _token(self, address: str) -> Any:
        return self._contract(validate_address(address, field="token"), self._erc20_abi)

    async def _read(self, call: Any, what: str) -> Any:
        try:
            return await call.call()
        except Exception as exc:
            if isinstance(exc, ConnectionError | OSError):
                raise ChainUnavailableError(f"cannot read {what}: {exc}") from exc
            name, args = decode_revert(getattr(exc, "data", None), *self._abis)
            if name is not None:
                raise TransactionFailedError(
                    f"reading {what} reverted with {name}", error_name=name, error_args=args
                ) from exc
            raise ConfigurationError(
                f"cannot read {what} on {self.network.name}: {exc} (is the contract deployed "
                "at the configured address?)"
            ) from exc

    async def _ensure_chain(self) -> None:
        if self._chain_checked:
            return
        actual = await self.wallet.chain_id()
        if actual != self.chain_id:
            raise ConfigurationError(
                f"the wallet is connected to chain {actual}, but the {self.network.name} "
                f"network is chain {self.chain_id}: connect the wallet to the right node"
            )
        self._chain_checked = True

    # --- proofs ---------------------------------------------------------------------------

    def _record(
        self,
        step: str,
        kind: str,
        *,
        tx: Tx | None = None,
        data: dict[str, Any] | None = None,
    ) -> None:
        from ...proofs import record_proof  # lazily: the proof log pulls in sqlite and json

        try:
            record_proof(
                "v4",
                self.network.name,
                self.chain_id,
                step,
                kind,
                tx_hash=tx.hash if tx else None,
                explorer_url=tx.explorer_url if tx else None,
                data=data,
                path=self._proof_path,
            )
        except SettlementError as exc:  # bookkeeping after the fact must not undo a step
            _log.warning("could not record the %s proof: %s", step, exc)

    # --- transactions ---------------------------------------------------------------------

    @property
    def error_abis(self) -> list[list[dict[str, Any]]]:
        """The ABIs whose custom errors a settlement can revert with (adapter, hook,
        PoolManager and v4-core libraries, ERC-20): pass them to ``Signer.transact``."""
        return list(self._abis)

    def explain_error(
        self, exc: TransactionFailedError, step: str, **context: Any
    ) -> TransactionFailedError:
        """``exc`` as the error a user can act on: unwraps v4-core's ``WrappedError``, turns
        a policy refusal into :class:`PolicyRejectedError` with the reason's name, and adds
        what the named error means (see :mod:`.reverts`)."""
        return explain_revert(exc, step, self._abis, **context)

    async def _transact(self, call: Any, step: str, **context: Any) -> Tx:
        await self._ensure_chain()
        try:
            receipt = await self.wallet.transact(call, abis=self._abis)
        except TransactionFailedError as exc:
            raise self.explain_error(exc, step, **context) from exc
        tx_hash = "0x" + bytes(receipt["transactionHash"]).hex()
        return Tx(
            step=step,
            hash=tx_hash,
            explorer_url=self.network.explorer.tx_url(tx_hash),
            block_number=int(receipt["blockNumber"]),
            gas_used=int(receipt["gasUsed"]),
            status=int(receipt["status"]),
            events=decode_logs(receipt["logs"], self._events),
        )

    # --- the adapter's EIP-712 domain (inspection and intent signing both need it) ------

    async def eip712_domain(self) -> Eip712Domain:
        """The adapter's EIP-712 domain, read once from ERC-5267 ``eip712Domain()``."""
        if self._domain is None:
            result = await self._read(self._adapter.functions.eip712Domain(), "eip712Domain()")
            self._domain = Eip712Domain.from_erc5267(result)
        return self._domain
