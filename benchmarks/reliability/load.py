"""Load: 50 concurrent clients on the endpoint and 20 authenticated relay connections at
once, for a fixed time; error rate and latency percentiles.

Endpoint clients (one HTTP connection each, the real token) loop over a mix of what the
widgets and notebooks call: the configuration (GET), the proof lists, the OpenAPI document,
faucet requests for fresh addresses (each goes through the sandbox faucet to the relay) and
the v4 contract notes (a chain read). Relay connections are the package's
:class:`~settlement_widgets.channel.RelayClient`, each logged in with a session key on its
own faucet-funded wallet, sending transfers around a ring with a balance read every tenth
request.

An error is a transport failure, a timeout, a 5xx, an unexpected refusal (any 4xx other than
a 429 rate limit) or a relay ``error`` frame; the rate is errors / requests.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

from .common import CheckResult, ms, percentile, secrets

__all__ = ["LoadParams", "run_load"]


@dataclass(frozen=True)
class LoadParams:
    duration: float = 10.0
    endpoint_clients: int = 50
    relay_connections: int = 20
    seed: int | None = None


_MIX = (
    ("GET config", 50),
    ("GET proofs", 15),
    ("GET openapi", 10),
    ("POST faucet", 15),
    ("POST v4:contracts", 10),
)


async def _endpoint_client(
    client: Any,
    endpoint: str,
    until: float,
    rng: random.Random,
    latencies: list[float],
    counts: Counter[str],
    errors: list[str],
) -> None:
    names = [n for n, _ in _MIX]
    weights = [w for _, w in _MIX]
    while time.monotonic() < until:
        kind = rng.choices(names, weights)[0]
        started = time.perf_counter()
        try:
            if kind == "GET config":
                r = await client.get(endpoint)
            elif kind == "GET proofs":
                r = await client.get(endpoint + "/proofs/" + rng.choice(("channel", "v4")))
            elif kind == "GET openapi":
                r = await client.get(endpoint + "/openapi.json")
            elif kind == "POST faucet":
                address = "0x" + rng.randbytes(20).hex()
                r = await client.post(
                    endpoint, json={"action": "channel:faucet", "userAddress": address}
                )
            else:
                r = await client.post(endpoint, json={"action": "v4:contracts"})
        except Exception as exc:
            counts["endpoint_errors"] += 1
            errors.append(f"{kind}: {type(exc).__name__}: {exc}")
            continue
        finally:
            counts["endpoint_requests"] += 1
        latencies.append(time.perf_counter() - started)
        if r.status_code == 429:
            counts["endpoint_rate_limited"] += 1
        elif r.status_code >= 400:
            counts["endpoint_errors"] += 1
            errors.append(f"{kind} -> {r.status_code}: {r.text[:120]}")
        elif kind == "POST faucet" and r.json().get("status") != "ok":
            counts["endpoint_errors"] += 1
            errors.append(f"faucet answered {r.text[:160]}")


async def _relay_connection(
    client: Any,
    destination: str,
    until: float,
    latencies: list[float],
    counts: Counter[str],
    errors: list[str],
) -> None:
    from settlement_widgets.errors import SettlementError

    n = 0
    while time.monotonic() < until:
        n += 1
        started = time.perf_counter()
        try:
            if n % 10 == 0:
                await client.get_ledger_balances()
            else:
                await client.transfer(destination, [("ytest.usd", "0.000001")])
        except SettlementError as exc:
            counts["relay_errors"] += 1
            errors.append(f"{type(exc).__name__}: {exc}")
        else:
            latencies.append(time.perf_counter() - started)
        finally:
            counts["relay_requests"] += 1


async def _relay_clients(profile: dict[str, Any], count: int) -> list[tuple[Any, Any]]:
    """``count`` logged-in clients, each on a fresh wallet the sandbox faucet funded."""
    from settlement_widgets.channel import RelayClient, request_faucet_tokens
    from settlement_widgets.keys import PrivateKey
    from settlement_widgets.networks import Network

    network = Network.from_json(profile)
    broker = network.extra.get("brokerAddress")
    out = []
    for _ in range(count):
        wallet, session = PrivateKey.generate(), PrivateKey.generate()
        secrets.add_key(wallet, "load wallet key")
        secrets.add_key(session, "load session key")
        await request_faucet_tokens(wallet.address, network)
        client = RelayClient(network.node_url, broker_address=broker, request_timeout=30)
        await client.authenticate(
            wallet,
            session,
            application="reliability load",
            allowances=[("ytest.usd", "1000")],
            expires_at=int(time.time()) + 3600,
        )
        out.append((client, wallet))
    return out


async def run_load(
    endpoint: str, auth: dict[str, str], profile: dict[str, Any], params: LoadParams | None = None
) -> CheckResult:
    """Run both loads at once against a running :class:`~.stack.EndpointStack`."""
    p = params or LoadParams()
    result = CheckResult("load")
    began = time.perf_counter()
    rng = random.Random(p.seed)
    import httpx

    clients = await _relay_clients(profile, p.relay_connections)
    # one TLS context for all: building one per client blocks the loop for ~50 ms each
    shared_tls = httpx.create_ssl_context()
    http = [
        httpx.AsyncClient(
            headers=auth, timeout=30, limits=httpx.Limits(max_connections=1), verify=shared_tls
        )
        for _ in range(p.endpoint_clients)
    ]
    counts: Counter[str] = Counter()
    endpoint_latencies: list[float] = []
    relay_latencies: list[float] = []
    errors: list[str] = []
    until = time.monotonic() + p.duration
    started = time.perf_counter()
    try:
        await asyncio.gather(
            *(
                _endpoint_client(
                    h,
                    endpoint,
                    until,
                    random.Random(rng.random()),
                    endpoint_latencies,
                    counts,
                    errors,
                )
                for h in http
            ),
            *(
                _relay_connection(
                    client,
                    clients[(i + 1) % len(clients)][1].address,
                    until,
                    relay_latencies,
                    counts,
                    errors,
                )
                for i, (client, _) in enumerate(clients)
            ),
        )
    finally:
        elapsed = time.perf_counter() - started
        for client, _ in clients:
            await client.close()
        for h in http:
            await h.aclose()
    total = counts["endpoint_requests"] + counts["relay_requests"]
    failed = counts["endpoint_errors"] + counts["relay_errors"]
    rate = failed / total if total else None
    for message, n in Counter(errors).most_common(10):
        result.fail(f"{n} x {message}")
    result.expect(total > 0, "no request completed")
    result.metrics = {
        "load_seconds": round(elapsed, 1),
        "endpoint_clients": p.endpoint_clients,
        "relay_connections": p.relay_connections,
        "endpoint_requests": counts["endpoint_requests"],
        "endpoint_errors": counts["endpoint_errors"],
        "endpoint_rate_limited": counts["endpoint_rate_limited"],
        "endpoint_rps": round(counts["endpoint_requests"] / elapsed, 1),
        "endpoint_p50_ms": ms(percentile(endpoint_latencies, 50)),
        "endpoint_p99_ms": ms(percentile(endpoint_latencies, 99)),
        "relay_requests": counts["relay_requests"],
        "relay_errors": counts["relay_errors"],
        "relay_rps": round(counts["relay_requests"] / elapsed, 1),
        "relay_p50_ms": ms(percentile(relay_latencies, 50)),
        "relay_p99_ms": ms(percentile(relay_latencies, 99)),
        "load_error_rate": round(rate, 6) if rate is not None else None,
    }
    result.seconds = time.perf_counter() - began
    return result
