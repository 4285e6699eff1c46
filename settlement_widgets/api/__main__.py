"""``python -m settlement_widgets.api`` / ``settlement-api``: the standalone endpoint server.

    settlement-api --host 127.0.0.1 --port 8890 [--network local|sepolia] [--no-auth]

Token auth is on by default; the URL with its token is printed once (``JUPYTER_TOKEN``, if
set, is used as the token, as Jupyter does). ``--no-auth`` is refused unless the host is a
loopback address. See :mod:`settlement_widgets.api.standalone` for what the server exposes.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from ..networks import NETWORK_NAMES

__all__ = ["main", "parse_args"]


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="settlement-api",
        description="Serve /api/settlement (the settlement_widgets endpoint) without JupyterLab.",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument(
        "--port", type=int, default=8890, help="port (default 8890; 0 picks a free one)"
    )
    parser.add_argument(
        "--network", choices=NETWORK_NAMES, default="sepolia", help="network served"
    )
    parser.add_argument("--base-url", default="/", help="URL prefix (default /)")
    parser.add_argument(
        "--no-auth", action="store_true", help="no token (only allowed on a loopback host)"
    )
    parser.add_argument(
        "--log-level", default="INFO", choices=("DEBUG", "INFO", "WARN", "ERROR", "CRITICAL")
    )
    parser.add_argument(
        "--faucet-client-rate-limit",
        type=int,
        default=None,
        help="faucet requests per client address per window (default 20)",
    )
    args = parser.parse_args(argv)
    if not 0 <= args.port <= 65535:
        parser.error(f"--port must be 0-65535, got {args.port}")
    if args.faucet_client_rate_limit is not None and args.faucet_client_rate_limit < 1:
        parser.error("--faucet-client-rate-limit must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    from .standalone import SettlementServerApp, build_config, is_loopback

    if args.no_auth and not is_loopback(args.host):
        print(
            f"settlement-api: refusing --no-auth on {args.host}: without a token anyone who can "
            "reach that address could use the endpoint. Bind a loopback host "
            "(--host 127.0.0.1) or drop --no-auth.",
            file=sys.stderr,
        )
        return 2
    base_url = "/" + args.base_url.strip("/") + "/" if args.base_url.strip("/") else "/"
    config = build_config(
        host=args.host,
        port=args.port,
        network=args.network,
        no_auth=args.no_auth,
        base_url=base_url,
        log_level=args.log_level,
    )
    if args.faucet_client_rate_limit is not None:
        config.SettlementConfig.faucet_client_rate_limit = args.faucet_client_rate_limit
    from ..errors import SettlementError

    app = SettlementServerApp(config=config)
    try:
        app.initialize(argv=[], find_extensions=False)
        app.start()
    except SettlementError as exc:  # what to do, in one line: no traceback for a user error
        print(f"settlement-api: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
