"""The Nitronode's session key handlers: channel and app-session key states."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ....errors import SettlementValueError
from ..core.app_sessions import (
    app_session_key_state_hash,
)
from ..core.state import (
    channel_session_key_metadata_hash,
    pack_channel_session_key_auth,
)
from .channel_states import ChannelStates
from .params import (
    _KEY_STATES_PAGE,
    FAILED_TO_PARSE,
    _fail,
    _mapping,
    _page,
    _pagination,
    _req_text,
    _text,
    _uint,
    _wallet,
)
from .signatures import decode_hex, recover_eip191

__all__ = ["KeyStates"]


class KeyStates(ChannelStates):
    """``*.submit_session_key_state`` and ``*.get_last_key_states``."""

    # --- session keys -----------------------------------------------------------------------

    def _key_state(self, params: Mapping[str, Any], scopes: Sequence[str]) -> dict[str, Any]:
        raw = _mapping(params.get("state"))
        state: dict[str, Any] = {
            "user_address": _wallet(raw.get("user_address")),
            "session_key": _wallet(raw.get("session_key")),
            "version": str(_uint(raw.get("version"))),
        }
        for scope in scopes:
            items = raw.get(scope, [])
            if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
                raise _fail(FAILED_TO_PARSE)
            state[scope] = list(items)
        state["expires_at"] = str(_uint(raw.get("expires_at")))
        state["user_sig"] = _req_text(raw, "user_sig")
        session_sig = _text(raw, "session_key_sig", optional=True)
        if session_sig:
            state["session_key_sig"] = session_sig
        # keep the addresses as the user sent them: the hashes do not depend on letter case
        state["user_address"] = raw["user_address"]
        state["session_key"] = raw["session_key"]
        return state

    def _store_key_state(self, kind: str, state: dict[str, Any], message: bytes) -> None:
        history = self.ledger.key_state_history(kind, state["user_address"], state["session_key"])
        expected = int(history[-1]["version"]) + 1 if history else 1
        if int(state["version"]) != expected:
            raise _fail(f"invalid session key state: version must be {expected}")
        try:
            user_sig = decode_hex(state["user_sig"], field="user_sig")
            if recover_eip191(message, user_sig).lower() != state["user_address"].lower():
                raise SettlementValueError("user_sig is not from user_address")
            if int(state["expires_at"]) > self._clock_ms() // 1000:
                if "session_key_sig" not in state:
                    raise SettlementValueError("session_key_sig is required")
                key_sig = decode_hex(state["session_key_sig"], field="session_key_sig")
                if recover_eip191(message, key_sig).lower() != state["session_key"].lower():
                    raise SettlementValueError("session_key_sig is not from session_key")
        except SettlementValueError as exc:
            raise _fail(f"invalid session key state signature: {exc}") from None
        self.ledger.put_key_state(kind, state)

    async def submit_channel_key_state(self, params: Mapping[str, Any]) -> dict[str, Any]:
        state = self._key_state(params, ("assets",))
        metadata = channel_session_key_metadata_hash(
            state["user_address"], state["version"], state["assets"], state["expires_at"]
        )
        self._store_key_state(
            "channel", state, pack_channel_session_key_auth(state["session_key"], metadata)
        )
        return {}

    async def submit_app_key_state(self, params: Mapping[str, Any]) -> dict[str, Any]:
        state = self._key_state(params, ("application_ids", "app_session_ids"))
        self._store_key_state("app", state, app_session_key_state_hash(state))
        return {}

    def _key_states(self, kind: str, params: Mapping[str, Any]) -> dict[str, Any]:
        user = _wallet(params.get("user_address"))
        session_key = _text(params, "session_key", optional=True)
        include_inactive = params.get("include_inactive", False)
        if not isinstance(include_inactive, bool):
            raise _fail(FAILED_TO_PARSE)
        offset, limit, _ = _pagination(params, fixed=_KEY_STATES_PAGE)
        now_s = self._clock_ms() // 1000
        states = [
            s
            for s in self.ledger.latest_key_states(kind, user)
            if (session_key is None or s["session_key"].lower() == session_key.lower())
            and (include_inactive or int(s["expires_at"]) > now_s)
        ]
        page, metadata = _page(states, offset, limit)
        return {"states": page, "metadata": metadata}

    async def get_channel_key_states(self, params: Mapping[str, Any]) -> dict[str, Any]:
        return self._key_states("channel", params)

    async def get_app_key_states(self, params: Mapping[str, Any]) -> dict[str, Any]:
        return self._key_states("app", params)
