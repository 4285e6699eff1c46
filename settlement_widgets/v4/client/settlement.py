"""Settlement of intents: authorize solvers, approve the adapter, sign and settle intents.

The flow a user and a solver go through: the adapter's owner authorizes the solver, the user
approves the adapter for ``amountIn`` and signs the intent under the adapter's EIP-712
domain, and the solver calls ``settleIntent`` with a pool key and a quote; the hook checks
the intent's policy during the swap. Reverts arrive explained (:mod:`..chain.reverts`).
"""

from __future__ import annotations

from ...addresses import validate_address
from ...errors import InvalidSignatureError, SettlementValueError
from ..chain.base import Tx, V4ProviderBase, check_uint
from ..core.intents import UINT256_MAX, Intent, intent_digest, recover_intent_signer
from ..core.pool import PoolKey, SwapParams, exact_input_swap

__all__ = ["SettlementMixin"]


class SettlementMixin(V4ProviderBase):
    """Solvers, approvals, balances and the intent steps up to ``settleIntent``."""

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
        check_uint(amount, "amount")
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
        """``intent`` signed by this wallet (``eth_signTypedData_v4`` for a browser wallet),
        which must be the intent's user: the adapter checks the signature against
        ``intent.user``, so any other account could only produce a rejected intent."""
        if intent.user != self.wallet.address:
            raise InvalidSignatureError(
                f"the wallet is {self.wallet.address}, but the intent's user is {intent.user}: "
                "only the user can sign their intent"
            )
        domain = await self.eip712_domain()
        signed = intent.with_signature(await self.wallet.sign_typed_data(intent.typed_data(domain)))
        if recover_intent_signer(signed, domain) != intent.user:
            raise InvalidSignatureError(
                f"the wallet signed the intent with another account than {intent.user}"
            )
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
        check_uint(quoted_amount_out, "quotedAmountOut")
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
