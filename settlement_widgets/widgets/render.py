"""Pure HTML renderers of the two view models, with the original dashboard's look.

The ipywidgets ``HTML`` widget sets ``innerHTML`` as is, so everything dynamic (labels,
addresses, relay or contract strings, provider metadata) goes through :func:`html.escape`
here, attribute values are always double-quoted and escaped, and a link is emitted only when
the view model produced an ``http(s)`` URL under the network's explorer base (checked again
here); anything else is plain text. Styles are inline so the look survives any notebook theme.
"""

from __future__ import annotations

from html import escape

from .viewmodels import (
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
    "render_address_box_html",
    "render_caption_html",
    "render_card_html",
    "render_selector_html",
    "render_status_html",
]

# --- the original's palette (dark theme of globals.css) ------------------------------------
BG_SECONDARY = "#0F1A2E"
BG_TERTIARY = "#131D33"
FG_PRIMARY = "#ffffff"
FG_SECONDARY = SECONDARY
FG_ACCENT = "#F2B94B"
FG_INFO = "#38BDF8"
BORDER_PRIMARY = "rgba(255,255,255,0.05)"
BORDER_SECONDARY = "rgba(255,255,255,0.10)"
MONO = "ui-monospace,SFMono-Regular,Menlo,Consolas,monospace"
SANS = "Inter,system-ui,-apple-system,'Segoe UI',Roboto,sans-serif"

PILL = {
    "live": ("rgba(34,197,94,0.15)", "#22c55e"),
    "demo": ("rgba(56,189,248,0.15)", "#38bdf8"),
}

#: Static CSS (no dynamic text) for the selector composite: dark container, transparent
#: click targets over the cards and the original's slight zoom on hover.
CARD_STYLESHEET = (
    "<style>"
    ".sw-selector{background:" + BG_SECONDARY + ";border-radius:16px;padding:12px;"
    "box-sizing:border-box}"
    ".sw-selector .sw-card{transition:transform .12s ease}"
    ".sw-selector .sw-card:hover{transform:scale(1.01)}"
    ".sw-selector .sw-card-button,.sw-selector .sw-card-button:hover,"
    ".sw-selector .sw-card-button:focus,.sw-selector .sw-card-button:active{"
    "background:transparent!important;box-shadow:none!important;outline:none;"
    "border:none!important;cursor:pointer}"
    "</style>"
)


def _attr(value: str) -> str:
    """An attribute value: always quoted by the caller with ``"``, escaped here."""
    return escape(value, quote=True)


def _safe_href(href: str | None, explorer_base: str) -> str | None:
    """Keep ``href`` only if it is http(s) and under the explorer base (defence in depth)."""
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
        CARD_STYLESHEET + f'<div style="font:700 10px {SANS};text-transform:uppercase;'
        f'letter-spacing:0.2em;color:{MUTED};margin:0 0 6px 2px">Settlement Method</div>'
    )


def render_card_html(card: CardViewModel) -> str:
    """One card: label and status pill, description, network; highlighted when selected."""
    if card.selected:
        bg, border, label_colour = "rgba(242,185,75,0.10)", FG_ACCENT, FG_ACCENT
    else:
        bg, border, label_colour = BG_TERTIARY, BORDER_SECONDARY, FG_PRIMARY
    pill_bg, pill_fg = PILL.get(card.status, ("rgba(148,163,184,0.15)", FG_SECONDARY))
    return (
        f'<div class="sw-card-body" data-method="{_attr(card.id)}" '
        f'data-selected="{"true" if card.selected else "false"}" '
        f'style="box-sizing:border-box;height:100%;text-align:left;padding:0.75rem;'
        f"border-radius:12px;border:1px solid {border};background:{bg};font-family:{SANS};"
        f'line-height:1.35">'
        f'<div style="display:flex;justify-content:space-between;align-items:center;gap:6px">'
        f'<span style="font-size:12px;font-weight:700;color:{label_colour}">'
        f"{escape(card.label)}</span>"
        f'<span style="font-size:8px;font-weight:700;text-transform:uppercase;'
        f"padding:2px 6px;border-radius:9999px;background:{pill_bg};color:{pill_fg};"
        f'letter-spacing:0.05em">{escape(card.status)}</span></div>'
        f'<div style="font-size:9px;color:{MUTED};margin-top:4px">{escape(card.desc)}</div>'
        f'<div style="font:8px {MONO};color:{MUTED};opacity:0.7;margin-top:4px">'
        f"{escape(card.network)}</div></div>"
    )


def _address_line(line: AddressLine, explorer_base: str) -> str:
    value = f'<span style="color:{FG_INFO}">{escape(line.address)}</span>'
    href = _safe_href(line.href, explorer_base)
    if href is not None:
        value = _link(value, href, None, f"color:{FG_INFO};text-decoration:underline dotted")
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
        f'style="margin-top:8px;border-radius:8px;padding:0.625rem;'
        f"border:1px solid {BORDER_SECONDARY};background:{BG_TERTIARY};"
        f'font:9px/1.6 {MONO}">{lines}</div>'
    )


def render_selector_html(vm: SelectorViewModel) -> str:
    """The whole selector as one static HTML fragment (what the composite shows, minus the
    click targets): caption, the three cards in a grid, the address box."""
    cards = "".join(render_card_html(card) for card in vm.cards)
    return (
        f'<div class="sw-selector" style="background:{BG_SECONDARY};border-radius:16px;'
        f'padding:12px">{render_caption_html()}'
        f'<div style="display:grid;grid-template-columns:repeat(auto-fit,minmax(180px,1fr));'
        f'gap:0.5rem">{cards}</div>{render_address_box_html(vm)}</div>'
    )


# --- status panel ---------------------------------------------------------------------------


def _row(row: StatusRow, explorer_base: str) -> str:
    colour = row.colour or FG_PRIMARY
    font = f"font-family:{MONO};" if row.mono else ""
    title = f' title="{_attr(row.title)}"' if row.title else ""
    value = escape(row.value)
    href = _safe_href(row.href, explorer_base)
    if href is not None:
        value = _link(value, href, row.title, f"color:{colour};text-decoration:underline dotted")
        title = ""
    return (
        f'<div class="sw-row" data-label="{_attr(row.label)}" style="display:flex;'
        f'justify-content:space-between;align-items:center;gap:12px">'
        f'<span style="font-size:10px;font-weight:700;text-transform:uppercase;color:{MUTED}">'
        f"{escape(row.label)}</span>"
        f'<span class="sw-value"{title} style="{font}font-size:11px;font-weight:600;'
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
        f'<span style="font-size:10px;font-weight:900;text-transform:uppercase;'
        f'letter-spacing:0.3em;color:{vm.colour}">{escape(vm.title)}</span></div>'
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
            f'<span style="font-size:10px;font-weight:700;color:{GREEN}">Settlement Tx</span>'
            f"</span>"
            f'<span style="font:9px {MONO};color:{MUTED}">{escape(tx.value)}</span>'
        )
        box = (
            "display:flex;justify-content:space-between;align-items:center;gap:8px;"
            "padding:8px 12px;border-radius:12px;background:rgba(34,197,94,0.08);"
            "border:1px solid rgba(34,197,94,0.25);text-decoration:none"
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
            f'<div class="sw-erc7824" style="padding:8px 12px;border-radius:12px;'
            f'background:{BG_TERTIARY};border:1px solid {BORDER_SECONDARY}">'
            f'<div style="font-size:8px;font-weight:700;text-transform:uppercase;'
            f'color:{MUTED};letter-spacing:0.1em;margin-bottom:4px">ERC-7824 Metadata</div>'
            f'<div style="font:9px/1.6 {MONO};color:{FG_SECONDARY};word-break:break-all">'
            f"{lines}</div></div>"
        )
    body = "".join(parts)
    return (
        f'<div class="sw-status" data-mode="{_attr(vm.mode or "")}" style="box-sizing:border-box;'
        f"padding:1.25rem;border-radius:16px;background:{BG_SECONDARY};"
        f"border:1px solid {BORDER_PRIMARY};box-shadow:0 20px 25px -5px rgba(0,0,0,0.35);"
        f"font-family:{SANS};line-height:1.4;max-width:560px;display:flex;flex-direction:column;"
        f'gap:1rem">{body}</div>'
    )
