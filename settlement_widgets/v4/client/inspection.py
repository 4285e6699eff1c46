"""Inspection and diagnosis: what the chain says about the v4 contracts, and what follows.

:meth:`InspectionMixin.inspect` reads code, owners and wiring of the hook, the adapter and the
PoolManager and returns a :class:`V4Inspection` whose ``diagnosis`` says in words what is
possible. :func:`classify_owner_code` decides from an owner's bytecode alone whether it can
ever call ``setPolicy`` (on Sepolia the hook is owned by the CREATE2 proxy, which cannot).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from ...addresses import ZERO_ADDRESS, validate_address
from ...contracts import load_artifact
from ...errors import ChainUnavailableError, ConfigurationError, TransactionFailedError
from ..chain.base import V4ProviderBase
from ..core.flags import BEFORE_SWAP_FLAG, flags_of, hook_permissions
from ..core.intents import Eip712Domain

__all__ = [
    "DETERMINISTIC_PROXY_RUNTIME",
    "InspectionMixin",
    "OwnerKind",
    "V4Inspection",
    "classify_owner_code",
]

OwnerKind = Literal["none", "eoa", "create2-factory", "contract-without-calls", "contract"]

#: runtime code of the deterministic-deployment proxy (0x4e59b448...956C) the Sepolia hook was
#: deployed through: it CREATE2-deploys ``calldata[32:]`` at salt ``calldata[:32]`` and nothing else
DETERMINISTIC_PROXY_RUNTIME: Final = bytes.fromhex(
    "7fffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffe03601600081602082378035"
    "828234f58015156039578182fd5b8082525050506014600cf3"
)
_CALL_OPCODES: Final = frozenset({0xF1, 0xF2, 0xF4})  # CALL, CALLCODE, DELEGATECALL
_EIP7702_PREFIX: Final = b"\xef\x01\x00"


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


class InspectionMixin(V4ProviderBase):
    """:meth:`inspect`, the read-only diagnosis of the configured v4 contracts."""

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
