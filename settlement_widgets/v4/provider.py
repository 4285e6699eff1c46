"""V4Provider: register policies, check them, and settle signed intents through the adapter.

The provider is the effectful edge of the ``v4`` method: it reads the chain (ownership, the
adapter's EIP-712 domain, policies), sends transactions through the
:class:`~settlement_widgets.wallet.WalletClient`, and turns reverts into errors that name the
contract's custom error and say what to do. Everything it computes (digests, reason names, the
swap parameters, hook flags) comes from the pure modules next to it.

It never branches on the network's name: on Sepolia the same ``inspect()`` reads the chain and
finds the hook owned by the CREATE2 factory, so it says plainly that no policy can be set.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

from ..addresses import ZERO_ADDRESS, validate_address
from ..contracts import decode_revert, load_artifact
from ..errors import (
    ChainUnavailableError,
    ConfigurationError,
    InvalidAmountError,
    InvalidSignatureError,
    PolicyRejectedError,
    SettlementError,
    SettlementValueError,
    TransactionFailedError,
)
from .events import DecodedEvent, decode_logs, event_table
from .flags import BEFORE_SWAP_FLAG, flags_of, hook_permissions
from .intents import UINT256_MAX, Eip712Domain, Intent, intent_digest, sign_intent
from .policy import BPS_DENOMINATOR, Policy, explain_reason, reason_name
from .pool import PoolKey, SwapParams, exact_input_swap

if TYPE_CHECKING:
    from ..networks import Network
    from ..wallet import WalletClient

__all__ = ["OwnerKind", "Tx", "V4Inspection", "V4Provider", "classify_owner_code"]

_log = logging.getLogger(__name__)

OwnerKind = Literal["none", "eoa", "create2-factory", "contract-without-calls", "contract"]

#: runtime code of the deterministic-deployment proxy (0x4e59b448...956C) the Sepolia hook was
#: deployed through: it CREATE2-deploys ``calldata[32:]`` at salt ``calldata[:32]`` and nothing else
DETERMINISTIC_PROXY_RUNTIME: Final = bytes.fromhex(
    "7fffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffe03601600081602082378035"
    "828234f58015156039578182fd5b8082525050506014600cf3"
)
_CALL_OPCODES: Final = frozenset({0xF1, 0xF2, 0xF4})  # CALL, CALLCODE, DELEGATECALL
_EIP7702_PREFIX: Final = b"\xef\x01\x00"

#: errors of v4-core libraries that the PoolManager artifact's ABI does not list
_LIBRARY_ERRORS: Final[list[dict[str, Any]]] = [
    {
        "type": "error",
        "name": "WrappedError",
        "inputs": [
            {"name": "target", "type": "address"},
            {"name": "selector", "type": "bytes4"},
            {"name": "reason", "type": "bytes"},
            {"name": "details", "type": "bytes"},
        ],
    },
    {
        "type": "error",
        "name": "HookAddressNotValid",
        "inputs": [{"name": "hooks", "type": "address"}],
    },
    {"type": "error", "name": "InvalidHookResponse", "inputs": []},
    {"type": "error", "name": "HookCallFailed", "inputs": []},
    {
        "type": "error",
        "name": "PriceLimitAlreadyExceeded",
        "inputs": [
            {"name": "sqrtPriceCurrentX96", "type": "uint160"},
            {"name": "sqrtPriceLimitX96", "type": "uint160"},
        ],
    },
    {
        "type": "error",
        "name": "PriceLimitOutOfBounds",
        "inputs": [
            {"name": "sqrtPriceLimitX96", "type": "uint160"},
        ],
    },
]

#: what each revert means and what to do; formatted with the error's arguments
_HINTS: Final[Mapping[str, str]] = {
    "IntentExpired": "the intent's deadline {0} is before the block time {1}: the user must "
    "sign a new intent with a later deadline",
    "QuotedAmountOutTooLow": "the quote {0} is below the intent's minAmountOut {1}",
    "InvalidSignature": "the signature does not recover to intent.user under the adapter's "
    "EIP-712 domain (name, version, chainId, adapter address): have the user sign it with "
    "sign_intent(intent, key, await provider.eip712_domain())",
    "UnauthorizedSolver": "{0} is neither the adapter's owner nor an authorized solver: the "
    "adapter's owner must call setAuthorizedSolver({0}, true)",
    "IntentAlreadySettled": "intent {0} was already settled; an intent settles at most once",
    "NativeEthNotSupported": "the adapter settles ERC-20 tokens only; wrap native ETH first",
    "PoolMismatch": "the pool {0}/{1} with hooks {2} is not a policy-hook pool of the "
    "intent's two tokens",
    "SwapDirectionMismatch": "zeroForOne={0} does not sell the intent's tokenIn",
    "AmountMismatch": "the swap must be exact input of amountIn: amountSpecified {0} is not -{1}",
    "PartialFill": "the pool could take only {0} of the intent's amountIn {1} "
    "(price limit or liquidity reached)",
    "InsufficientOutput": "the swap would pay {0}, below the intent's minAmountOut {1}",
    "Unauthorized": "only the contract's owner may do this",
    "InvalidSlippageBps": "maxSlippageBps {0} is above 10000",
    "ERC20InsufficientAllowance": "{0} may spend only {1} of the user's tokens, {2} needed: "
    "the user must approve the adapter for amountIn",
    "ERC20InsufficientBalance": "{0} holds {1} of the token, {2} needed",
    "ReentrancyGuardReentrantCall": "settleIntent was re-entered",
    "UnauthorizedPoolManager": "unlockCallback was called by {0}, not the PoolManager",
    "PoolNotInitialized": "the pool of this key has not been initialised",
    "InvalidHookData": "the swap's hookData is not abi.encode(intentId, quotedAmountOut)",
    "NotPoolManager": "a hook callback was called by someone other than the PoolManager",
}


def classify_owner_code(code: bytes) -> OwnerKind:
    """What kind of account an owner is, from its code alone.

    No code (or an EIP-7702 delegation) is an externally owned account: its key holder can send
    any transaction. Code that is a known CREATE2 factory, or that has no CALL, CALLCODE or
    DELEGATECALL instruction at all, can never call ``setPolicy``. Any other contract might,
    if it was written to; we cannot tell.
    """
    if not code or code.startswith(_EIP7702_PREFIX):
        return "eoa"
    if code == DETERMINISTIC_PROXY_RUNTIME or code == _hook_deployer_runtime():
        return "create2-factory"
    i = 0
    while i < len(code):
        op = code[i]
        if op in _CALL_OPCODES:
            return "contract"
        i += 1 + (op - 0x5F if 0x60 <= op <= 0x7F else 0)  # skip PUSHn immediates
    return "contract-without-calls"


def _hook_deployer_runtime() -> bytes:
    try:
        return bytes.fromhex(load_artifact("HookDeployer").deployed_bytecode.removeprefix("0x"))
    except ConfigurationError:  # artifacts not built: only the public proxy is recognised
        return b"\x00"


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

    def events_named(self, name: str) -> tuple[DecodedEvent, ...]:
        return tuple(e for e in self.events if e.name == name)

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


@dataclass(frozen=True)
class V4Inspection:
    """What the chain says about the configured v4 contracts, and what follows from it."""

    network: str
    chain_id: int
    chain_id_on_chain: int
    policy_hook: str
    settlement_adapter: str
    pool_manager: str
    code_present: Mapping[str, bool]
    hook_owner: str | None
    hook_owner_kind: OwnerKind | None
    hook_pool_manager: str | None
    adapter_owner: str | None
    adapter_policy_hook: str | None
    adapter_pool_manager: str | None
    eip712_domain: Eip712Domain | None
    flags: Mapping[str, bool]
    flags_ok: bool
    wallet: str
    wallet_is_hook_owner: bool
    wallet_is_adapter_owner: bool
    wallet_is_solver: bool
    #: True: the owner can set policies; False: it never can; None: a contract we cannot judge
    can_hold_policies: bool | None
    diagnosis: tuple[str, ...] = field(default=())

    @property
    def can_settle(self) -> bool:
        """Whether intents can settle here at all (wiring consistent and policies settable)."""
        return bool(
            self.chain_id == self.chain_id_on_chain
            and all(self.code_present.values())
            and self.flags_ok
            and self.adapter_policy_hook == self.policy_hook
            and self.hook_pool_manager == self.pool_manager
            and self.can_hold_policies is not False
        )

    def __str__(self) -> str:
        return "\n".join(self.diagnosis)

    def to_json(self) -> dict[str, Any]:
        domain = self.eip712_domain
        return {
            "network": self.network,
            "chainId": self.chain_id,
            "chainIdOnChain": self.chain_id_on_chain,
            "contracts": {
                "policyHook": self.policy_hook,
                "settlementAdapter": self.settlement_adapter,
                "poolManager": self.pool_manager,
            },
            "codePresent": dict(self.code_present),
            "hookOwner": self.hook_owner,
            "hookOwnerKind": self.hook_owner_kind,
            "hookPoolManager": self.hook_pool_manager,
            "adapterOwner": self.adapter_owner,
            "adapterPolicyHook": self.adapter_policy_hook,
            "adapterPoolManager": self.adapter_pool_manager,
            "eip712Domain": domain.as_typed_data() if domain else None,
            "flags": dict(self.flags),
            "flagsOk": self.flags_ok,
            "wallet": self.wallet,
            "walletIsHookOwner": self.wallet_is_hook_owner,
            "walletIsAdapterOwner": self.wallet_is_adapter_owner,
            "walletIsSolver": self.wallet_is_solver,
            "canHoldPolicies": self.can_hold_policies,
            "canSettle": self.can_settle,
            "diagnosis": list(self.diagnosis),
        }


def _uint(value: object, field_name: str, *, bits: int = 256) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**bits:
        raise InvalidAmountError(f"{field_name} must be a uint{bits} integer, got {value!r}")
    return value


def _checksum_if_address(value: Any) -> Any:
    """eth-abi decodes addresses lowercase; errors show them EIP-55 like everything else."""
    if isinstance(value, str) and len(value) == 42 and value.startswith("0x"):
        try:
            return validate_address(value)
        except SettlementValueError:
            return value
    return value


def _show(value: Any) -> str:
    if isinstance(value, bytes):
        return "0x" + value.hex()
    return str(value)


class V4Provider:
    """The ``v4`` method on one network, acting as ``wallet``.

    ``network`` defaults to :func:`settlement_widgets.networks.get_network`; ``chain_id``,
    when given, must match it (it is what the original's ``initV4Provider`` took). Every
    real step is appended to the proof log (``settlement_widgets.proofs``) when available.
    """

    def __init__(
        self,
        wallet: WalletClient,
        chain_id: int | None = None,
        network: Network | None = None,
        *,
        proof_path: str | Path | None = None,
    ) -> None:
        if network is None:
            from ..networks import get_network

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
            _LIBRARY_ERRORS,
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
        try:
            from ..proofs import record_proof
        except ModuleNotFoundError as exc:
            if exc.name == f"{__package__.rsplit('.', 1)[0]}.proofs":
                return  # the proof log module is not installed in this build
            raise
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
        PoolManager and v4-core libraries, ERC-20): pass them to ``WalletClient.transact``."""
        return list(self._abis)

    def explain_error(
        self, exc: TransactionFailedError, step: str, **context: Any
    ) -> TransactionFailedError:
        """``exc`` as the error a user can act on: unwraps v4-core's ``WrappedError``, turns
        a policy refusal into :class:`PolicyRejectedError` with the reason's name, and adds
        what the named error means."""
        name, args = exc.error_name, tuple(exc.error_args)
        if name == "WrappedError" and len(args) == 4:  # a callee's revert wrapped by v4-core
            inner_name, inner_args = decode_revert(args[2], *self._abis)
            if inner_name is not None:
                name, args = inner_name, inner_args
        args = tuple(_checksum_if_address(a) for a in args)
        if name in ("PolicyRejected", "PolicyViolation") and len(args) == 2:
            reason = reason_name(args[1])
            return PolicyRejectedError(
                f"{step}: {name}: the policy hook rejected intent {_show(args[0])}: {reason} "
                f"({explain_reason(reason)})",
                reason=reason,
                error_name=name,
                error_args=args,
                tx_hash=exc.tx_hash,
            )
        if name is None:
            return exc
        hint = _HINTS.get(name)
        if name == "Unauthorized" and context.get("owner_hint"):
            hint = str(context["owner_hint"])
        text = hint.format(*(_show(a) for a in args)) if hint else "see the contract's source"
        shown = ", ".join(_show(a) for a in args)
        return TransactionFailedError(
            f"{step} reverted with {name}({shown}): {text}",
            error_name=name,
            error_args=args,
            tx_hash=exc.tx_hash,
        )

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

    # --- inspection -----------------------------------------------------------------------

    async def eip712_domain(self) -> Eip712Domain:
        """The adapter's EIP-712 domain, read once from ERC-5267 ``eip712Domain()``."""
        if self._domain is None:
            result = await self._read(self._adapter.functions.eip712Domain(), "eip712Domain()")
            self._domain = Eip712Domain.from_erc5267(result)
        return self._domain

    async def inspect(self) -> V4Inspection:
        """Read code, owners and wiring of the three contracts and say what they allow."""
        w3 = self.wallet.w3
        c = self.network.contracts
        me = self.wallet.address
        try:
            chain_on_chain = await self.wallet.chain_id()
            targets = (c.policy_hook, c.settlement_adapter, c.pool_manager)
            codes = await asyncio.gather(*(w3.eth.get_code(a) for a in targets))  # type: ignore[arg-type]
        except (ConnectionError, OSError) as exc:
            raise ChainUnavailableError(f"cannot inspect the v4 contracts: {exc}") from exc
        present = {
            "policyHook": bool(codes[0]),
            "settlementAdapter": bool(codes[1]),
            "poolManager": bool(codes[2]),
        }
        lines: list[str] = []
        if chain_on_chain != self.chain_id:
            lines.append(
                f"the node is chain {chain_on_chain}, but the {self.network.name} profile says "
                f"{self.chain_id}: the addresses below may mean nothing here"
            )
        for label, ok in present.items():
            address = self.contracts()[label]
            if not ok:
                lines.append(f"no contract code at {label} {address}")
        flags = hook_permissions(c.policy_hook)
        flags_ok = flags_of(c.policy_hook) == BEFORE_SWAP_FLAG
        on = [name for name, v in flags.items() if v]
        lines.append(
            f"hook address flags 0x{flags_of(c.policy_hook):04x}: "
            f"{', '.join(on) if on else 'none'}"
            + ("" if flags_ok else " (expected beforeSwap only, 0x0080)")
        )

        hook_owner = hook_pm = adapter_owner = adapter_hook = adapter_pm = None
        owner_kind: OwnerKind | None = None
        domain: Eip712Domain | None = None
        is_solver = False
        if present["policyHook"]:
            hook_owner, hook_pm = await asyncio.gather(
                self._read(self._hook.functions.owner(), "hook owner()"),
                self._read(self._hook.functions.poolManager(), "hook poolManager()"),
            )
            hook_owner = validate_address(hook_owner, field="hook owner")
            hook_pm = validate_address(hook_pm, field="hook poolManager")
            owner_code = bytes(await w3.eth.get_code(hook_owner))  # type: ignore[arg-type]
            owner_kind = "none" if hook_owner == ZERO_ADDRESS else classify_owner_code(owner_code)
            if hook_pm != c.pool_manager:
                lines.append(
                    f"the hook's poolManager() is {hook_pm}, not the configured PoolManager "
                    f"{c.pool_manager}"
                )
        if present["settlementAdapter"]:
            adapter_owner, adapter_hook, adapter_pm, is_solver = await asyncio.gather(
                self._read(self._adapter.functions.owner(), "adapter owner()"),
                self._read(self._adapter.functions.policyHook(), "adapter policyHook()"),
                self._read(self._adapter.functions.poolManager(), "adapter poolManager()"),
                self._read(self._adapter.functions.authorizedSolvers(me), "authorizedSolvers"),
            )
            adapter_owner = validate_address(adapter_owner, field="adapter owner")
            adapter_hook = validate_address(adapter_hook, field="adapter policyHook")
            adapter_pm = validate_address(adapter_pm, field="adapter poolManager")
            try:
                domain = await self.eip712_domain()
            except (ConfigurationError, TransactionFailedError) as exc:
                lines.append(f"the adapter's EIP-712 domain cannot be read: {exc}")
            if adapter_hook != c.policy_hook:
                lines.append(
                    f"the adapter's policyHook() is {adapter_hook}, not the configured hook "
                    f"{c.policy_hook}"
                )
            if domain is not None:
                lines.append(
                    f"adapter EIP-712 domain: {domain.name!r} version {domain.version!r}, "
                    f"chain {domain.chain_id}"
                )

        can_hold: bool | None
        if hook_owner is None:
            can_hold = False
            lines.append("no policy hook is deployed: no policy can be set")
        elif owner_kind == "none":
            can_hold = False
            lines.append("the hook has no owner (zero address): no policy can ever be set")
        elif owner_kind == "eoa":
            can_hold = True
            who = "this wallet" if hook_owner == me else f"the account {hook_owner}"
            lines.append(f"the hook's owner is {who}: it can register policies")
        elif owner_kind in ("create2-factory", "contract-without-calls"):
            can_hold = False
            what = (
                "a CREATE2 factory contract, which can only deploy contracts"
                if owner_kind == "create2-factory"
                else "a contract that cannot make calls"
            )
            lines.append(
                f"the hook's owner {hook_owner} is {what}: setPolicy, setPolicyWithSlippage and "
                "transferOwnership can never succeed, so the hook cannot hold policies and "
                "every settleIntent reverts PolicyRejected(POLICY_MISSING)"
            )
        else:
            can_hold = None
            lines.append(
                f"the hook's owner {hook_owner} is a contract: policies can be set only if it "
                "is programmed to call setPolicy (e.g. a multisig)"
            )
        if adapter_owner is not None:
            role = (
                "is the adapter's owner"
                if adapter_owner == me
                else "is an authorized solver"
                if is_solver
                else "is not an authorized solver (the adapter owner must authorize it)"
            )
            lines.append(f"this wallet {me} {role}")
        result = V4Inspection(
            network=self.network.name,
            chain_id=self.chain_id,
            chain_id_on_chain=chain_on_chain,
            policy_hook=c.policy_hook,
            settlement_adapter=c.settlement_adapter,
            pool_manager=c.pool_manager,
            code_present=present,
            hook_owner=hook_owner,
            hook_owner_kind=owner_kind,
            hook_pool_manager=hook_pm,
            adapter_owner=adapter_owner,
            adapter_policy_hook=adapter_hook,
            adapter_pool_manager=adapter_pm,
            eip712_domain=domain,
            flags=flags,
            flags_ok=flags_ok,
            wallet=me,
            wallet_is_hook_owner=hook_owner == me,
            wallet_is_adapter_owner=adapter_owner == me,
            wallet_is_solver=bool(is_solver),
            can_hold_policies=can_hold,
            diagnosis=tuple(lines),
        )
        self._record("inspect", "read-only", data=result.to_json())
        return result

    # --- policies -------------------------------------------------------------------------

    async def _owner_hint(self) -> str:
        try:
            owner = await self._read(self._hook.functions.owner(), "hook owner()")
        except (ConfigurationError, TransactionFailedError):
            return "only the hook's owner can set policies"
        return (
            f"only the hook's owner {owner} can set policies, and this wallet is "
            f"{self.wallet.address} (run inspect() to see whether the owner can at all)"
        )

    async def register_policy(
        self,
        intent_id: str | bytes,
        min_amount_out: int,
        deadline: int,
        *,
        reference_amount_out: int | None = None,
        max_slippage_bps: int | None = None,
        updater: str | None = None,
    ) -> Tx:
        """Register the policy of ``intent_id`` on the hook (the wallet must be its owner).

        With ``reference_amount_out`` and ``max_slippage_bps`` it calls
        ``setPolicyWithSlippage``, otherwise ``setPolicy``; ``updater`` (default: this wallet)
        may later change the bounds.
        """
        iid = Intent.normalise_id(intent_id)
        _uint(min_amount_out, "minAmountOut")
        _uint(deadline, "deadline")
        who = validate_address(
            updater if updater is not None else self.wallet.address, field="updater"
        )
        if (reference_amount_out is None) != (max_slippage_bps is None):
            raise SettlementValueError(
                "give both reference_amount_out and max_slippage_bps, or neither"
            )
        hook = self._hook
        if reference_amount_out is None or max_slippage_bps is None:
            call = hook.functions.setPolicy(bytes.fromhex(iid[2:]), min_amount_out, deadline, who)
            ref, bps = min_amount_out, 0
        else:
            _uint(reference_amount_out, "referenceAmountOut")
            _uint(max_slippage_bps, "maxSlippageBps", bits=16)
            if max_slippage_bps > BPS_DENOMINATOR:
                raise InvalidAmountError(
                    f"maxSlippageBps must be at most 10000, got {max_slippage_bps}"
                )
            call = hook.functions.setPolicyWithSlippage(
                bytes.fromhex(iid[2:]),
                min_amount_out,
                reference_amount_out,
                max_slippage_bps,
                deadline,
                who,
            )
            ref, bps = reference_amount_out, max_slippage_bps
        try:
            tx = await self._transact(call, "register_policy")
        except TransactionFailedError as exc:
            if exc.error_name == "Unauthorized":
                raise self.explain_error(
                    exc, "register_policy", owner_hint=await self._owner_hint()
                ) from exc
            raise
        self._record(
            "register_policy",
            "on-chain",
            tx=tx,
            data={
                "intentId": iid,
                "minAmountOut": str(min_amount_out),
                "referenceAmountOut": str(ref),
                "maxSlippageBps": bps,
                "deadline": deadline,
                "updater": who,
            },
        )
        return tx

    async def update_policy_bounds(
        self,
        intent_id: str | bytes,
        min_amount_out: int,
        reference_amount_out: int,
        max_slippage_bps: int,
        deadline: int,
    ) -> Tx:
        """Change an existing policy's bounds (the hook's owner or the policy's updater)."""
        iid = Intent.normalise_id(intent_id)
        for value, name in (
            (min_amount_out, "minAmountOut"),
            (reference_amount_out, "referenceAmountOut"),
            (deadline, "deadline"),
        ):
            _uint(value, name)
        _uint(max_slippage_bps, "maxSlippageBps", bits=16)
        call = self._hook.functions.updatePolicyBounds(
            bytes.fromhex(iid[2:]), min_amount_out, reference_amount_out, max_slippage_bps, deadline
        )
        tx = await self._transact(call, "update_policy_bounds")
        self._record(
            "update_policy_bounds",
            "on-chain",
            tx=tx,
            data={
                "intentId": iid,
                "minAmountOut": str(min_amount_out),
                "referenceAmountOut": str(reference_amount_out),
                "maxSlippageBps": max_slippage_bps,
                "deadline": deadline,
            },
        )
        return tx

    async def get_policy(self, intent_id: str | bytes) -> Policy:
        """The hook's stored policy of ``intent_id`` (``exists`` False when there is none)."""
        iid = Intent.normalise_id(intent_id)
        raw = await self._read(self._hook.functions.policies(bytes.fromhex(iid[2:])), "policies()")
        return Policy.from_abi(raw)

    async def check_policy(
        self, intent_id: str | bytes, quoted_amount_out: int
    ) -> tuple[bool, str]:
        """The hook's verdict on a quote: ``(allowed, "OK" | "POLICY_MISSING" | ...)``."""
        iid = Intent.normalise_id(intent_id)
        _uint(quoted_amount_out, "quotedAmountOut")
        allowed, code = await self._read(
            self._hook.functions.checkPolicy(bytes.fromhex(iid[2:]), quoted_amount_out),
            "checkPolicy()",
        )
        reason = reason_name(bytes(code))
        self._record(
            "check_policy",
            "read-only",
            data={
                "intentId": iid,
                "quotedAmountOut": str(quoted_amount_out),
                "allowed": bool(allowed),
                "reason": reason,
            },
        )
        return bool(allowed), reason

    # --- solvers, approvals ---------------------------------------------------------------

    async def set_authorized_solver(self, solver: str, authorized: bool = True) -> Tx:
        """Allow (or stop) ``solver`` settling intents (the wallet must own the adapter)."""
        who = validate_address(solver, field="solver", allow_zero=False)
        tx = await self._transact(
            self._adapter.functions.setAuthorizedSolver(who, bool(authorized)),
            "set_authorized_solver",
        )
        self._record(
            "set_authorized_solver",
            "on-chain",
            tx=tx,
            data={"solver": who, "authorized": authorized},
        )
        return tx

    async def approve_adapter(self, token: str, amount: int = UINT256_MAX) -> Tx:
        """Let the adapter pull ``amount`` of ``token`` from this wallet (the user's step)."""
        _uint(amount, "amount")
        spender = self.network.contracts.settlement_adapter
        tx = await self._transact(self._token(token).functions.approve(spender, amount), "approve")
        self._record(
            "approve",
            "on-chain",
            tx=tx,
            data={"token": validate_address(token), "spender": spender, "amount": str(amount)},
        )
        return tx

    async def balance_of(self, token: str, owner: str | None = None) -> int:
        """ERC-20 balance of ``owner`` (default: this wallet)."""
        who = validate_address(owner if owner is not None else self.wallet.address, field="owner")
        return int(await self._read(self._token(token).functions.balanceOf(who), "balanceOf"))

    # --- intents --------------------------------------------------------------------------

    async def hash_intent(self, intent: Intent) -> bytes:
        """The adapter's own ``hashIntent`` (equals :func:`intent_digest` with its domain)."""
        raw = await self._read(self._adapter.functions.hashIntent(intent.as_abi()), "hashIntent()")
        return bytes(raw)

    async def sign_intent(self, intent: Intent) -> Intent:
        """``intent`` signed by this wallet, which must be the intent's user."""
        signed = sign_intent(intent, self.wallet.key, await self.eip712_domain())
        self._record(
            "sign_intent",
            "off-chain",
            data={
                "intentId": intent.id,
                "user": intent.user,
                "digest": "0x" + intent_digest(intent, await self.eip712_domain()).hex(),
            },
        )
        return signed

    async def is_settled(self, intent_id: str | bytes) -> bool:
        iid = Intent.normalise_id(intent_id)
        return bool(
            await self._read(
                self._adapter.functions.settledIntents(bytes.fromhex(iid[2:])), "settledIntents"
            )
        )

    async def settle_intent(
        self,
        intent: Intent,
        pool_key: PoolKey,
        quoted_amount_out: int,
        *,
        signature: str | bytes | None = None,
        swap_params: SwapParams | None = None,
    ) -> Tx:
        """Settle ``intent`` as solver: an exact-input swap of ``amountIn`` in ``pool_key``.

        The signature is ``signature``, else the intent's own, else (when this wallet is the
        user) made here under the adapter's on-chain domain. Reverts raise
        :class:`~settlement_widgets.errors.PolicyRejectedError` (the policy refused: ``reason``
        is its name) or :class:`~settlement_widgets.errors.TransactionFailedError` naming the
        adapter's error; nothing is sent in either case.
        """
        if not isinstance(intent, Intent):
            raise SettlementValueError(f"intent must be an Intent, got {type(intent).__name__}")
        if not isinstance(pool_key, PoolKey):
            raise SettlementValueError(f"pool_key must be a PoolKey, got {type(pool_key).__name__}")
        _uint(quoted_amount_out, "quotedAmountOut")
        if signature is not None:
            intent = intent.with_signature(signature)
        elif intent.signature is None:
            if intent.user != self.wallet.address:
                raise InvalidSignatureError(
                    f"the intent is not signed and this wallet ({self.wallet.address}) is not its "
                    f"user ({intent.user}): pass signature=... signed by the user"
                )
            intent = await self.sign_intent(intent)
        params = swap_params if swap_params is not None else exact_input_swap(intent, pool_key)
        call = self._adapter.functions.settleIntent(
            intent.as_abi(), pool_key.as_abi(), params.as_abi(), quoted_amount_out
        )
        tx = await self._transact(call, "settle_intent")
        swapped = tx.event("IntentSwapped")
        self._record(
            "settle_intent",
            "on-chain",
            tx=tx,
            data={
                "intentId": intent.id,
                "user": intent.user,
                "solver": self.wallet.address,
                "tokenIn": intent.token_in,
                "tokenOut": intent.token_out,
                "amountIn": str(intent.amount_in),
                "amountOut": str(swapped.args["amountOut"]) if swapped else None,
                "quotedAmountOut": str(quoted_amount_out),
                "poolId": pool_key.pool_id,
                "gasUsed": tx.gas_used,
                "events": [e.name for e in tx.events],
            },
        )
        return tx
