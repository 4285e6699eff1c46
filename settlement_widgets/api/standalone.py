"""The standalone server: ``/api/settlement`` without JupyterLab.

Design choice: rather than re-implementing token checks, this runs a jupyter_server
``ServerApp`` cut down to this one extension, so auth is exactly Jupyter's (constant-time token
compare, ``Authorization: token``/``?token=``, cookie + XSRF, host and origin checks, token
scrubbed from request logs). What is cut:

* no Jupyter services: no contents, files, kernels, terminals or sessions routes (``/files/``
  is switched off too), so the server exposes nothing but the settlement endpoint;
* no other extensions and no user Jupyter config files: the command line is the whole
  configuration;
* no cookie-secret, server-info or browser-open files and no URL banner: the access URL,
  token included, is printed exactly once, on stdout.

``--no-auth`` (empty token, XSRF check off, origin check kept) is refused unless the host is
a loopback address.
"""

from __future__ import annotations

import ipaddress
import os
from typing import Any

from jupyter_core.application import JupyterApp
from jupyter_server.serverapp import ServerApp
from jupyter_server.utils import url_path_join
from traitlets import Bool, Unicode
from traitlets.config import Config

__all__ = ["SettlementServerApp", "build_config", "is_loopback"]


def is_loopback(host: str) -> bool:
    """``localhost`` or a loopback IP (127.0.0.0/8, ::1)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class SettlementServerApp(ServerApp):
    """A ServerApp that serves only ``/api/settlement``."""

    name = "settlement-api"
    description = "Serve /api/settlement (settlement_widgets) with Jupyter's authentication."
    default_services = ("auth",)  # type: ignore[assignment]  # no contents, kernels, sessions

    network_label = Unicode("sepolia", help="Network name shown in the start message.").tag(
        config=True
    )
    print_url = Bool(True, help="Print the access URL (with its token) once at start.").tag(
        config=True
    )

    def load_config_file(self, suppress_errors: bool = True) -> None:  # type: ignore[override]
        """Ignore user Jupyter config files: this server is configured by its CLI only."""

    def _handle_sigint(self, sig: Any, frame: Any) -> None:
        """No kernels to lose: ^C stops at once, without Jupyter's confirmation prompt."""
        self._signal_stop(sig, frame)

    def access_url(self) -> str:
        """The endpoint's URL, with ``?token=`` when token auth is on."""
        host = self.ip or "127.0.0.1"
        if host in ("0.0.0.0", ""):
            host = "127.0.0.1"
        elif host == "::":
            host = "[::1]"
        elif ":" in host:
            host = f"[{host}]"
        url = f"http://{host}:{self.port}" + url_path_join(self.base_url, "api", "settlement")
        token = self.identity_provider.token
        return f"{url}?token={token}" if token else url

    def start_app(self) -> None:
        """Start without ServerApp's banner, info files or browser (they repeat the token)."""
        JupyterApp.start(self)
        if self.print_url:
            auth = "" if self.identity_provider.token else " (authentication disabled)"
            print(
                f"settlement-api: serving the {self.network_label} settlement endpoint "
                f"at {self.access_url()}{auth}",
                flush=True,
            )


def build_config(
    *,
    host: str,
    port: int,
    network: str,
    no_auth: bool = False,
    base_url: str = "/",
    log_level: str = "INFO",
) -> Config:
    """The traitlets config of a standalone server.

    ``no_auth`` is refused (:class:`~settlement_widgets.errors.ConfigurationError`) unless
    ``host`` is a loopback address: without a token anyone who can reach the address could
    use the endpoint. The CLI says the same before it gets here; a caller from Python is
    held to it too."""
    if no_auth and not is_loopback(host):
        from ..errors import ConfigurationError

        raise ConfigurationError(
            f"refusing no_auth=True on {host!r}: without a token anyone who can reach that "
            "address could use the endpoint. Bind a loopback host (127.0.0.1) or keep the token."
        )
    c = Config()
    c.ServerApp.ip = host
    c.ServerApp.port = port
    c.ServerApp.port_retries = 0
    c.ServerApp.base_url = base_url
    c.ServerApp.default_url = url_path_join(base_url, "api", "settlement")
    c.ServerApp.open_browser = False
    c.ServerApp.allow_root = True  # nothing here executes code; root gains nothing
    c.ServerApp.jpserver_extensions = {"settlement_widgets": True}
    c.ServerApp.log_level = log_level
    c.ServerApp.max_body_size = 1 << 20  # 413 JSON up to 1 MiB; beyond, the connection closes
    c.ServerApp.max_buffer_size = 1 << 20
    c.ServerApp.cookie_secret = os.urandom(32)  # per run, in memory: no runtime file written
    c.ContentsManager.files_handler_class = None
    c.SettlementConfig.network = network
    # the standalone endpoint describes a sandbox started elsewhere; it never owns one
    c.SettlementConfig.shared_sandbox = False
    c.SettlementServerApp.network_label = network
    if no_auth:
        c.IdentityProvider.token = ""
        c.ServerApp.disable_check_xsrf = True
    return c
