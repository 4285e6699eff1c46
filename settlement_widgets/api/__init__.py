"""``/api/settlement``: tornado handlers shared by the Jupyter server extension
(:mod:`.extension`) and the standalone server (``python -m settlement_widgets.api``).

Modules: ``protocol`` (pure request parsing and reply shapes), ``ratelimit`` (per-address
limiter), ``ownership`` (v4 owner notes), ``openapi`` (the OpenAPI document), ``service``
(what each route does), ``handlers`` (tornado), ``config`` (traitlets), ``extension`` and
``standalone`` (the two servers). Importing this package does not import jupyter_server.
"""

from __future__ import annotations

__all__: list[str] = []
