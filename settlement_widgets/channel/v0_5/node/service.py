"""What the relay node does with each request and each custody event (ClearNode v0.5 rules).

:class:`RelayService` is the protocol without the sockets: it takes a parsed request and the
connection's :class:`Session`, checks it the way the ClearNode does, changes the
:class:`~.ledger.Ledger` in memory and returns an :class:`Outcome` (the reply and the
notifications to push). A refusal raises :class:`~settlement_widgets.errors.RelayError` whose
text is the node's error message (the v0.5 ClearNode's texts, or ours where
we know none); nothing is changed in that case, because every check runs before
the first mutation.

Handlers never await: a request is checked and applied in one step of the event loop, so
two requests can never interleave between a balance check and the debit.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from typing import Final

from ....keys import PrivateKey
from .auth import AuthHandlers
from .base import CLEARNODE_APPLICATION, Note, Outcome, Session, _fail

# the memoised formatters lived here before the split; tests/unit/test_fast_paths.py imports them
from .base import _rfc3339 as _rfc3339
from .base import _units as _units
from .chain_events import ChainEventEffects
from .channels import ChannelHandlers
from .clock import now_ms
from .config import RelayConfig
from .ledger import Ledger
from .transfers import TransferHandlers
from .wire import Incoming

__all__ = [
    "CLEARNODE_APPLICATION",
    "PRIVATE_METHODS",
    "PUBLIC_METHODS",
    "Note",
    "Outcome",
    "RelayService",
    "Session",
]

PUBLIC_METHODS: Final = (
    "ping",
    "get_config",
    "get_assets",
    "get_channels",
    "get_ledger_transactions",
    "auth_request",
    "auth_verify",
)
PRIVATE_METHODS: Final = (
    "get_ledger_balances",
    "get_user_tag",
    "get_session_keys",
    "transfer",
    "create_channel",
    "resize_channel",
    "close_channel",
)


class RelayService(AuthHandlers, TransferHandlers, ChannelHandlers, ChainEventEffects):
    """The node's request handlers and chain-event effects over one :class:`Ledger`.

    Composed from one class per concern, each in the module of that name: :mod:`.auth`
    (login, session keys, tags), :mod:`.transfers` (transfers and ledger reads),
    :mod:`.channels` (channel RPCs), :mod:`.chain_events` (custody events); the shared state
    and helpers are in :mod:`.base`. This class owns the dispatch.
    """

    def __init__(
        self,
        config: RelayConfig,
        ledger: Ledger,
        broker_key: PrivateKey,
        jwt_secret: bytes,
        *,
        read_connection: sqlite3.Connection | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(config, ledger, broker_key, clock=clock)
        self._jwt_secret = jwt_secret
        self._read = read_connection
        self._challenges = {}
        self._addresses = {}
        self._config_result = {
            "broker_address": self.broker_address,
            "networks": [n.to_json() for n in config.networks],
        }
        self._public: dict[str, Callable[[Session, Incoming], Outcome]] = {
            "ping": self._ping,
            "get_config": self._get_config,
            "get_assets": self._get_assets,
            "get_channels": self._get_channels,
            "get_ledger_transactions": self._get_ledger_transactions,
            "auth_request": self._auth_request,
            "auth_verify": self._auth_verify,
        }
        self._private: dict[str, Callable[[Session, Incoming], Outcome]] = {
            "get_ledger_balances": self._get_ledger_balances,
            "get_user_tag": self._get_user_tag,
            "get_session_keys": self._get_session_keys,
            "transfer": self._transfer,
            "create_channel": self._create_channel,
            "resize_channel": self._resize_channel,
            "close_channel": self._close_channel,
        }
        self._seed_faucet()

    # --- dispatch -----------------------------------------------------------------------------

    def handle(self, session: Session, req: Incoming) -> Outcome:
        """Check and apply one request; raise :class:`RelayError` with the node's message."""
        handler = self._public.get(req.method)
        if handler is not None:
            return handler(session, req)
        handler = self._private.get(req.method)
        if handler is None:
            raise _fail(f"unknown method: {req.method}")
        if session.wallet is None:
            raise _fail("authentication required")
        self._check_timestamp(req.timestamp)
        return handler(session, req)

    def _check_timestamp(self, ts: int) -> None:
        # ClearNode ValidateTimestamp: 13-digit Unix ms, at most MSG_EXPIRY_TIME old
        if not 1_000_000_000_000 <= ts <= 9_999_999_999_999:
            raise _fail("invalid message timestamp")
        if now_ms(self._clock) - ts > self.config.message_expiry_ms:
            raise _fail("invalid message timestamp")

    # --- public methods -----------------------------------------------------------------------

    def _ping(self, session: Session, req: Incoming) -> Outcome:
        return Outcome("pong", None)

    def _get_config(self, session: Session, req: Incoming) -> Outcome:
        return Outcome("get_config", self._config_result)

    def _get_assets(self, session: Session, req: Incoming) -> Outcome:
        chain_id = req.params.get("chain_id")
        if chain_id is not None and type(chain_id) is not int:
            raise _fail("failed to parse parameters: chain_id must be an integer")
        assets = [a.to_json() for a in self.config.assets if not chain_id or a.chain_id == chain_id]
        return Outcome("get_assets", {"assets": assets})
