"""Deeply nested JSON from outside is refused before ``json.loads`` recurses on the C stack.

Importing py-evm raises Python's recursion limit to 100,000, so without the check a body of
``[`` killed the process (a segmentation fault, not an exception). The parsers are driven in
a child process that imports py-evm first: a regression fails this test instead of killing
the test run.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from settlement_widgets.json_depth import MAX_JSON_NESTING, check_nesting, nesting_within


@pytest.mark.parametrize(
    ("text", "within"),
    [
        ("[]", True),
        ("[" * MAX_JSON_NESTING + "]" * MAX_JSON_NESTING, True),
        ("[" * (MAX_JSON_NESTING + 1) + "]" * (MAX_JSON_NESTING + 1), False),
        ('{"a":' * (MAX_JSON_NESTING + 1) + "1" + "}" * (MAX_JSON_NESTING + 1), False),
        # brackets inside strings, escaped quotes included, do not count
        (f'["{"[" * 500}", "\\"{"{" * 500}"]', True),
        (b"[" * 100_000, False),
        # many siblings are shallow however many brackets there are
        ("[" + ",".join(["[]"] * 1000) + "]", True),
    ],
)
def test_nesting_within(text: str | bytes, within: bool) -> None:
    assert nesting_within(text) is within


def test_check_nesting_raises_value_error_like_json() -> None:
    with pytest.raises(ValueError, match="nested deeper than 64 levels"):
        check_nesting("[" * 65)


_CHILD = textwrap.dedent(
    """
    import asyncio, sys
    import eth  # py-evm: raises the recursion limit to 100,000
    assert sys.getrecursionlimit() >= 100_000
    deep = b"[" * 200_000
    from settlement_widgets.api.protocol import parse_post
    print("api", parse_post(deep).status)
    from settlement_widgets.channel.v1.core.wire import decode_frame
    from settlement_widgets.errors import InvalidFrameError, SettlementError
    try:
        decode_frame(deep)
    except InvalidFrameError as exc:
        print("v1", "nested deeper" in str(exc))
    from settlement_widgets.channel.frames import identify_frame
    print("frames", identify_frame(deep.decode()).kind)
    from settlement_widgets.channel.faucet import _upstream_error_text
    print("faucet", _upstream_error_text(deep, "Bad Gateway"))
    from settlement_widgets.sandbox.visitors import parse_fund_request
    try:
        parse_fund_request(deep)
    except SettlementError as exc:
        print("visitors", exc)
    from settlement_widgets.compare.wire import strict_loads
    try:
        strict_loads(deep)
    except SettlementError as exc:
        print("wire", "nested deeper" in str(exc))
    from settlement_widgets.compare.result import Comparison
    try:
        Comparison.from_json(deep.decode())
    except SettlementError as exc:
        print("comparison", "nested deeper" in str(exc))
    """
)


def test_parsers_of_outside_text_survive_deep_nesting_under_py_evm() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _CHILD], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split("\n")[:-1] == [
        "api 413",  # over 64 KiB and not a comparison: refused as too large, not parsed deep
        "v1 True",
        "frames text",
        "faucet Bad Gateway",
        "visitors the body is not JSON",
        "wire True",
        "comparison True",
    ]
