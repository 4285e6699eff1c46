"""A Jupyter Authorizer (as JupyterHub uses for read-only sharing) governs the endpoint:
resource "settlement", GET = read, POST = write."""

from __future__ import annotations

import json
from typing import Any

import pytest
from jupyter_server.auth import Authorizer

from settlement_widgets.api.handlers import with_base_url
from settlement_widgets.methods import settlement_config


class ReadOnlySettlement(Authorizer):
    """Allows everything except writing to the settlement resource."""

    def is_authorized(self, handler: Any, user: Any, action: str, resource: str) -> bool:
        return not (resource == "settlement" and action == "write")


@pytest.fixture
def jp_server_config() -> dict[str, Any]:
    return {
        "ServerApp": {
            "jpserver_extensions": {"settlement_widgets": True, "jupyter_server_terminals": False},
            "authorizer_class": ReadOnlySettlement,
        }
    }


async def test_read_allowed_write_refused(jp_fetch: Any, jp_base_url: str) -> None:
    got = await jp_fetch("api", "settlement")
    assert json.loads(got.body) == {
        **with_base_url(settlement_config("sepolia"), jp_base_url),
        "comparison": None,
    }
    refused = await jp_fetch(
        "api", "settlement", method="POST", body='{"action":"v4:contracts"}', raise_error=False
    )
    assert refused.code == 403
    assert "error" in json.loads(refused.body)


async def test_a_reader_cannot_publish_a_comparison(jp_fetch: Any) -> None:
    """``compare:publish`` is a write: a read-only user sees the comparison, cannot publish."""
    from settlement_widgets.compare import comparison_path
    from settlement_widgets.networks import settlement_home
    from tests.comparison_sample import sample_comparison

    body = {"action": "compare:publish", "comparison": sample_comparison(network="sepolia")}
    refused = await jp_fetch(
        "api", "settlement", method="POST", body=json.dumps(body), raise_error=False
    )
    assert refused.code == 403 and "error" in json.loads(refused.body)
    assert not comparison_path("sepolia", settlement_home()).exists()
    assert json.loads((await jp_fetch("api", "settlement")).body)["comparison"] is None
