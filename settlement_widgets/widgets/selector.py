"""``SettlementSelector``: the three settlement-method cards, as a core-ipywidgets composite.

Each card is an ``HTML`` widget (rendered by :func:`render_card_html`) with a transparent
``Button`` laid over it in the same grid cell, so the whole card is the click target without
any custom front-end code. The selected method's contract addresses are
shown inline below the cards, linked to the network's explorer.

Given a comparison (``comparison``, or :meth:`SettlementSelector.show_comparison`), each card
also shows what was measured of its method on the comparison's intent: cost, time to final,
wallet prompts, and which run was the cheapest and the fastest
(:mod:`~settlement_widgets.widgets.measured` decides and renders it, purely).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ipywidgets
import traitlets

from ..compare.wire import ComparisonView, parse_comparison
from ..errors import SettlementValueError
from ..methods import SettlementMethod, validate_method
from ..networks import Network
from .arguments import reject_unknown, resolve_network
from .error_output import ErrorOutput, run_callback
from .home_loop import HomeLoop
from .measured import render_comparison_caption_html, with_comparison
from .render import render_address_box_html, render_caption_html, render_card_html
from .snapshot import StaticSnapshot
from .viewmodels import AggregatorSource, SelectorViewModel, network_aggregator_source

__all__ = ["SettlementSelector"]

OnChange = Callable[[SettlementMethod], Any]


class SettlementSelector(StaticSnapshot, ipywidgets.VBox):
    """Pick a settlement method: ``aggregator``, ``channel`` or ``v4``.

    ``selected`` is an observable trait (``selector.observe(f, names="selected")``).
    ``on_change(method)`` is called on every user selection, including a click on the card
    that is already selected, as the original's ``onChange``; ``set_selected`` changes the
    selection from Python without calling it. Errors raised by ``on_change`` (or by a
    coroutine it returns) are shown in :attr:`errors`, below the cards.
    ``aggregator_source`` (``live`` or ``local``) is where the aggregator's data comes
    from, so its card's pill never says ``live`` for a route server on this machine; by
    default it is the network's
    (:func:`~settlement_widgets.widgets.viewmodels.network_aggregator_source`, the rule the
    dashboard follows too, so a notebook and the dashboard agree on the same sandbox).
    ``comparison`` (a trait: anything :func:`~settlement_widgets.compare.wire.parse_comparison`
    reads, stored parsed as a :class:`~settlement_widgets.compare.wire.ComparisonView`, or
    None) puts each method's measured figures on its card; a comparison of another network
    is refused, so a card never shows figures measured elsewhere.
    """

    selected = traitlets.Unicode("aggregator", help="the selected settlement method")
    comparison = traitlets.Any(
        None, allow_none=True, help="the comparison shown on the cards (a ComparisonView)"
    )

    def __init__(
        self,
        selected: str = "aggregator",
        on_change: OnChange | None = None,
        network: Network | str | None = None,
        aggregator_source: AggregatorSource | None = None,
        comparison: Any = None,
        **kwargs: Any,
    ) -> None:
        reject_unknown(
            "SettlementSelector",
            kwargs,
            ("selected", "on_change", "network", "aggregator_source", "comparison", "layout"),
        )
        method = validate_method(selected)
        self._check_callback(on_change)
        self._network = resolve_network(network)
        # what the aggregator card's pill says: "live" only for data from the live API
        self._aggregator_source: AggregatorSource = (
            network_aggregator_source(self._network)
            if aggregator_source is None
            else aggregator_source
        )
        self.on_change: OnChange | None = on_change
        self._errors = ErrorOutput("SettlementSelector")

        measured = self._parse_comparison(comparison)
        vm = with_comparison(
            SelectorViewModel.build(method, self._network, self._aggregator_source), measured
        )
        self._card_html: dict[str, ipywidgets.HTML] = {}
        self._buttons: dict[str, ipywidgets.Button] = {}
        cards = []
        for card in vm.cards:
            html = ipywidgets.HTML(
                render_card_html(card), layout=ipywidgets.Layout(grid_area="card", margin="0")
            )
            button = ipywidgets.Button(
                description="",
                tooltip=f"Select {card.label} ({card.id})",
                layout=ipywidgets.Layout(
                    grid_area="card", width="auto", height="auto", margin="0", align_self="stretch"
                ),
                style=ipywidgets.ButtonStyle(button_color="transparent"),
            )
            button.add_class("sw-card-button")
            button.add_class(f"sw-card-{card.id}")
            button.on_click(lambda _b, m=card.id: self.click(m))
            box = ipywidgets.GridBox(
                [html, button],
                layout=ipywidgets.Layout(
                    grid_template_areas='"card"',
                    grid_template_columns="minmax(0, 1fr)",
                    grid_template_rows="1fr",
                ),
            )
            box.add_class("sw-card")
            self._card_html[card.id] = html
            self._buttons[card.id] = button
            cards.append(box)
        grid = ipywidgets.GridBox(
            cards,
            layout=ipywidgets.Layout(
                grid_template_columns="repeat(auto-fit, minmax(180px, 1fr))",
                grid_gap="0.5rem",
                width="100%",
            ),
        )
        self._addresses = ipywidgets.HTML(
            render_address_box_html(vm), layout=ipywidgets.Layout(margin="0")
        )
        self._addresses.add_class("sw-addresses")
        # the caption names the comparison's intent under "Settlement Method" when there is
        # one (one widget: the children keep their places)
        self._caption = ipywidgets.HTML(
            self._caption_html(vm), layout=ipywidgets.Layout(margin="0")
        )
        super().__init__(children=[self._caption, grid, self._addresses, self._errors], **kwargs)
        self.add_class("sw-selector")
        self._home = HomeLoop()
        self.selected = method
        self.comparison = measured
        self.observe(self._render, names=["selected", "comparison"])

    # --- public API ---------------------------------------------------------------------

    @property
    def network(self) -> Network:
        return self._network

    @property
    def errors(self) -> ErrorOutput:
        """The output beside the widget where callback errors are shown."""
        return self._errors

    @property
    def view_model(self) -> SelectorViewModel:
        """What the selector shows now: the cards, the address box, the comparison's
        figures (:func:`~settlement_widgets.widgets.measured.with_comparison`)."""
        vm = SelectorViewModel.build(self.selected, self._network, self._aggregator_source)
        return with_comparison(vm, self.comparison)

    def show_comparison(self, comparison: Any) -> ComparisonView | None:
        """Show ``comparison`` on the cards (None clears them): a ``Comparison``, its
        ``to_json()`` or JSON text, parsed strictly; returns what is shown. A malformed
        comparison, or one of another network, raises and leaves the cards as they were."""
        self.comparison = comparison
        return self.comparison  # type: ignore[no-any-return]

    def set_selected(self, method: str) -> None:
        """Select ``method`` from Python (observers of ``selected`` run; ``on_change`` not)."""
        self.selected = validate_method(method)

    def click(self, method: str) -> None:
        """What a click on the card of ``method`` does: select it, then call ``on_change``,
        on the loop the selector was built on (a click arriving on a JupyterLab subshell
        thread is handed to it, so ``on_change`` may drive providers made there)."""
        method = validate_method(method)
        if self._home.hand_over(self.click, method):
            return
        try:
            self.selected = method
        except Exception as exc:  # an observer of `selected` failed: show it, don't lose it
            self._errors.report(exc, "an observer of 'selected'")
        if self.on_change is not None:
            run_callback(self._errors, "on_change", self.on_change, method)

    def card_button(self, method: str) -> ipywidgets.Button:
        """The click target over the card of ``method`` (``.click()`` simulates the user)."""
        return self._buttons[validate_method(method)]

    def __repr__(self) -> str:
        return f"SettlementSelector(selected={self.selected!r}, network={self._network.name!r})"

    # --- internals ----------------------------------------------------------------------

    @traitlets.validate("selected")
    def _validate_selected(self, proposal: dict[str, Any]) -> str:
        return validate_method(proposal["value"])

    @traitlets.validate("comparison")
    def _validate_comparison(self, proposal: dict[str, Any]) -> ComparisonView | None:
        return self._parse_comparison(proposal["value"])

    def _parse_comparison(self, value: Any) -> ComparisonView | None:
        """``value`` parsed, and only if it was measured on this selector's network."""
        if value is None:
            return None
        view = parse_comparison(value)
        if view.network != self._network.name:
            raise SettlementValueError(
                f"this comparison was measured on {view.network!r}; the selector shows "
                f"{self._network.name!r}"
            )
        return view

    @staticmethod
    def _check_callback(on_change: object) -> None:
        if on_change is not None and not callable(on_change):
            raise SettlementValueError(
                f"on_change must be a function taking the method, got {type(on_change).__name__}"
            )

    @staticmethod
    def _caption_html(vm: SelectorViewModel) -> str:
        """The caption widget's HTML: the stylesheet and title, then the comparison's intent
        (one widget, so the selector's children keep their places for code that walks them)."""
        return render_caption_html() + render_comparison_caption_html(vm.caption)

    def _render(self, _change: object = None) -> None:
        vm = self.view_model
        with self.hold_sync():
            for card in vm.cards:
                self._card_html[card.id].value = render_card_html(card)
            self._addresses.value = render_address_box_html(vm)
            self._caption.value = self._caption_html(vm)
