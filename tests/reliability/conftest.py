"""The reliability suite's tests run the harness in benchmarks/reliability/ with shortened
parameters (one implementation: the figures `make reliability` publishes and the properties
these tests assert come from the same functions).

``endpoint_stack`` (the sandbox and the standalone endpoint server, each in its own process)
is started once for the session and shared by the fuzz, load and security tests.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:  # the harness lives in benchmarks/, beside the package
    sys.path.insert(0, str(REPO))

from benchmarks.reliability.stack import EndpointStack  # noqa: E402


@pytest.fixture(scope="session")
def endpoint_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EndpointStack]:
    with EndpointStack(tmp_path_factory.mktemp("endpoint-stack")) as stack:
        yield stack
