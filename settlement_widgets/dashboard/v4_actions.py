"""The dashboard's ``v4`` action: settle a signed intent through the policy hook."""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING

from ..channel.v0_5.core.amounts import format_amount
from ..networks import Network
from ..widgets import SettlementSelector
from .view import ONE_V4_TOKEN, LogLine, _short

#: the decimals of the pool's test tokens (ONE_V4_TOKEN is one of them)
V4_TOKEN_DECIMALS = 18

if TYPE_CHECKING:
    from ..networks import Network
    from ..signer import Signer
    from ..v4 import V4Provider
    from ..widgets import SettlementSelector


__all__ = ["V4Actions"]


class V4Actions:
    """The v4 method's button (a layer of :class:`~.widget.SettlementDashboard`)."""

    if TYPE_CHECKING:  # set and implemented by SettlementDashboard
        network: Network
        user: Signer
        selector: SettlementSelector

        def _add_log(self, line: LogLine) -> None: ...

        def _tx_line(self, text: str, tx_hash: str, url: str | None) -> LogLine: ...

        operator: Signer | None
        solver: Signer | None
        _intents: int
        _solver_authorised: bool
        _user_v4: V4Provider | None
        _operator_v4: V4Provider | None
        _solver_v4: V4Provider | None
        _v4_network: Network | None
        _v4_tx: str | None

        def _show_panel(self, method: str) -> None: ...

    # --- v4 -----------------------------------------------------------------------------

    def _v4(self) -> tuple[V4Provider, V4Provider, V4Provider]:
        if self._user_v4 is None:
            from ..v4 import V4Provider

            operator = self.operator or self.user
            network = self._v4_network or self.network
            self._user_v4 = V4Provider(self.user, network=network)
            self._operator_v4 = V4Provider(operator, network=network)
            self._solver_v4 = V4Provider(self.solver or operator, network=network)
        assert self._operator_v4 is not None and self._solver_v4 is not None
        return self._user_v4, self._operator_v4, self._solver_v4

    async def _use_own_v4(self, operator: Signer) -> bool:
        """Switch the v4 method to the operator's own deployment recorded in the store
        (``deploy_own_v4``, notebook 04), if there is a complete one still on chain: where
        the configured hook cannot settle (Sepolia's) that one can. Sends nothing."""
        from ..v4 import recorded_own_v4

        if self._v4_network is not None:
            return False
        own = await recorded_own_v4(operator, self.network)
        if own is None:
            return False
        self._v4_network = own.apply_to(self.network)
        self._user_v4 = self._operator_v4 = self._solver_v4 = None
        self._add_log(LogLine("info", f"v4 settles through your own deployment: {own}"))
        return True

    async def settle_intent(self) -> None:
        """Sign an intent (sell 1 token for at least 0.95), register its policy, settle it.

        Where the deployment cannot settle (the deployed Sepolia hook cannot hold policies),
        the diagnosis is logged instead and nothing is sent.
        """
        from ..chain_clock import chain_time
        from ..v4 import Intent, PoolKey, intent_id

        user, operator, solver = self._v4()
        report = await operator.inspect()
        if not report.can_settle and await self._use_own_v4(operator.wallet):
            user, operator, solver = self._v4()
            report = await operator.inspect()
        profile = operator.network.extra.get("v4")
        if not report.can_settle or not profile:
            why = str(report) or f"no policy-hook pool is configured for {self.network.name}"
            self._add_log(
                LogLine(
                    "error",
                    f"cannot settle on {self.network.name}: {why} (deploy_own_v4, as notebook "
                    "04 does, gives the operator a deployment that can)",
                )
            )
            return
        pool = PoolKey.from_json(profile["poolKey"])
        if self.solver is not None and not self._solver_authorised:
            await operator.set_authorized_solver(solver.wallet.address)
            self._solver_authorised = True
        token_in, token_out = pool.currency0, pool.currency1
        if await user.balance_of(token_in) < ONE_V4_TOKEN:
            await self._mint_test_token(token_in)
        await user.approve_adapter(token_in, ONE_V4_TOKEN)
        self._intents += 1
        deadline = await chain_time(self.user.w3) + 3600
        intent = Intent(
            # a fresh id each time: another dashboard of the same wallet (another kernel on
            # the server's shared sandbox, or an earlier run) counts from 1 too, and an
            # intent settles at most once
            id=intent_id(
                f"dashboard intent {self.user.address} {self._intents} {secrets.token_hex(16)}"
            ),
            user=self.user.address,
            token_in=token_in,
            token_out=token_out,
            amount_in=ONE_V4_TOKEN,
            min_amount_out=95 * ONE_V4_TOKEN // 100,
            deadline=deadline,
        )
        await operator.register_policy(
            intent.id,
            intent.min_amount_out,
            deadline,
            reference_amount_out=ONE_V4_TOKEN,
            max_slippage_bps=100,
        )
        signed = await user.sign_intent(intent)
        before = await user.balance_of(token_out)
        tx = await solver.settle_intent(signed, pool, 99 * ONE_V4_TOKEN // 100)
        received = await user.balance_of(token_out) - before
        self._v4_tx = tx.hash
        if self.selector.selected == "v4":
            self._show_panel("v4")
        sold_symbol, got_symbol = await self._symbol(token_in), await self._symbol(token_out)
        sold = format_amount(intent.amount_in, V4_TOKEN_DECIMALS, sold_symbol)
        got = format_amount(received, V4_TOKEN_DECIMALS, got_symbol)
        self._add_log(
            self._tx_line(
                f"intent {_short(intent.id)} settled: {sold} sold, {got} received "
                f"({tx.gas_used:,} gas):",
                tx.hash,
                tx.explorer_url,
            )
        )

    async def _symbol(self, token: str) -> str:
        """The ERC-20 ``symbol()`` of a pool token, for the log (its short address when the
        token has none)."""
        from ..contracts import load_artifact

        abi = load_artifact("V4TestToken").abi
        contract = self.user.w3.eth.contract(address=token, abi=abi)  # type: ignore[call-overload]
        try:
            symbol = await contract.functions.symbol().call()
        except Exception:  # a token without symbol(): named by its address instead
            return f"token {_short(token)}"
        return str(symbol) if symbol else f"token {_short(token)}"

    async def _mint_test_token(self, token: str) -> None:
        """Mint the sandbox's open-mint ``V4TestToken`` to the user (a test token only)."""
        from ..contracts import load_artifact

        abi = load_artifact("V4TestToken").abi
        contract = self.user.w3.eth.contract(address=token, abi=abi)  # type: ignore[call-overload]
        await self.user.transact(
            contract.functions.mint(self.user.address, 10 * ONE_V4_TOKEN), abis=[abi]
        )

    async def _mint_sandbox_usdc(self, usdc: str, amount: int) -> None:
        """The operator (the sandbox deployer, owner of its ``TestToken`` USDC) mints
        ``amount`` to the user: test tokens on the sandbox's own chain only."""
        from ..contracts import load_artifact

        assert self.operator is not None
        abi = load_artifact("TestToken").abi
        contract = self.operator.w3.eth.contract(address=usdc, abi=abi)  # type: ignore[call-overload]
        await self.operator.transact(contract.functions.mint(self.user.address, amount), abis=[abi])
