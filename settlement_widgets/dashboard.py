"""``SettlementDashboard``: the selector, the status panel and real actions, as one app.

It is what ``notebooks/dashboard.ipynb`` shows as a Voila app: pick a method on the
``SettlementSelector``, and the action bar below offers what that method can do here:

* ``channel``: ask the faucet for test tokens, open a channel with the relay's broker,
  transfer off-chain, close it (the ``ChannelStatusPanel`` follows the channel live);
* ``v4``: settle a signed intent through the policy hook (the panel shows the settlement);
* ``aggregator``: rank LI.FI routes (the sandbox's route server when the network profile
  has one, else the live LI.FI API, unless a provider is given).

Button callbacks never block and never nest event loops: a click schedules the action's
coroutine on the kernel's running loop (DESIGN §3, no ``nest_asyncio``) and returns. One
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
import html
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final, Literal

import ipywidgets

from .errors import (
    SettlementError,
    SettlementValueError,
    TransactionFailedError,
    UnknownOptionError,
)
from .links import is_link_target
from .methods import validate_method
from .networks import Network
from .progress import ProgressBar, format_seconds
from .widgets import ChannelStatusPanel, ErrorOutput, SettlementSelector
from .widgets.home_loop import HomeLoop
from .widgets.render import (
    BODY,
    BORDER,
    DASHBOARD_STYLESHEET,
    FG,
    LINK,
    MONO,
    SANS,
    SURFACE,
)
from .widgets.snapshot import StaticSnapshot
from .widgets.viewmodels import (
    CYAN,
    GREEN,
    MUTED,
    PROP_NAMES,
    RED,
    AggregatorSource,
    aggregator_source,
)

if TYPE_CHECKING:
    import pandas as pd

    from .aggregator import AggregatorProvider
    from .channel.interface import ChannelClient
    from .channel.models import Channel
    from .notebook import NotebookSession
    from .signer import Signer
    from .v4 import V4Provider

__all__ = [
    "ACTIONS",
    "ActionState",
    "LogLine",
    "SettlementDashboard",
    "enabled_actions",
    "render_log_html",
]

Action = Literal[
    "faucet", "open_channel", "transfer", "close_channel", "settle_intent", "show_routes"
]
#: the actions of each method, in the order their buttons appear
ACTIONS: Final[dict[str, tuple[Action, ...]]] = {
    "channel": ("faucet", "open_channel", "transfer", "close_channel"),
    "v4": ("settle_intent",),
    "aggregator": ("show_routes",),
}
_EXPECTED_SECONDS: Final[dict[Action, float]] = {
    "faucet": 2,
    "open_channel": 4,
    "transfer": 1,
    "close_channel": 5,
    "settle_intent": 6,
    "show_routes": 4,
}
_MAX_LOG_LINES: Final = 50
#: the route the aggregator action ranks on the live API: 100 USDC Arbitrum -> Optimism (no
#: funds needed, nothing sent); on the sandbox it is 100 test USDC between its two chains,
#: executed for real
ROUTE_REQUEST: Final = (42161, 10, "USDC", "USDC", 100 * 10**6)
ROUTE_AMOUNT: Final = 100 * 10**6
ONE_V4_TOKEN: Final = 10**18


# --- pure parts ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ActionState:
    """What decides which buttons are enabled: an action running, an active channel."""

    busy: bool = False
    channel_status: str | None = None


def enabled_actions(state: ActionState) -> frozenset[Action]:
    """The actions a click may start in ``state`` (none while another one runs).

    A channel is opened only when none is open (the relay allows one per asset), transfers
    need an active channel, and a channel in dispute can still be closed (after its
    challenge period; the provider says when).
    """
    if state.busy:
        return frozenset()
    allowed: set[Action] = {"faucet", "settle_intent", "show_routes"}
    status = state.channel_status
    if status in (None, "final"):
        allowed.add("open_channel")
    if status == "active":
        allowed.add("transfer")
    if status in ("active", "dispute"):
        allowed.add("close_channel")
    return frozenset(allowed)


@dataclass(frozen=True)
class LogLine:
    """One entry of the activity log.

    ``at`` is when it was written (shown as ``HH:MM:SS``) and ``elapsed`` how long the
    action that wrote it took, in seconds: both are given here, never read by the renderer,
    so :func:`render_log_html` stays pure. ``href`` is linked only when it is a link target
    (:func:`~settlement_widgets.links.is_link_target`: ``http(s)://host...`` or a path on the
    Jupyter server, such as the shared sandbox's ``{base_url}settlement/explorer/tx/<hash>``).
    """

    level: Literal["info", "ok", "error"]
    text: str
    href: str | None = None
    link_text: str | None = None
    at: datetime | None = None
    elapsed: float | None = None


#: the log's text colour per level (theme colours, AA contrast in Light and Dark)
_LEVEL_COLOURS: Final = {"info": FG, "ok": GREEN, "error": RED}


def render_log_html(lines: tuple[LogLine, ...] | list[LogLine]) -> str:
    """The activity log, newest last: ``HH:MM:SS  text link (1.2 s)`` per line, in the
    theme's colours; every text escaped, links only to link targets."""
    if not lines:
        return '<div class="sw-log" data-empty="true"></div>'
    rows = []
    for line in lines:
        stamp = ""
        if line.at is not None:
            stamp = (
                f'<span class="sw-log-time" style="color:{MUTED}">'
                f"{line.at.strftime('%H:%M:%S')}</span>  "
            )
        text = html.escape(line.text)
        link = ""
        if line.href and is_link_target(line.href):
            shown = html.escape(line.link_text or line.href)
            link = (
                f' <a href="{html.escape(line.href, quote=True)}" target="_blank" '
                f'rel="noopener noreferrer" style="color:{LINK}">{shown}</a>'
            )
        took = ""
        if line.elapsed is not None:
            took = (
                f' <span class="sw-log-elapsed" style="color:{MUTED}">'
                f"({html.escape(format_seconds(line.elapsed))})</span>"
            )
        rows.append(
            f'<div class="sw-log-line" data-level="{line.level}" '
            f'style="color:{_LEVEL_COLOURS[line.level]};white-space:pre-wrap;word-break:break-word">'
            f"{stamp}{text}{link}{took}</div>"
        )
    return (
        f'<div class="sw-log" style="font:{BODY}/1.5 {MONO};padding:8px 12px;'
        f"border:1px solid {BORDER};border-radius:12px;background:{SURFACE};"
        f'box-sizing:border-box">' + "".join(rows) + "</div>"
    )


def _status_html(working: str | None) -> str:
    """The dashboard's stylesheet, plus ``working: <action>…`` while an action runs."""
    if working is None:
        return DASHBOARD_STYLESHEET
    return (
        f'{DASHBOARD_STYLESHEET}<span style="font:{BODY} {SANS};color:{MUTED}">'
        f"working: {html.escape(working)}…</span>"
    )


def _short(value: str) -> str:
    return value if len(value) <= 20 else f"{value[:10]}...{value[-8:]}"


# --- the app ---------------------------------------------------------------------------------


_LABELS: Final[dict[Action, str]] = {
    "faucet": "Faucet",
    "open_channel": "Open channel",
    "transfer": "Transfer",
    "close_channel": "Close channel",
    "settle_intent": "Settle an intent",
    "show_routes": "Show best routes",
}
#: what each button does, as its tooltip (the label stays short and is never cut off)
_TOOLTIPS: Final[dict[Action, str]] = {
    "faucet": "Ask the network's faucet for test tokens (an off-chain credit)",
    "open_channel": "Open a state channel with the relay's broker (Custody.create)",
    "transfer": "Send the transfer amount off-chain through the channel: instant, no gas",
    "close_channel": "Close the channel on chain and withdraw what it paid out",
    "settle_intent": "Sign an intent and settle it through the Uniswap v4 policy hook",
    "show_routes": "Rank the routes of 100 USDC by what you keep in the worst case (on the "
    "sandbox, then execute the best and follow it to the other chain)",
}


class SettlementDashboard(StaticSnapshot, ipywidgets.VBox):
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
    ) -> None:
        from .addresses import validate_address
        from .channel.v0_5.core.lifecycle import units

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
                    tooltip=_TOOLTIPS[action],
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
            from .aggregator import AggregatorProvider

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
            amount = self.transfer_amount / 10**self.network.asset_decimals
            return f"Transfer {amount:g} {self.network.asset_symbol}"
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

    # --- channel ------------------------------------------------------------------------

    async def _channels(self) -> ChannelClient:
        if self._channel_provider is None:
            from .channel.factory import channel_provider

            provider = channel_provider(self.network, self.user)
            await provider.connect()
            provider.on("channel_updated", self._on_channel)
            self._channel_provider = provider
            open_ = [c for c in provider.channels() if c.status != "final"]
            if open_:  # a channel left open by an earlier session of this wallet
                self._track(open_[-1])
        return self._channel_provider

    def _on_channel(self, channel: Channel) -> None:
        if self._channel is not None and channel.id == self._channel.id:
            self._channel = channel
            self._refresh_buttons()

    def _track(self, channel: Channel) -> None:
        self._channel = channel
        if self.selector.selected == "channel" and self._channel_provider is not None:
            self.panel.bind(self._channel_provider, channel.id)
        self._refresh_buttons()

    async def _off_chain(self, provider: ChannelClient) -> str:
        units_ = (await provider.balances()).get(provider.asset, 0)
        return f"{units_ / 10**self.network.asset_decimals:g} {provider.asset}"

    async def faucet(self) -> None:
        """Ask the network's faucet for test tokens (an off-chain credit)."""
        from .channel import request_faucet_tokens

        provider = await self._channels()
        answer = await request_faucet_tokens(self.user.address, self.network)
        self._add_log(
            LogLine(
                "ok",
                f"faucet: +{answer.get('amount')} {answer.get('asset')} off-chain; "
                f"balance {await self._off_chain(provider)}",
            )
        )

    async def open_channel(self) -> None:
        """Open a channel with the relay's broker (``Custody.create``; on Nitrolite v1 the
        node, ``ChannelHub.createChannel``), no deposit: transfers spend the off-chain
        balance (on v1, a faucet credit received before is carried into the new channel),
        and closing settles it into the wallet."""
        provider = await self._channels()
        broker = provider.broker_address
        assert broker is not None
        # v0.5 names the asset by its token; a v1 profile may leave the token to the node
        asset = self.network.token if self.network.token is not None else provider.asset
        channel = await provider.create_channel(broker, asset, 0)
        self._track(channel)
        tx = channel.tx_hashes.get("create")
        line = f"channel {_short(channel.id)} opened with the broker {_short(broker)}:"
        if tx is not None:
            self._add_log(self._tx_line(line, tx, self.network.explorer.tx_url(tx)))
        else:
            self._add_log(LogLine("ok", line))

    async def transfer(self) -> None:
        """Send ``transfer_amount`` to ``recipient`` off-chain: instant, no gas."""
        provider = await self._channels()
        channel = self._channel
        assert channel is not None
        to = self.recipient or provider.broker_address
        assert to is not None
        sent = await provider.transfer(channel.id, self.transfer_amount, to)
        amount = sent.amount / 10**self.network.asset_decimals
        self._add_log(
            LogLine(
                "ok",
                f"transfer {sent.id}: {amount:g} {sent.asset} to {_short(to)}, gas 0; "
                f"balance {await self._off_chain(provider)}",
            )
        )

    async def close_channel(self) -> None:
        """Close the channel on chain and withdraw what it paid out."""
        provider = await self._channels()
        channel = self._channel
        assert channel is not None
        tx = await provider.close_channel(channel.id)
        self._track(provider.get_channel(channel.id))
        self._add_log(
            self._tx_line(
                f"channel closed on chain ({tx.gas_used:,} gas):", tx.hash, tx.explorer_url
            )
        )
        if tx.withdrawal is not None:
            withdrawal = tx.withdrawal
            self._add_log(
                self._tx_line(
                    f"withdrawn to the wallet ({withdrawal.gas_used:,} gas):",
                    withdrawal.hash,
                    withdrawal.explorer_url,
                )
            )

    # --- v4 -----------------------------------------------------------------------------

    def _v4(self) -> tuple[V4Provider, V4Provider, V4Provider]:
        if self._user_v4 is None:
            from .v4 import V4Provider

            operator = self.operator or self.user
            network = self._v4_network or self.network
            self._user_v4 = V4Provider(self.user, network=network)
            self._operator_v4 = V4Provider(operator, network=network)
            self._solver_v4 = V4Provider(self.solver or operator, network=network)
        assert self._operator_v4 is not None and self._solver_v4 is not None
        return self._user_v4, self._operator_v4, self._solver_v4

    async def _use_own_v4(self, operator: Signer) -> bool:
        """Switch the v4 method to the operator's own deployment recorded in the store
        (``deploy_own_v4``, notebook 04), if there is a complete one still on chain: where
        the configured hook cannot settle (Sepolia's) that one can. Sends nothing."""
        from .v4 import recorded_own_v4

        if self._v4_network is not None:
            return False
        own = await recorded_own_v4(operator, self.network)
        if own is None:
            return False
        self._v4_network = own.apply_to(self.network)
        self._user_v4 = self._operator_v4 = self._solver_v4 = None
        self._add_log(LogLine("info", f"v4 settles through your own deployment: {own}"))
        return True

    async def settle_intent(self) -> None:
        """Sign an intent (sell 1 token for at least 0.95), register its policy, settle it.

        Where the deployment cannot settle (the deployed Sepolia hook cannot hold policies),
        the diagnosis is logged instead and nothing is sent.
        """
        from .chain_clock import chain_time
        from .v4 import Intent, PoolKey, intent_id

        user, operator, solver = self._v4()
        report = await operator.inspect()
        if not report.can_settle and await self._use_own_v4(operator.wallet):
            user, operator, solver = self._v4()
            report = await operator.inspect()
        profile = operator.network.extra.get("v4")
        if not report.can_settle or not profile:
            why = str(report) or f"no policy-hook pool is configured for {self.network.name}"
            self._add_log(
                LogLine(
                    "error",
                    f"cannot settle on {self.network.name}: {why} (deploy_own_v4, as notebook "
                    "04 does, gives the operator a deployment that can)",
                )
            )
            return
        pool = PoolKey.from_json(profile["poolKey"])
        if self.solver is not None and not self._solver_authorised:
            await operator.set_authorized_solver(solver.wallet.address)
            self._solver_authorised = True
        token_in, token_out = pool.currency0, pool.currency1
        if await user.balance_of(token_in) < ONE_V4_TOKEN:
            await self._mint_test_token(token_in)
        await user.approve_adapter(token_in, ONE_V4_TOKEN)
        self._intents += 1
        deadline = await chain_time(self.user.w3) + 3600
        intent = Intent(
            # a fresh id each time: another dashboard of the same wallet (another kernel on
            # the server's shared sandbox, or an earlier run) counts from 1 too, and an
            # intent settles at most once
            id=intent_id(
                f"dashboard intent {self.user.address} {self._intents} {secrets.token_hex(16)}"
            ),
            user=self.user.address,
            token_in=token_in,
            token_out=token_out,
            amount_in=ONE_V4_TOKEN,
            min_amount_out=95 * ONE_V4_TOKEN // 100,
            deadline=deadline,
        )
        await operator.register_policy(
            intent.id,
            intent.min_amount_out,
            deadline,
            reference_amount_out=ONE_V4_TOKEN,
            max_slippage_bps=100,
        )
        signed = await user.sign_intent(intent)
        before = await user.balance_of(token_out)
        tx = await solver.settle_intent(signed, pool, 99 * ONE_V4_TOKEN // 100)
        received = (await user.balance_of(token_out) - before) / ONE_V4_TOKEN
        self._v4_tx = tx.hash
        if self.selector.selected == "v4":
            self._show_panel("v4")
        self._add_log(
            self._tx_line(
                f"intent {_short(intent.id)} settled: 1 sold, {received:.6f} received "
                f"({tx.gas_used:,} gas):",
                tx.hash,
                tx.explorer_url,
            )
        )

    async def _mint_test_token(self, token: str) -> None:
        """Mint the sandbox's open-mint ``V4TestToken`` to the user (a test token only)."""
        from .contracts import load_artifact

        abi = load_artifact("V4TestToken").abi
        contract = self.user.w3.eth.contract(address=token, abi=abi)  # type: ignore[call-overload]
        await self.user.transact(
            contract.functions.mint(self.user.address, 10 * ONE_V4_TOKEN), abis=[abi]
        )

    async def _mint_sandbox_usdc(self, usdc: str, amount: int) -> None:
        """The operator (the sandbox deployer, owner of its ``TestToken`` USDC) mints
        ``amount`` to the user: test tokens on the sandbox's own chain only."""
        from .contracts import load_artifact

        assert self.operator is not None
        abi = load_artifact("TestToken").abi
        contract = self.operator.w3.eth.contract(address=usdc, abi=abi)  # type: ignore[call-overload]
        await self.operator.transact(contract.functions.mint(self.user.address, amount), abis=[abi])

    # --- aggregator ---------------------------------------------------------------------

    def _sandbox_route(self) -> tuple[int, int, str, str] | None:
        """(from chain, to chain, from USDC, to USDC) of the sandbox's two chains, when the
        network profile carries the aggregator sandbox (``extra["aggregator"]``)."""
        data = self.network.extra.get("aggregator")
        if not data or not self.network.extra.get("lifiUrl"):
            return None
        chains = {int(c["chainId"]): c for c in data.get("chains", ())}
        source = self.network.chain_id
        others = [c for c in chains if c != source]
        if source not in chains or not others:
            return None
        return source, others[0], str(chains[source]["usdc"]), str(chains[others[0]]["usdc"])

    async def _usdc_balances(self, route: tuple[int, int, str, str]) -> tuple[int, int]:
        """The user's test USDC on the source chain (its wallet) and on the destination (read
        through that chain's JSON-RPC from the profile)."""
        from web3 import AsyncHTTPProvider, AsyncWeb3

        from .contracts import load_artifact

        abi = load_artifact("TestToken").abi
        _, target, usdc_a, usdc_b = route
        here = self.user.w3.eth.contract(address=usdc_a, abi=abi)  # type: ignore[call-overload]
        rpc = next(
            str(c["rpcUrl"])
            for c in self.network.extra["aggregator"]["chains"]
            if int(c["chainId"]) == target
        )
        w3 = AsyncWeb3(AsyncHTTPProvider(rpc, request_kwargs={"timeout": 30}))
        there = w3.eth.contract(address=usdc_b, abi=abi)  # type: ignore[call-overload]
        try:
            return (
                int(await here.functions.balanceOf(self.user.address).call()),
                int(await there.functions.balanceOf(self.user.address).call()),
            )
        finally:
            await w3.provider.disconnect()

    async def show_routes(self) -> None:
        """Rank the routes of 100 USDC on the worst case (see :meth:`_aggregator_provider`
        for where they come from). On the sandbox, also execute the best one: approve and
        bridge on the first chain, follow the status to DONE, and show what moved on both
        chains with explorer links. Against the live API nothing is sent."""
        from .aggregator.frame import routes_frame
        from .sandbox.local import explorer_tx

        provider = self._aggregator_provider()
        sender = self.user.address
        sandbox = self._sandbox_route() if self.routes_source == "local" else None
        if sandbox is None:
            from_chain, to_chain, from_token, to_token, amount = ROUTE_REQUEST
            title = "100 USDC Arbitrum → Optimism"
        else:
            from_chain, to_chain, from_token, to_token = sandbox
            amount = ROUTE_AMOUNT
            title = f"100 USDC chain {from_chain} → chain {to_chain} (sandbox chains)"
        routes = await provider.routes(from_chain, to_chain, from_token, to_token, amount, sender)
        frame = routes_frame(routes, source=self.routes_source)
        self._routes.value = _routes_html(frame, source=self.routes_source, title=title)
        best = frame.iloc[0]
        where = {"local": "local route server", "live": "live"}[self.routes_source]
        self._add_log(
            LogLine(
                "ok",
                f"{len(frame)} routes ranked ({where}); best: {best['tools']}, "
                f"worst-case net ${float(best['net_min_usd']):.2f}",
            )
        )
        if sandbox is None:
            return
        source = sandbox[0]
        before = await self._usdc_balances(sandbox)
        if before[0] < amount and self.operator is not None:
            # a wallet the sandbox did not fund (a browser wallet): the operator owns the
            # sandbox's test USDC and mints what the route needs, as a faucet would
            await self._mint_sandbox_usdc(sandbox[2], amount - before[0])
            before = await self._usdc_balances(sandbox)
        plan = await provider.execute_plan(routes[0], wallet=self.user, send=True)
        for tx in plan.transactions:
            if tx.tx_hash is not None:
                self._add_log(
                    LogLine(
                        "ok",
                        f"{tx.kind} mined on chain {tx.chain_id}",
                        href=explorer_tx(self.network, tx.chain_id, tx.tx_hash),
                        link_text=tx.tx_hash[:10] + "…",
                    )
                )
        final = await provider.track(plan.tx_hashes[-1], poll_interval=0.1)
        after = await self._usdc_balances(sandbox)
        receiving = final.receiving
        if not final.done or receiving is None or not receiving.tx_hash:
            raise TransactionFailedError(
                f"the transfer ended {final.status}/{final.substatus}: "
                f"{final.substatus_message or 'no detail'}",
                tx_hash=plan.tx_hashes[-1],
            )
        self._add_log(
            LogLine(
                "ok" if final.substatus == "COMPLETED" else "error",
                f"{final.status}/{final.substatus}: sent {(before[0] - after[0]) / 10**6:.2f} "
                f"USDC on chain {source}, received {(after[1] - before[1]) / 10**6:.2f} on "
                f"chain {receiving.chain_id}",
                href=explorer_tx(self.network, receiving.chain_id, receiving.tx_hash),
                link_text=receiving.tx_hash[:10] + "…",
            )
        )

    # --- closing ------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Wait for running actions, then close the providers' connections."""
        await self.wait_idle()
        self.panel.unbind()
        if self._channel_provider is not None:
            await self._channel_provider.close()
        if self._aggregator is not None:
            await self._aggregator.close()


#: the routes table's heading per data source: (text, colour)
_ROUTE_HEADINGS: Final[dict[str, tuple[str, str]]] = {
    "local": (
        "LOCAL route server on this machine, not live rates",
        CYAN,
    ),
    "live": ("LIVE rates from the LI.FI API", GREEN),
}


def _routes_html(
    frame: pd.DataFrame, *, source: AggregatorSource, title: str = "100 USDC Arbitrum → Optimism"
) -> str:
    """The routes as :func:`~settlement_widgets.aggregator.routes_styler` draws them, under a
    heading that says where the data came from (escaped, in the theme's colours)."""
    from .aggregator.frame import routes_styler

    table = routes_styler(frame).to_html()
    label, colour = _ROUTE_HEADINGS[source]
    return (
        f'<div class="sw-routes-table" style="padding:8px 12px;border:1px solid {BORDER};'
        f'border-radius:12px;background:{SURFACE};overflow-x:auto">'
        f'<div style="font:600 {BODY} {SANS};color:{colour}">'
        f"{html.escape(label)}: {html.escape(title)}</div>{table}</div>"
    )
