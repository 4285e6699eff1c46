"""One exception tree for the whole toolkit.

Every error the package raises derives from :class:`SettlementError`, so a notebook can
``except SettlementError`` once. Errors about bad input also derive from :class:`ValueError`
(through :class:`SettlementValueError`) so generic code that expects ``ValueError`` keeps
working. Messages say what was wrong and what to do about it; ``tests/unit/test_errors.py``
fails if package code raises a bare ``ValueError``/``TypeError``/``Exception``.

The tree::

    SettlementError
    ├── SettlementValueError (ValueError)      bad input: nothing was sent or changed
    │   ├── InvalidAddressError
    │   ├── InvalidAmountError
    │   ├── InvalidNetworkError
    │   ├── InvalidSignatureError
    │   ├── InvalidFrameError                   a malformed RPC frame
    │   ├── InvalidComparisonError              a comparison JSON that breaks its schema
    │   ├── InvalidStateError                   a channel state that breaks the protocol rules
    │   ├── ExpiredError                        stale timestamp, expired session key/intent
    │   ├── ReplayError                         a request or intent seen before
    │   ├── UnknownOptionError                  unknown keyword / method, with "did you mean"
    │   └── InsufficientBalanceError
    ├── ConfigurationError                      missing env var, artifacts not built, no sandbox
    │   └── RelayProtocolError                  the relay speaks another protocol (e.g. v1)
    ├── StorageError                            a local store (SQLite) failed to read or write
    ├── UnavailableError                        something we depend on cannot be reached
    │   ├── RelayUnavailableError
    │   ├── ChainUnavailableError
    │   ├── FaucetUnavailableError
    │   ├── AggregatorUnavailableError
    │   └── WalletUnavailableError              no browser wallet in the page, or no page
    ├── SettlementTimeoutError (TimeoutError)
    │   └── WalletTimeoutError                  the person did not answer the wallet in time
    ├── RemoteError                             a peer answered with an error
    │   ├── RelayError                          relay "error" frame
    │   ├── WalletError                         the browser wallet refused (EIP-1193 code)
    │   │   └── WalletRejectedError             the person rejected the request (4001)
    │   ├── FaucetError                         faucet answered non-2xx
    │   └── AggregatorError                     LI.FI API error (status, code, message)
    │       ├── RateLimitedError
    │       ├── AggregatorServerError           5xx after all retries (also Unavailable)
    │       ├── AggregatorResponseError         2xx body not JSON / not LI.FI's schema
    │       └── NoRouteError                    LI.FI found no route (code 1002 / empty)
    ├── TransactionFailedError                  a transaction reverted (decoded custom error)
    │   └── PolicyRejectedError                 the v4 policy refused an intent
    └── ChannelError
        ├── ChannelNotFoundError
        └── ChannelStateError                   operation not allowed in the channel's status
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol

__all__ = [
    "AggregatorError",
    "AggregatorResponseError",
    "AggregatorServerError",
    "AggregatorUnavailableError",
    "ChainUnavailableError",
    "ChannelError",
    "ChannelNotFoundError",
    "ChannelStateError",
    "ConfigurationError",
    "ExpiredError",
    "FaucetError",
    "FaucetUnavailableError",
    "InsufficientBalanceError",
    "InvalidAddressError",
    "InvalidAmountError",
    "InvalidComparisonError",
    "InvalidFrameError",
    "InvalidNetworkError",
    "InvalidSignatureError",
    "InvalidStateError",
    "NoRouteError",
    "PolicyRejectedError",
    "RateLimitedError",
    "RelayError",
    "RelayProtocolError",
    "RelayUnavailableError",
    "RemoteError",
    "ReplayError",
    "SettlementError",
    "SettlementTimeoutError",
    "SettlementValueError",
    "StorageError",
    "TransactionFailedError",
    "UnavailableError",
    "UnknownOptionError",
    "WalletError",
    "WalletRejectedError",
    "WalletTimeoutError",
    "WalletUnavailableError",
]


class SettlementError(Exception):
    """Root of every error raised by settlement_widgets."""


# --- bad input -------------------------------------------------------------------------


class SettlementValueError(SettlementError, ValueError):
    """The caller passed something invalid; nothing was sent and nothing changed."""


class InvalidAddressError(SettlementValueError):
    """Not a 20-byte hex address, or a mixed-case address with a wrong EIP-55 checksum."""


class InvalidAmountError(SettlementValueError):
    """Negative, non-integer, too many decimals, or otherwise unusable amount."""


class InvalidNetworkError(SettlementValueError):
    """Unknown network name (the message lists the valid ones)."""


class InvalidSignatureError(SettlementValueError):
    """Wrong length, high-s, bad recovery id, or a signature from the wrong signer."""


class InvalidFrameError(SettlementValueError):
    """A relay RPC frame that is not valid JSON or not shaped as the protocol requires."""


class InvalidComparisonError(SettlementValueError):
    """A method comparison's JSON (``Comparison.from_json``) that does not follow its
    documented schema: a missing, unknown or mistyped field, named by its path."""


class InvalidStateError(SettlementValueError):
    """A channel, state or allocation that breaks the ERC-7824 rules."""


class ExpiredError(SettlementValueError):
    """A timestamp outside its window, an expired session key, policy or intent."""


class ReplayError(SettlementValueError):
    """A request, transfer or intent that was already processed."""


class UnknownOptionError(SettlementValueError, TypeError):
    """An unknown keyword argument, method or action; the message suggests the closest one."""


class InsufficientBalanceError(SettlementValueError):
    """The amount is larger than the balance that can pay it."""


# --- environment -----------------------------------------------------------------------


class ConfigurationError(SettlementError):
    """Something the toolkit needs is not set up (env var, built contracts, a sandbox)."""


class RelayProtocolError(ConfigurationError):
    """The relay URL answers, but not in Nitrolite v0.5 (ClearNode), which this client speaks:
    a Nitrolite v1 (Nitronode) node, or something else. ``found`` names what was seen; the
    fix is another URL (or the v1 client), not a retry."""

    def __init__(self, message: str, *, found: str | None = None) -> None:
        super().__init__(message)
        self.found = found


class StorageError(SettlementError):
    """A local store could not be read or written (disk full, locked, corrupt, a row that
    contradicts one already stored). The message names the file and what to do; the
    failed write was rolled back, so nothing half-written remains."""


class UnavailableError(SettlementError):
    """A service we depend on could not be reached; retrying later may work."""


class RelayUnavailableError(UnavailableError):
    """The relay node's WebSocket cannot be reached or dropped the connection."""


class ChainUnavailableError(UnavailableError):
    """The JSON-RPC node cannot be reached."""


class FaucetUnavailableError(UnavailableError):
    """The faucet cannot be reached, timed out, or answered something that is not JSON."""


class AggregatorUnavailableError(UnavailableError):
    """The LI.FI API cannot be reached (rates are never invented in that case)."""


class WalletUnavailableError(UnavailableError):
    """No browser wallet can be asked: the page has no EIP-1193 wallet, or no page shows the
    :class:`~settlement_widgets.widgets.BrowserWallet` (a script, a closed tab)."""


class SettlementTimeoutError(SettlementError, TimeoutError):
    """An operation did not complete in time."""


class WalletTimeoutError(SettlementTimeoutError):
    """A browser wallet request was not answered in time (the person never clicked, or the
    wallet's window was closed). Nothing was signed that the toolkit knows of."""


# --- remote refusals -------------------------------------------------------------------


class RemoteError(SettlementError):
    """A peer (relay, faucet, API) answered, and the answer was an error."""

    def __init__(self, message: str, *, status: int | None = None, code: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code


class RelayError(RemoteError):
    """The relay answered with an ``error`` frame; ``message`` is its text verbatim."""


class WalletError(RemoteError):
    """The browser wallet answered a request with an EIP-1193 error; ``code`` is its code
    (4100 unauthorised, 4200 unsupported method, 4900/4901 disconnected, 4902 unknown
    chain, ...) and ``message`` says which request it was."""


class WalletRejectedError(WalletError):
    """The person rejected the request in the wallet (EIP-1193 code 4001)."""


class FaucetError(RemoteError):
    """The faucet answered with a non-2xx status; ``status`` and ``message`` are kept."""


class AggregatorError(RemoteError):
    """The LI.FI API answered with an error; ``status``, ``code`` and ``message`` are kept."""


class _RateLimitHeaders(Protocol):
    """What :class:`RateLimitedError` keeps of LI.FI's rate-limit headers: the shape of
    :class:`settlement_widgets.aggregator.client.RateLimit`, named here so this module, which
    every other module imports, imports nothing of the package."""

    @property
    def limit(self) -> int | None: ...
    @property
    def remaining(self) -> int | None: ...
    @property
    def reset_seconds(self) -> float | None: ...
    @property
    def seen_at(self) -> datetime: ...
    def describe(self) -> str: ...


class RateLimitedError(AggregatorError):
    """HTTP 429 after all retries. ``retry_after`` is the last wait LI.FI asked for in
    seconds (``Retry-After``, else ``ratelimit-reset``); ``rate_limit`` the last
    :class:`~settlement_widgets.aggregator.client.RateLimit` it sent (or None)."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = 429,
        code: Any = None,
        retry_after: float | None = None,
        rate_limit: _RateLimitHeaders | None = None,
    ) -> None:
        super().__init__(message, status=status, code=code)
        self.retry_after = retry_after
        self.rate_limit = rate_limit


class TransactionFailedError(SettlementError):
    """A transaction (or the call simulating it) reverted.

    ``error_name`` is the decoded custom error (``"InvalidStateSignatures"``), ``error_args``
    its arguments, and ``tx_hash`` the hash when the transaction was mined.
    """

    def __init__(
        self,
        message: str,
        *,
        error_name: str | None = None,
        error_args: tuple[Any, ...] = (),
        tx_hash: str | None = None,
    ) -> None:
        super().__init__(message)
        self.error_name = error_name
        self.error_args = error_args
        self.tx_hash = tx_hash


class PolicyRejectedError(TransactionFailedError):
    """The v4 policy hook refused the intent; ``reason`` is the readable reason name."""

    def __init__(self, message: str, *, reason: str, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.reason = reason


# --- channels --------------------------------------------------------------------------


class ChannelError(SettlementError):
    """A channel operation cannot proceed."""


class ChannelNotFoundError(ChannelError, KeyError):
    """No channel with that id is known to the provider or the relay."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else ""


class ChannelStateError(ChannelError):
    """The operation is not allowed in the channel's current status (e.g. in dispute)."""


# --- aggregator (appended) -------------------------------------------------------------


class AggregatorServerError(AggregatorError, AggregatorUnavailableError):
    """LI.FI kept answering 5xx after every retry.

    It is both an :class:`AggregatorError` (``status``, ``code`` and the API's ``message`` are
    kept) and an :class:`AggregatorUnavailableError`, so ``except AggregatorUnavailableError``
    catches every "LI.FI cannot serve us right now" case.
    """


class AggregatorResponseError(AggregatorError):
    """LI.FI answered 2xx with a body that is not JSON or lacks a documented field.

    The message names the endpoint and the exact path of the bad field
    (``routes[1].steps[0].estimate.toAmount``). Never retried: the same request gets the
    same body.
    """


class NoRouteError(AggregatorError):
    """LI.FI found no route or quote for the request (API code 1002, or an empty list)."""
