"""``settlement-sandbox`` / ``python -m settlement_widgets.sandbox``: the local network.

Starts the chain (in-process by default; ``--chain anvil`` or ``--rpc-url URL``), deploys the
contracts (or resumes the chain snapshot ``make contracts`` saved after deploying them, see
:mod:`.snapshot`; ``--no-snapshot`` always deploys), starts the relay node and the HTTP
server (faucet, ``/rpc``, explorer) on loopback, and prints the network profile as one line
of JSON on stdout (``Network.to_json()``, ``rpcUrl`` on loopback). The profile is also
written to ``$SETTLEMENT_HOME/sandbox/profile.json`` (where ``get_network("local")`` looks)
and to ``--profile-out`` if given.
Runs until SIGINT or SIGTERM, then stops everything and exits 0. One per ``SETTLEMENT_HOME``:
a second one on the same home exits 1 saying the running one's pid and URL (:mod:`.lock`).

``--twin sepolia`` starts the Sepolia twin instead (:mod:`.twin`: chain id 11155111, our
contracts at Sepolia's addresses, relay and faucet on loopback) and writes the environment a
Sepolia user sets (``SETTLEMENT_NETWORK``, ``SEPOLIA_RPC_URL``, ``SETTLEMENT_RELAY_URL``,
``SETTLEMENT_FAUCET_URL``, ``SETTLEMENT_PRIVATE_KEY``) as ``export`` lines to ``--env-file``
(mode 0600; default ``$SETTLEMENT_HOME/sandbox/sepolia-twin.env``). Only the file's path and
the non-secret values are printed, never the key. ``--twin sepolia-v1`` does the same for
the Nitrolite v1 profile (:mod:`.twin_v1`: our ChannelHub at the public v1 sandbox's address
on Sepolia and on Base Sepolia, two anvils, our Nitronode over both and the v1 faucet on
loopback; its file also exports ``BASE_SEPOLIA_RPC_URL``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .lock import SandboxLock

__all__ = ["main", "write_env_file"]

#: the public networks ``--twin`` can stand in for (see :mod:`.twin`)
TWINS = ("sepolia", "sepolia-v1")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="settlement-sandbox",
        description="Run the local settlement sandbox (chain, contracts, relay, faucet).",
    )
    chain = p.add_mutually_exclusive_group()
    chain.add_argument(
        "--chain",
        choices=("inprocess", "anvil"),
        default="inprocess",
        help="in-process py-evm (default) or a fresh anvil from contracts/node_modules",
    )
    chain.add_argument("--rpc-url", help="use an already running JSON-RPC node instead")
    p.add_argument(
        "--deterministic",
        action="store_true",
        help="fixed keys, nonces from counters (reproducible notebooks)",
    )
    p.add_argument(
        "--protocol",
        choices=("v0.5", "v1"),
        default="v0.5",
        help="the channel method's protocol: v0.5 (ClearNode relay, Custody; default) or v1 "
        "(a Nitronode and a ChannelHub too; the profile's nodeUrl is the Nitronode)",
    )
    p.add_argument("--profile-out", type=Path, help="also write the profile JSON to this file")
    p.add_argument("--wallets", type=int, default=4, help="funded dev wallets (1-8)")
    p.add_argument("--no-v4", action="store_true", help="skip the v4 deployment (faster)")
    p.add_argument(
        "--no-snapshot",
        action="store_true",
        help="send the deployment transactions even where a chain snapshot exists",
    )
    p.add_argument(
        "--aggregator",
        action="store_true",
        help="also a second chain, bridges, a relayer and a LI.FI-schema route server",
    )
    p.add_argument(
        "--faucet-cooldown", type=float, default=0.0, help="seconds between payouts per address"
    )
    p.add_argument("--durability", choices=("normal", "full"), default="normal")
    p.add_argument("--relay-port", type=int, default=0)
    p.add_argument("--http-port", type=int, default=0)
    p.add_argument("--data-dir", type=Path, help="keep the relay ledger here (default: temporary)")
    p.add_argument(
        "--twin",
        choices=TWINS,
        help="start a twin of a public network instead (its chain id and contract addresses)",
    )
    p.add_argument(
        "--env-file",
        type=Path,
        help="with --twin: where to write the environment that points at it (mode 0600)",
    )
    return p


async def _until_stopped(start: Any, close: Any) -> asyncio.Event | None:
    """Await ``start()`` unless SIGINT/SIGTERM comes first; the stop event, or None when
    asked to stop while starting (then ``close()`` has run)."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    starting = asyncio.ensure_future(start())
    stopper = asyncio.ensure_future(stop.wait())
    await asyncio.wait({starting, stopper}, return_when=asyncio.FIRST_COMPLETED)
    if not starting.done():
        starting.cancel()
        await asyncio.gather(starting, return_exceptions=True)
        await close()
        return None
    stopper.cancel()
    starting.result()
    return stop


def write_env_file(env: dict[str, str], path: Path) -> Path:
    """``export NAME=value`` lines, created with mode 0600 (the file holds a key)."""
    import shlex

    from ..atomic_file import write_atomic

    lines = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in env.items())
    return write_atomic(path, lines, mode=0o600)


async def _run_twin(args: argparse.Namespace) -> int:
    from ..networks import settlement_home
    from .twin import SepoliaTwin, TwinBase
    from .twin_v1 import SepoliaV1Twin

    started = time.perf_counter()
    twin: TwinBase
    if args.twin == "sepolia-v1":
        twin = SepoliaV1Twin(node_port=args.relay_port, http_port=args.http_port)
    else:
        twin = SepoliaTwin(relay_port=args.relay_port, http_port=args.http_port)
    stop = await _until_stopped(twin.start, twin.aclose)
    if stop is None:
        return 0
    env = twin.env()
    default = settlement_home() / "sandbox" / f"{args.twin}-twin.env"
    path = write_env_file(env, args.env_file or default)
    shown = {k: v for k, v in env.items() if k != "SETTLEMENT_PRIVATE_KEY"}
    print(json.dumps(shown | {"envFile": str(path)}), flush=True)
    print(
        f"Sepolia twin ready in {time.perf_counter() - started:.1f} s: `source {path}` points "
        f"SETTLEMENT_NETWORK={twin.PROFILE} at it (Ctrl-C to stop)",
        file=sys.stderr,
        flush=True,
    )
    try:
        await stop.wait()
    finally:
        path.unlink(missing_ok=True)
        await twin.aclose()
    return 0


async def _run(args: argparse.Namespace) -> int:
    if args.twin:
        return await _run_twin(args)
    from ..errors import ConfigurationError
    from ..networks import settlement_home
    from .lock import Holder, SandboxLock, refusal_message
    from .profile import default_profile_path
    from .shared import _read_profile, profile_answers

    # one sandbox per SETTLEMENT_HOME: a second one is refused with the first's pid and URL
    # (a crashed one holds no lock, and its profile is taken over; see .lock)
    home = settlement_home()
    lock = SandboxLock(home)
    try:
        lock.acquire()
    except ConfigurationError as exc:
        print(f"settlement-sandbox: {exc}", file=sys.stderr, flush=True)
        return 1
    try:
        existing = _read_profile(default_profile_path())
        if existing is not None and await profile_answers(existing):
            url = (existing.get("extra") or {}).get("httpUrl")
            holder = Holder(None, url if isinstance(url, str) else None)
            print(f"settlement-sandbox: {refusal_message(home, holder)}", file=sys.stderr)
            return 1
        return await _serve(args, lock)
    finally:
        lock.release()


async def _serve(args: argparse.Namespace, lock: SandboxLock) -> int:
    """Start the sandbox, write its profile, serve until SIGINT/SIGTERM, clean up."""
    from .collector import settle_collector
    from .local import LocalSandbox
    from .profile import default_profile_path, remove_profile, write_profile

    options: dict[str, Any] = {
        "chain": args.rpc_url or args.chain,
        "protocol": args.protocol,
        "deterministic": args.deterministic,
        "wallets": args.wallets,
        "v4": not args.no_v4,
        "aggregator": args.aggregator,
        "faucet_cooldown": args.faucet_cooldown,
        "durability": args.durability,
        "relay_port": args.relay_port,
        "http_port": args.http_port,
        "snapshot": not args.no_snapshot,
    }
    if args.data_dir is not None:
        options["data_dir"] = args.data_dir
    started = time.perf_counter()
    sandbox = LocalSandbox(**options)
    stop = await _until_stopped(sandbox.start, sandbox.aclose)
    if stop is None:  # asked to stop while starting
        return 0
    settle_collector()  # what the start built lives until exit: never scan it again
    network = sandbox.network
    profile = network.to_json()
    home_profile = write_profile(network, default_profile_path())
    lock.publish(str(network.extra.get("httpUrl") or network.rpc_url))
    if args.profile_out is not None:
        write_profile(network, args.profile_out)
    print(json.dumps(profile), flush=True)
    print(
        f"sandbox ready in {time.perf_counter() - started:.1f} s: "
        f"{'Nitronode' if network.protocol == 'nitrolite-v1' else 'relay'} {network.node_url}, "
        f"rpc {network.rpc_url}, faucet {network.faucet_url} (Ctrl-C to stop)",
        file=sys.stderr,
        flush=True,
    )
    try:
        await stop.wait()
    finally:
        remove_profile(home_profile, network)
        await sandbox.aclose()
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if not 1 <= args.wallets <= 8:
        print("--wallets must be 1..8", file=sys.stderr)
        return 2
    if args.env_file is not None and not args.twin:
        print("--env-file goes with --twin", file=sys.stderr)
        return 2
    from ..errors import SettlementError

    try:
        return asyncio.run(_run(args))
    except SettlementError as exc:  # what to do, in one line: no traceback for a user error
        print(f"settlement-sandbox: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # pragma: no cover - a second Ctrl-C during shutdown
        return 130


if __name__ == "__main__":
    sys.exit(main())
