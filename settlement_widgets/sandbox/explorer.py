"""A minimal block explorer for the sandbox chain, so ``explorer_url`` links work locally.

``/explorer/tx/<hash>`` and ``/explorer/address/<address>`` read the chain and render plain
HTML: a transaction's status, parties, gas and its decoded events (the custody's, then those
of the v4 hook and adapter, the PoolManager and test tokens); an address's ETH, test-token and
custody balances and open channels. Rendering is pure (:func:`tx_page`,
:func:`address_page`; every dynamic string through ``html.escape``, links only to this
explorer); :class:`Explorer` fetches the data.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from ..addresses import ZERO_ADDRESS, to_checksum

if TYPE_CHECKING:
    from web3 import AsyncWeb3

    from ..networks import Network

__all__ = ["Explorer", "address_page", "network_labels", "not_found_page", "tx_page"]

_TX_HASH: Final = re.compile(r"^0x[0-9a-fA-F]{64}$")
_ADDRESS: Final = re.compile(r"^0x[0-9a-fA-F]{40}$")
_STYLE: Final = (
    "body{font-family:system-ui,sans-serif;margin:2rem;color:#1b1f24}"
    "table{border-collapse:collapse}td,th{border:1px solid #d0d7de;padding:.3rem .6rem;"
    "text-align:left;vertical-align:top}code{font-size:.9em}h1{font-size:1.3rem}"
    ".ok{color:#1a7f37}.bad{color:#cf222e}"
)


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def network_labels(network: Network) -> dict[str, str]:
    """Names for the addresses a sandbox profile lists (contracts, deployer, broker, dev
    wallets): the explorer shows them beside the hex. Built from the profile alone, so the
    sandbox and an explorer served elsewhere (the Jupyter server's) label alike."""
    c = network.contracts
    extra = network.extra
    named = [
        (c.custody, "Custody"),
        (c.adjudicator, "SimpleConsensus adjudicator"),
        (network.token, f"{network.asset_symbol} test token"),
        (network.deployer, "deployer"),
        (extra.get("brokerAddress"), "broker"),
        (c.pool_manager, "PoolManager"),
        (c.policy_hook, "PolicyHook"),
        (c.settlement_adapter, "SettlementAdapter"),
        (c.channel_hub, "ChannelHub"),
    ]
    named += [(w, f"dev wallet {i}") for i, w in enumerate(extra.get("wallets") or (), start=1)]
    labels: dict[str, str] = {}
    for address, label in named:
        if address and address != ZERO_ADDRESS:
            labels.setdefault(to_checksum(str(address)), label)
    return labels


def _page(title: str, body: str, base: str = "/explorer") -> str:
    return (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>{_e(title)}</title><style>{_STYLE}</style></head>"
        f"<body><p><a href='{_e(base)}/'>sandbox explorer</a></p>{body}</body></html>"
    )


def _address_link(base: str, address: str, labels: Mapping[str, str]) -> str:
    label = labels.get(address)
    text = f"{address} ({label})" if label else address
    return f"<a href='{_e(base)}/address/{_e(address)}'><code>{_e(text)}</code></a>"


def _rows(rows: Sequence[tuple[str, str]]) -> str:
    return (
        "<table>" + "".join(f"<tr><th>{_e(k)}</th><td>{v}</td></tr>" for k, v in rows) + "</table>"
    )


def _eth(wei: int) -> str:
    whole, frac = divmod(wei, 10**18)
    text = f"{whole}.{frac:018d}".rstrip("0").rstrip(".")
    return f"{text} ETH"


@dataclass(frozen=True)
class EventView:
    """One decoded log for display."""

    name: str
    fields: tuple[tuple[str, str], ...] = field(default=())


def tx_page(
    base: str,
    tx: Mapping[str, Any],
    receipt: Mapping[str, Any] | None,
    events: Sequence[EventView],
    labels: Mapping[str, str],
) -> str:
    """The page of one transaction (``receipt`` ``None`` while pending)."""
    tx_hash = str(tx["hash"])
    if receipt is None:
        status = "<span>pending</span>"
    elif int(receipt.get("status", 0)) == 1:
        status = "<span class='ok'>success</span>"
    else:
        status = "<span class='bad'>reverted</span>"
    rows = [
        ("hash", f"<code>{_e(tx_hash)}</code>"),
        ("status", status),
        ("block", _e(tx.get("blockNumber", "pending"))),
        ("from", _address_link(base, str(tx["from"]), labels)),
    ]
    to = tx.get("to")
    if to:
        rows.append(("to", _address_link(base, str(to), labels)))
    created = receipt.get("contractAddress") if receipt else None
    if created:
        rows.append(("contract created", _address_link(base, str(created), labels)))
    rows.append(("value", _e(_eth(int(tx.get("value", 0))))))
    data = tx.get("input") or "0x"
    selector = data[:10] if isinstance(data, str) else "0x"
    rows.append(("input", f"<code>{_e(selector)}</code> ({_e((len(str(data)) - 2) // 2)} bytes)"))
    if receipt is not None:
        rows.append(("gas used", _e(receipt.get("gasUsed", ""))))
        rows.append(("logs", _e(len(receipt.get("logs", ())))))
    body = f"<h1>Transaction</h1>{_rows(rows)}"
    if events:
        body += "<h2>Events</h2>"
        for event in events:
            body += f"<h3>{_e(event.name)}</h3>" + _rows(
                [(k, f"<code>{_e(v)}</code>") for k, v in event.fields]
            )
    return _page(f"Transaction {tx_hash}", body, base)


def address_page(
    base: str,
    address: str,
    *,
    label: str | None,
    eth_wei: int,
    nonce: int,
    code_size: int,
    balances: Sequence[tuple[str, str]],
    channels: Sequence[str],
) -> str:
    """The page of one address: what it holds on the sandbox chain."""
    rows = [
        ("address", f"<code>{_e(address)}</code>"),
        ("label", _e(label or "")),
        ("kind", "contract" if code_size else "account"),
        ("ETH", _e(_eth(eth_wei))),
        ("transactions sent", _e(nonce)),
    ]
    if code_size:
        rows.append(("code size", f"{_e(code_size)} bytes"))
    rows += [(name, _e(value)) for name, value in balances]
    body = f"<h1>Address</h1>{_rows(rows)}"
    if channels:
        body += "<h2>Open channels (custody)</h2><ul>"
        body += "".join(f"<li><code>{_e(c)}</code></li>" for c in channels)
        body += "</ul>"
    return _page(f"Address {address}", body, base)


def not_found_page(kind: str, value: str) -> str:
    return _page(
        f"{kind} not found", f"<h1>{_e(kind)} not found</h1><p><code>{_e(value)}</code></p>"
    )


def index_page(base: str, latest_block: int, labels: Mapping[str, str]) -> str:
    rows = [(label, _address_link(base, address, labels)) for address, label in labels.items()]
    body = f"<h1>Sandbox chain</h1><p>latest block: {_e(latest_block)}</p>{_rows(rows)}"
    return _page("Sandbox explorer", body, base)


def _describe(value: Any) -> str:
    """A readable one-line summary of an event field (states and channels spelled out)."""
    from ..channel.v0_5.core.types import Channel, State

    if isinstance(value, State):
        allocations = ", ".join(f"{a.destination}: {a.amount}" for a in value.allocations)
        return (
            f"{value.intent.name} v{value.version}, data {len(value.data)} bytes, "
            f"allocations [{allocations}], {len(value.sigs)} signature(s)"
        )
    if isinstance(value, Channel):
        return (
            f"participants {', '.join(value.participants)}; adjudicator {value.adjudicator}; "
            f"challenge {value.challenge} s; nonce {value.nonce}"
        )
    if isinstance(value, tuple):
        return "[" + ", ".join(str(v) for v in value) + "]"
    return str(value)


def _hex_address(log: Mapping[str, Any]) -> str:
    address = log["address"]
    return address if isinstance(address, str) else "0x" + bytes(address).hex()


class Explorer:
    """Reads the chain through ``w3`` and renders the pages under ``base`` (a path)."""

    def __init__(
        self,
        w3: AsyncWeb3,
        *,
        base: str = "/explorer",
        labels: Mapping[str, str] | None = None,
        custody: str | None = None,
        token: tuple[str, str, int] | None = None,
    ) -> None:
        self._w3 = w3
        self.base = base.rstrip("/")
        self.labels = {to_checksum(a): name for a, name in (labels or {}).items()}
        self._custody = custody
        self._token = token  # (address, symbol, decimals)
        self._decoder: Any = None
        self._table: dict[bytes, Mapping[str, Any]] | None = None

    def _events(self, receipt: Mapping[str, Any]) -> list[EventView]:
        """The custody's events (states and channels spelled out), then every other log that
        one of our v4 contracts, the PoolManager or a test token emits, by name."""
        logs = list(receipt.get("logs", ()))
        return self._custody_events(logs) + self._other_events(logs)

    def _other_events(self, logs: Sequence[Mapping[str, Any]]) -> list[EventView]:
        from ..contracts import load_artifact
        from ..v4.chain.events import decode_logs, event_table

        if self._table is None:
            names = (
                "V4TestToken",
                "PoolManager",
                "PolicyHook",
                "SettlementAdapter",
                "SandboxBridge",
                "SandboxRouter",
                "ChannelHub",  # Nitrolite v1 (LocalSandbox(protocol="v1"))
            )
            self._table = event_table(*(load_artifact(name).abi for name in names))
        custody = to_checksum(self._custody) if self._custody else None
        others = [log for log in logs if to_checksum(str(_hex_address(log))) != custody]
        views = []
        for event in decode_logs(others, self._table):
            if event.name.startswith("0x"):  # a log we have no ABI for: its topic is all we know
                continue
            contract = self.labels.get(event.address, event.address)
            fields = [("contract", contract)] + [(k, _describe(v)) for k, v in event.args.items()]
            views.append(EventView(event.name, tuple(fields)))
        return views

    def _custody_events(self, logs: Sequence[Mapping[str, Any]]) -> list[EventView]:
        if self._custody is None:
            return []
        if self._decoder is None:
            from ..channel.v0_5.chain.custody_events import EventDecoder
            from ..contracts import load_artifact

            self._decoder = EventDecoder(load_artifact("Custody").abi, self._custody)
        views = []
        for event in self._decoder.decode_logs(logs):
            fields = [
                (k, _describe(v))
                for k, v in vars(event).items()
                if k not in ("block_number", "log_index", "tx_hash", "address")
            ]
            views.append(EventView(event.name, tuple(fields)))
        return views

    async def aclose(self) -> None:
        """Close the HTTP sessions of the explorer's provider: the server replaces an explorer
        when its sandbox restarts, and an aiohttp session dropped open warns at collection."""
        disconnect = getattr(self._w3.provider, "disconnect", None)
        if disconnect is not None:
            await disconnect()

    async def tx(self, tx_hash: str) -> tuple[int, str]:
        if not _TX_HASH.match(tx_hash):
            return 400, not_found_page("Transaction", tx_hash)
        try:
            tx = await self._w3.eth.get_transaction(tx_hash)  # type: ignore[arg-type]
        except Exception:
            return 404, not_found_page("Transaction", tx_hash)
        try:
            receipt = await self._w3.eth.get_transaction_receipt(tx_hash)  # type: ignore[arg-type]
        except Exception:
            receipt = None
        view = {
            "hash": tx_hash.lower(),
            "blockNumber": tx.get("blockNumber"),
            "from": to_checksum(str(tx["from"])),
            "to": to_checksum(str(tx["to"])) if tx.get("to") else None,
            "value": int(tx.get("value", 0)),
            "input": "0x" + bytes(tx.get("input") or b"").hex()
            if not isinstance(tx.get("input"), str)
            else tx["input"],
        }
        receipt_view = None
        events: list[EventView] = []
        if receipt is not None:
            created = receipt.get("contractAddress")
            receipt_view = {
                "status": int(receipt["status"]),
                "gasUsed": int(receipt["gasUsed"]),
                "logs": list(receipt.get("logs", ())),
                "contractAddress": to_checksum(str(created)) if created else None,
            }
            events = self._events(receipt)
        return 200, tx_page(self.base, view, receipt_view, events, self.labels)

    async def address(self, address: str) -> tuple[int, str]:
        if not _ADDRESS.match(address):
            return 400, not_found_page("Address", address)
        address = to_checksum(address)
        w3 = self._w3
        eth = int(await w3.eth.get_balance(address))  # type: ignore[arg-type]
        nonce = int(await w3.eth.get_transaction_count(address))  # type: ignore[arg-type]
        code = await w3.eth.get_code(address)  # type: ignore[arg-type]
        balances: list[tuple[str, str]] = []
        channels: list[str] = []
        if self._token is not None:
            from ..channel.v0_5.core.amounts import to_decimal_string

            token, symbol, decimals = self._token
            erc20 = w3.eth.contract(address=token, abi=_BALANCE_OF_ABI)  # type: ignore[call-overload]
            units = int(await erc20.functions.balanceOf(address).call())
            balances.append((f"{symbol} (wallet)", to_decimal_string(units, decimals)))
            if self._custody is not None:
                custody = w3.eth.contract(address=self._custody, abi=_CUSTODY_VIEWS_ABI)  # type: ignore[call-overload]
                held = await custody.functions.getAccountsBalances([address], [token]).call()
                balances.append(
                    (f"{symbol} (custody, available)", to_decimal_string(int(held[0][0]), decimals))
                )
                opened = await custody.functions.getOpenChannels([address]).call()
                channels = ["0x" + bytes(c).hex() for c in opened[0]]
        label = self.labels.get(address)
        if address == ZERO_ADDRESS:
            label = label or "zero address"
        page = address_page(
            self.base,
            address,
            label=label,
            eth_wei=eth,
            nonce=nonce,
            code_size=len(code),
            balances=balances,
            channels=channels,
        )
        return 200, page

    async def index(self) -> tuple[int, str]:
        latest = int(await self._w3.eth.block_number)
        return 200, index_page(self.base, latest, self.labels)


_BALANCE_OF_ABI: Final = [
    {
        "type": "function",
        "name": "balanceOf",
        "stateMutability": "view",
        "inputs": [{"name": "account", "type": "address"}],
        "outputs": [{"name": "", "type": "uint256"}],
    }
]
_CUSTODY_VIEWS_ABI: Final = [
    {
        "type": "function",
        "name": "getAccountsBalances",
        "stateMutability": "view",
        "inputs": [
            {"name": "accounts", "type": "address[]"},
            {"name": "tokens", "type": "address[]"},
        ],
        "outputs": [{"name": "", "type": "uint256[][]"}],
    },
    {
        "type": "function",
        "name": "getOpenChannels",
        "stateMutability": "view",
        "inputs": [{"name": "accounts", "type": "address[]"}],
        "outputs": [{"name": "", "type": "bytes32[][]"}],
    },
]
