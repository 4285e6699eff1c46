"""Moving funds inside the unified ledger: ``transfer``, the faucet's payouts and the ledger
reads (``get_ledger_balances``, ``get_ledger_transactions``).

A transfer is checked completely (replay guard, signer, destination, frozen wallet, session
key allowance, balances) before the first debit, so a refusal changes nothing.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from ....addresses import validate_address
from ....errors import InvalidAddressError, SettlementError
from ..core.amounts import is_decimal_amount, parse_decimal_amount
from .base import CLEARNODE_APPLICATION, Note, Outcome, ServiceBase, Session, _fail, _units
from .clock import now_ms
from .ledger import TX_TYPES, SessionKeyRecord, TxRecord
from .wire import Incoming

__all__ = ["TransferHandlers"]


class TransferHandlers(ServiceBase):
    """``transfer``, the ledger reads and the node-side payouts (faucet)."""

    #: set by :class:`~.service.RelayService`: committed-rows reader (``None``: no history)
    _read: sqlite3.Connection | None
    #: set by :class:`~.service.RelayService`: destination text -> checksummed address cache
    _addresses: dict[str, str]

    # --- ledger reads -------------------------------------------------------------------------

    def _get_ledger_balances(self, session: Session, req: Incoming) -> Outcome:
        self._private_signer(session, req)
        account = req.params.get("account_id") or session.wallet
        if not isinstance(account, str):
            raise _fail("failed to parse parameters: account_id must be a string")
        if len(account) == 42:
            try:
                account = validate_address(account, field="account_id")
            except InvalidAddressError as exc:
                raise _fail(f"failed to parse parameters: {exc}") from None
        return Outcome("get_ledger_balances", {"ledger_balances": self.balances_json(account)})

    def _get_ledger_transactions(self, session: Session, req: Incoming) -> Outcome:
        params = req.params
        offset, limit, descending = self._list_options(params)
        account = params.get("account_id") or None
        asset = params.get("asset") or None
        tx_type = params.get("tx_type") or None
        if account is not None and not isinstance(account, str):
            raise _fail("failed to parse parameters: account_id must be a string")
        if account is not None and len(account) == 42:
            try:
                account = validate_address(account, field="account_id")
            except InvalidAddressError as exc:
                raise _fail(f"failed to parse parameters: {exc}") from None
        if asset is not None and not isinstance(asset, str):
            raise _fail("failed to parse parameters: asset must be a string")
        if tx_type is not None and tx_type not in TX_TYPES:
            raise _fail(f"failed to parse parameters: tx_type must be one of {', '.join(TX_TYPES)}")
        if self._read is None:
            txs: list[TxRecord] = []
        else:
            txs = self.ledger.query_transactions(
                self._read,
                account=account,
                asset=asset,
                tx_type=tx_type,
                offset=offset,
                limit=limit,
                descending=descending,
            )
        return Outcome(
            "get_ledger_transactions", {"ledger_transactions": [self.tx_json(t) for t in txs]}
        )

    # --- transfer -----------------------------------------------------------------------------

    def _transfer(self, session: Session, req: Incoming) -> Outcome:
        ledger = self.ledger
        params = req.params
        stamp = now_ms(self._clock)
        digest = req.digest
        if ledger.is_seen(digest, stamp):
            raise _fail("operation denied: the request has already been processed")
        destination = params.get("destination") or ""
        tag = params.get("destination_user_tag") or ""
        if not isinstance(destination, str) or not isinstance(tag, str):
            raise _fail("failed to parse parameters: destination must be a string")
        if not destination and not tag:
            raise _fail("destination or destination_tag must be provided")
        if destination:
            checked = self._addresses.get(destination)
            if checked is None:
                try:
                    checked = validate_address(destination, field="destination")
                except InvalidAddressError:
                    raise _fail(f"invalid destination account: {destination}") from None
                if len(self._addresses) > 100_000:
                    self._addresses.clear()
                self._addresses[destination] = checked
            destination = checked
        allocations = params.get("allocations")
        if not isinstance(allocations, list) or not allocations:
            raise _fail("allocations cannot be empty")
        wallet = session.wallet
        assert wallet is not None
        signer = self._verify_signer(req, wallet)
        if not destination:
            found = ledger.tag_wallets.get(tag)
            if found is None:
                raise _fail(f"failed to get wallet by tag: {tag}")
            destination = found
        if destination == wallet:
            raise _fail("cannot transfer to self")
        self._check_outgoing_allowed(wallet)
        key = None if signer == wallet else ledger.session_keys.get(signer)
        if key is not None and not key.is_active(self._clock()):
            raise _fail("session key validation failed: session key expired")
        plan: list[tuple[str, int]] = []
        spent: dict[str, int] = {}
        for alloc in allocations:
            asset, units = self._allocation(alloc, wallet)
            total = spent.get(asset, 0) + units
            if key is not None and key.application != CLEARNODE_APPLICATION:
                self._check_allowance(key, asset, total)
            if total > ledger.balance(wallet, asset):
                raise _fail(f"insufficient funds: {wallet} for asset {asset}")
            spent[asset] = total
            plan.append((asset, units))
        # every check passed: apply
        txs = [ledger.transfer(wallet, destination, asset, units) for asset, units in plan]
        if key is not None:
            for asset, units in spent.items():
                key.used[asset] = key.used.get(asset, 0) + units
            ledger.touch_session_key(key)
        ledger.mark_seen(digest, max(stamp, req.timestamp) + self.config.message_expiry_ms)
        tx_json = tuple(self.tx_json(tx) for tx in txs)
        notes = [
            self.balance_note(wallet),
            Note(wallet, "tr", txs=tx_json),
            self.balance_note(destination),
            Note(destination, "tr", txs=tx_json),
        ]
        return Outcome("transfer", {"transactions": list(tx_json)}, notes)

    def _allocation(self, alloc: Any, wallet: str) -> tuple[str, int]:
        if not isinstance(alloc, dict):
            raise _fail("failed to parse parameters: allocations are {asset, amount} objects")
        asset = alloc.get("asset")
        amount = alloc.get("amount")
        if not isinstance(asset, str):
            raise _fail("failed to parse parameters: allocation asset must be a string")
        text = str(amount) if type(amount) is int else amount
        if not isinstance(text, str) or not is_decimal_amount(text):
            raise _fail(f"invalid allocation: {amount} for asset {asset}")
        decimals = self._decimals.get(asset)
        if decimals is None:  # an asset nobody holds: its balance is zero
            if parse_decimal_amount(text, 77) == 0:
                raise _fail(f"invalid allocation: {text} for asset {asset}")
            raise _fail(f"insufficient funds: {wallet} for asset {asset}")
        try:
            units = (
                _units(text, decimals) if len(text) <= 96 else parse_decimal_amount(text, decimals)
            )
        except SettlementError:
            raise _fail(f"invalid allocation: {text} for asset {asset}") from None
        if units <= 0:
            raise _fail(f"invalid allocation: {text} for asset {asset}")
        return asset, units

    def _check_allowance(self, key: SessionKeyRecord, asset: str, total: int) -> None:
        allowed_text = next((amount for a, amount in key.allowances if a == asset), None)
        decimals = self._decimals.get(asset, 0)
        if allowed_text is None:
            raise _fail(
                f"session key spending validation failed: asset {asset} is not in the "
                "session key's allowances"
            )
        allowed = _units(allowed_text, decimals)
        used = key.used.get(asset, 0)
        if used + total > allowed:
            raise _fail(
                "session key spending validation failed: insufficient session key allowance: "
                f"{self.amount_text(total, asset)} required, "
                f"{self.amount_text(max(allowed - used, 0), asset)} available"
            )

    def _check_outgoing_allowed(self, wallet: str) -> None:
        """v0.5: nothing leaves a wallet with a challenged or funded channel (ClearNode PR #414)."""
        channels = self.ledger.channels_of(wallet)
        if any(c.status == "challenged" for c in channels):
            raise _fail(f"participant {wallet} has challenged channels, cannot execute operation")
        funded = sum(1 for c in channels if not c.is_closed and c.amount != 0)
        if funded:
            raise _fail(
                f"operation denied: non-zero allocation in {funded} channel(s) detected "
                f"owned by wallet {wallet}"
            )

    # --- node-side payouts --------------------------------------------------------------------

    def transfer_from(self, from_account: str, to_account: str, asset: str, units: int) -> Outcome:
        """A node-initiated transfer (the faucet): the same ledger effect and notifications."""
        if units <= 0:
            raise _fail(f"invalid allocation: {units} for asset {asset}")
        if from_account == to_account:
            raise _fail("cannot transfer to self")
        if units > self.ledger.balance(from_account, asset):
            raise _fail(f"insufficient funds: {from_account} for asset {asset}")
        tx = self.ledger.transfer(from_account, to_account, asset, units)
        tx_json = (self.tx_json(tx),)
        notes = [
            self.balance_note(from_account),
            Note(from_account, "tr", txs=tx_json),
            self.balance_note(to_account),
            Note(to_account, "tr", txs=tx_json),
        ]
        return Outcome("transfer", {"transactions": list(tx_json)}, notes)

    def _seed_faucet(self) -> None:
        faucet = self.config.faucet_account
        if faucet is None or self.ledger.meta.get("faucet_seeded") == faucet:
            return
        for asset in {a.symbol for a in self.config.assets}:
            units = self.config.faucet_seed_units
            self.ledger.add(faucet, asset, units)
            self.ledger.record_tx("deposit", self.broker_address, faucet, asset, units)
        self.ledger.set_meta("faucet_seeded", faucet)
