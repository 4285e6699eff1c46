"""The v1 client core's app-session and session-key calls (SDK ``Client``): a base of
:class:`.client_calls.V1ClientCore`, apart so each module stays small; the wallet's signer
and state signature are the core's."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from ....errors import InvalidFrameError, InvalidStateError, SettlementValueError
from .app_sessions import app_session_key_state_hash
from .client_assets import require_text
from .client_queries import ClientQueries
from .client_rpc import pick, uint_str
from .client_signers import channel_key_payload
from .lifecycle import apply_transition, next_state

if TYPE_CHECKING:
    from .client_signers import StateSigner

__all__ = ["AppSessionCalls"]


def _signature_from(payload: Mapping[str, Any], method: str) -> str:
    signature = payload.get("signature")
    if not isinstance(signature, str) or not signature.startswith("0x"):
        raise InvalidFrameError(f"invalid {method} result: missing signature")
    return signature


class AppSessionCalls(ClientQueries):
    """App sessions and session keys over the node's RPC (the core supplies the signer)."""

    if TYPE_CHECKING:

        def _signer(self) -> StateSigner: ...

        async def sign_state(self, state: Mapping[str, Any]) -> str: ...

    # --- app sessions (SDK Client) -----------------------------------------------------

    async def create_app_session(
        self,
        definition: Mapping[str, Any],
        session_data: str,
        quorum_sigs: Sequence[str],
        owner_sig: str | None = None,
    ) -> dict[str, Any]:
        """``{app_session_id, version, status}`` of the new session."""
        reply = await self.app_sessions_v1_create_app_session(
            definition, session_data, quorum_sigs, owner_sig
        )
        try:
            return {
                "app_session_id": require_text(reply["app_session_id"], "app_session_id"),
                "version": uint_str(reply["version"], "version"),
                "status": require_text(reply["status"], "status"),
            }
        except (KeyError, SettlementValueError) as exc:
            raise InvalidFrameError(f"invalid create_app_session result: {exc}") from None

    async def submit_app_session_deposit(
        self,
        app_state_update: Mapping[str, Any],
        quorum_sigs: Sequence[str],
        asset: str,
        amount: Decimal | str | int,
    ) -> str:
        """Move ``amount`` from the channel into the app session: a commit state, signed,
        sent with the deposit update. Returns the node's signature on the channel state."""
        current = await self.get_latest_state(self._signer().address, asset, False)
        if current is None:
            raise InvalidStateError(f"no channel state for asset {asset} to commit from")
        state = next_state(current)
        app_session_id = pick(app_state_update, "appSessionId", "app_session_id")
        apply_transition(state, {"type": 40, "account_id": app_session_id, "amount": amount})
        state["user_sig"] = await self.sign_state(state)
        reply = await self.app_sessions_v1_submit_deposit_state(
            app_state_update, quorum_sigs, state
        )
        return _signature_from(reply, "submit_deposit_state")

    async def submit_app_state(
        self, app_state_update: Mapping[str, Any], quorum_sigs: Sequence[str]
    ) -> None:
        """An operate / withdraw / close update (deposits: :meth:`submit_app_session_deposit`)."""
        await self.app_sessions_v1_submit_app_state(app_state_update, quorum_sigs)

    # --- session keys ------------------------------------------------------------------

    async def sign_channel_session_key_state(self, state: Mapping[str, Any]) -> str:
        """The wallet's ``user_sig`` for a channel session-key registration."""
        payload = channel_key_payload(state)
        return await self._signer().sign_wallet_message(payload)

    async def submit_channel_session_key_state(self, state: Mapping[str, Any]) -> None:
        await self.channels_v1_submit_session_key_state(state)

    async def sign_app_session_key_state(self, state: Mapping[str, Any]) -> str:
        """The wallet's ``user_sig`` for an app-session key registration."""
        return await self._signer().sign_wallet_message(app_session_key_state_hash(state))

    async def submit_app_session_key_state(self, state: Mapping[str, Any]) -> None:
        await self.app_sessions_v1_submit_session_key_state(state)
