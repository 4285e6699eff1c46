"""Pure view models of the two widgets: what to show, decided without any HTML or ipywidgets.

The widgets are views. Everything that decides *what* appears (which
cards, which addresses, which rows, which colour, which value is truncated, which value may be
a link) lives here as frozen dataclasses built from props and a :class:`Network`, so it is
tested without a browser and without a kernel. ``render.py`` only turns these into escaped
HTML.

Props are validated here once (:class:`StatusProps`), so a bad prop raises an error from the
tree before any trait changes.
"""

from __future__ import annotations

import difflib
import enum
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal

from ..addresses import is_address, short, to_checksum
from ..errors import SettlementValueError, UnknownOptionError
from ..links import is_link_target
from ..methods import SettlementMethod, settlement_options, validate_method
from ..networks import PROTOCOL_V1, Network

if TYPE_CHECKING:
    from .measured import ComparisonCaption, MeasuredCard

__all__ = [
    "CAMEL_TO_SNAKE",
    "HEADER_CHANNEL",
    "HEADER_OTHER",
    "HEADER_V4",
    "PROP_NAMES",
    "STATUS_COLOURS",
    "AddressLine",
    "AggregatorSource",
    "CardViewModel",
    "MetadataBox",
    "SelectorViewModel",
    "StatusProps",
    "StatusRow",
    "StatusViewModel",
    "TxLink",
    "accent",
    "aggregator_source",
    "card_pill",
    "contract_label",
    "explorer_base_is_safe",
    "network_aggregator_source",
    "status_colour",
]

# --- colours: the notebook theme's, strong enough for text -------------------------------
#
# Every colour is a CSS value over JupyterLab's theme variables (``--jp-*``; VS Code and
# Notebook 7 define them too), with a light fallback where they are missing (nbviewer, a
# static export). The theme's accent colours alone fail WCAG AA as text in one theme or the
# other (Lab Light's success green is 4.1:1 on white, Lab Dark's error red 4.4:1 on its
# cards), so an accent used for text is mixed 60/40 with the theme's strongest text colour
# (black in a light theme, white in a dark one): darker on light backgrounds, lighter on
# dark ones, 5:1 or more in Lab's Light and Dark themes (tests/ui/test_widgets_theme.py).


def accent(variable: str, fallback: str) -> str:
    """A theme accent (``--jp-success-color1``...) as a colour readable as text on the
    theme's layout background (``--jp-layout-color0``/``1``) and on a light tint of itself."""
    return f"color-mix(in srgb, var({variable}, {fallback}) 60%, var(--jp-ui-font-color0, #000))"


GREEN = accent("--jp-success-color1", "#16a34a")
BLUE = accent("--jp-brand-color1", "#2563eb")
CYAN = accent("--jp-info-color1", "#0891b2")
RED = accent("--jp-error-color1", "#dc2626")
YELLOW = accent("--jp-warn-color1", "#d97706")
PURPLE = accent("--md-purple-500", "#9c27b0")
#: secondary text: 64 % of the strongest text colour over the card background (Lab's own
#: ``--jp-ui-font-color2`` is 4.6:1 on white and drops below 4.5:1 on any tint)
MUTED = "color-mix(in srgb, var(--jp-ui-font-color0, #000) 64%, var(--jp-layout-color1, #fff))"
SECONDARY = "var(--jp-ui-font-color1, #1f2937)"

#: status (case-insensitive) -> colour; any other non-empty status is yellow, empty is muted
STATUS_COLOURS: Mapping[str, str] = MappingProxyType(
    {"active": GREEN, "open": GREEN, "final": BLUE, "closed": BLUE, "dispute": RED}
)

#: the panel's header per mode: (title, colour)
HEADER_CHANNEL = ("Yellow Network · State Channel", YELLOW)
HEADER_V4 = ("Uniswap v4 · Hook Settlement", PURPLE)
#: The original showed the v4 header for an intent with only a settlement tx (e.g. a LI.FI
#: one). We show a neutral header instead: claiming "Uniswap v4" there was simply wrong.
HEADER_OTHER = ("Settlement · Transaction", SECONDARY)

_TX_HASH = re.compile(r"^0x[0-9a-fA-F]{64}$")
_INTENT_NAMES = {0: "OPERATE", 1: "INITIALIZE", 2: "RESIZE", 3: "FINALIZE"}
#: the custody contract's ChannelStatus enum
_STATUS_NAMES = {0: "void", 1: "initial", 2: "active", 3: "dispute", 4: "final"}


def status_colour(status: str | None) -> str:
    """The status colour of the original: active/open green, final/closed blue, dispute red,
    any other non-empty value yellow, nothing muted."""
    if not status or not status.strip():
        return MUTED
    return STATUS_COLOURS.get(status.strip().lower(), YELLOW)


def explorer_base_is_safe(base: str) -> bool:
    """Only an ``http(s)://host...`` explorer base, or a path on the Jupyter server that
    serves the page (``/settlement/explorer``, one leading ``/``), may become a link target
    (:func:`~settlement_widgets.links.is_link_target`, the one rule of every link we emit)."""
    if not isinstance(base, str) or any(c in base for c in "\"'<> \t\r\n\\"):
        return False
    return is_link_target(base)


def _address_href(network: Network, value: str) -> str | None:
    """The explorer link of an address, or None when it is not an address (plain text then)."""
    if not explorer_base_is_safe(network.explorer_base) or not is_address(value):
        return None
    return network.explorer.address_url(to_checksum(value))


def _tx_href(network: Network, value: str) -> str | None:
    if not explorer_base_is_safe(network.explorer_base) or not _TX_HASH.match(value):
        return None
    return network.explorer.tx_url(value.lower())


# --- the selector --------------------------------------------------------------------------


@dataclass(frozen=True)
class AddressLine:
    """One ``Label: 0x...`` line of the selector's inline address box (shown in full)."""

    label: str
    address: str
    href: str | None


#: where the aggregator's routes come from: the LI.FI API, or a route server on this machine
#: (the same values as ``AggregatorProvider.source``)
AggregatorSource = Literal["live", "local"]
_AGGREGATOR_SOURCES: frozenset[str] = frozenset({"live", "local"})
#: the pill of a method that runs on a network, per network name (other names are shown as is)
_NETWORK_PILLS: Mapping[str, str] = MappingProxyType(
    {"local": "local", "sepolia": "testnet", "sepolia-v1": "testnet"}
)


def aggregator_source(base_url: str | None) -> AggregatorSource:
    """Where an aggregator provider at ``base_url`` gets its data, for its pill: ``local``
    when its API is on this machine (the sandbox's route server or a test server), ``live``
    otherwise. The rule is the provider's own (:mod:`settlement_widgets.aggregator.core.source`),
    imported here only when asked, so the widgets do not load the HTTP client."""
    from ..aggregator.core.source import data_source

    return data_source(base_url)


def network_aggregator_source(network: Network) -> AggregatorSource:
    """Where the aggregator's data comes from on ``network`` when no provider is given: the
    network profile's route server (``extra["lifiUrl"]``, the local sandbox's), else the
    URL a default provider calls (``LIFI_API_URL``, else the live LI.FI API). The one rule
    of the selector's pill and the dashboard's routes heading, so notebook and dashboard
    say the same thing on the same sandbox."""
    import os

    url = network.extra.get("lifiUrl") or os.environ.get("LIFI_API_URL")
    return aggregator_source(url if isinstance(url, str) else None)


def card_pill(method: str, network_name: str, aggregator: AggregatorSource = "live") -> str:
    """What a card's pill says, so that it never claims more than is true.

    JACK's ``status`` (``live``/``demo``) says what a method *can* be; the pill says what
    this card runs on now: the aggregator is ``live`` only when its data comes from the live
    API (``local`` for a route server on this machine); channel and v4 run on the network:
    ``local`` for the sandbox on this machine, ``testnet`` on Sepolia.
    """
    if validate_method(method) == "aggregator":
        return aggregator
    return _NETWORK_PILLS.get(network_name, network_name)


@dataclass(frozen=True)
class CardViewModel:
    """One clickable card: label, pill, description and network.

    ``status`` is the JACK dashboard's (``live``/``demo``, what the API reports); ``pill`` is
    what the card shows (:func:`card_pill`); ``measured``, a comparison's figures (measured.py)."""

    id: SettlementMethod
    label: str
    desc: str
    network: str
    status: str
    selected: bool
    pill: str = ""
    measured: MeasuredCard | None = None


#: the address box per method: (label, NetworkContracts attribute); the channel's are the
#: protocol's (:data:`_CHANNEL_V1_ADDRESSES` on Nitrolite v1)
_METHOD_ADDRESSES: Mapping[str, tuple[tuple[str, str], ...]] = MappingProxyType(
    {
        "aggregator": (),
        "channel": (("Custody", "custody"), ("Adjudicator", "adjudicator")),
        "v4": (
            ("PolicyHook", "policy_hook"),
            ("Adapter", "settlement_adapter"),
            ("PoolManager", "pool_manager"),
        ),
    }
)
#: Nitrolite v1 has one contract where v0.5 has two: the ChannelHub holds the funds and
#: judges disputes
_CHANNEL_V1_ADDRESSES: tuple[tuple[str, str], ...] = (("ChannelHub", "channel_hub"),)


def contract_label(network: Network) -> str:
    """What the channel's on-chain judge is called on ``network``: the ``Adjudicator`` on
    Nitrolite v0.5, the ``ChannelHub`` on v1 (where it also holds the funds)."""
    return "ChannelHub" if network.protocol == PROTOCOL_V1 else "Adjudicator"


@dataclass(frozen=True)
class SelectorViewModel:
    """The selector: three cards (:func:`~settlement_widgets.methods.settlement_options` of the
    network, in that order) and the selected method's
    contract addresses (none for ``aggregator``)."""

    selected: SettlementMethod
    network_name: str
    explorer_base: str
    cards: tuple[CardViewModel, ...]
    addresses: tuple[AddressLine, ...]
    caption: ComparisonCaption | None = None  # a comparison's intent (measured.with_comparison)

    @classmethod
    def build(
        cls, selected: str, network: Network, aggregator: AggregatorSource | None = None
    ) -> SelectorViewModel:
        """The selector on ``network``; ``aggregator`` says where the aggregator's data
        comes from (None: :func:`network_aggregator_source`, the rule the dashboard uses)."""
        method = validate_method(selected)
        if aggregator is None:
            aggregator = network_aggregator_source(network)
        if aggregator not in _AGGREGATOR_SOURCES:
            raise SettlementValueError(f"aggregator must be 'live' or 'local', got {aggregator!r}")
        cards = tuple(
            CardViewModel(
                id=o.id,
                label=o.label,
                desc=o.desc,
                network=o.network,
                status=o.status,
                selected=o.id == method,
                pill=card_pill(o.id, network.name, aggregator),
            )
            for o in settlement_options(network)
        )
        c = network.contracts
        lines = _METHOD_ADDRESSES[method]
        if method == "channel" and network.protocol == PROTOCOL_V1:
            lines = _CHANNEL_V1_ADDRESSES
        addresses = tuple(
            AddressLine(label, getattr(c, attr), _address_href(network, getattr(c, attr)))
            for label, attr in lines
        )
        return cls(
            selected=method,
            network_name=network.name,
            explorer_base=network.explorer_base,
            cards=cards,
            addresses=addresses,
        )


# --- the status panel: props -------------------------------------------------------------

#: the JACK dashboard's camelCase prop -> our snake_case trait
CAMEL_TO_SNAKE: Mapping[str, str] = MappingProxyType(
    {
        "channelId": "channel_id",
        "channelStatus": "channel_status",
        "stateIntent": "state_intent",
        "stateVersion": "state_version",
        "stateHash": "state_hash",
        "adjudicator": "adjudicator",
        "challengePeriod": "challenge_period",
        "settlementTx": "settlement_tx",
        "provider": "provider",
        "providerMetadata": "provider_metadata",
    }
)
PROP_NAMES: tuple[str, ...] = tuple(CAMEL_TO_SNAKE.values())
_STRING_PROPS = frozenset(
    {"channel_id", "channel_status", "state_intent", "state_hash", "adjudicator"}
    | {"settlement_tx", "provider"}
)
_INT_PROPS = frozenset({"state_version", "challenge_period"})


def unknown_option_message(name: str, valid: Iterable[str], owner: str) -> str:
    """``unknown keyword argument 'x' for Owner (did you mean 'y'?); valid: ...``.

    camelCase spellings of a snake_case option are recognised (``onChange`` -> ``on_change``).
    """
    valid = list(valid)
    snake = re.sub(r"(?<!^)([A-Z])", r"_\1", name).lower()
    hint = [snake] if snake in valid else difflib.get_close_matches(name, valid, n=1, cutoff=0.6)
    extra = f" (did you mean {hint[0]!r}?)" if hint else ""
    return f"unknown keyword argument {name!r} for {owner}{extra}; valid: {', '.join(valid)}"


def _text(name: str, value: Any) -> str | None:
    """A string prop; enums, bytes and ints from a channel object are turned into text."""
    if value is None:
        return None
    if isinstance(value, enum.Enum):
        if name == "state_intent":
            return value.name
        return value.value if isinstance(value.value, str) else value.name.lower()
    if isinstance(value, bytes | bytearray) and name in ("channel_id", "state_hash"):
        return "0x" + bytes(value).hex()
    if isinstance(value, int) and not isinstance(value, bool):
        if name == "state_intent":
            return _INTENT_NAMES.get(value, str(value))
        if name == "channel_status":
            return _STATUS_NAMES.get(value, str(value))
    if not isinstance(value, str):
        raise SettlementValueError(f"{name} must be a string, got {type(value).__name__}")
    return value


def _count(name: str, value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise SettlementValueError(
            f"{name} must be a whole number, got {value!r} ({type(value).__name__})"
        )
    if value < 0:
        raise SettlementValueError(f"{name} must not be negative, got {value}")
    return value


def _metadata(value: Any) -> Mapping[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise SettlementValueError(
            f"provider_metadata must be a mapping from string to any value, "
            f"got {type(value).__name__}"
        )
    bad = [k for k in value if not isinstance(k, str)]
    if bad:
        raise SettlementValueError(f"provider_metadata keys must be strings, got {bad[0]!r}")
    return MappingProxyType(dict(value))


@dataclass(frozen=True)
class StatusProps:
    """The ChannelStatusPanel props of the JACK dashboard, validated; every one optional."""

    channel_id: str | None = None
    channel_status: str | None = None
    state_intent: str | None = None
    state_version: int | None = None
    state_hash: str | None = None
    adjudicator: str | None = None
    challenge_period: int | None = None
    settlement_tx: str | None = None
    provider: str | None = None
    provider_metadata: Mapping[str, Any] | None = field(default=None, hash=False)

    @staticmethod
    def coerce(name: str, value: Any) -> Any:
        """Validate and normalise one prop (raises an error from the tree)."""
        if name in _STRING_PROPS:
            return _text(name, value)
        if name in _INT_PROPS:
            return _count(name, value)
        if name == "provider_metadata":
            return _metadata(value)
        raise UnknownOptionError(unknown_option_message(name, PROP_NAMES, "ChannelStatusPanel"))

    @classmethod
    def from_kwargs(cls, owner: str = "ChannelStatusPanel", **props: Any) -> StatusProps:
        """snake_case props; unknown names rejected with a "did you mean"."""
        for name in props:
            if name not in PROP_NAMES:
                raise UnknownOptionError(unknown_option_message(name, PROP_NAMES, owner))
        return cls(**{name: cls.coerce(name, value) for name, value in props.items()})

    @classmethod
    def from_camel(cls, mapping: Mapping[str, Any]) -> StatusProps:
        """The JACK dashboard's camelCase props, as a dashboard or the endpoint sends them."""
        if not isinstance(mapping, Mapping):
            raise SettlementValueError(
                f"props must be a mapping of camelCase names, got {type(mapping).__name__}"
            )
        snake: dict[str, Any] = {}
        for key, value in mapping.items():
            if key not in CAMEL_TO_SNAKE:
                valid = list(CAMEL_TO_SNAKE)
                camel = re.sub(r"_([a-z0-9])", lambda m: m.group(1).upper(), str(key))
                hint = [camel] if camel in valid else difflib.get_close_matches(str(key), valid, 1)
                extra = f" (did you mean {hint[0]!r}?)" if hint else ""
                raise UnknownOptionError(
                    f"unknown ChannelStatusPanel prop {key!r}{extra}; valid: {', '.join(valid)}"
                )
            snake[CAMEL_TO_SNAKE[key]] = value
        return cls.from_kwargs(**snake)

    @classmethod
    def from_channel(cls, channel: Any, provider: str | None = "channel") -> StatusProps:
        """Props of a channel object or mapping, duck-typed: ``id``, ``status``,
        ``version``, ``intent``, ``state_hash``, ``adjudicator``, ``challenge_period``,
        ``nonce``, and the settlement tx from ``settlement_tx``, ``close_tx`` or
        ``tx_hashes["close"]``; ERC-7824 metadata from ``proofs_count`` (or the length of
        ``proofs``/``signatures``) and ``nonce``, or a ready ``provider_metadata``."""
        tx = _pick(channel, "settlement_tx", "close_tx")
        hashes = _pick(channel, "tx_hashes")
        if tx is None and isinstance(hashes, Mapping):
            tx = next((hashes[k] for k in ("settlement", "close") if hashes.get(k)), None)
        if tx is not None and not isinstance(tx, str):
            tx = getattr(tx, "hash", tx)
        if isinstance(tx, bytes | bytearray):
            tx = "0x" + bytes(tx).hex()
        metadata = _pick(channel, "provider_metadata")
        if metadata is None:
            erc: dict[str, Any] = {}
            proofs = _pick(channel, "proofs_count")
            if proofs is None:
                listed = _pick(channel, "proofs", "signatures")
                proofs = len(listed) if isinstance(listed, list | tuple) else None
            if proofs is not None:
                erc["proofsCount"] = proofs
            nonce = _pick(channel, "nonce")
            if nonce is not None:
                erc["nonce"] = nonce
            metadata = {"erc7824": erc} if erc else None
        return cls.from_kwargs(
            channel_id=_pick(channel, "id", "channel_id"),
            channel_status=_pick(channel, "status", "channel_status"),
            state_intent=_pick(channel, "intent", "state_intent"),
            state_version=_pick(channel, "version", "state_version"),
            state_hash=_pick(channel, "state_hash"),
            adjudicator=_pick(channel, "adjudicator"),
            challenge_period=_pick(channel, "challenge_period"),
            settlement_tx=tx,
            provider=provider,
            provider_metadata=metadata,
        )

    def as_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def _pick(obj: Any, *names: str) -> Any:
    """The first present, non-None attribute (or mapping key, snake or camelCase) of ``obj``."""
    for name in names:
        if isinstance(obj, Mapping):
            camel = re.sub(r"_([a-z])", lambda m: m.group(1).upper(), name)
            value = obj.get(name, obj.get(camel))
        else:
            value = getattr(obj, name, None)
        if value is not None:
            return value
    return None


# --- the status panel: view model ----------------------------------------------------------


@dataclass(frozen=True)
class StatusRow:
    """A label/value row. ``title`` carries the full value when ``value`` is truncated."""

    label: str
    value: str
    title: str | None = None
    mono: bool = False
    colour: str | None = None
    href: str | None = None


@dataclass(frozen=True)
class TxLink:
    """The settlement transaction: always shown short; a link only for a real tx hash."""

    value: str
    title: str
    href: str | None


@dataclass(frozen=True)
class MetadataBox:
    """The ERC-7824 metadata box: proof count and nonce, each only when defined."""

    proofs: str | None
    nonce: str | None


def _truncated_row(label: str, value: str, href: str | None = None) -> StatusRow:
    shown = short(value)
    return StatusRow(label, shown, title=value if shown != value else None, mono=True, href=href)


Mode = Literal["channel", "v4", "other"]


@dataclass(frozen=True)
class StatusViewModel:
    """What the panel shows for some props on a network; ``visible`` False renders nothing."""

    visible: bool
    mode: Mode | None
    title: str
    colour: str
    rows: tuple[StatusRow, ...]
    settlement_tx: TxLink | None
    metadata: MetadataBox | None
    explorer_base: str = ""

    @classmethod
    def build(cls, props: StatusProps, network: Network) -> StatusViewModel:
        provider = (props.provider or "").lower()
        # the original's substring detection ("Yellow Network" was stored as the provider)
        channel_mode = bool(props.channel_id) or "yellow" in provider or "channel" in provider
        v4_mode = "v4" in provider or "uniswap" in provider
        if not (channel_mode or v4_mode or props.settlement_tx):
            return cls(False, None, "", MUTED, (), None, None, network.explorer_base)
        mode: Mode = "channel" if channel_mode else "v4" if v4_mode else "other"
        title, colour = {"channel": HEADER_CHANNEL, "v4": HEADER_V4, "other": HEADER_OTHER}[mode]

        rows: list[StatusRow] = []
        if props.channel_id:
            rows.append(_truncated_row("Channel ID", props.channel_id))
            if props.channel_status:
                rows.append(
                    StatusRow(
                        "Status",
                        props.channel_status.upper(),
                        colour=status_colour(props.channel_status),
                    )
                )
            if props.state_intent:
                rows.append(StatusRow("State Intent", props.state_intent))
            if props.state_version is not None:
                rows.append(StatusRow("State Version", str(props.state_version)))
            if props.state_hash:
                rows.append(_truncated_row("State Hash", props.state_hash))
            if props.adjudicator:
                rows.append(
                    _truncated_row(
                        contract_label(network),
                        props.adjudicator,
                        _address_href(network, props.adjudicator),
                    )
                )
            if props.challenge_period is not None:
                rows.append(StatusRow("Challenge Period", f"{props.challenge_period}s"))
        elif v4_mode:
            c = network.contracts
            rows.append(
                _truncated_row("PolicyHook", c.policy_hook, _address_href(network, c.policy_hook))
            )
            rows.append(
                _truncated_row(
                    "Adapter", c.settlement_adapter, _address_href(network, c.settlement_adapter)
                )
            )

        tx = None
        if props.settlement_tx:
            tx = TxLink(
                short(props.settlement_tx),
                props.settlement_tx,
                _tx_href(network, props.settlement_tx),
            )

        box = None
        meta = props.provider_metadata or {}
        if "erc7824" in meta:
            erc = meta["erc7824"]
            erc = erc if isinstance(erc, Mapping) else {}
            proofs, nonce = erc.get("proofsCount"), erc.get("nonce")
            box = MetadataBox(
                None if proofs is None else str(proofs), None if nonce is None else str(nonce)
            )
        return cls(True, mode, title, colour, tuple(rows), tx, box, network.explorer_base)
