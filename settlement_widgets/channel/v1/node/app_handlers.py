"""The Nitronode's app-session handlers: create, deposit, update, read app sessions."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from ....errors import SettlementValueError
from ..core.app_sessions import (
    QUORUM_SIG_SESSION_KEY,
    QUORUM_SIG_WALLET,
    app_session_id,
    create_app_session_hash,
    update_hash,
)
from ..core.decimals import (
    decimal_places,
    exact_add,
    exact_sub,
    parse_decimal,
    plain_decimal_string,
)
from ..core.transitions import sig_validators_from_bitmap
from .key_states import KeyStates
from .ledger import wallet_key
from .params import (
    _APP_ID,
    _CLOSE,
    _DEPOSIT,
    _MAX_PARTICIPANTS,
    _MAX_SESSION_DATA,
    _OPERATE,
    _WITHDRAW,
    FAILED_TO_PARSE,
    T,
    _fail,
    _mapping,
    _page,
    _pagination,
    _parse_state,
    _req_text,
    _text,
    _uint,
    _wallet,
)
from .signatures import decode_hex, recover_eip191

__all__ = ["AppSessionHandlers"]


class AppSessionHandlers(KeyStates):
    """``app_sessions.v1.*``: quorum-signed app sessions over the users' channels."""

    # --- app sessions -----------------------------------------------------------------------

    def _quorum(
        self,
        digest: bytes,
        signatures: Any,
        participants: Sequence[Mapping[str, Any]],
        quorum: int,
        scope: tuple[str, str | None],
    ) -> None:
        """Attribute each quorum signature to a participant and require ``quorum`` weight."""
        if not isinstance(signatures, list) or not all(isinstance(s, str) for s in signatures):
            raise _fail(FAILED_TO_PARSE)
        weights = {
            wallet_key(p["wallet_address"]): int(p["signature_weight"]) for p in participants
        }
        signed: set[str] = set()
        now_s = self._clock_ms() // 1000
        for text in signatures:
            try:
                raw = decode_hex(text, field="quorum signature")
                if len(raw) != 66 or raw[0] not in (QUORUM_SIG_WALLET, QUORUM_SIG_SESSION_KEY):
                    raise SettlementValueError("expected 0xA1 or 0xA2 and a 65-byte signature")
                signer = recover_eip191(digest, raw[1:]).lower()
            except SettlementValueError as exc:
                raise _fail(f"invalid quorum signature: {exc}") from None
            if raw[0] == QUORUM_SIG_SESSION_KEY:
                signer = self._app_key_owner(signer, scope, now_s) or ""
            if signer not in weights:
                raise _fail("invalid quorum signature: signer is not a participant")
            signed.add(signer)
        if sum(weights[s] for s in signed) < quorum:
            raise _fail("quorum not reached")

    def _app_key_owner(
        self, session_key: str, scope: tuple[str, str | None], now_s: int
    ) -> str | None:
        """The wallet whose active app session key this is, for this application/session."""
        application, session_id = scope
        for (kind, user, key), history in self.ledger.key_states.items():
            if kind != "app" or key != session_key or not history:
                continue
            latest = history[-1]
            if int(latest["expires_at"]) <= now_s:
                continue
            if application in latest["application_ids"] or (
                session_id is not None and session_id in latest["app_session_ids"]
            ):
                return user
        return None

    async def create_app_session(self, params: Mapping[str, Any]) -> dict[str, Any]:
        raw = _mapping(params.get("definition"))
        application = _req_text(raw, "application_id")
        participants_raw = raw.get("participants")
        quorum = raw.get("quorum")
        session_data = params.get("session_data", "")
        if (
            not isinstance(participants_raw, list)
            or isinstance(quorum, bool)
            or not isinstance(quorum, int)
            or not isinstance(session_data, str)
        ):
            raise _fail(FAILED_TO_PARSE)
        participants: list[dict[str, Any]] = []
        for p in participants_raw:
            p = _mapping(p)
            weight = p.get("signature_weight")
            if isinstance(weight, bool) or not isinstance(weight, int) or not 0 <= weight <= 255:
                raise _fail(FAILED_TO_PARSE)
            participants.append(
                {"wallet_address": _req_text(p, "wallet_address"), "signature_weight": weight}
            )
            _wallet(p["wallet_address"])
        definition: dict[str, Any] = {
            "application_id": application,
            "participants": participants,
            "quorum": quorum,
            "nonce": str(_uint(raw.get("nonce"))),
        }
        if not _APP_ID.match(application):
            raise _fail(
                "invalid app session definition: application_id must match ^[a-z0-9_-]{1,66}$"
            )
        if not participants or len(participants) > _MAX_PARTICIPANTS:
            raise _fail(f"invalid app session definition: 1 to {_MAX_PARTICIPANTS} participants")
        wallets = [wallet_key(p["wallet_address"]) for p in participants]
        if len(set(wallets)) != len(wallets):
            raise _fail("invalid app session definition: duplicate participant")
        if not 0 < quorum <= sum(p["signature_weight"] for p in participants):
            raise _fail("invalid app session definition: quorum exceeds the total weight")
        if len(session_data.encode()) > _MAX_SESSION_DATA:
            raise _fail(f"session_data exceeds {_MAX_SESSION_DATA} bytes")
        session_id = "0x" + app_session_id(definition).hex()
        if session_id in self.ledger.app_sessions:
            raise _fail("app session already exists")
        digest = create_app_session_hash(definition, session_data)
        self._quorum(digest, params.get("quorum_sigs"), participants, quorum, (application, None))
        now = self._clock_ms()
        self.ledger.put_app_session(
            {
                "app_session_id": session_id,
                "status": "open",
                "app_definition": definition,
                "session_data": session_data,
                "version": "1",
                "allocations": [],
                "created_at_ms": now,
                "updated_at_ms": now,
            }
        )
        return {"app_session_id": session_id, "version": "1", "status": "open"}

    def _app_update(
        self, params: Mapping[str, Any]
    ) -> tuple[dict[str, Any], dict[str, Any], dict[tuple[str, str], Decimal]]:
        """(update, session, new allocations) after the checks every update shares."""
        raw = _mapping(params.get("app_state_update"))
        intent = raw.get("intent")
        allocations_raw = raw.get("allocations")
        session_data = raw.get("session_data", "")
        if (
            isinstance(intent, bool)
            or not isinstance(intent, int)
            or not isinstance(allocations_raw, list)
            or not isinstance(session_data, str)
        ):
            raise _fail(FAILED_TO_PARSE)
        update: dict[str, Any] = {
            "app_session_id": _req_text(raw, "app_session_id").lower(),
            "intent": intent,
            "version": str(_uint(raw.get("version"))),
            "allocations": [],
            "session_data": session_data,
        }
        allocations: dict[tuple[str, str], Decimal] = {}
        for a in allocations_raw:
            a = _mapping(a)
            entry = {
                "participant": _req_text(a, "participant"),
                "asset": _req_text(a, "asset"),
                "amount": _req_text(a, "amount"),
            }
            _wallet(entry["participant"])
            update["allocations"].append(entry)
            try:
                amount = parse_decimal(entry["amount"])
            except SettlementValueError:
                raise _fail(FAILED_TO_PARSE) from None
            asset = self.config.asset(entry["asset"])
            if asset is None:
                raise _fail(f"asset {entry['asset']} is not supported")
            if amount < 0 or decimal_places(amount) > asset.decimals:
                raise _fail(f"invalid allocation amount {entry['amount']}")
            key = (wallet_key(entry["participant"]), entry["asset"])
            if key in allocations:
                raise _fail("invalid allocations: duplicate participant and asset")
            allocations[key] = amount
        session = self.ledger.app_sessions.get(update["app_session_id"])
        if session is None:
            raise _fail("app session not found")
        if session["status"] != "open":
            raise _fail("app session is closed")
        if int(update["version"]) != int(session["version"]) + 1:
            raise _fail(f"invalid app session version: expected {int(session['version']) + 1}")
        members = {
            wallet_key(p["wallet_address"]) for p in session["app_definition"]["participants"]
        }
        if any(w not in members for w, _ in allocations):
            raise _fail("invalid allocations: allocation to a non-participant")
        if len(session_data.encode()) > _MAX_SESSION_DATA:
            raise _fail(f"session_data exceeds {_MAX_SESSION_DATA} bytes")
        definition = session["app_definition"]
        try:
            digest = update_hash(update)
        except SettlementValueError:
            raise _fail(FAILED_TO_PARSE) from None
        self._quorum(
            digest,
            params.get("quorum_sigs"),
            definition["participants"],
            int(definition["quorum"]),
            (definition["application_id"], update["app_session_id"]),
        )
        return update, session, allocations

    @staticmethod
    def _current_allocations(session: Mapping[str, Any]) -> dict[tuple[str, str], Decimal]:
        return {
            (wallet_key(a["participant"]), a["asset"]): parse_decimal(a["amount"])
            for a in session["allocations"]
        }

    @staticmethod
    def _totals(allocations: Mapping[tuple[str, str], Decimal]) -> dict[str, Decimal]:
        totals: dict[str, Decimal] = {}
        for (_, asset), amount in allocations.items():
            totals[asset] = exact_add(totals.get(asset, Decimal(0)), amount)
        return {a: t for a, t in totals.items() if t != 0}

    def _advance_session(
        self, session: Mapping[str, Any], update: Mapping[str, Any], status: str = "open"
    ) -> None:
        self.ledger.put_app_session(
            {
                **session,
                "status": status,
                "version": update["version"],
                "session_data": update["session_data"],
                "allocations": [
                    {**a, "amount": plain_decimal_string(a["amount"])}
                    for a in update["allocations"]
                ],
                "updated_at_ms": self._clock_ms(),
            }
        )

    async def submit_deposit_state(self, params: Mapping[str, Any]) -> dict[str, Any]:
        user_state = _parse_state(params.get("user_state"))
        update, session, allocations = self._app_update(params)
        if update["intent"] != _DEPOSIT:
            raise _fail("invalid app state update: intent must be deposit")
        current = self._current_allocations(session)
        deltas = {
            k: exact_sub(allocations.get(k, Decimal(0)), current.get(k, Decimal(0)))
            for k in set(current) | set(allocations)
        }
        if any(d < 0 for d in deltas.values()):
            raise _fail("invalid app state update: a deposit cannot decrease an allocation")
        grown = {k: d for k, d in deltas.items() if d > 0}
        depositor = (wallet_key(user_state["user_wallet"]), user_state["asset"])
        transition = user_state["transition"]
        if list(grown) != [depositor]:
            raise _fail("invalid app state update: only the depositor's allocation may grow")
        if transition["type"] != T.COMMIT:
            raise _fail("invalid state transition: user_state must carry a commit transition")
        if transition["account_id"].lower() != update["app_session_id"]:
            raise _fail("invalid state transition: commit account must be the app session id")
        if parse_decimal(transition["amount"]) != grown[depositor]:
            raise _fail("invalid state transition: commit amount does not match the deposit")
        await self._settle_closed(user_state["user_wallet"], user_state["asset"])
        previous = self.ledger.latest_state(user_state["user_wallet"], user_state["asset"])
        channel_id = previous.get("home_channel_id") if previous is not None else None
        channel = self.ledger.channels.get(channel_id) if channel_id else None
        if previous is None or channel is None:
            raise _fail("no home channel found for this wallet and asset")
        chain = await self.backing.check_active(channel, user_state["user_wallet"])
        self._check_advancement(previous, user_state)
        self.backing.check_backed(previous, user_state, channel["channel_id"], chain)
        self._verify_user_sig(
            user_state, sig_validators_from_bitmap(channel["approved_sig_validators"])
        )
        signature = self._node_sign(user_state)
        self.ledger.put_state(user_state)
        self._record(user_state, int(T.COMMIT), user_state["user_wallet"], update["app_session_id"])
        self._advance_session(session, update)
        return {"signature": signature}

    async def submit_app_state(self, params: Mapping[str, Any]) -> dict[str, Any]:
        update, session, allocations = self._app_update(params)
        intent = update["intent"]
        current = self._current_allocations(session)
        if intent == _DEPOSIT:
            raise _fail("invalid app state update: deposits go through submit_deposit_state")
        if intent not in (_OPERATE, _WITHDRAW, _CLOSE):
            raise _fail(f"invalid app state update: unknown intent {intent}")
        releases: list[tuple[str, str, Decimal]] = []
        if intent in (_OPERATE, _CLOSE):
            if self._totals(allocations) != self._totals(current):
                raise _fail("invalid app state update: allocations must keep the session totals")
            if intent == _CLOSE:
                releases = [(w, a, x) for (w, a), x in allocations.items() if x > 0]
        else:
            for key in set(current) | set(allocations):
                delta = exact_sub(current.get(key, Decimal(0)), allocations.get(key, Decimal(0)))
                if delta < 0:
                    raise _fail("invalid app state update: a withdrawal cannot grow an allocation")
                if delta > 0:
                    releases.append((*key, delta))
        wallets = {
            wallet_key(p["wallet_address"]): p["wallet_address"]
            for p in session["app_definition"]["participants"]
        }
        signable = [await self.backing.may_sign_issued(w, a) for w, a, _ in releases]
        issued = []
        for (wallet, asset, amount), sign in zip(releases, signable, strict=True):
            state = self._issue(
                self._display_wallet(wallets[wallet], asset),
                asset,
                {
                    "type": int(T.RELEASE),
                    "account_id": update["app_session_id"],
                    "amount": plain_decimal_string(amount),
                },
                sign=sign,
            )
            issued.append(state)
        self._advance_session(session, update, "closed" if intent == _CLOSE else "open")
        for state in issued:
            self.ledger.put_state(state)
            self._record(state, int(T.RELEASE), update["app_session_id"], state["user_wallet"])
        return {}

    def _session_json(self, session: Mapping[str, Any]) -> dict[str, Any]:
        out = {
            "app_session_id": session["app_session_id"],
            "status": session["status"],
            "app_definition": session["app_definition"],
        }
        if session["session_data"]:
            out["session_data"] = session["session_data"]
        out["version"] = session["version"]
        out["allocations"] = session["allocations"]
        return out

    async def get_app_definition(self, params: Mapping[str, Any]) -> dict[str, Any]:
        session = self.ledger.app_sessions.get(_req_text(params, "app_session_id").lower())
        return {} if session is None else {"definition": session["app_definition"]}

    async def get_app_sessions(self, params: Mapping[str, Any]) -> dict[str, Any]:
        session_id = _text(params, "app_session_id", optional=True)
        participant = _text(params, "participant", optional=True)
        status = _text(params, "status", optional=True)
        if session_id is None and participant is None:
            raise _fail("either app_session_id or participant must be provided")
        offset, limit, sort = _pagination(params)
        sessions = sorted(
            self.ledger.app_sessions.values(),
            key=lambda s: (s["created_at_ms"], s["app_session_id"]),
        )
        if session_id is not None:
            sessions = [s for s in sessions if s["app_session_id"] == session_id.lower()]
        if participant is not None:
            sessions = [
                s
                for s in sessions
                if any(
                    p["wallet_address"].lower() == participant.lower()
                    for p in s["app_definition"]["participants"]
                )
            ]
        if status is not None:
            sessions = [s for s in sessions if s["status"] == status]
        if sort == "desc":
            sessions.reverse()
        page, metadata = _page(sessions, offset, limit)
        return {"app_sessions": [self._session_json(s) for s in page], "metadata": metadata}
