"""What a comparison adds to the selector's cards, decided and rendered without any widget.

For each method card: one line per measured run (the channel's protocol versions, the
aggregator's routes): the cost in the native token (and in USD where the run knew a price),
the time to final (wall clock and blocks), the wallet prompts the user answered, and a mark
on the cheapest and the fastest run. A method the comparison could not run says why; a
method it does not mention shows nothing: nothing here is invented, every figure is a field
of the comparison (:class:`~settlement_widgets.compare.wire.ComparisonView`, parsed strictly).

The renderers escape every text that comes from the data (labels, reasons, the asset, the
counterparty) with :func:`html.escape`; attribute values are quoted and escaped too.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from decimal import ROUND_HALF_UP, Decimal
from html import escape
from types import MappingProxyType
from typing import TYPE_CHECKING, Final

from ..errors import SettlementValueError
from ..progress import format_seconds
from .viewmodels import BLUE, GREEN, MUTED, SECONDARY

if TYPE_CHECKING:
    from ..compare.wire import ComparisonView, RunView
    from .viewmodels import SelectorViewModel

__all__ = [
    "ComparisonCaption",
    "MeasuredCard",
    "MeasuredLine",
    "comparison_caption",
    "format_native",
    "format_prompts",
    "format_usd",
    "measured_cards",
    "render_comparison_caption_html",
    "render_measured_html",
    "with_comparison",
]

#: the native token the costs are paid in (every network profile is an Ethereum chain)
NATIVE_SYMBOL: Final = "ETH"
_WEI: Final = Decimal(10) ** 18
_SMALL = "12px"
_MONO = "var(--jp-code-font-family, ui-monospace, SFMono-Regular, Menlo, Consolas, monospace)"
#: the marks' text colours (theme accents, AA on the card, see viewmodels.accent)
_MARKS: Final = MappingProxyType({"cheapest": GREEN, "fastest": BLUE})


def format_native(wei: int, symbol: str = NATIVE_SYMBOL) -> str:
    """A cost in wei as a person reads it: four significant digits of the native token,
    never an exponent (``120_000_000_000_000 -> "0.00012 ETH"``; ``0 -> "0 ETH"``)."""
    if wei == 0:
        return f"0 {symbol}"
    amount = Decimal(wei) / _WEI
    places = min(18, max(0, 3 - amount.adjusted()))
    text = format(amount.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP), "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return f"{text} {symbol}"


def format_usd(usd: float | None) -> str | None:
    """A USD cost (None when the run knew no price: then nothing is shown)."""
    if usd is None:
        return None
    if 0 < usd < 0.01:
        return "< $0.01"
    return f"${usd:,.2f}"


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def format_prompts(signatures: int, transactions: int) -> str:
    """The wallet prompts of a run: ``1 signature, 3 transactions`` (``no wallet prompts``)."""
    if signatures == 0 and transactions == 0:
        return "no wallet prompts"
    parts = []
    if signatures:
        parts.append(_plural(signatures, "signature"))
    if transactions:
        parts.append(_plural(transactions, "transaction"))
    return ", ".join(parts)


@dataclass(frozen=True)
class MeasuredLine:
    """One measured run on its method's card, as text ready to escape."""

    label: str
    cost: str
    cost_title: str
    cost_usd: str | None
    time: str
    prompts: str
    cheapest: bool
    fastest: bool

    @classmethod
    def of(cls, run: RunView, cheapest: str | None, fastest: str | None) -> MeasuredLine:
        blocks = _plural(run.blocks, "block")
        return cls(
            label=run.label,
            cost=format_native(run.cost_native_wei),
            cost_title=f"{run.cost_native_wei:,} wei for {run.gas_used:,} gas in "
            f"{_plural(len(run.txs), 'transaction')}",
            cost_usd=format_usd(run.cost_usd),
            time=f"{format_seconds(run.wall_seconds)} · {blocks}",
            prompts=format_prompts(run.signature_prompts, run.transaction_prompts),
            cheapest=run.label == cheapest,
            fastest=run.label == fastest,
        )


@dataclass(frozen=True)
class MeasuredCard:
    """What one method card shows of a comparison: its runs, or why it was not run."""

    method: str
    lines: tuple[MeasuredLine, ...]
    unavailable: str | None = None


def measured_cards(view: ComparisonView) -> Mapping[str, MeasuredCard]:
    """Method -> what its card shows; a method the comparison neither ran nor declared
    unavailable is absent (its card shows nothing)."""
    cards: dict[str, MeasuredCard] = {}
    for method in ("aggregator", "channel", "v4"):
        runs = view.runs_of(method)
        reason = view.unavailable.get(method)
        if not runs and reason is None:
            continue
        lines = tuple(MeasuredLine.of(run, view.cheapest, view.fastest) for run in runs)
        cards[method] = MeasuredCard(method, lines, None if runs else reason)
    return MappingProxyType(cards)


@dataclass(frozen=True)
class ComparisonCaption:
    """The line above the cards: which intent was measured, where and when."""

    network: str
    measured_at: str
    intent: str
    title: str


def comparison_caption(view: ComparisonView) -> ComparisonCaption:
    """The caption of ``view``: ``100 USDC, chain 31337 → 31338, 20 payments``."""
    i = view.intent
    chains = (
        f"chain {i.source_chain}"
        if i.source_chain == i.destination_chain
        else f"chain {i.source_chain} → {i.destination_chain}"
    )
    intent = f"{i.amount} {i.asset}, {chains}, {_plural(i.payments, 'payment')}"
    when = view.measured_at.strftime("%Y-%m-%d %H:%M %Z").strip()
    return ComparisonCaption(view.network, when, intent, f"counterparty {i.counterparty}")


def with_comparison(vm: SelectorViewModel, comparison: ComparisonView | None) -> SelectorViewModel:
    """``vm`` with what it shows of ``comparison``: each method's card its measured figures,
    the caption its intent (``vm`` itself without a comparison). A comparison measured on
    another network than ``vm``'s is refused: a card never shows figures measured elsewhere."""
    if comparison is None:
        return vm
    if comparison.network != vm.network_name:
        raise SettlementValueError(
            f"this comparison was measured on {comparison.network!r}; the selector shows "
            f"{vm.network_name!r}"
        )
    measured = measured_cards(comparison)
    cards = tuple(replace(card, measured=measured.get(card.id)) for card in vm.cards)
    return replace(vm, cards=cards, caption=comparison_caption(comparison))


def _mark(kind: str) -> str:
    colour = _MARKS[kind]
    return (
        f'<span class="sw-mark" data-mark="{kind}" style="font-size:{_SMALL};font-weight:700;'
        f"text-transform:uppercase;letter-spacing:0.04em;padding:0 6px;border-radius:9999px;"
        f"color:{colour};background:color-mix(in srgb, {colour} 12%, transparent);"
        f'border:1px solid color-mix(in srgb, {colour} 35%, transparent)">{kind}</span>'
    )


def _line(line: MeasuredLine) -> str:
    marks = "".join(
        _mark(kind) for kind, on in (("cheapest", line.cheapest), ("fastest", line.fastest)) if on
    )
    usd = (
        f' <span class="sw-measured-usd">({escape(line.cost_usd)})</span>'
        if line.cost_usd is not None
        else ""
    )
    return (
        f'<div class="sw-measured-run" data-label="{escape(line.label, quote=True)}" '
        f'data-cheapest="{"true" if line.cheapest else "false"}" '
        f'data-fastest="{"true" if line.fastest else "false"}" style="margin-top:4px">'
        f'<div style="display:flex;gap:6px;align-items:center;flex-wrap:wrap">'
        f'<span class="sw-measured-label" style="font-weight:600;color:{SECONDARY}">'
        f"{escape(line.label)}</span>{marks}</div>"
        f'<div style="font:{_SMALL}/1.5 {_MONO};color:{SECONDARY}">'
        f'<span class="sw-measured-cost" title="{escape(line.cost_title, quote=True)}">'
        f"{escape(line.cost)}</span>{usd}"
        f' · <span class="sw-measured-time">{escape(line.time)}</span>'
        f' · <span class="sw-measured-prompts">{escape(line.prompts)}</span></div></div>'
    )


def render_measured_html(card: MeasuredCard | None) -> str:
    """The measured block of a card ("" when the comparison says nothing of its method)."""
    if card is None:
        return ""
    if card.lines:
        body = "".join(_line(line) for line in card.lines)
    else:
        body = (
            f'<div class="sw-measured-unavailable" style="color:{MUTED}">not measured: '
            f"{escape(card.unavailable or '')}</div>"
        )
    return (
        f'<div class="sw-measured" data-method="{escape(card.method, quote=True)}" '
        f'style="margin-top:8px;padding-top:6px;border-top:1px dashed '
        f'var(--jp-border-color2, #e5e7eb);font-size:{_SMALL};line-height:1.4">{body}</div>'
    )


def render_comparison_caption_html(caption: ComparisonCaption | None) -> str:
    """``Measured on local, 2026-11-29 00:40 UTC: 100 USDC, chain 1 → 2, 20 payments``
    ("" without a comparison)."""
    if caption is None:
        return ""
    return (
        f'<div class="sw-comparison" data-network="{escape(caption.network, quote=True)}" '
        f'title="{escape(caption.title, quote=True)}" '
        f'style="font-size:{_SMALL};color:{MUTED};margin:0 0 8px 2px">'
        f"Measured on {escape(caption.network)}, {escape(caption.measured_at)}: "
        f'<span class="sw-comparison-intent" style="color:{SECONDARY}">'
        f"{escape(caption.intent)}</span></div>"
    )
