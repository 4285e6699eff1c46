"""``ChannelStatusPanel``: the status of one channel (or a settlement tx), live if bound.

The JACK dashboard's props are snake_case traits; every change re-renders the panel's ``HTML``
from the pure view model. :meth:`ChannelStatusPanel.bind` subscribes to a provider's events
(``provider.on(event, callback)``) so a dispute turns the panel red without re-running a
cell; callback errors are shown in :attr:`errors` beside the panel, never lost.
"""

from __future__ import annotations

import asyncio
import functools
import html
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import ipywidgets
import traitlets

from ..errors import SettlementValueError, UnknownOptionError
from ..networks import Network
from .arguments import reject_unknown, resolve_network
from .error_output import ErrorOutput
from .home_loop import HomeLoop
from .render import render_status_html
from .snapshot import StaticSnapshot
from .viewmodels import PROP_NAMES, StatusProps, StatusViewModel

__all__ = ["CHANNEL_EVENTS", "Binding", "ChannelStatusPanel"]

#: provider events the panel listens to; each callback receives the updated channel
CHANNEL_EVENTS: tuple[str, ...] = (
    "channel_created",
    "channel_updated",
    "channel_challenged",
    "channel_closed",
)


def _prop() -> traitlets.Any:
    return traitlets.Any(None, allow_none=True)


class Binding:
    """The handle :meth:`ChannelStatusPanel.bind` returns: call it (or :meth:`unbind`) to
    stop following the provider. Idempotent."""

    def __init__(self, provider: Any, channel_id: str) -> None:
        self.provider = provider
        self.channel_id = channel_id
        self.active = True
        #: the loop (and its thread) bind() ran on: events from other threads are handed to it
        self.home = HomeLoop()
        #: the task showing ``provider.get_channel``'s answer, when that is a coroutine
        self.fetched: asyncio.Task[None] | None = None
        self._handles: list[tuple[str, Callable[..., Any], Any]] = []

    def unbind(self) -> None:
        if not self.active:
            return
        self.active = False
        off = getattr(self.provider, "off", None)
        for event, callback, returned in self._handles:
            if callable(returned):  # `on` returned an unsubscribe function
                returned()
            elif callable(off):
                off(event, callback)
        self._handles.clear()

    __call__ = unbind

    def __repr__(self) -> str:
        state = "active" if self.active else "unbound"
        return f"Binding(channel_id={self.channel_id!r}, {state})"


class ChannelStatusPanel(StaticSnapshot, ipywidgets.VBox):
    """The channel status panel of the original dashboard, as a core-ipywidgets composite.

    Props (all optional): ``channel_id``, ``channel_status``, ``state_intent``,
    ``state_version``, ``state_hash``, ``adjudicator``, ``challenge_period``,
    ``settlement_tx``, ``provider`` (``channel`` or ``v4``), ``provider_metadata``.
    ``network`` (a :class:`Network`, a name, or None for the configured one, else Sepolia)
    decides the explorer links and the v4 addresses.
    """

    channel_id = _prop()
    channel_status = _prop()
    state_intent = _prop()
    state_version = _prop()
    state_hash = _prop()
    adjudicator = _prop()
    challenge_period = _prop()
    settlement_tx = _prop()
    provider = _prop()
    provider_metadata = _prop()

    def __init__(self, network: Network | str | None = None, **props: Any) -> None:
        reject_unknown("ChannelStatusPanel", props, (*PROP_NAMES, "network", "layout"))
        layout = props.pop("layout", None)
        initial = StatusProps.from_kwargs(**props)
        self._network = resolve_network(network)
        self._errors = ErrorOutput("ChannelStatusPanel")
        self._html = ipywidgets.HTML("", layout=ipywidgets.Layout(margin="0"))
        self._html.add_class("sw-status-html")
        # the provider's chain watcher, when it fails (hidden while it works)
        self._notice = ipywidgets.HTML("", layout=ipywidgets.Layout(margin="0", display="none"))
        self._notice.add_class("sw-status-notice")
        self._binding: Binding | None = None
        self._event_seq = 0
        self._quiet = True
        box_kwargs = {} if layout is None else {"layout": layout}
        super().__init__(children=[self._html, self._notice, self._errors], **box_kwargs)
        self.add_class("sw-status-panel")
        for name, value in initial.as_dict().items():
            setattr(self, name, value)
        self._quiet = False
        self.observe(self._render, names=list(PROP_NAMES))
        self._render()

    # --- constructors -------------------------------------------------------------------

    @classmethod
    def from_props(
        cls, mapping: Mapping[str, Any], *, network: Network | str | None = None
    ) -> ChannelStatusPanel:
        """A panel from the original camelCase props (``channelId``, ``channelStatus``, ...)."""
        return cls(network=network, **StatusProps.from_camel(mapping).as_dict())

    @classmethod
    def from_channel(
        cls,
        channel: Any,
        *,
        network: Network | str | None = None,
        provider: str = "channel",
    ) -> ChannelStatusPanel:
        """A panel showing a channel object (see :meth:`StatusProps.from_channel`)."""
        return cls(network=network, **StatusProps.from_channel(channel, provider).as_dict())

    # --- public API ---------------------------------------------------------------------

    @property
    def network(self) -> Network:
        return self._network

    @property
    def errors(self) -> ErrorOutput:
        """The output beside the panel where callback errors are shown."""
        return self._errors

    @property
    def props(self) -> StatusProps:
        return StatusProps(**{name: getattr(self, name) for name in PROP_NAMES})

    @property
    def view_model(self) -> StatusViewModel:
        return StatusViewModel.build(self.props, self._network)

    @property
    def html(self) -> str:
        """The panel's current HTML (what the browser shows)."""
        return str(self._html.value)

    @property
    def notice(self) -> str:
        """The watcher notice's HTML ("" while the provider's chain watcher works)."""
        return str(self._notice.value)

    def show_watcher(self, status: Any) -> None:
        """Show a provider's ``watcher`` event: a failing chain watcher (escaped error,
        failures in a row, next retry) or, with ``ok``, clear the notice."""
        if getattr(status, "ok", True):
            self._notice.value = ""
            self._notice.layout.display = "none"
            return
        error = html.escape(str(getattr(status, "error", None) or "unknown error"))
        failures = int(getattr(status, "failures", 0) or 0)
        retry = getattr(status, "retry_in", None)
        when = f"; retrying in {float(retry):.0f} s" if retry is not None else ""
        self._notice.value = (
            '<div class="sw-watcher-failing" role="alert" style="padding:6px 10px;'
            "border-left:4px solid #b45309;background:#fffbeb;color:#78350f;"
            'font-size:13px">'
            f"<strong>Chain watcher failing</strong> ({failures} in a row{when}): {error}. "
            "Challenges and closes by the counterparty are not seen until it recovers."
            "</div>"
        )
        self._notice.layout.display = None

    def update(self, **props: Any) -> None:
        """Change some props at once (None clears one). All are validated before any
        changes, so a bad value raises and leaves the panel as it was."""
        reject_unknown("ChannelStatusPanel.update", props, PROP_NAMES)
        checked = {name: StatusProps.coerce(name, value) for name, value in props.items()}
        self._apply(checked)

    def show_channel(self, channel: Any) -> None:
        """Show ``channel`` (an object or mapping as :meth:`from_channel` reads it)."""
        props = StatusProps.from_channel(channel, self.provider or "channel").as_dict()
        self._apply(props)

    def bind(
        self, provider: Any, channel_id: str, *, events: Iterable[str] = CHANNEL_EVENTS
    ) -> Binding:
        """Follow ``channel_id`` on ``provider`` until the returned handle is called.

        Subscribes with ``provider.on(event, callback)`` to each of ``events``; a callback
        receives the updated channel (object or mapping); callbacks from another thread are
        handed to the event loop ``bind`` was called on. ``on`` may return an unsubscribe
        function; otherwise ``provider.off(event, callback)`` is used to unbind. If the
        provider has ``get_channel(channel_id)`` (sync or async), its answer is shown first.
        Binding again replaces the previous binding.
        """
        on = getattr(provider, "on", None)
        if not callable(on):
            raise SettlementValueError(
                f"cannot bind to {type(provider).__name__}: it has no on(event, callback) method"
            )
        cid = StatusProps.coerce("channel_id", channel_id)
        if not cid:
            raise SettlementValueError("channel_id must be a non-empty string")
        self.unbind()
        binding = Binding(provider, cid)
        self._binding = binding
        self._apply({"channel_id": cid, "provider": self.provider or "channel"})
        try:
            for event in events:
                callback = functools.partial(self._on_event, binding, event)
                binding._handles.append((event, callback, on(event, callback)))
            watcher = functools.partial(self._on_event, binding, "watcher")
            try:
                binding._handles.append(("watcher", watcher, on("watcher", watcher)))
            except UnknownOptionError:
                pass  # a provider without a chain watcher
        except BaseException:
            self.unbind()  # drop the subscriptions made so far
            raise
        getter = getattr(provider, "get_channel", None)
        if callable(getter):
            self._fetch_initial(binding, getter)
        return binding

    def unbind(self) -> None:
        """Stop following the provider (no-op when not bound)."""
        if self._binding is not None:
            self._binding.unbind()
            self._binding = None

    @property
    def binding(self) -> Binding | None:
        return self._binding

    def __repr__(self) -> str:
        shown = []
        for name, value in self.props.as_dict().items():
            if value is None:
                continue
            if name == "provider_metadata":
                value = dict(value)
            shown.append(f"{name}={value!r}")
        shown.append(f"network={self._network.name!r}")
        return f"ChannelStatusPanel({', '.join(shown)})"

    # --- internals ----------------------------------------------------------------------

    @traitlets.validate(*PROP_NAMES)
    def _validate_prop(self, proposal: Any) -> Any:
        return StatusProps.coerce(proposal["trait"].name, proposal["value"])

    def _apply(self, props: Mapping[str, Any]) -> None:
        """Set already-validated props, then render once."""
        self._quiet = True
        try:
            with self.hold_trait_notifications():
                for name, value in props.items():
                    setattr(self, name, value)
        finally:
            self._quiet = False
        self._render()

    def _render(self, _change: object = None) -> None:
        if self._quiet:
            return
        vm = self.view_model
        self._html.value = render_status_html(vm)
        self._html.layout.display = None if vm.visible else "none"

    def _matches(self, binding: Binding, channel: Any) -> bool:
        cid = StatusProps.from_channel(channel, None).channel_id
        return cid is not None and cid.lower() == binding.channel_id.lower()

    def _on_event(self, binding: Binding, event: str, *args: Any, **kwargs: Any) -> None:
        # widget state belongs to the kernel's loop thread: update the panel there
        here = functools.partial(self._on_event_here, binding, event, *args, **kwargs)
        if not binding.home.hand_over(here):
            here()

    def _on_event_here(self, binding: Binding, event: str, *args: Any, **kwargs: Any) -> None:
        if not binding.active or binding is not self._binding:
            return
        if event == "watcher":
            try:
                self.show_watcher(args[0] if args else kwargs.get("status"))
            except Exception as exc:
                self._errors.report(exc, "the 'watcher' event")
            return
        channel = args[0] if args else kwargs.get("channel")
        try:
            if channel is None or not self._matches(binding, channel):
                return
            self._event_seq += 1
            self.show_channel(channel)
        except Exception as exc:
            self._errors.report(exc, f"the {event!r} event")

    def _fetch_initial(self, binding: Binding, getter: Callable[[str], Any]) -> None:
        seq = self._event_seq

        def show(channel: Any) -> None:
            # an event that arrived meanwhile is newer than this answer
            if binding is not self._binding or not binding.active or self._event_seq != seq:
                return
            if channel is not None and self._matches(binding, channel):
                self.show_channel(channel)

        where = "provider.get_channel"
        try:
            result = getter(binding.channel_id)
        except Exception as exc:
            self._errors.report(exc, where)
            return
        if not asyncio.iscoroutine(result):
            try:
                show(result)
            except Exception as exc:
                self._errors.report(exc, where)
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            result.close()
            return
        pending = result

        async def fetch() -> None:
            try:
                show(await pending)
            except Exception as exc:
                self._errors.report(exc, where)

        binding.fetched = loop.create_task(fetch())
