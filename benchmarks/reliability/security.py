"""Security checks: what must be refused is refused, and secrets stay secret.

Each check returns a :class:`Finding` (passed or not, with the evidence); the suite's result
lists them all. What they prove:

- **endpoint auth**: every route refuses a request without a token, with a wrong token in
  the header or the query, with a 403 JSON error; the real token is accepted.
- **faucet proxy pinned**: no request data (extra JSON fields naming a URL, a URL as the
  address, ``Host``/``X-Forwarded-*``/``Forwarded`` headers, query parameters) makes the
  endpoint contact another host: a loopback canary server receives nothing, while the
  legitimate request still reaches the sandbox faucet.
- **relay refusals**: a replayed frame, a stale timestamp, a signature by a stranger and a
  transfer over the session key's allowance are refused with the node's messages and change
  no balance.
- **session keys expire**: a session key registered with a short expiry signs a transfer
  before, and is refused after; it cannot be registered again.
- **key files 0600**: the channel store and the relay database, WAL and shared-memory files
  included, while open.
- **no private key in reprs, widget HTML, logs and notebook outputs**: the reprs of live
  keys, wallets, providers, relay clients, stores, session records, sandboxes and panels; the
  HTML of widgets built from a real provider's channel; every log this run wrote (the relay,
  sandbox, endpoint and crash-child logs and the package's own logging); and the outputs of
  ``notebooks/*.ipynb``, scanned for the known keys *and* for any 64-hex string that is the
  private key of an address the notebook shows.
- **widget XSS payloads inert**: hostile strings in every prop and in provider metadata,
  and a ``javascript:`` explorer base: the HTML holds only the renderer's own tags and
  attributes, no event handler, no script, no link outside the explorer.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import re
import stat
import threading
import time
from dataclasses import dataclass
from html.parser import HTMLParser
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from .common import REPO, CheckResult, free_port, secrets

__all__ = [
    "Finding",
    "check_endpoint_auth",
    "check_faucet_proxy_pinned",
    "check_key_file_modes",
    "check_live_objects",
    "check_logs",
    "check_notebooks",
    "check_relay_refusals",
    "check_widget_xss",
    "run_security",
]


@dataclass
class Finding:
    name: str
    ok: bool
    detail: str

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "detail": self.detail}


# --- the endpoint ---------------------------------------------------------------------------


def check_endpoint_auth(endpoint: str, token: str) -> Finding:
    """Every route: no token, a wrong header token, a wrong query token -> 403 JSON."""
    import httpx

    routes = [
        ("GET", "", None),
        ("GET", "/proofs/channel", None),
        ("GET", "/proofs/v4", None),
        ("GET", "/openapi.json", None),
        ("POST", "", {"action": "v4:contracts"}),
        ("POST", "", {"action": "channel:faucet", "userAddress": "0x" + "11" * 20}),
    ]
    wrong = "f" * len(token)
    failures: list[str] = []
    tried = 0
    for method, path, body in routes:
        for label, headers, params in (
            ("no token", {}, {}),
            ("wrong header token", {"Authorization": f"token {wrong}"}, {}),
            ("wrong query token", {}, {"token": wrong}),
            ("empty token", {"Authorization": "token"}, {}),
        ):
            tried += 1
            # a fresh client per request: a token login would leave a cookie behind
            with httpx.Client(timeout=30) as anon:
                r = anon.request(method, endpoint + path, headers=headers, params=params, json=body)
            try:
                error = r.json().get("error")
            except ValueError:
                error = None
            if r.status_code != 403 or not error:
                failures.append(
                    f"{method} {path or '/'} with {label}: {r.status_code} {r.text[:80]}"
                )
        with httpx.Client(timeout=30) as client:
            r = client.request(
                method, endpoint + path, headers={"Authorization": f"token {token}"}, json=body
            )
        if r.status_code >= 400:
            failures.append(f"{method} {path or '/'} with the real token: {r.status_code}")
    return Finding(
        "unauthenticated endpoint calls refused",
        not failures,
        "; ".join(failures) or f"{tried} unauthenticated requests on {len(routes)} routes: all 403",
    )


class _Canary:
    """A loopback HTTP server that records every request it gets."""

    def __init__(self) -> None:
        hits: list[str] = []
        self.hits = hits

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _any(self) -> None:
                hits.append(f"{self.command} {self.path}")
                body = b'{"success": true}'
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_PUT = _any

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def check_faucet_proxy_pinned(endpoint: str, token: str) -> Finding:
    """Request data cannot point the faucet proxy at another host."""
    import httpx

    canary = _Canary()
    target = canary.url + "/faucet/requestTokens"
    host = target.split("//", 1)[1].split("/", 1)[0]
    auth = {"Authorization": f"token {token}"}
    address = "0x" + "22" * 20
    attempts: list[tuple[str, dict[str, Any], dict[str, str], dict[str, str]]] = [
        (
            "extra JSON fields",
            {
                "action": "channel:faucet",
                "userAddress": address,
                "faucetUrl": target,
                "faucet_url": target,
                "url": target,
                "host": host,
                "network": {"faucetUrl": target},
                "nodeUrl": "ws://" + host,
            },
            {},
            {},
        ),
        ("URL as the address", {"action": "channel:faucet", "userAddress": target}, {}, {}),
        (
            "host headers",
            {"action": "channel:faucet", "userAddress": address},
            {"X-Forwarded-Host": host, "Forwarded": f"host={host}", "X-Original-URL": target},
            {},
        ),
        (
            "query parameters",
            {"action": "channel:faucet", "userAddress": address},
            {},
            {"faucetUrl": target, "faucet_url": target, "url": target},
        ),
    ]
    failures: list[str] = []
    statuses: dict[str, int] = {}
    try:
        with httpx.Client(timeout=30) as client:
            for label, body, headers, params in attempts:
                r = client.post(endpoint, json=body, headers={**auth, **headers}, params=params)
                statuses[label] = r.status_code
                if r.status_code >= 500:
                    failures.append(f"{label}: {r.status_code}")
            legit = client.post(
                endpoint,
                json={"action": "channel:faucet", "userAddress": "0x" + "33" * 20},
                headers=auth,
            )
        if legit.status_code != 200 or legit.json().get("status") != "ok":
            failures.append(f"the legitimate faucet request failed: {legit.text[:160]}")
        if statuses.get("URL as the address") != 400:
            failures.append(f"a URL as the address was not refused: {statuses}")
    finally:
        canary.close()
    if canary.hits:
        failures.append(f"the canary host was contacted: {canary.hits}")
    return Finding(
        "faucet proxy cannot be pointed elsewhere",
        not failures,
        "; ".join(failures)
        or f"{len(attempts)} redirection attempts {statuses}; canary contacted 0 times",
    )


# --- the relay ------------------------------------------------------------------------------


async def check_relay_refusals(workdir: Path, expiry_seconds: int = 2) -> list[Finding]:
    """Replay, stale timestamp, wrong signer, over-allowance; then session-key expiry; and
    the relay database's file modes while the node runs."""
    from settlement_widgets.channel import RelayClient
    from settlement_widgets.channel.v0_5.core import messages as M
    from settlement_widgets.channel.v0_5.core.rpc import now_ms
    from settlement_widgets.errors import RelayError
    from settlement_widgets.keys import PrivateKey

    from .processes import ASSET, RelayProcess

    workdir.mkdir(parents=True, exist_ok=True)
    wallet, session, stranger, dest = (PrivateKey.generate() for _ in range(4))
    short_session = PrivateKey.generate()
    for key, label in (
        (wallet, "wallet"),
        (session, "session"),
        (stranger, "stranger"),
        (short_session, "short session"),
    ):
        secrets.add_key(key, f"security {label} key")
    relay = RelayProcess(
        workdir / "relay.sqlite",
        port=free_port(),
        faucet_account=wallet.address,
        log_path=workdir / "relay.log",
        durability="normal",
    )
    await relay.start()
    findings: list[Finding] = []
    try:
        modes = file_modes(workdir.glob("relay.sqlite*"))
        findings.append(
            Finding(
                "relay database files are 0600",
                bool(modes) and all(m == "0o600" for m in modes.values()),
                json.dumps(modes),
            )
        )
        client = RelayClient(relay.url, broker_address=relay.broker_address, reconnect=False)
        await client.authenticate(
            wallet,
            session,
            application="reliability security",
            allowances=[(ASSET, "5")],
            expires_at=int(time.time()) + 3600,
        )

        async def balances() -> tuple[str, str]:
            mine = await client.get_ledger_balances()
            theirs = await client.call("get_ledger_balances", {"account_id": dest.address})
            return json.dumps(mine), json.dumps(theirs)

        first = M.transfer_message(session, [(ASSET, "1")], destination=dest.address)
        await client.request(first)
        cases = {
            "replayed": (first, "operation denied: the request has already been processed"),
            "stale-timestamp": (
                M.transfer_message(
                    session, [(ASSET, "1")], destination=dest.address,
                    timestamp=now_ms() - 61_000,
                ),
                "invalid message timestamp",
            ),
            "wrong-signer": (
                M.transfer_message(stranger, [(ASSET, "1")], destination=dest.address),
                "invalid signature",
            ),
            "over-allowance": (
                M.transfer_message(session, [(ASSET, "4.5")], destination=dest.address),
                "session key spending validation failed: insufficient session key allowance: "
                "4.5 required, 4 available",
            ),
        }  # fmt: skip
        for name, (req, expected) in cases.items():
            before = await balances()
            try:
                await client.request(req)
                got = "accepted"
            except RelayError as exc:
                got = exc.message
            after = await balances()
            findings.append(
                Finding(
                    f"relay refuses {'an' if name[0] in 'aeiou' else 'a'} {name} request",
                    got == expected and before == after,
                    f"answer {got!r}" + ("" if before == after else "; balances changed"),
                )
            )
        await client.close()

        # session-key expiry: a key valid for a few seconds works, then is refused
        expiring = RelayClient(relay.url, broker_address=relay.broker_address, reconnect=False)
        expires_at = int(time.time()) + expiry_seconds
        await expiring.authenticate(
            wallet,
            short_session,
            application="reliability security",
            allowances=[(ASSET, "5")],
            expires_at=expires_at,
        )
        await expiring.transfer(dest.address, [(ASSET, "0.5")])
        # the property under test is the passage of time: wait for the wall clock to pass
        # the expiry the key was registered with (not a synchronisation sleep)
        await asyncio.sleep(max(0.0, expires_at - time.time()) + 0.2)
        try:
            await expiring.transfer(dest.address, [(ASSET, "0.5")])
            after_expiry = "accepted"
        except RelayError as exc:
            after_expiry = exc.message
        await expiring.close()
        again = RelayClient(relay.url, broker_address=relay.broker_address, reconnect=False)
        try:
            await again.authenticate(
                wallet, short_session, application="reliability security",
                allowances=[(ASSET, "5")], expires_at=int(time.time()) + 3600,
            )  # fmt: skip
            reuse = "accepted"
        except RelayError as exc:
            reuse = exc.message
        await again.close()
        findings.append(
            Finding(
                "session keys expire",
                after_expiry == "session key validation failed: session key expired"
                and reuse == "session key already exists but is expired",
                f"{expiry_seconds} s key: after expiry {after_expiry!r}; "
                f"registering it again {reuse!r}",
            )
        )
    finally:
        await relay.stop()
    return findings


def file_modes(paths: Any) -> dict[str, str]:
    return {Path(p).name: oct(stat.S_IMODE(os.stat(p).st_mode)) for p in paths}


def check_key_file_modes(store_path: Path) -> Finding:
    """The channel store (session key secret inside) and its WAL/SHM, while open."""
    modes = file_modes(store_path.parent.glob(store_path.name + "*"))
    return Finding(
        "channel store files are 0600",
        bool(modes) and all(m == "0o600" for m in modes.values()),
        json.dumps(modes),
    )


# --- live objects: reprs and widget HTML ---------------------------------------------------


async def check_live_objects(workdir: Path) -> list[Finding]:
    """A sandbox, a provider with a channel: reprs and widget HTML hold no secret; the
    store's files are 0600."""
    from dataclasses import replace

    from settlement_widgets.channel import ChannelProvider
    from settlement_widgets.providers import create_local_channel_config
    from settlement_widgets.sandbox import LocalSandbox
    from settlement_widgets.sandbox.chain import dev_keys
    from settlement_widgets.sandbox.local import sandbox_key
    from settlement_widgets.widgets import ChannelStatusPanel, SettlementSelector

    from .client_crash import _fresh_wallet

    findings: list[Finding] = []
    for i, key in enumerate(dev_keys(10)):
        secrets.add_key(key, f"dev key {i}")
    secrets.add_key(sandbox_key("broker"), "sandbox broker key")
    secrets.add_key(sandbox_key("faucet"), "sandbox faucet key")
    async with LocalSandbox(chain="anvil", v4=False, wallets=2, data_dir=workdir / "sb") as sb:
        wallet = await _fresh_wallet(sb)
        store = workdir / "store.sqlite"
        config = replace(create_local_channel_config(sb), store_path=store)
        async with ChannelProvider(config, wallet, watch_interval=None) as provider:
            channel = await provider.create_channel(sb.broker_address, sb.token, 2 * 10**6)
            session = provider.store.load_session(wallet.address, config.application)
            assert session is not None
            secrets.add_key(session.key, "provider session key")
            findings.append(check_key_file_modes(store))
            panel = ChannelStatusPanel.from_channel(channel, network=sb.network)
            bound = ChannelStatusPanel(network=sb.network)
            bound.bind(provider, channel.id)
            selector = SettlementSelector(network=sb.network)
            objects: dict[str, Any] = {
                "PrivateKey": wallet.key,
                "WalletClient": wallet,
                "ChannelProvider": provider,
                "RelayClient": provider.relay,
                "ChannelStore": provider.store,
                "SessionRecord": session,
                "session PrivateKey": session.key,
                "Channel": channel,
                "pending_work": provider.pending_work(),
                "history": provider.history(channel.id),
                "LocalSandbox": sb,
                "RelayNode config": sb.relay.config if sb.relay else None,
                "Network": sb.network,
                "ChannelStatusPanel": panel,
                "SettlementSelector": selector,
            }
            leaks = []
            for name, obj in objects.items():
                for text in (repr(obj), str(obj)):
                    found = secrets.find(text)
                    if found:
                        leaks.append(f"{name}: {sorted(set(found))}")
            findings.append(
                Finding(
                    "no private key in reprs",
                    not leaks,
                    "; ".join(leaks) or f"{len(objects)} live objects (repr and str) clean",
                )
            )
            pages = {
                "panel from channel": panel.html,
                "panel bound to provider": bound.html,
                "selector": selector_html(selector),
            }
            html_leaks = [f"{n}: {secrets.find(h)}" for n, h in pages.items() if secrets.find(h)]
            findings.append(
                Finding(
                    "no private key in widget HTML",
                    not html_leaks and all(pages.values()),
                    "; ".join(html_leaks) or f"{len(pages)} rendered widgets clean",
                )
            )
            bound.unbind()
    return findings


def selector_html(selector: Any) -> str:
    from settlement_widgets.widgets import render_selector_html
    from settlement_widgets.widgets.viewmodels import SelectorViewModel

    return render_selector_html(SelectorViewModel.build(selector.selected, selector.network))


# --- logs and notebooks ---------------------------------------------------------------------


def check_logs(paths: list[Path], captured: str | io.StringIO) -> Finding:
    """Every log file (and the package's captured logging) is free of known secrets."""
    if isinstance(captured, io.StringIO):
        captured = captured.getvalue()
    leaks = []
    size = len(captured)
    for path in paths:
        text = path.read_text(errors="replace")
        size += len(text)
        found = secrets.find(text)
        if found:
            leaks.append(f"{path.name}: {sorted(set(found))}")
    found = secrets.find(captured)
    if found:
        leaks.append(f"package logging: {sorted(set(found))}")
    return Finding(
        "no private key in logs",
        not leaks,
        "; ".join(leaks)
        or f"{len(paths)} log files + package logging, {size / 1e6:.1f} MB, "
        f"{len(secrets)} known keys: clean",
    )


_HEX64 = re.compile(r"(?i)(?<![0-9a-f])(?:0x)?([0-9a-f]{64})(?![0-9a-f])")
_ADDRESS = re.compile(r"(?i)0x[0-9a-f]{40}(?![0-9a-f])")


def check_notebooks(folder: Path | None = None) -> Finding:
    """Notebook outputs hold no known key, and no 64-hex string that is the private key of
    an address the notebook shows (that catches session keys no registry knows)."""
    from settlement_widgets.keys import SECP256K1_N, PrivateKey

    folder = folder or REPO / "notebooks"
    leaks = []
    scanned = candidates = 0
    for path in sorted(folder.glob("*.ipynb")):
        nb = json.loads(path.read_text())
        outputs = json.dumps(
            [c.get("outputs", []) for c in nb.get("cells", []) if c.get("cell_type") == "code"]
        )
        everything = path.read_text()
        scanned += 1
        found = secrets.find(everything)
        if found:
            leaks.append(f"{path.name}: known keys {sorted(set(found))}")
        shown = {a.lower() for a in _ADDRESS.findall(everything)}
        for match in set(_HEX64.findall(outputs)):
            value = int(match, 16)
            if not 0 < value < SECP256K1_N:
                continue
            candidates += 1
            if PrivateKey(bytes.fromhex(match)).address.lower() in shown:
                leaks.append(f"{path.name}: the private key of a shown address ({match[:6]}…)")
    return Finding(
        "no private key in notebook outputs",
        not leaks,
        "; ".join(leaks)
        or f"{scanned} notebooks, {candidates} 64-hex output strings checked: clean",
    )


# --- widget XSS -----------------------------------------------------------------------------

XSS_PAYLOADS = (
    "<script>alert(1)</script>",
    '"><img src=x onerror=alert(1)>',
    "' onmouseover='alert(1)' x='",
    "javascript:alert(1)",
    "</div><svg onload=alert(1)>",
    '<a href="javascript:alert(1)">x</a>',
    "<style>*{display:none}</style>",
    "&lt;script&gt;alert(1)&lt;/script&gt;",
)
_ALLOWED_TAGS = {"div", "span", "a", "style"}
_ALLOWED_ATTRS = {
    "class", "style", "title", "href", "target", "rel",
    "data-method", "data-selected", "data-label", "data-mode", "data-pill",
}  # fmt: skip


class _Probe(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.styles: list[str] = []
        self._in_style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, {k: v or "" for k, v in attrs}))
        self._in_style = tag == "style"

    def handle_endtag(self, tag: str) -> None:
        self._in_style = False

    def handle_data(self, data: str) -> None:
        if self._in_style:
            self.styles.append(data)


def html_problems(html: str, explorer_base: str) -> list[str]:
    """What a browser would execute or follow that the renderer did not intend."""
    from settlement_widgets.widgets.render import CARD_STYLESHEET

    probe = _Probe()
    probe.feed(html)
    problems = []
    allowed_styles = {CARD_STYLESHEET.removeprefix("<style>").removesuffix("</style>")}
    for tag, attrs in probe.tags:
        if tag not in _ALLOWED_TAGS:
            problems.append(f"element <{tag}>")
        for name, value in attrs.items():
            if name not in _ALLOWED_ATTRS or name.startswith("on"):
                problems.append(f"attribute {name} on <{tag}>")
            if name in ("href", "style") and "javascript:" in value.lower().replace(" ", ""):
                problems.append(f"javascript: in {name}")  # a title may show it as text
        href = attrs.get("href")
        if href is not None and not (
            href.startswith(("https://", "http://")) and href.startswith(explorer_base)
        ):
            problems.append(f"link outside the explorer: {href[:60]}")
    for style in probe.styles:
        if style not in allowed_styles:
            problems.append(f"a <style> the renderer did not write: {style[:60]}")
    return problems


def check_widget_xss() -> Finding:
    """Every payload in every string prop, in provider metadata, and a hostile explorer
    base: the HTML stays inert."""
    from dataclasses import replace

    from settlement_widgets.networks import get_network
    from settlement_widgets.widgets import render_selector_html, render_status_html
    from settlement_widgets.widgets.viewmodels import (
        SelectorViewModel,
        StatusProps,
        StatusViewModel,
    )

    sepolia = get_network("sepolia")
    hostile = replace(sepolia, explorer_base="javascript:alert(1)//")
    renders = 0
    problems: list[str] = []
    string_props = (
        "channel_id", "channel_status", "state_intent", "state_hash",
        "adjudicator", "settlement_tx", "provider",
    )  # fmt: skip
    for payload in XSS_PAYLOADS:
        for network in (sepolia, hostile):
            variants: list[dict[str, Any]] = [
                dict.fromkeys(string_props, payload),
                {"channel_id": "0x" + "ab" * 32, "provider": "channel", "settlement_tx": payload},
                {
                    "provider": "Uniswap v4",
                    "settlement_tx": "0x" + "cd" * 32,
                    "provider_metadata": {payload: payload, "v4": {payload: [payload]}},
                },
                {
                    "channel_id": "0x" + "ab" * 32,
                    "provider": "channel",
                    "provider_metadata": {"erc7824": {"nonce": payload, payload: payload}},
                },
            ]
            for props in variants:
                vm = StatusViewModel.build(StatusProps.from_kwargs(**props), network)
                html = render_status_html(vm)
                renders += 1
                problems += [f"status {p}" for p in html_problems(html, sepolia.explorer_base)]
                if "<script" in html.lower() or "<img" in html.lower() or "<svg" in html.lower():
                    problems.append("a payload's tag is in the status HTML unescaped")
            for method in ("channel", "v4", "aggregator"):
                html = render_selector_html(SelectorViewModel.build(method, network))
                renders += 1
                problems += [f"selector {p}" for p in html_problems(html, sepolia.explorer_base)]
    unique = sorted(set(problems))
    return Finding(
        "widget XSS payloads inert",
        not unique,
        "; ".join(unique[:10])
        or f"{len(XSS_PAYLOADS)} payloads x props, metadata and a javascript: explorer base: "
        f"{renders} renders inert",
    )


# --- the suite ------------------------------------------------------------------------------


async def run_security(
    workdir: Path,
    *,
    endpoint: str,
    token: str,
    log_paths: list[Path],
    captured_logs: str | io.StringIO,
    expiry_seconds: int = 2,
) -> CheckResult:
    """Every security check; logs are scanned last, after the others wrote theirs."""
    result = CheckResult("security checks")
    began = time.perf_counter()
    findings: list[Finding] = []
    findings.append(await asyncio.to_thread(check_endpoint_auth, endpoint, token))
    findings.append(await asyncio.to_thread(check_faucet_proxy_pinned, endpoint, token))
    findings += await check_relay_refusals(workdir / "relay", expiry_seconds)
    findings += await check_live_objects(workdir / "objects")
    findings.append(check_notebooks())
    findings.append(check_widget_xss())
    logs = sorted({*log_paths, *workdir.rglob("*.log")})
    findings.append(check_logs(logs, captured_logs))
    for f in findings:
        if not f.ok:
            result.fail(f"{f.name}: {f.detail}")
    result.metrics = {
        "security_checks": len(findings),
        "security_checks_passed": sum(f.ok for f in findings),
        "known_keys_scanned_for": len(secrets),
        "findings": {f.name: f.to_json() for f in findings},
    }
    result.seconds = time.perf_counter() - began
    return result
