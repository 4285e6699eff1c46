"""``settlement-sandbox`` / ``python -m settlement_widgets.sandbox``: the local network.

Starts the chain (in-process by default; ``--chain anvil`` or ``--rpc-url URL``), deploys the
contracts, starts the relay node and the HTTP server (faucet, ``/rpc``, explorer) on
loopback, and prints the network profile as one line of JSON on stdout (``Network.to_json()``,
``rpcUrl`` on loopback). The profile is also written to ``$SETTLEMENT_HOME/sandbox/
profile.json`` (where ``get_network("local")`` looks) and to ``--profile-out`` if given.
Runs until SIGINT or SIGTERM, then stops everything and exits 0.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
import time
from pathlib import Path
from typing import Any

__all__ = ["main"]


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
    p.add_argument("--profile-out", type=Path, help="also write the profile JSON to this file")
    p.add_argument("--wallets", type=int, default=4, help="funded dev wallets (1-8)")
    p.add_argument("--no-v4", action="store_true", help="skip the v4 deployment (faster)")
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
    return p


async def _run(args: argparse.Namespace) -> int:
    from .local import LocalSandbox, default_profile_path, remove_profile, write_profile

    options: dict[str, Any] = {
        "chain": args.rpc_url or args.chain,
        "deterministic": args.deterministic,
        "wallets": args.wallets,
        "v4": not args.no_v4,
        "aggregator": args.aggregator,
        "faucet_cooldown": args.faucet_cooldown,
        "durability": args.durability,
        "relay_port": args.relay_port,
        "http_port": args.http_port,
    }
    if args.data_dir is not None:
        options["data_dir"] = args.data_dir
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    started = time.perf_counter()
    sandbox = LocalSandbox(**options)
    start = asyncio.ensure_future(sandbox.start())
    stopper = asyncio.ensure_future(stop.wait())
    await asyncio.wait({start, stopper}, return_when=asyncio.FIRST_COMPLETED)
    if not start.done():  # asked to stop while starting
        start.cancel()
        await asyncio.gather(start, return_exceptions=True)
        await sandbox.aclose()
        return 0
    stopper.cancel()
    start.result()
    network = sandbox.network
    profile = network.to_json()
    home_profile = write_profile(network, default_profile_path())
    if args.profile_out is not None:
        write_profile(network, args.profile_out)
    print(json.dumps(profile), flush=True)
    print(
        f"sandbox ready in {time.perf_counter() - started:.1f} s: relay {network.node_url}, "
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
    try:
        return asyncio.run(_run(args))
    except KeyboardInterrupt:  # pragma: no cover - a second Ctrl-C during shutdown
        return 130


if __name__ == "__main__":
    sys.exit(main())
