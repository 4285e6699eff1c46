"""Run one relay node on its own: ``python -m settlement_widgets.channel.v0_5.node --db FILE ...``.

Prints one JSON line (``relayUrl``, ``brokerAddress``, ``pid``) once it listens, then serves
until SIGINT/SIGTERM (exit 0), or exits 1 when its ledger cannot commit (fail-stop). With
``--rpc-url`` it follows the custody contract on that chain. Used
by the crash tests (a relay that can be SIGKILLed and restarted on the same database) and for
pointing a second node at a running sandbox chain.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
from pathlib import Path

from ....keys import PrivateKey
from .config import AssetConfig, NetworkConfig, RelayConfig
from .server import RelayNode

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m settlement_widgets.channel.v0_5.node")
    p.add_argument("--db", required=True, type=Path, help="SQLite ledger file (created if absent)")
    p.add_argument("--port", type=int, default=0, help="loopback port (0: a free one)")
    p.add_argument("--chain-id", type=int, default=31337)
    p.add_argument("--network-name", default="local")
    p.add_argument("--custody", required=True)
    p.add_argument("--adjudicator", required=True)
    p.add_argument("--token", required=True, help="the asset's ERC-20 address")
    p.add_argument("--symbol", default="ytest.usd")
    p.add_argument("--decimals", type=int, default=6)
    p.add_argument("--faucet-account", default=None, help="off-chain account seeded for payouts")
    p.add_argument("--durability", choices=("full", "normal"), default="full")
    p.add_argument("--deterministic", action="store_true")
    p.add_argument("--rpc-url", default=None, help="follow custody events on this chain")
    p.add_argument(
        "--poll-interval",
        type=float,
        default=0.25,
        help="seconds between two polls of the custody events (with --rpc-url)",
    )
    p.add_argument(
        "--commit-thread",
        action="store_true",
        help="COMMIT on a writer thread (for disks whose fsync takes milliseconds)",
    )
    p.add_argument(
        "--no-signer-threads",
        action="store_true",
        help="recover request signers on the event-loop thread only (no second thread)",
    )
    p.add_argument(
        "--uvloop",
        action="store_true",
        help="run on uvloop when it is installed (else the stdlib loop, with a warning)",
    )
    p.add_argument(
        "--broker-key-env",
        default="SETTLEMENT_RELAY_BROKER_KEY",
        help="environment variable holding the broker key (else: stored in the database)",
    )
    return p


async def _run(args: argparse.Namespace) -> int:
    import os

    secret = os.environ.get(args.broker_key_env)
    broker = PrivateKey(secret) if secret else None
    config = RelayConfig(
        db_path=args.db,
        networks=(NetworkConfig(args.chain_id, args.network_name, args.custody, args.adjudicator),),
        assets=(AssetConfig(args.symbol, args.token, args.chain_id, args.decimals),),
        broker_key=broker,
        port=args.port,
        durability=args.durability,
        deterministic=args.deterministic,
        faucet_account=args.faucet_account,
        poll_interval=args.poll_interval,
        signer_threads=not args.no_signer_threads,
        commit_thread=args.commit_thread,
    )
    custody = None
    if args.rpc_url:
        from ....wallet import WalletClient
        from ..chain.custody import CustodyClient

        key = broker or PrivateKey.generate()  # reading logs needs no funded key
        custody = CustodyClient(WalletClient(key, rpc_url=args.rpc_url), args.custody)
    node = RelayNode(config, custody=custody, chain_id=args.chain_id)
    await node.start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    print(
        json.dumps(
            {"relayUrl": node.url, "brokerAddress": node.broker_address, "pid": os.getpid()}
        ),
        flush=True,
    )
    stopping = asyncio.ensure_future(stop.wait())
    failing = asyncio.ensure_future(node.failed.wait())
    try:
        await asyncio.wait({stopping, failing}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopping.cancel()
        failing.cancel()
        await node.aclose()
    if node.failed.is_set():  # a COMMIT failed: exit so that a supervisor sees it
        print("relay stopped: its ledger could not commit", file=sys.stderr, flush=True)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.uvloop:
        try:
            import uvloop
        except ImportError:
            print("uvloop is not installed: running on the asyncio loop", file=sys.stderr)
        else:
            return int(uvloop.run(_run(args)))
    return asyncio.run(_run(args))


if __name__ == "__main__":
    sys.exit(main())
