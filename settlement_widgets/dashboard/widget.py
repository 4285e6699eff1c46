"""``SettlementDashboard``: the selector, the status panel and real actions, as one app.

It is what ``notebooks/dashboard.ipynb`` shows as a Voila app: pick a method on the
``SettlementSelector``, and the action bar below offers what that method can do here:

* ``channel``: ask the faucet for test tokens, open a channel with the relay's broker,
  transfer off-chain, close it (the ``ChannelStatusPanel`` follows the channel live);
* ``v4``: settle a signed intent through the policy hook (the panel shows the settlement);
* ``aggregator``: rank LI.FI routes (the sandbox's route server when the network profile
  has one, else the live LI.FI API, unless a provider is given).

Given a comparison of the methods on this network (``comparison=``, or
:meth:`SettlementDashboard.show_comparison`), the selector's cards show each method's measured
cost, time to final and wallet prompts, and mark the cheapest and the fastest.

Button callbacks never block and never nest event loops: a click schedules the action's
coroutine on the kernel's running loop (no ``nest_asyncio``) and returns. One
action runs at a time; the buttons are disabled meanwhile and a progress bar moves, then
collapses to one line saying how long the action took. What happened goes to the activity log,
one timestamped line per result with its units and the action's elapsed time (escaped text,
links only to explorer URLs: ``http(s)://`` or a path on the Jupyter server);
a :class:`~settlement_widgets.errors.SettlementError` is logged as a message the user can
act on, anything else also lands in :attr:`SettlementDashboard.errors` with its traceback.

Which buttons are enabled is the pure :func:`enabled_actions`; the log's HTML is the pure
:func:`render_log_html`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

import ipywidgets

from ..channel.v0_5.core.amounts import format_amount
from ..errors import (
    SettlementError,
    SettlementValueError,
    UnknownOptionError,
)
from ..methods import validate_method
from ..networks import Network
from ..progress import ProgressBar
from ..widgets import ChannelStatusPanel, ErrorOutput, SettlementSelector
from ..widgets.home_loop import HomeLoop
from ..widgets.snapshot import StaticSnapshot
from ..widgets.viewmodels import (
    PROP_NAMES,
    AggregatorSource,
    aggregator_source,
)
from .channel_actions import ChannelActions
from .route_actions import RouteActions
from .v4_actions import V4Actions
from .view import (
    _EXPECTED_SECONDS,
    _LABELS,
    _MAX_LOG_LINES,
    ACTIONS,
    Action,
    ActionState,
    LogLine,
    _short,
    _status_html,
    action_tooltip,
    enabled_actions,
    render_log_html,
)

if TYPE_CHECKING:
    from ..aggregator import AggregatorProvider
    from ..channel.interface import ChannelClient
    from ..channel.models import Channel
    from ..compare.wire import ComparisonView
    from ..notebook import NotebookSession
    from ..signer import Signer
    from ..v4 import V4Provider

__all__ = [
    "ACTIONS",
    "ActionState",
    "LogLine",
    "SettlementDashboard",
    "enabled_actions",
    "render_log_html",
]


class SettlementDashboard(ChannelActions, V4Actions, RouteActions, StaticSnapshot, ipywidgets.VBox):
    """Selector + action bar + status panel + activity log, acting as ``user`` on ``network``.

    ``operator`` owns the v4 hook and adapter (registers policies and, by default, settles as
    solver); ``solver`` settles intents when it is another wallet (authorised once by the
    operator); ``recipient`` receives the off-chain transfers (default: the relay's broker);
    ``aggregator`` ranks routes (default: the LI.FI-schema route server at the network
    profile's ``extra["lifiUrl"]`` when it has one, the local sandbox's; else the live API);
    ``transfer_amount`` is in the channel asset's smallest units (default: one token).
    The faucet, relay and explorer are always the network's. Use :meth:`from_session` in a
    notebook.
    """

    def __init__(
        self,
        network: Network,
        user: Signer,
        *,
        operator: Signer | None = None,
        solver: Signer | None = None,
        recipient: str | None = None,
        aggregator: AggregatorProvider | None = None,
        transfer_amount: int | None = None,
        selected: str = "channel",
        comparison: Any = None,
    ) -> None:
        from ..addresses import validate_address
        from ..channel.v0_5.core.lifecycle import units

        if not isinstance(network, Network):
            raise SettlementValueError(
                f"network must be a Network (session.network), got {type(network).__name__}"
            )
        self.network = network
        self.user = user
        self.operator = operator
        self.solver = solver
        self.recipient = (
            None if recipient is None else validate_address(recipient, field="recipient")
        )
        self.transfer_amount = (
            10**network.asset_decimals
            if transfer_amount is None
            else units(transfer_amount, "transfer_amount")
        )
        self._aggregator = aggregator
        #: the channel method's provider for the network's protocol (v0.5 or v1)
        self._channel_provider: ChannelClient | None = None
        self._user_v4: V4Provider | None = None
        #: the network with the operator's own v4 deployment, once one is used
        self._v4_network: Network | None = None
        self._operator_v4: V4Provider | None = None
        self._solver_v4: V4Provider | None = None
        self._solver_authorised = False
        self._intents = 0
        self._channel: Channel | None = None
        self._v4_tx: str | None = None
        self._busy = False
        self._tasks: set[asyncio.Task[None]] = set()
        # every action runs on the loop the dashboard was built on (the kernel's), whatever
        # thread the click arrives on (ipykernel 7 subshells)
        self._home = HomeLoop()
        self._activity: list[LogLine] = []
        self._logged = 0  # lines ever logged (the log keeps the last _MAX_LOG_LINES)

        self.selector = SettlementSelector(
            selected=validate_method(selected),
            network=network,
            aggregator_source=self.routes_source,
            comparison=comparison,
        )
        self.panel = ChannelStatusPanel(network=network)
        self.errors = ErrorOutput("SettlementDashboard")
        self.buttons: dict[Action, ipywidgets.Button] = {}
        self._bars: dict[str, ipywidgets.HBox] = {}
        for method, actions in ACTIONS.items():
            row = []
            for action in actions:
                button = ipywidgets.Button(
                    description=self._label(action),
                    tooltip=action_tooltip(action, network.protocol),
                    layout=ipywidgets.Layout(width="auto"),
                )
                button.add_class("sw-action")
                button.add_class(f"sw-action-{action.replace('_', '-')}")
                button.on_click(lambda _b, a=action: self.click(a))
                self.buttons[action] = button
                row.append(button)
            bar = ipywidgets.HBox(row)
            bar.add_class("sw-actions")
            bar.add_class(f"sw-actions-{method}")
            self._bars[method] = bar
        self._progress = ipywidgets.Box()
        self._progress.add_class("sw-progress")
        # the dashboard's stylesheet rides in this always-present widget (see _status_html)
        self._status = ipywidgets.HTML(_status_html(None))
        self._status.add_class("sw-dashboard-status")
        self._routes = ipywidgets.HTML("")
        self._routes.add_class("sw-routes")
        self._activity_html = ipywidgets.HTML(render_log_html([]))
        self._activity_html.add_class("sw-log-html")
        progress_row = ipywidgets.HBox([self._progress, self._status])
        progress_row.add_class("sw-progress-row")
        # a browser wallet is itself a widget: its card (Connect wallet, what it is asked to
        # sign) sits above the actions
        wallet_card = [user] if isinstance(user, ipywidgets.DOMWidget) else []
        super().__init__(
            children=[
                *wallet_card,
                self.selector,
                *self._bars.values(),
                progress_row,
                self.panel,
                self._routes,
                self._activity_html,
                self.errors,
            ]
        )
        self.add_class("sw-dashboard")
        self.selector.observe(self._on_selected, names=["selected"])
        self._on_selected()

    @classmethod
    def from_session(cls, session: NotebookSession, **kwargs: Any) -> SettlementDashboard:
        """The dashboard of a notebook session: its user acts, its operator owns v4, and a
        second wallet (when the session has one) receives the transfers."""
        # by identity: a browser wallet has no address before it is connected
        others = [w for w in session.wallets if w is not session.user]
        kwargs.setdefault("operator", session.operator)
        if others:
            kwargs.setdefault("recipient", others[0].address)
        return cls(session.network, session.user, **kwargs)

    # --- state --------------------------------------------------------------------------

    @property
    def channel(self) -> Channel | None:
        """The channel the dashboard works on (the latest one opened)."""
        return self._channel

    @property
    def comparison(self) -> ComparisonView | None:
        """The comparison the selector's cards show (None: none shown)."""
        return self.selector.comparison  # type: ignore[no-any-return]

    def show_comparison(self, comparison: Any) -> ComparisonView | None:
        """Show ``comparison`` (a ``Comparison``, its ``to_json()`` or JSON text; None
        clears it) on the selector's cards: each method's measured cost, time and prompts,
        the cheapest and the fastest marked. It must have been measured on this dashboard's
        network; a malformed one raises and changes nothing. Returns what is shown."""
        return self.selector.show_comparison(comparison)

    @property
    def busy(self) -> bool:
        return self._busy

    @property
    def activity(self) -> tuple[LogLine, ...]:
        """The activity log's entries, oldest first (``log`` is the widget's logger)."""
        return tuple(self._activity)

    @property
    def routes_html(self) -> str:
        return str(self._routes.value)

    @property
    def routes_source(self) -> AggregatorSource:
        """Where the routes come from, as the aggregator card's pill says: ``local`` (a
        route server on this machine, such as the sandbox's) or ``live`` (the LI.FI API)."""
        return aggregator_source(self._aggregator_provider().base_url)

    def _aggregator_provider(self) -> AggregatorProvider:
        """The provider given, else (built once) one for the network profile's LI.FI-schema
        route server (``extra["lifiUrl"]``, written by the local sandbox), else the live API.
        Building it opens no connection."""
        if self._aggregator is None:
            from ..aggregator import AggregatorProvider

            url = self.network.extra.get("lifiUrl")
            self._aggregator = AggregatorProvider(base_url=url) if url else AggregatorProvider()
        return self._aggregator

    def state(self) -> ActionState:
        status = self._channel.status if self._channel is not None else None
        return ActionState(busy=self._busy, channel_status=status)

    def __repr__(self) -> str:
        channel = self._channel.status if self._channel is not None else None
        return (
            f"SettlementDashboard(selected={self.selector.selected!r}, "
            f"network={self.network.name!r}, channel={channel!r})"
        )

    # --- clicks -------------------------------------------------------------------------

    def click(self, action: str) -> asyncio.Task[None] | None:
        """What a click on ``action``'s button does: schedule the action on the dashboard's
        home loop (the one it was built on) and return its task. A click arriving on another
        thread (a JupyterLab subshell) is handed to the home loop and returns None, as does a
        click on an action not enabled now or with no loop at all."""
        if action not in _EXPECTED_SECONDS:
            raise UnknownOptionError(
                f"unknown dashboard action {action!r}; valid: {', '.join(_EXPECTED_SECONDS)}"
            )
        if self._home.hand_over(self.click, action):
            return None
        act: Action = action  # type: ignore[assignment]
        if act not in enabled_actions(self.state()):
            self._add_log(LogLine("info", f"{self._label(act)} is not available right now"))
            return None
        if not self._home.usable():
            self.errors.report(
                SettlementError("no event loop is running: the dashboard needs a Jupyter kernel"),
                act,
            )
            return None
        loop = self._home.loop
        assert loop is not None
        self._set_busy(True, act)
        task = loop.create_task(self._run(act, getattr(self, act)))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def wait_idle(self, timeout: float = 120.0) -> None:
        """Wait until the scheduled actions have finished (for tests and scripts)."""
        async with asyncio.timeout(timeout):
            while self._tasks:
                await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def _run(self, action: Action, run: Callable[[], Awaitable[None]]) -> None:
        """Run one action under a progress bar; its last log line (or its error) carries the
        elapsed time, and the bar collapses to ``"<label>: done in 1.2 s"``."""
        label = self._label(action)
        bar = ProgressBar(label, _EXPECTED_SECONDS[action])
        self._progress.children = (bar.widget,)
        logged = self._logged
        bar.start()
        ok = False
        failure: LogLine | None = None
        try:
            # a browser wallet not yet connected is asked first (its card shows the request)
            await self.user.ensure_connected()
            await run()
            ok = True
        except SettlementError as exc:
            failure = LogLine("error", f"{label} failed: {exc}")
        except Exception as exc:  # a bug, not a user error: keep the traceback visible
            failure = LogLine("error", f"{label} failed: {exc!r}")
            self.errors.report(exc, action)
        finally:
            bar.finish(ok)
            if failure is not None:
                self._add_log(replace(failure, elapsed=bar.elapsed))
            elif self._logged > logged:  # the action's own result line gets its time
                self._activity[-1] = replace(self._activity[-1], elapsed=bar.elapsed)
                self._activity_html.value = render_log_html(self._activity)
            elif ok:
                self._add_log(LogLine("ok", f"{label}: done", elapsed=bar.elapsed))
            self._set_busy(False, action)

    def _set_busy(self, busy: bool, action: Action) -> None:
        self._busy = busy
        self._status.value = _status_html(self._label(action) if busy else None)
        self._refresh_buttons()

    def _refresh_buttons(self) -> None:
        allowed = enabled_actions(self.state())
        for action, button in self.buttons.items():
            button.disabled = action not in allowed
            button.description = self._label(action)

    def _label(self, action: Action) -> str:
        if action == "transfer":
            return "Transfer " + format_amount(
                self.transfer_amount, self.network.asset_decimals, self.network.asset_symbol
            )
        if action == "show_routes" and self._sandbox_route() is not None:
            return "Bridge 100 USDC (best route)"
        return _LABELS[action]

    def _add_log(self, line: LogLine) -> None:
        """Append ``line`` to the log, stamped with the wall-clock time it was written."""
        if line.at is None:
            line = replace(line, at=datetime.now().astimezone())
        self._activity.append(line)
        self._logged += 1
        del self._activity[:-_MAX_LOG_LINES]
        self._activity_html.value = render_log_html(self._activity)

    def _tx_line(self, text: str, tx_hash: str, url: str | None) -> LogLine:
        return LogLine("ok", text, url, _short(tx_hash))

    def _on_selected(self, _change: object = None) -> None:
        method = self.selector.selected
        for name, bar in self._bars.items():
            bar.layout.display = None if name == method else "none"
        self._routes.layout.display = None if method == "aggregator" else "none"
        self._show_panel(method)
        self._refresh_buttons()

    def _show_panel(self, method: str) -> None:
        cleared = dict.fromkeys(PROP_NAMES)
        if method == "channel" and self._channel is not None and self._channel_provider:
            self.panel.bind(self._channel_provider, self._channel.id)
        elif method == "v4":
            self.panel.unbind()
            self.panel.update(**{**cleared, "provider": "v4", "settlement_tx": self._v4_tx})
        else:
            self.panel.unbind()
            self.panel.update(**cleared)

    # --- closing ------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Wait for running actions, then close the providers' connections."""
        await self.wait_idle()
        self.panel.unbind()
        if self._channel_provider is not None:
            await self._channel_provider.close()
        if self._aggregator is not None:
            await self._aggregator.close()
