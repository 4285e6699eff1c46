"""What every part of the relay service shares: the request/reply types and the helpers.

:class:`Session`, :class:`Note` and :class:`Outcome` are what :class:`~.service.RelayService`
exchanges with the server; :class:`ServiceBase` holds the state every handler group reads
(config, ledger, broker key, clock) and the checks and JSON shapes they all use (signers,
amounts, ``tx``/``channel`` entries). The handler groups (:mod:`.auth`, :mod:`.transfers`,
:mod:`.channels`, :mod:`.chain_events`) subclass it, and :mod:`.service` composes them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Final

from ....errors import RelayError, SettlementError
from ....keys import PrivateKey
from ..core.amounts import parse_decimal_amount, to_decimal_string
from .config import RelayConfig
from .ledger import ChannelRecord, Ledger, TxRecord
from .wire import Incoming, recover_signer

__all__ = ["CLEARNODE_APPLICATION", "Note", "Outcome", "ServiceBase", "Session"]

#: a session key of this application may spend without allowance checks (as in ClearNode v0.5)
CLEARNODE_APPLICATION: Final = "clearnode"
_DEFAULT_LIMIT: Final = 10
_MAX_LIMIT: Final = 100


@dataclass(slots=True)
class Session:
    """Authentication state of one WebSocket connection."""

    wallet: str | None = None
    session_key: str | None = None
    application: str | None = None


@dataclass(slots=True)
class Note:
    """A notification for ``wallet``. ``bu`` and ``tr`` of one commit batch are coalesced
    (latest balances; all transactions), the others are sent as they are."""

    wallet: str
    method: str
    result: Any = None
    txs: tuple[dict[str, Any], ...] = ()


@dataclass(slots=True)
class Outcome:
    """A reply (``method`` and ``result``) plus what to push and to whom."""

    method: str
    result: Any
    notes: list[Note] = field(default_factory=list)
    #: the connection just authenticated as this wallet: push ``channels`` and ``bu`` to it
    authenticated: str | None = None


@lru_cache(maxsize=256)
def _rfc3339_base(seconds: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))


def _rfc3339(ms: int, *, millis: bool = False) -> str:
    # memoised per second: a busy node formats the same second for every transfer in it
    seconds, rest = divmod(ms, 1000)
    base = _rfc3339_base(seconds)
    return f"{base}.{rest:03d}Z" if millis else base + "Z"


@lru_cache(maxsize=4096)
def _amount_text(units: int, decimals: int) -> str:
    """``to_decimal_string`` memoised: every reply and ``tr`` repeats the few amounts a
    client sends, and ``bu`` the balances."""
    return to_decimal_string(units, decimals, signed=True)


@lru_cache(maxsize=4096)
def _units(text: str, decimals: int) -> int:
    """``parse_decimal_amount`` memoised: clients send the same few amount strings over and
    over, and allowances are re-read on every transfer. Errors are raised, never cached."""
    return parse_decimal_amount(text, decimals)


def _fail(message: str) -> RelayError:
    """The refusal the node answers with (its text is the ``error`` the client gets)."""
    return RelayError(message)


class ServiceBase:
    """The state and helpers every handler group of :class:`~.service.RelayService` uses."""

    def __init__(
        self,
        config: RelayConfig,
        ledger: Ledger,
        broker_key: PrivateKey,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.config = config
        self.ledger = ledger
        self.broker = broker_key
        self.broker_address = broker_key.address
        self._clock = clock
        self._checksums: dict[bytes, str] = {}
        self._decimals = {a.symbol: a.decimals for a in config.assets}

    # --- signers ------------------------------------------------------------------------------

    def _checksum(self, raw20: bytes) -> str:
        text = self._checksums.get(raw20)
        if text is None:
            from ....addresses import to_checksum

            text = to_checksum("0x" + raw20.hex())
            if len(self._checksums) > 100_000:
                self._checksums.clear()
            self._checksums[raw20] = text
        return text

    def _recover(self, req: Incoming, index: int) -> str:
        known = req.signers
        if known is not None and known[index] is not None:
            return self._checksum(known[index])  # type: ignore[arg-type]
        try:
            return self._checksum(recover_signer(req.digest, req.sigs[index]))
        except SettlementError:
            raise _fail("failed to verify signer") from None

    def wallet_of_signer(self, signer: str) -> str:
        """The wallet a signer acts for: itself, or the wallet of its active session key."""
        key = self.ledger.session_keys.get(signer)
        if key is not None and key.wallet != signer and key.is_active(self._clock()):
            return key.wallet
        return signer

    def _verify_signer(self, req: Incoming, wallet: str) -> str:
        """ClearNode ``verifySigner``: ``sig[0]`` is ``wallet``'s or its session key's."""
        if not req.sigs:
            raise _fail("missing participant signature")
        signer = self._recover(req, 0)
        if signer == wallet:
            return signer
        key = self.ledger.session_keys.get(signer)
        if key is None or key.wallet != wallet:
            raise _fail("invalid signature")
        if not key.is_active(self._clock()):
            raise _fail("session key validation failed: session key expired")
        return signer

    def _signing_wallets(self, req: Incoming) -> set[str]:
        """ClearNode ``getWallets``: the wallets behind every signature of the request."""
        if not req.sigs:
            raise _fail("missing participant signature")
        return {self.wallet_of_signer(self._recover(req, i)) for i in range(len(req.sigs))}

    def _private_signer(self, session: Session, req: Incoming) -> str:
        assert session.wallet is not None
        return self._verify_signer(req, session.wallet)

    # --- amounts and JSON shapes --------------------------------------------------------------

    def decimals(self, asset: str) -> int | None:
        return self._decimals.get(asset)

    def amount_text(self, units: int, asset: str) -> str:
        decimals = self._decimals.get(asset)
        if decimals is None:
            return str(units)
        return _amount_text(units, decimals)

    def balances_json(self, account: str) -> list[dict[str, str]]:
        return self.balances_to_json(self.ledger.balances_of(account))

    def balances_to_json(self, balances: list[tuple[str, int]]) -> list[dict[str, str]]:
        """``balance_updates`` entries of a :meth:`Ledger.balances_of` snapshot (taken when
        the change was made, formatted only when a notification is actually sent)."""
        return [
            {"asset": asset, "amount": self.amount_text(units, asset)} for asset, units in balances
        ]

    def tx_json(self, tx: TxRecord) -> dict[str, Any]:
        out: dict[str, Any] = {"id": tx.id, "tx_type": tx.tx_type, "from_account": tx.from_account}
        tag = self.ledger.tags.get(tx.from_account)
        if tag:
            out["from_account_tag"] = tag
        out["to_account"] = tx.to_account
        tag = self.ledger.tags.get(tx.to_account)
        if tag:
            out["to_account_tag"] = tag
        out["asset"] = tx.asset
        out["amount"] = self.amount_text(tx.amount, tx.asset)
        out["created_at"] = _rfc3339(tx.created_at, millis=True)
        return out

    def channel_json(self, ch: ChannelRecord, *, wallet: bool = True) -> dict[str, Any]:
        return {
            "channel_id": ch.channel_id,
            "participant": ch.participant,
            "status": ch.status,
            "token": ch.token,
            "wallet": ch.wallet if wallet else "",
            "amount": str(ch.amount),
            "chain_id": ch.chain_id,
            "adjudicator": ch.adjudicator,
            "challenge": ch.challenge,
            "nonce": ch.nonce,
            "version": ch.version,
            "created_at": _rfc3339(ch.created_at),
            "updated_at": _rfc3339(ch.updated_at),
        }

    def open_channels_json(self, wallet: str) -> dict[str, Any]:
        """The ``channels`` push after auth: the wallet's open channels."""
        return {
            "channels": [
                self.channel_json(ch)
                for ch in self.ledger.channels_of(wallet)
                if ch.status == "open"
            ]
        }

    @staticmethod
    def balance_note(wallet: str) -> Note:
        """A ``bu`` for ``wallet``; the server fills in the balances only if it is connected."""
        return Note(wallet, "bu")

    @staticmethod
    def _list_options(params: Mapping[str, Any]) -> tuple[int, int, bool]:
        offset = params.get("offset", 0)
        limit = params.get("limit", _DEFAULT_LIMIT)
        sort = params.get("sort", "desc")
        # a row offset the database can hold (SQLite's and Postgres' 64-bit signed range);
        # 2**64 used to reach the query and fail there as an internal error
        if type(offset) is not int or not 0 <= offset < 2**63:
            raise _fail(
                "failed to parse parameters: offset must be a non-negative integer below 2^63"
            )
        if type(limit) is not int or limit < 0:
            raise _fail("failed to parse parameters: limit must be a non-negative integer")
        if sort not in ("asc", "desc"):
            raise _fail('failed to parse parameters: sort must be "asc" or "desc"')
        return offset, min(limit or _DEFAULT_LIMIT, _MAX_LIMIT), sort == "desc"
