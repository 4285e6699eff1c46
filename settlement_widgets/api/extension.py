"""The Jupyter server extension: ``/api/settlement`` inside JupyterLab, Notebook or Voila.

Enabled on install: the wheel ships ``etc/jupyter/jupyter_server_config.d/settlement_widgets.json``
(``{"ServerApp": {"jpserver_extensions": {"settlement_widgets": true}}}``);
``settlement_widgets._jupyter_server_extension_points`` points here. Routes are joined to the
server's ``base_url`` (JupyterHub and Binder serve under a prefix) and use Jupyter's own auth.

With ``SettlementConfig.shared_sandbox`` on the local network (``make lab``, Binder), the
server owns the sandbox (:mod:`settlement_widgets.sandbox.shared`): it starts it here in the
background, exports where it is to the kernels it will start, and serves its explorer at
``{base_url}settlement/explorer``.
"""

from __future__ import annotations

import atexit
import os
from typing import TYPE_CHECKING, Any

from jupyter_server.utils import url_path_join

from .config import SettlementConfig
from .handlers import (
    ExplorerHandler,
    KernelExplorerHandler,
    OpenAPIHandler,
    ProofsHandler,
    SettlementHandler,
)
from .service import SettlementService

if TYPE_CHECKING:
    from ..sandbox.shared import ServerSandbox

__all__ = [
    "SettlementConfig",
    "explorer_handlers",
    "load_jupyter_server_extension",
    "serving_message",
    "settlement_handlers",
    "startup_protocol",
]

#: how the start log names each channel protocol and what its node and contracts are
_PROTOCOL_WORDS = {
    "nitrolite-v0.5": "Nitrolite v0.5 (ClearNode relay, Custody and Adjudicator)",
    "nitrolite-v1": "Nitrolite v1 (Nitronode, ChannelHub)",
}


def startup_protocol(network_name: str, shared_sandbox: bool) -> str | None:
    """The channel protocol the server will serve, known at start without waiting for any
    sandbox: the public profile's; on ``local`` the server's own sandbox's
    (``SETTLEMENT_PROTOCOL``) or, without one, the profile a sandbox wrote (None when there
    is none yet)."""
    from ..errors import SettlementError
    from ..networks import get_network

    if network_name == "local" and shared_sandbox:
        from ..sandbox.shared import _wanted_protocol

        return f"nitrolite-{_wanted_protocol()}"
    try:
        return get_network(network_name).protocol
    except SettlementError:
        return None


def serving_message(network_name: str, protocol: str | None) -> str:
    """The extension's start line: the network and, always, the channel protocol, so a v1
    server says v1 (``protocol`` None: no sandbox profile to read it from yet)."""
    words = _PROTOCOL_WORDS.get(protocol or "", protocol) or "protocol of the sandbox started later"
    return (
        f"settlement_widgets: /api/settlement serving the {network_name} network, channel: {words}"
    )


def settlement_handlers(base_url: str, service: SettlementService) -> list[tuple[str, Any, dict]]:
    """The ``(pattern, handler, kwargs)`` routes under ``base_url``."""
    root = url_path_join(base_url, "api", "settlement")
    deps = {"service": service}
    return [
        (root, SettlementHandler, deps),
        (url_path_join(root, "openapi.json"), OpenAPIHandler, deps),
        (url_path_join(root, "proofs", "([^/]+)"), ProofsHandler, deps),
    ]


def explorer_handlers(base_url: str, service: SettlementService) -> list[tuple[str, Any, dict]]:
    """The shared sandbox's explorer under ``{base_url}settlement/explorer``."""
    root = url_path_join(base_url, "settlement", "explorer")
    deps = {"service": service}
    return [
        (root + "/?", ExplorerHandler, deps),
        (url_path_join(root, "(tx|address)", "([^/]+)"), ExplorerHandler, deps),
        (url_path_join(root, "chain", r"(\d+)") + "/?", ExplorerHandler, deps),
        (url_path_join(root, "chain", r"(\d+)", "(tx|address)", "([^/]+)"), ExplorerHandler, deps),
        # a kernel's private sandbox the kernel registered (sandbox.shared.register_kernel_sandbox)
        (url_path_join(root, "kernel", "([0-9a-f]{16})") + "/?", KernelExplorerHandler, deps),
        (
            url_path_join(root, "kernel", "([0-9a-f]{16})", "(tx|address)", "([^/]+)"),
            KernelExplorerHandler,
            deps,
        ),
    ]


def _server_sandbox(base_url: str) -> ServerSandbox:
    """The server's sandbox in its ``SETTLEMENT_HOME``; kernels started later inherit where."""
    from ..networks import settlement_home
    from ..sandbox.shared import ServerSandbox

    sandbox = ServerSandbox(
        settlement_home(), explorer_path=url_path_join(base_url, "settlement", "explorer")
    )
    os.environ.update(sandbox.kernel_environment())
    atexit.register(sandbox.terminate_now)
    return sandbox


def _drop_orphan_views_on_save(model: dict[str, Any], **_: Any) -> None:
    """The contents manager's pre-save hook: a notebook saved from JupyterLab keeps our
    widgets' static snapshots, not views of models a reopened file cannot have
    (:func:`~settlement_widgets.widgets.snapshot.drop_orphan_views`)."""
    if model.get("type") == "notebook" and isinstance(model.get("content"), dict):
        from ..widgets.snapshot import drop_orphan_views

        drop_orphan_views(model["content"])


def _load_jupyter_server_extension(serverapp: Any) -> None:
    """Register the handlers with a :class:`SettlementService` built from the config, and
    the pre-save hook that keeps saved notebooks free of "model not found"."""
    config = SettlementConfig(parent=serverapp)
    contents = getattr(serverapp, "contents_manager", None)
    if contents is not None and hasattr(contents, "register_pre_save_hook"):
        contents.register_pre_save_hook(_drop_orphan_views_on_save)
    web_app = serverapp.web_app
    base_url = web_app.settings["base_url"]
    sandbox = None
    if config.shared_sandbox and config.network == "local":
        sandbox = _server_sandbox(base_url)
    service = SettlementService.from_config(config, sandbox)
    # the kernels this server starts publish their comparisons where it reads them (their
    # sessions have homes of their own): compare.published.server_home
    from ..compare.published import SERVER_HOME_ENV

    os.environ[SERVER_HOME_ENV] = str(service.home)
    web_app.settings["settlement_service"] = service
    _close_with_server(serverapp, service)
    handlers = settlement_handlers(base_url, service)
    if sandbox is not None:
        handlers += explorer_handlers(base_url, service)
    web_app.add_handlers(".*$", handlers)
    serverapp.log.info(
        "%s",
        serving_message(config.network, startup_protocol(config.network, config.shared_sandbox)),
    )
    if sandbox is not None:
        from tornado.ioloop import IOLoop

        IOLoop.current().add_callback(_start_in_background, sandbox, serverapp.log)
        serverapp.log.info(
            "settlement_widgets: the server's sandbox (%s) starts now; explorer at %s",
            sandbox.profile_path,
            sandbox.explorer_path,
        )


def _close_with_server(serverapp: Any, service: SettlementService) -> None:
    """Close the service's sessions when the server cleans up its extensions: jupyter_server
    calls stop hooks of extension apps only, and this extension is a module."""
    cleanup_extensions = serverapp.cleanup_extensions

    async def cleanup_with_service() -> None:
        await service.aclose()
        await cleanup_extensions()

    serverapp.cleanup_extensions = cleanup_with_service


async def _start_in_background(sandbox: ServerSandbox, log: Any) -> None:
    """Start (or adopt) the sandbox as soon as the server runs, so the first notebook does
    not wait for all of it; a failure is logged and retried on the next use."""
    from ..errors import SettlementError

    try:
        network = await sandbox.ensure()
    except SettlementError as exc:
        log.error("settlement_widgets: the server's sandbox did not start: %s", exc)
        return
    log.info(
        "settlement_widgets: the server's sandbox is ready (%s): channel node %s",
        _PROTOCOL_WORDS.get(network.protocol, network.protocol),
        network.node_url,
    )


#: the older public name some tools still look up
load_jupyter_server_extension = _load_jupyter_server_extension
