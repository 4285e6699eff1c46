"""Pure HTML renderers of the two view models, in the notebook's own theme.

The ipywidgets ``HTML`` widget sets ``innerHTML`` as is, so everything dynamic (labels,
addresses, relay or contract strings, provider metadata) goes through :func:`html.escape`
here, attribute values are always double-quoted and escaped, and a link is emitted only when
the view model produced a URL under the network's explorer base that passes
:func:`~settlement_widgets.links.is_link_target` (checked again here); anything else is plain
text.

Styles are inline, and their colours are JupyterLab's theme variables (``--jp-*``, defined by
Lab, Notebook 7, Voila and VS Code alike) with light fallbacks for places without them
(nbviewer, a static export): the widgets follow the Light and Dark themes instead of painting
a dark card into a light page. Text is 12 px or larger and every text colour reaches WCAG AA
(4.5:1) on its background in Lab's Light and Dark themes (see ``viewmodels.accent``);
``tests/ui/test_widgets_theme.py`` measures both in a browser.
"""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from types import MappingProxyType

from .measured import render_comparison_caption_html, render_measured_html
from .viewmodels import (
    BLUE,
    CYAN,
    GREEN,
    MUTED,
    SECONDARY,
    AddressLine,
    CardViewModel,
    SelectorViewModel,
    StatusRow,
    StatusViewModel,
    explorer_base_is_safe,
)

__all__ = [
    "CARD_STYLESHEET",
    "DASHBOARD_STYLESHEET",
    "PILL",
    "render_address_box_html",
    "render_caption_html",
    "render_card_html",
    "render_pill_html",
    "render_selector_html",
    "render_status_html",
    "tint",
]

# --- the theme ------------------------------------------------------------------------------

#: body text and the surfaces it sits on (cards, panels; boxes inside them)
FG = SECONDARY
SURFACE = "var(--jp-layout-color1, #ffffff)"
INSET = "var(--jp-layout-color0, #ffffff)"
BORDER = "var(--jp-border-color2, #e5e7eb)"
BORDER_STRONG = "var(--jp-border-color1, #d1d5db)"
#: the selection ring (not text: no contrast rule for it beyond being visible)
RING = "var(--jp-brand-color1, #2563eb)"
LINK = "var(--jp-content-link-color, #1d4ed8)"
SANS = "var(--jp-ui-font-family, system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif)"
MONO = "var(--jp-code-font-family, ui-monospace, SFMono-Regular, Menlo, Consolas, monospace)"
#: font sizes: nothing below 12 px
SMALL = "12px"
BODY = "13px"
TITLE = "14px"


def tint(colour: str, percent: int) -> str:
    """``colour`` at ``percent`` % opacity: a background that lets the theme show through."""
    return f"color-mix(in srgb, {colour} {percent}%, transparent)"


#: pill label -> its text colour (its background is a tint of it); see ``viewmodels.card_pill``
PILL: Mapping[str, str] = MappingProxyType({"live": GREEN, "testnet": BLUE, "local": CYAN})

#: Static CSS (no dynamic text) for the selector composite: the container, transparent
#: click targets over the cards, a ring on the card under the pointer or the keyboard focus.
CARD_STYLESHEET = (
    "<style>"
    f".sw-selector{{background:{INSET};border:1px solid {BORDER};border-radius:12px;"
    "padding:12px;box-sizing:border-box}"
    ".sw-selector .sw-card{transition:transform .12s ease}"
    ".sw-selector .sw-card:hover{transform:scale(1.01)}"
    f".sw-selector .sw-card:hover .sw-card-body{{border-color:{RING}}}"
    ".sw-selector .sw-card-button,.sw-selector .sw-card-button:hover,"
    ".sw-selector .sw-card-button:focus,.sw-selector .sw-card-button:active{"
    "background:transparent!important;box-shadow:none!important;outline:none;"
    "border:none!important;cursor:pointer}"
    f".sw-selector .sw-card-button:focus-visible{{outline:2px solid {RING}!important;"
    "outline-offset:2px;border-radius:10px}"
    "</style>"
)

#: Static CSS for the dashboard: an action bar like the cards, buttons in the theme's
#: colours whose labels are never cut off, and room between the parts.
DASHBOARD_STYLESHEET = (
    "<style>"
    ".sw-dashboard{gap:8px}"
    f".sw-dashboard .sw-actions{{gap:8px;flex-wrap:wrap;align-items:center;padding:8px;"
    f"border:1px solid {BORDER};border-radius:12px;background:{SURFACE};box-sizing:border-box}}"
    f".sw-dashboard .sw-action{{height:auto;min-height:32px;margin:0;padding:4px 14px;"
    f"line-height:1.4;border:1px solid {BORDER_STRONG};border-radius:8px;background:{INSET};"
    f"color:{FG};font:600 {BODY} {SANS};white-space:nowrap;overflow:visible;"
    "text-overflow:clip;flex:0 0 auto}"
    f".sw-dashboard .sw-action:hover:enabled{{border-color:{RING};color:{BLUE}}}"
    f".sw-dashboard .sw-action:focus-visible{{outline:2px solid {RING};outline-offset:1px}}"
    ".sw-dashboard .sw-action:disabled{cursor:not-allowed}"
    ".sw-dashboard .sw-progress-row{gap:12px;align-items:center;flex-wrap:wrap}"
    "</style>"
)


def _attr(value: str) -> str:
    """An attribute value: always quoted by the caller with ``"``, escaped here."""
    return escape(value, quote=True)


def _safe_href(href: str | None, explorer_base: str) -> str | None:
    """Keep ``href`` only if it is under the explorer base and both are link targets
    (``http(s)://host...`` or a path with one leading ``/``): defence in depth."""
    if not href or not explorer_base_is_safe(explorer_base):
        return None
    base = explorer_base.rstrip("/") + "/"
    if not href.startswith(base) or not explorer_base_is_safe(href):
        return None
    return href


def _link(text_html: str, href: str, title: str | None, style: str) -> str:
    title_attr = f' title="{_attr(title)}"' if title else ""
    return (
        f'<a href="{_attr(href)}" target="_blank" rel="noopener noreferrer"{title_attr} '
        f'style="{_attr(style)}">{text_html}</a>'
    )


# --- selector -------------------------------------------------------------------------------


def render_caption_html() -> str:
    """The ``Settlement Method`` caption plus the selector's static stylesheet."""
    return (
        CARD_STYLESHEET + f'<div style="font:700 {SMALL} {SANS};text-transform:uppercase;'
        f'letter-spacing:0.12em;color:{MUTED};margin:0 0 8px 2px">Settlement Method</div>'
    )


def render_pill_html(pill: str) -> str:
    """A card's pill (``live``, ``local``, ``testnet``...): coloured text on a tint of the
    same colour (other labels in the muted colour)."""
    colour = PILL.get(pill, MUTED)
    return (
        f'<span class="sw-pill" data-pill="{_attr(pill)}" style="font-size:{SMALL};'
        f"font-weight:700;text-transform:uppercase;letter-spacing:0.05em;line-height:1.4;"
        f"padding:1px 8px;border-radius:9999px;white-space:nowrap;color:{colour};"
        f'background:{tint(colour, 12)};border:1px solid {tint(colour, 35)}">'
        f"{escape(pill)}</span>"
    )


def render_card_html(card: CardViewModel) -> str:
    """One card: label and pill, description, network, and what a comparison measured of
    the method (:func:`~.measured.render_measured_html`); ringed when selected."""
    if card.selected:
        border, background, label_colour = RING, tint(RING, 6), BLUE
        ring = f";box-shadow:0 0 0 1px {RING}"
    else:
        border, background, label_colour, ring = BORDER, SURFACE, FG, ""
    return (
        f'<div class="sw-card-body" data-method="{_attr(card.id)}" '
        f'data-selected="{"true" if card.selected else "false"}" '
        f'style="box-sizing:border-box;height:100%;text-align:left;padding:12px;'
        f"border-radius:10px;border:1px solid {border};background:{background};"
        f'font-family:{SANS};line-height:1.4;color:{FG}{ring}">'
        f'<div style="display:flex;justify-content:space-between;align-items:center;gap:8px">'
        f'<span style="font-size:{TITLE};font-weight:700;color:{label_colour}">'
        f"{escape(card.label)}</span>{render_pill_html(card.pill or card.status)}</div>"
        f'<div style="font-size:{BODY};color:{MUTED};margin-top:6px">{escape(card.desc)}</div>'
        f'<div style="font:{SMALL} {MONO};color:{MUTED};margin-top:6px">'
        f"{escape(card.network)}</div>{render_measured_html(card.measured)}</div>"
    )


def _address_line(line: AddressLine, explorer_base: str) -> str:
    href = _safe_href(line.href, explorer_base)
    colour = LINK if href is not None else FG
    value = f'<span style="color:{colour}">{escape(line.address)}</span>'
    if href is not None:
        value = _link(value, href, None, f"color:{LINK};text-decoration:underline dotted")
    return (
        f'<div class="sw-address" data-label="{_attr(line.label)}" '
        f'style="word-break:break-all"><span style="color:{MUTED}">{escape(line.label)}:</span> '
        f"{value}</div>"
    )


def render_address_box_html(vm: SelectorViewModel) -> str:
    """The inline address box of the selected method ("" for the aggregator)."""
    if not vm.addresses:
        return ""
    lines = "".join(_address_line(line, vm.explorer_base) for line in vm.addresses)
    return (
        f'<div class="sw-address-box" data-method="{_attr(vm.selected)}" '
        f'style="margin-top:8px;border-radius:8px;padding:10px 12px;'
        f"border:1px solid {BORDER};background:{SURFACE};color:{FG};"
        f'font:{SMALL}/1.6 {MONO}">{lines}</div>'
    )


def render_selector_html(vm: SelectorViewModel) -> str:
    """The whole selector as one static HTML fragment (what the composite shows, minus the
    click targets): caption, the comparison's caption, the three cards in a grid, the
    address box."""
    cards = "".join(render_card_html(card) for card in vm.cards)
    return (
        f'<div class="sw-selector" style="background:{INSET};border:1px solid {BORDER};'
        f'border-radius:12px;padding:12px">{render_caption_html()}'
        f"{render_comparison_caption_html(vm.caption)}"
        f'<div style="display:grid;grid-template-columns:repeat(auto-fit,minmax(180px,1fr));'
        f'gap:8px">{cards}</div>{render_address_box_html(vm)}</div>'
    )


# --- status panel ---------------------------------------------------------------------------


def _row(row: StatusRow, explorer_base: str) -> str:
    href = _safe_href(row.href, explorer_base)
    colour = row.colour or (LINK if href is not None else FG)
    font = f"font-family:{MONO};" if row.mono else ""
    title = f' title="{_attr(row.title)}"' if row.title else ""
    value = escape(row.value)
    if href is not None:
        value = _link(value, href, row.title, f"color:{colour};text-decoration:underline dotted")
        title = ""
    return (
        f'<div class="sw-row" data-label="{_attr(row.label)}" style="display:flex;'
        f'justify-content:space-between;align-items:center;gap:12px">'
        f'<span style="font-size:{SMALL};font-weight:700;text-transform:uppercase;'
        f'letter-spacing:0.04em;color:{MUTED}">{escape(row.label)}</span>'
        f'<span class="sw-value"{title} style="{font}font-size:{BODY};font-weight:600;'
        f'color:{colour};text-align:right;word-break:break-all">{value}</span></div>'
    )


def render_status_html(vm: StatusViewModel) -> str:
    """The channel status panel ("" when there is nothing to show, as in the original)."""
    if not vm.visible:
        return ""
    parts = [
        f'<div class="sw-header" style="display:flex;align-items:center;gap:8px">'
        f'<span style="width:8px;height:8px;border-radius:9999px;background:{vm.colour};'
        f'display:inline-block"></span>'
        f'<span style="font-size:{SMALL};font-weight:800;text-transform:uppercase;'
        f'letter-spacing:0.12em;color:{vm.colour}">{escape(vm.title)}</span></div>'
    ]
    if vm.rows:
        rows = "".join(_row(r, vm.explorer_base) for r in vm.rows)
        parts.append(f'<div style="display:flex;flex-direction:column;gap:8px">{rows}</div>')
    if vm.settlement_tx is not None:
        tx = vm.settlement_tx
        inner = (
            f'<span style="display:flex;align-items:center;gap:8px">'
            f'<span style="width:6px;height:6px;border-radius:9999px;background:{GREEN};'
            f'display:inline-block"></span>'
            f'<span style="font-size:{SMALL};font-weight:700;color:{GREEN}">Settlement Tx</span>'
            f"</span>"
            f'<span style="font:{SMALL} {MONO};color:{FG}">{escape(tx.value)}</span>'
        )
        box = (
            "display:flex;justify-content:space-between;align-items:center;gap:8px;"
            f"padding:8px 12px;border-radius:10px;background:{tint(GREEN, 8)};"
            f"border:1px solid {tint(GREEN, 35)};text-decoration:none"
        )
        href = _safe_href(tx.href, vm.explorer_base)
        if href is not None:
            parts.append(f'<div class="sw-tx">{_link(inner, href, tx.title, box)}</div>')
        else:
            parts.append(
                f'<div class="sw-tx" title="{_attr(tx.title)}" style="{_attr(box)}">{inner}</div>'
            )
    if vm.metadata is not None:
        lines = ""
        if vm.metadata.proofs is not None:
            lines += f"<div>Proofs: {escape(vm.metadata.proofs)}</div>"
        if vm.metadata.nonce is not None:
            lines += f"<div>Nonce: {escape(vm.metadata.nonce)}</div>"
        parts.append(
            f'<div class="sw-erc7824" style="padding:8px 12px;border-radius:10px;'
            f'background:{INSET};border:1px solid {BORDER}">'
            f'<div style="font-size:{SMALL};font-weight:700;text-transform:uppercase;'
            f'color:{MUTED};letter-spacing:0.08em;margin-bottom:4px">ERC-7824 Metadata</div>'
            f'<div style="font:{SMALL}/1.6 {MONO};color:{FG};word-break:break-all">'
            f"{lines}</div></div>"
        )
    body = "".join(parts)
    return (
        f'<div class="sw-status" data-mode="{_attr(vm.mode or "")}" style="box-sizing:border-box;'
        f"padding:16px;border-radius:12px;background:{SURFACE};color:{FG};"
        f"border:1px solid {BORDER};box-shadow:0 1px 3px rgba(0,0,0,0.12);"
        f"font-family:{SANS};line-height:1.4;max-width:560px;display:flex;flex-direction:column;"
        f'gap:12px">{body}</div>'
    )
