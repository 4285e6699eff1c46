"""Client-side request signing: our library against the official TypeScript SDK, same run.

Both sides build and sign the same ``transfer`` frame (``{"req":[id,"transfer",params,ts],
"sig":[..]}``, ECDSA over keccak256 of the exact ``req`` text): the SDK with
``createECDSAMessageSigner`` + ``createTransferMessage`` in node (:file:`sdk_sign.js`), we with
:func:`settlement_widgets.channel.v0_5.core.messages.transfer_message` (the library path every
client
uses) and with the benchmark's lean builder. The first frame of each side is compared byte for
byte: RFC 6979 signatures are deterministic, so equal frames prove equal work.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from settlement_widgets.channel.v0_5.core.messages import transfer_message
from settlement_widgets.keys import PrivateKey

from .lean_client import transfer_request

__all__ = ["SigningResult", "signing_benchmark"]

_SCRIPT = Path(__file__).with_name("sdk_sign.js")
_SDK = Path(__file__).resolve().parent.parent / "tests" / "interop" / "node_modules" / "@erc7824"
# a public test key (anvil/hardhat account 0): the frames are compared, never sent anywhere
_KEY = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80"
_DESTINATION = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"
_ASSET = "ytest.usd"
_AMOUNT = "0.000001"
_REQUEST_ID = 1_700_000_000_000
_TIMESTAMP = 1_700_000_000_000


@dataclass
class SigningResult:
    """Frames signed per second (wall) and CPU µs per frame for each implementation."""

    ours_fps: float
    ours_cpu_us: float
    lean_fps: float
    lean_cpu_us: float
    sdk_fps: float | None
    sdk_cpu_us: float | None
    frames_identical: bool | None
    sdk_versions: str | None
    note: str = ""


def _ours(count: int) -> tuple[float, float, str]:
    key = PrivateKey(_KEY)
    alloc = [(_ASSET, _AMOUNT)]
    first = transfer_message(
        key, alloc, destination=_DESTINATION, request_id=_REQUEST_ID, timestamp=_TIMESTAMP
    ).to_frame()
    for i in range(min(200, count)):  # warm-up
        transfer_message(key, alloc, destination=_DESTINATION, request_id=_REQUEST_ID + 1 + i)
    c0, t0 = time.process_time(), time.perf_counter()
    for i in range(count):
        transfer_message(
            key,
            alloc,
            destination=_DESTINATION,
            request_id=_REQUEST_ID + 1 + i,
            timestamp=_TIMESTAMP,
        ).to_frame()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return count / wall, cpu / count * 1e6, first


def _lean(count: int) -> tuple[float, float, bytes]:
    key = PrivateKey(_KEY)._key
    params = {"destination": _DESTINATION, "allocations": [{"asset": _ASSET, "amount": _AMOUNT}]}
    first = transfer_request(key, _REQUEST_ID, params, _TIMESTAMP)
    c0, t0 = time.process_time(), time.perf_counter()
    for i in range(count):
        transfer_request(key, _REQUEST_ID + 1 + i, params, _TIMESTAMP)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return count / wall, cpu / count * 1e6, first


async def _sdk(count: int) -> dict[str, Any]:
    node = shutil.which("node")
    if node is None:
        raise FileNotFoundError("node is not installed")
    if not _SDK.is_dir():
        raise FileNotFoundError(f"the SDK is not installed in {_SDK.parent} (make interop-deps)")
    proc = await asyncio.create_subprocess_exec(
        node,
        str(_SCRIPT),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    request = {
        "key": _KEY,
        "destination": _DESTINATION,
        "asset": _ASSET,
        "amount": _AMOUNT,
        "count": count,
        "warmup": min(200, count),
        "requestId": _REQUEST_ID,
        "timestamp": _TIMESTAMP,
    }
    out, err = await asyncio.wait_for(proc.communicate(json.dumps(request).encode()), 600)
    if proc.returncode != 0:
        raise RuntimeError(f"sdk_sign.js failed: {err.decode(errors='replace')[-1000:]}")
    result: dict[str, Any] = json.loads(out)
    return result


async def signing_benchmark(ours_count: int, sdk_count: int) -> SigningResult:
    """Run the SDK (node, its own process) and ours (this process, one after the other)."""
    try:
        sdk: dict[str, Any] | None = await _sdk(sdk_count)
        note = ""
    except (OSError, RuntimeError, TimeoutError, ValueError) as exc:
        sdk, note = None, f"SDK not measured: {exc}"
    ours_fps, ours_cpu, ours_first = _ours(ours_count)
    lean_fps, lean_cpu, lean_first = _lean(ours_count)
    identical: bool | None = None
    if sdk is not None:
        identical = sdk["first_frame"] == ours_first and sdk["first_frame"].encode() == lean_first
    return SigningResult(
        ours_fps=ours_fps,
        ours_cpu_us=ours_cpu,
        lean_fps=lean_fps,
        lean_cpu_us=lean_cpu,
        sdk_fps=None if sdk is None else sdk["count"] / sdk["wall_s"],
        sdk_cpu_us=None if sdk is None else sdk["cpu_s"] / sdk["count"] * 1e6,
        frames_identical=identical,
        sdk_versions=None
        if sdk is None
        else f"@erc7824/nitrolite {sdk['sdk']}, viem {sdk['viem']}, node {sdk['node']}",
        note=note,
    )
