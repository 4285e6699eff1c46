"""App sessions on Nitrolite v1: an application's escrow on the node, between participants.

An app session (Nitrolite v1.4.1) has participants with signature weights and
a quorum; its allocations change only with a quorum of signatures over the update's hash
(``0xA1`` ‖ EIP-191 by each wallet). A participant commits funds from its home channel (a
``commit`` state on its own chain, co-signed by the node beside the app update), the
allocations are redistributed by new versions, and closing releases each allocation into
its participant's channel as a node-issued ``release`` state.

:class:`AppSessionsMixin` is the part of :class:`~.provider.ChannelProviderV1` that does this;
other participants sign through their own providers (``cosigners``), so a notebook can play
both sides while each key stays with its provider.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from ....addresses import validate_address
from ....errors import ChannelNotFoundError, ChannelStateError, SettlementValueError
from ..core.app_sessions import app_session_id, create_app_session_hash, update_hash

if TYPE_CHECKING:
    import asyncio

    from ....signer import Signer
    from .rpc_client import V1RpcClient
    from .store import V1Store

__all__ = ["AppSession", "AppSessionsMixin"]

_QUORUM_WALLET: Final = b"\xa1"


@dataclass(frozen=True)
class AppSession:
    """An app session as the node last confirmed it (allocations in smallest units)."""

    id: str
    application_id: str
    participants: tuple[str, ...]
    weights: tuple[int, ...]
    quorum: int
    nonce: int
    version: int
    status: str
    allocations: Mapping[str, int]
    session_data: str


class AppSessionsMixin:
    """App sessions for :class:`~.provider.ChannelProviderV1` (see the module docstring)."""

    if TYPE_CHECKING:  # set and implemented by ChannelProviderV1
        wallet: Signer
        _client: V1RpcClient
        _asset: str
        _op_lock: asyncio.Lock

        @property
        def address(self) -> str: ...

        @property
        def store(self) -> V1Store: ...

        async def connect(self) -> Any: ...

        def _display(self, units: int, field: str = "amount") -> str: ...

        def _units(self, display: Any) -> int: ...

        async def _latest_state(self) -> dict[str, Any] | None: ...

    # --- app sessions -------------------------------------------------------------------

    async def sign_app_hash(self, digest: bytes) -> str:
        """This wallet's quorum signature (0xA1 ‖ EIP-191 over the 32-byte hash)."""
        sig = await self.wallet.sign_message(digest)
        return "0x" + _QUORUM_WALLET.hex() + sig.removeprefix("0x")

    async def _quorum(self, digest: bytes, cosigners: Sequence[AppSessionsMixin]) -> list[str]:
        return [await self.sign_app_hash(digest)] + [
            await other.sign_app_hash(digest) for other in cosigners
        ]

    async def create_app_session(
        self,
        participants: Sequence[str],
        *,
        application_id: str,
        weights: Sequence[int] | None = None,
        quorum: int | None = None,
        session_data: str = "",
        nonce: int | None = None,
        cosigners: Sequence[AppSessionsMixin] = (),
    ) -> AppSession:
        """Create an app session between ``participants`` (this wallet among them). Every
        participant in ``cosigners`` signs beside this wallet until the quorum (default:
        everyone, equal weights) is met."""
        await self.connect()
        people = tuple(validate_address(p, field="participant") for p in participants)
        if self.address not in people:
            raise SettlementValueError("the app session's participants must include this wallet")
        weights = tuple(weights) if weights is not None else tuple(1 for _ in people)
        quorum = quorum if quorum is not None else sum(weights)
        definition = {
            "application_id": application_id,
            "participants": [
                {"wallet_address": p, "signature_weight": w}
                for p, w in zip(people, weights, strict=True)
            ],
            "quorum": quorum,
            "nonce": str(nonce if nonce is not None else time.time_ns() // 1000),
        }
        digest = create_app_session_hash(definition, session_data)
        sigs = await self._quorum(digest, cosigners)
        reply = await self._client.app_sessions_v1_create_app_session(
            definition, session_data, sigs
        )
        sid = str(reply["app_session_id"])
        if sid.lower() != "0x" + app_session_id(definition).hex():
            raise ChannelStateError(f"the node answered app session id {sid}, not ours")
        self.store.put_app_session(
            sid,
            definition=definition,
            version=1,
            status="open",
            allocations=[],
            session_data=session_data,
        )
        return self.get_app_session(sid)

    def get_app_session(self, app_session_id: str) -> AppSession:
        row = self.store.app_session(app_session_id)
        if row is None:
            raise ChannelNotFoundError(f"no app session {app_session_id} in this store")
        d = row["definition"]
        allocations: dict[str, int] = {}
        for a in row["allocations"]:
            allocations[a["participant"]] = allocations.get(a["participant"], 0) + self._units(
                a["amount"]
            )
        return AppSession(
            id=row["app_session_id"],
            application_id=d["application_id"],
            participants=tuple(p["wallet_address"] for p in d["participants"]),
            weights=tuple(int(p["signature_weight"]) for p in d["participants"]),
            quorum=int(d["quorum"]),
            nonce=int(d["nonce"]),
            version=row["version"],
            status=row["status"],
            allocations=allocations,
            session_data=row["session_data"],
        )

    def _allocations(self, session: AppSession, units: Mapping[str, int]) -> list[dict[str, Any]]:
        out = []
        for participant in session.participants:
            value = units.get(participant, units.get(participant.lower(), 0))
            out.append(
                {"participant": participant, "asset": self._asset, "amount": self._display(value)}
            )
        return out

    async def _app_update(
        self,
        session: AppSession,
        intent: int,
        allocations: Mapping[str, int],
        session_data: str | None,
        cosigners: Sequence[AppSessionsMixin],
    ) -> dict[str, Any]:
        update = {
            "app_session_id": session.id,
            "intent": intent,
            "version": str(session.version + 1),
            "allocations": self._allocations(session, allocations),
            "session_data": session.session_data if session_data is None else session_data,
        }
        update["quorum_sigs"] = await self._quorum(update_hash(update), cosigners)
        return update

    def _save_update(
        self, session: AppSession, update: Mapping[str, Any], status: str
    ) -> AppSession:
        self.store.put_app_session(
            session.id,
            definition=self.store.app_session(session.id)["definition"],  # type: ignore[index]
            version=int(update["version"]),
            status=status,
            allocations=list(update["allocations"]),
            session_data=str(update["session_data"]),
        )
        return self.get_app_session(session.id)

    async def deposit_to_app_session(
        self,
        app_session_id: str,
        amount: int,
        *,
        cosigners: Sequence[AppSessionsMixin] = (),
    ) -> AppSession:
        """Commit ``amount`` of this wallet's channel balance into the app session (a
        commit state on our chain, co-signed by the node, beside the app update)."""
        await self.connect()
        session = self.get_app_session(app_session_id)
        units = dict(session.allocations)
        units[self.address] = units.get(self.address, 0) + amount
        update = await self._app_update(session, 1, units, None, cosigners)
        async with self._op_lock:
            await self._client.submit_app_session_deposit(
                {k: v for k, v in update.items() if k != "quorum_sigs"},
                update["quorum_sigs"],
                self._asset,
                self._display(amount),
            )
            await self._latest_state()
        return self._save_update(session, update, "open")

    async def submit_app_state(
        self,
        app_session_id: str,
        allocations: Mapping[str, int],
        *,
        session_data: str | None = None,
        cosigners: Sequence[AppSessionsMixin] = (),
    ) -> AppSession:
        """A new app state (intent operate): the same total, redistributed."""
        await self.connect()
        session = self.get_app_session(app_session_id)
        update = await self._app_update(session, 0, allocations, session_data, cosigners)
        await self._client.submit_app_state(
            {k: v for k, v in update.items() if k != "quorum_sigs"}, update["quorum_sigs"]
        )
        return self._save_update(session, update, "open")

    async def close_app_session(
        self,
        app_session_id: str,
        allocations: Mapping[str, int] | None = None,
        *,
        cosigners: Sequence[AppSessionsMixin] = (),
    ) -> AppSession:
        """Close the app session: the node releases each allocation into its participant's
        channel (a release state each, which :meth:`sync` picks up)."""
        await self.connect()
        session = self.get_app_session(app_session_id)
        final = session.allocations if allocations is None else allocations
        update = await self._app_update(session, 3, final, None, cosigners)
        await self._client.submit_app_state(
            {k: v for k, v in update.items() if k != "quorum_sigs"}, update["quorum_sigs"]
        )
        return self._save_update(session, update, "closed")
