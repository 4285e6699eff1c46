"""A static HTML snapshot of a widget, saved beside the live view in the notebook's output.

A committed notebook carries no widget state (it would be large and would go stale), so
without a kernel (GitHub, nbviewer, ``jupyter nbconvert --to html``, a first Binder view of an
untrusted notebook) the live view cannot be drawn and the reader saw the object's repr,
``SettlementDashboard(...)``. Our widgets therefore add a ``text/html`` entry to their display
bundle: what they showed when the cell ran, drawn from the same HTML the live widget holds.
Front ends that can draw the widget prefer its view (the widget renderer ranks first, and a
trusted output may use it); the others fall back to this snapshot.

:func:`static_html` is pure: it walks the widget tree. ``HTML`` widgets give their value (our
renderers' output, already escaped), buttons with a label become disabled ``<button>``s, boxes
become ``<div>``s laid out like the box (hidden ones are left out), a progress bar becomes a
``<progress>``; anything else (error outputs, overlay buttons without a label) is left out.
A link to a loopback port (a private sandbox's explorer) becomes its text, titled with where
it pointed: the snapshot outlives that sandbox, and a reader elsewhere could not open it.

A user's saved notebook keeps the live view's entry too; reopened without the widget's model
(no kernel, or a new one), JupyterLab would draw "Error displaying widget: model not found"
in its place. :func:`drop_orphan_views` (the server extension's pre-save hook) leaves out the
view of each output that carries our snapshot and whose model's state the file does not hold,
so the snapshot is what reopens.
"""

from __future__ import annotations

import html
from typing import Any, Final

import ipywidgets

from ..links import delink_loopback

__all__ = ["SNAPSHOT_NOTE", "StaticSnapshot", "drop_orphan_views", "static_html"]

#: under every snapshot, so no one mistakes it for the live widget
SNAPSHOT_NOTE: Final = "A snapshot of this widget when the cell ran; run the notebook to use it."
_FLEX: Final = {ipywidgets.HBox: "row", ipywidgets.VBox: "column"}


def _classes(widget: ipywidgets.DOMWidget) -> str:
    names = " ".join(str(c) for c in getattr(widget, "_dom_classes", ()))
    return f' class="{html.escape(names, quote=True)}"' if names else ""


def _box_style(box: ipywidgets.Box) -> str:
    if isinstance(box, ipywidgets.GridBox):
        columns = box.layout.grid_template_columns or "1fr"
        return f"display:grid;grid-template-columns:{html.escape(str(columns), quote=True)};gap:8px"
    direction = next((d for kind, d in _FLEX.items() if isinstance(box, kind)), "row")
    return f"display:flex;flex-direction:{direction};flex-wrap:wrap;gap:8px"


def _render(widget: Any) -> str:
    layout = getattr(widget, "layout", None)
    if layout is not None and layout.display == "none":
        return ""
    if isinstance(widget, ipywidgets.HTML):
        return f"<div{_classes(widget)}>{widget.value}</div>"
    if isinstance(widget, ipywidgets.Button):
        if not widget.description:
            return ""
        return f"<button{_classes(widget)} disabled>{html.escape(str(widget.description))}</button>"
    if isinstance(widget, ipywidgets.IntProgress):
        label = html.escape(str(widget.description))
        return (
            f"<div{_classes(widget)}>{label} "
            f'<progress value="{int(widget.value - widget.min)}" '
            f'max="{int(widget.max - widget.min)}"></progress></div>'
        )
    if isinstance(widget, ipywidgets.Output):
        return ""
    if isinstance(widget, ipywidgets.Box):
        inner = "".join(_render(child) for child in widget.children)
        if not inner:
            return ""
        return f'<div{_classes(widget)} style="{_box_style(widget)}">{inner}</div>'
    return ""


def static_html(widget: ipywidgets.Widget) -> str:
    """What ``widget`` shows now, as static HTML (see the module's docstring)."""
    return (
        '<div class="sw-static-snapshot" data-snapshot="true">'
        + delink_loopback(_render(widget))
        + '<div class="sw-static-note" style="font-size:12px;opacity:0.8;margin-top:4px">'
        + html.escape(SNAPSHOT_NOTE)
        + "</div></div>"
    )


class StaticSnapshot:
    """Mixed into our widgets: their display bundle gains a ``text/html`` snapshot."""

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any] | None:
        bundle: dict[str, Any] | None = super()._repr_mimebundle_(**kwargs)  # type: ignore[misc]
        if bundle is not None:
            bundle["text/html"] = static_html(self)  # type: ignore[arg-type]
        return bundle


_VIEW: Final = "application/vnd.jupyter.widget-view+json"
_STATE: Final = "application/vnd.jupyter.widget-state+json"
#: what our static fallbacks carry: the widgets' snapshot and the progress bar's line
_OURS: Final = ('data-snapshot="true"', 'class="sw-progress-static"')


def drop_orphan_views(notebook: dict[str, Any]) -> int:
    """Remove, in place, the widget view of every output that also carries our static
    snapshot when the notebook holds no saved state for the view's model (JupyterLab saves
    none by default); returns how many were removed. Other outputs are left as they are."""
    state = ((notebook.get("metadata") or {}).get("widgets") or {}).get(_STATE) or {}
    saved = set((state.get("state") or {}).keys())
    dropped = 0
    for cell in notebook.get("cells") or ():
        for output in cell.get("outputs") or ():
            data = output.get("data") if isinstance(output, dict) else None
            if not isinstance(data, dict) or _VIEW not in data:
                continue
            snapshot = data.get("text/html")
            text = "".join(snapshot) if isinstance(snapshot, list) else str(snapshot or "")
            if not any(mark in text for mark in _OURS):
                continue
            view = data[_VIEW]
            if isinstance(view, dict) and view.get("model_id") in saved:
                continue
            del data[_VIEW]
            dropped += 1
    return dropped
