"""The Jupyter server extension: ``/api/settlement`` inside JupyterLab, Notebook or Voila.

Enabled on install: the wheel ships ``etc/jupyter/jupyter_server_config.d/settlement_widgets.json``
(``{"ServerApp": {"jpserver_extensions": {"settlement_widgets": true}}}``);
``settlement_widgets._jupyter_server_extension_points`` points here. Routes are joined to the
server's ``base_url`` (JupyterHub and Binder serve under a prefix) and use Jupyter's own auth.
"""

from __future__ import annotations

from typing import Any

from jupyter_server.utils import url_path_join

from .config import SettlementConfig
from .handlers import OpenAPIHandler, ProofsHandler, SettlementHandler
from .service import SettlementService

__all__ = ["SettlementConfig", "load_jupyter_server_extension", "settlement_handlers"]


def settlement_handlers(base_url: str, service: SettlementService) -> list[tuple[str, Any, dict]]:
    """The ``(pattern, handler, kwargs)`` routes under ``base_url``."""
    root = url_path_join(base_url, "api", "settlement")
    deps = {"service": service}
    return [
        (root, SettlementHandler, deps),
        (url_path_join(root, "openapi.json"), OpenAPIHandler, deps),
        (url_path_join(root, "proofs", "([^/]+)"), ProofsHandler, deps),
    ]


def _load_jupyter_server_extension(serverapp: Any) -> None:
    """Register the handlers with a :class:`SettlementService` built from the config."""
    config = SettlementConfig(parent=serverapp)
    service = SettlementService.from_config(config)
    web_app = serverapp.web_app
    web_app.settings["settlement_service"] = service
    web_app.add_handlers(".*$", settlement_handlers(web_app.settings["base_url"], service))
    serverapp.log.info("settlement_widgets: /api/settlement serving the %s network", config.network)


#: the older public name some tools still look up
load_jupyter_server_extension = _load_jupyter_server_extension
