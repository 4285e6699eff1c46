"""The v1 RPC methods: parameters in, node rules applied, ledger changed, result out.

:class:`NitronodeService` holds one coroutine per method (``METHODS``). Each either returns
the result payload or raises :class:`~settlement_widgets.errors.RelayError` whose text goes
verbatim into the type-4 error frame, so clients can match the Go node's texts where the
reference gives them (``"failed to parse parameters"``, ``"transition is not supported
yet"``, ``"invalid incoming state user signature: …"``).

Every check runs before the first mutation, so a refused request changes nothing. The rules
are the Go node's (Nitrolite v1.4.1 Nitronode); the state arithmetic itself is
the core's (:func:`~settlement_widgets.channel.v1.core.lifecycle.next_state`,
:func:`~settlement_widgets.channel.v1.core.lifecycle.apply_transition`,
:func:`~settlement_widgets.channel.v1.core.lifecycle.validate_advancement`), never re-derived.

Before any signature the node checks that the funds the state gives the user are backed
(:mod:`.backing`: channel ids never reused, on-chain steps confirmed after the chain's
``confirmation_delay_secs`` before the next state, no state for a channel the chain does
not show operating, no spend beyond the backed balance). Without a
:class:`~.chain_view.ChainView` the node assumes every co-signed on-chain step was carried
out: a channel is ``open`` once its creation state is co-signed and ``closed`` once
its finalize state is, and the ``enforced`` balance is the user balance of the last
co-signed state that goes on chain (creation, deposit, withdrawal, finalize).

The handlers are layered by area, each module one class the next extends: :mod:`.reads`
(node, user and channel reads), :mod:`.channel_states` (creation and state submission),
:mod:`.key_states` (session keys), :mod:`.app_handlers` (app sessions); :mod:`.params` holds
the parameter readers and texts they share. This module binds them to the method names.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

from ....keys import PrivateKey
from .app_handlers import AppSessionHandlers
from .backing import BackingGuard
from .chain_view import ChainView, node_view
from .config import NitronodeConfig
from .ledger import NitronodeLedger
from .params import (
    FAILED_TO_PARSE,
    INTERNAL_ERROR,
    NOT_SUPPORTED_YET,
    Handler,
    _now_ms,
)

__all__ = [
    "FAILED_TO_PARSE",
    "INTERNAL_ERROR",
    "NOT_SUPPORTED_YET",
    "NitronodeService",
]

_log = logging.getLogger(__name__)


class NitronodeService(AppSessionHandlers):
    """The node's request handlers over one :class:`NitronodeLedger`."""

    def __init__(
        self,
        config: NitronodeConfig,
        ledger: NitronodeLedger,
        *,
        chain_view: ChainView | Mapping[int, ChainView] | None = None,
        clock_ms: Callable[[], int] = _now_ms,
    ) -> None:
        self.config = config
        self.ledger = ledger
        #: head reads (wire status, ``enforced``) and confirmed reads (the backing rules);
        #: a node serving several chains reads each channel on its own chain
        self.chain_view = node_view(chain_view, self._channel_chain)
        self.backing = BackingGuard(config, ledger, self.chain_view)
        self._key: PrivateKey = config.node_key
        self._decimals = config.token_decimals()
        self._clock_ms = clock_ms
        self.methods: dict[str, Handler] = {
            "node.v1.ping": self.ping,
            "node.v1.get_config": self.get_config,
            "node.v1.get_assets": self.get_assets,
            "user.v1.get_balances": self.get_balances,
            "user.v1.get_transactions": self.get_transactions,
            "channels.v1.get_home_channel": self.get_home_channel,
            "channels.v1.get_escrow_channel": self.get_escrow_channel,
            "channels.v1.get_channels": self.get_channels,
            "channels.v1.get_latest_state": self.get_latest_state,
            "channels.v1.request_creation": self.request_creation,
            "channels.v1.submit_state": self.submit_state,
            "channels.v1.submit_session_key_state": self.submit_channel_key_state,
            "channels.v1.get_last_key_states": self.get_channel_key_states,
            "app_sessions.v1.create_app_session": self.create_app_session,
            "app_sessions.v1.submit_deposit_state": self.submit_deposit_state,
            "app_sessions.v1.submit_app_state": self.submit_app_state,
            "app_sessions.v1.get_app_definition": self.get_app_definition,
            "app_sessions.v1.get_app_sessions": self.get_app_sessions,
            "app_sessions.v1.submit_session_key_state": self.submit_app_key_state,
            "app_sessions.v1.get_last_key_states": self.get_app_key_states,
        }

    def _channel_chain(self, channel_id: str) -> int | None:
        """The blockchain id of a channel the ledger knows (None: unknown)."""
        channel = self.ledger.channels.get(channel_id) or self.ledger.channels.get(
            channel_id.lower()
        )
        return int(channel["blockchain_id"]) if channel is not None else None
