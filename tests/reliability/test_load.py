"""Load (shortened): 50 concurrent endpoint clients and 20 authenticated relay connections
at once; no request fails."""

from __future__ import annotations

import pytest

from benchmarks.reliability.load import LoadParams, run_load
from benchmarks.reliability.stack import EndpointStack

pytestmark = pytest.mark.slow


async def test_fifty_endpoint_clients_and_twenty_relay_connections_get_no_error(
    endpoint_stack: EndpointStack,
) -> None:
    api = endpoint_stack.api
    assert api is not None
    params = LoadParams(duration=2.0, endpoint_clients=50, relay_connections=20)
    result = await run_load(api.endpoint, api.auth, endpoint_stack.profile, params)
    assert result.violations == []
    m = result.metrics
    assert m["endpoint_requests"] > 0 and m["relay_requests"] > 0
    assert m["endpoint_errors"] == m["relay_errors"] == 0
    assert m["load_error_rate"] == 0
