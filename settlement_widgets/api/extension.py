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
    "settlement_handlers",
]


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
    web_app.settings["settlement_service"] = service
    handlers = settlement_handlers(base_url, service)
    if sandbox is not None:
        handlers += explorer_handlers(base_url, service)
    web_app.add_handlers(".*$", handlers)
    serverapp.log.info("settlement_widgets: /api/settlement serving the %s network", config.network)
    if sandbox is not None:
        from tornado.ioloop import IOLoop

        IOLoop.current().add_callback(_start_in_background, sandbox, serverapp.log)
        serverapp.log.info(
            "settlement_widgets: the server's sandbox (%s) starts now; explorer at %s",
            sandbox.profile_path,
            sandbox.explorer_path,
        )


async def _start_in_background(sandbox: ServerSandbox, log: Any) -> None:
    """Start (or adopt) the sandbox as soon as the server runs, so the first notebook does
    not wait for all of it; a failure is logged and retried on the next use."""
    from ..errors import SettlementError

    try:
        await sandbox.ensure()
    except SettlementError as exc:
        log.error("settlement_widgets: the server's sandbox did not start: %s", exc)


#: the older public name some tools still look up
load_jupyter_server_extension = _load_jupyter_server_extension
