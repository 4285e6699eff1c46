"""What the two versions' contract clients share: a contract at an address, driven by a
signer, whose reverts are named from a set of ABIs.

:class:`~.v0_5.chain.custody.CustodyClient` (Nitrolite v0.5's ``Custody``) and
:class:`~.v1.chain.hub.ChannelHubClient` (Nitrolite v1's ``ChannelHub``) extend
:class:`ContractClient`: it holds the ABI and the error ABIs, builds the web3 contract,
sends a call and, when a transaction is mined and reverted without a reason (the chain
moved between estimation and mining), replays it on the state before its block to name the
custom error (:meth:`ContractClient.explain_failure`); and it reads ERC-20 allowances and
balances. What each contract's calls, events and results are stays in its own client.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

from ..addresses import ZERO_ADDRESS, validate_address
from ..contracts import decode_revert, load_artifact
from ..errors import ConfigurationError, InvalidAmountError, TransactionFailedError

if TYPE_CHECKING:
    from ..signer import Signer

__all__ = ["ERC20_ABI", "ContractClient", "optional_abi", "uint256"]

#: the ERC-20 functions the clients need, for tokens we have no artifact of
ERC20_ABI: Final[list[dict[str, Any]]] = [
    {
        "type": "function",
        "name": "approve",
        "stateMutability": "nonpayable",
        "inputs": [{"name": "spender", "type": "address"}, {"name": "value", "type": "uint256"}],
        "outputs": [{"name": "", "type": "bool"}],
    },
    {
        "type": "function",
        "name": "allowance",
        "stateMutability": "view",
        "inputs": [{"name": "owner", "type": "address"}, {"name": "spender", "type": "address"}],
        "outputs": [{"name": "", "type": "uint256"}],
    },
    {
        "type": "function",
        "name": "balanceOf",
        "stateMutability": "view",
        "inputs": [{"name": "account", "type": "address"}],
        "outputs": [{"name": "", "type": "uint256"}],
    },
    {
        "type": "function",
        "name": "decimals",
        "stateMutability": "view",
        "inputs": [],
        "outputs": [{"name": "", "type": "uint8"}],
    },
]


def uint256(value: Any, field: str) -> int:
    """``value`` if it is an int in uint256's range, else :class:`InvalidAmountError`."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0 or value >= 2**256:
        raise InvalidAmountError(f"{field} must be a non-negative integer (uint256), got {value!r}")
    return value


def optional_abi(name: str) -> list[dict[str, Any]]:
    """The ABI of artifact ``name``, or ``[]`` when the contracts are not built."""
    try:
        return load_artifact(name).abi
    except ConfigurationError:
        return []


class ContractClient:
    """The contract at ``address`` (already validated), driven by ``signer``; ``abi`` is its
    own ABI and ``error_abis`` the others whose custom errors a call can bubble up."""

    def __init__(
        self,
        signer: Signer,
        address: str,
        abi: Sequence[dict[str, Any]],
        error_abis: Sequence[Sequence[dict[str, Any]]],
    ) -> None:
        self._signer = signer
        self._address = address
        self._abi: list[dict[str, Any]] = list(abi)
        self._abis: list[list[dict[str, Any]]] = [self._abi, *(list(a) for a in error_abis if a)]
        self._contract: Any = None

    @property
    def address(self) -> str:
        return self._address

    @property
    def abi(self) -> list[dict[str, Any]]:
        return self._abi

    @property
    def error_abis(self) -> list[list[dict[str, Any]]]:
        """The ABIs whose custom errors name a revert (pass them to ``signer.transact``)."""
        return self._abis

    @property
    def contract(self) -> Any:
        """The web3 contract object (bound to the signer's ``AsyncWeb3``)."""
        if self._contract is None:
            self._contract = self._signer.w3.eth.contract(address=self._address, abi=self._abi)  # type: ignore[call-overload]
        return self._contract

    def _token(self, token: str) -> Any:
        address = validate_address(token, field="token", allow_zero=False)
        return self._signer.w3.eth.contract(address=address, abi=ERC20_ABI)  # type: ignore[call-overload]

    async def _send(
        self,
        call: Any = None,
        *,
        data: bytes | None = None,
        to: str | None = None,
        value: int = 0,
    ) -> Any:
        """Send ``call`` (or raw ``data`` to ``to``, default this contract) and return the
        mined receipt; a mined revert without a reason is named by :meth:`explain_failure`."""
        try:
            if call is not None:
                return await self._signer.transact(call, value=value, abis=self._abis)
            return await self._signer.transact(
                to=to or self._address, data=data, value=value, abis=self._abis
            )
        except TransactionFailedError as exc:
            if exc.error_name is None and exc.tx_hash:
                raise await self.explain_failure(exc) from exc
            raise

    async def explain_failure(self, failure: TransactionFailedError) -> TransactionFailedError:
        """Name the custom error of a transaction that was mined and reverted.

        That happens when the chain changed between gas estimation and mining (a
        counterparty's challenge landed first, say). The transaction is replayed as a call on
        the state before its block; the result carries ``error_name``/``error_args`` and the
        same ``tx_hash``, or is ``failure`` itself if the replay names nothing. This client's
        own methods already do it; it is public for transactions sent another way.
        """
        w3 = self._signer.w3
        try:
            tx = await w3.eth.get_transaction(failure.tx_hash)  # type: ignore[arg-type]
            replay = {"from": tx["from"], "to": tx["to"], "data": tx["input"], "value": tx["value"]}
            await w3.eth.call(replay, int(tx["blockNumber"]) - 1)  # type: ignore[arg-type]
        except Exception as exc:
            data = getattr(exc, "data", None)
            name, args = decode_revert(data if isinstance(data, str | bytes) else None, *self._abis)
            if name is not None:
                return TransactionFailedError(
                    f"transaction {failure.tx_hash} reverted with {name}",
                    error_name=name,
                    error_args=args,
                    tx_hash=failure.tx_hash,
                )
        return failure

    async def allowance(
        self, token: str, owner: str | None = None, spender: str | None = None
    ) -> int:
        """What ``spender`` (default: this contract) may pull from ``owner`` (default: the
        signer)."""
        owner = validate_address(owner or self._signer.address, field="owner")
        spender = validate_address(spender or self._address, field="spender")
        return int(await self._token(token).functions.allowance(owner, spender).call())

    async def token_balance(self, token: str, account: str | None = None) -> int:
        """``account``'s wallet balance of ``token`` (native balance for the zero address)."""
        account = validate_address(account or self._signer.address, field="account")
        if validate_address(token, field="token") == ZERO_ADDRESS:
            return int(await self._signer.w3.eth.get_balance(account))  # type: ignore[arg-type]
        return int(await self._token(token).functions.balanceOf(account).call())
