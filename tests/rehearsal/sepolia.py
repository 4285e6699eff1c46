"""The Sepolia rehearsal: every notebook on its Sepolia profile, against the twins.

A notebook's Sepolia branch cannot run against Sepolia from here, so it runs against a twin
with the environment a real user sets: ``SEPOLIA_RPC_URL``, ``SETTLEMENT_PRIVATE_KEY``,
``SETTLEMENT_RELAY_URL``, ``SETTLEMENT_FAUCET_URL``.

- Nitrolite v0.5 and v4 (``SETTLEMENT_NETWORK=sepolia``):
  :class:`~settlement_widgets.sandbox.twin.SepoliaTwin` (chain id 11155111, our contracts at
  Sepolia's addresses, relay and faucet on loopback): every notebook but notebook 06.
- Nitrolite v1 (``SETTLEMENT_NETWORK=sepolia-v1``):
  :class:`~settlement_widgets.sandbox.twin_v1.SepoliaV1Twin` (our ChannelHub at the public v1
  sandbox's address on Sepolia and on Base Sepolia, our Nitronode over both chains and the
  v1 faucet on loopback): notebook 06, the dashboard's v1 path (:data:`DASHBOARD_V1`: the
  dashboard notebook, then its channel buttons clicked as a Voila user clicks them) and a
  payment across the node's two chains (:data:`TWO_CHAINS_V1`: with ``BASE_SEPOLIA_RPC_URL``
  set, as a user reaching Base Sepolia sets it).

LI.FI's API is the loopback server answering from the synthetic fixtures (its schema, not
live rates). Each notebook runs top to bottom in a fresh kernel: its own asserts must hold
(outputs are not compared with the committed ones), and :func:`sepolia_problems` fails a run
that printed ``skipped`` (a step the Sepolia branch promises did not run) or lacks what its
Sepolia branch must show (:data:`REQUIRED`).

- ``make sepolia-rehearsal`` (``python -m tests.rehearsal.sepolia``): every rehearsal, each
  twice in a row on one twin and one ``SETTLEMENT_HOME``, as a user running them again the
  next day would (the second notebook 04 reuses the own v4 deployment the first recorded;
  the second notebook 06 opens new channels where the first closed its own, with the SDK's
  nonces, and nothing is reset between the two).
- the short form in ``make test`` (``tests/rehearsal/test_sepolia_rehearsal.py``): the
  notebooks whose Sepolia branch differs from the sandbox's (:data:`SHORT`), once.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from settlement_widgets.sandbox.twin import SepoliaTwin, TwinBase
from settlement_widgets.sandbox.twin_v1 import SepoliaV1Twin
from tests.lifi_synthetic import LifiTestServer

__all__ = [
    "DASHBOARD_V1",
    "NOTEBOOKS",
    "ON_V1",
    "REHEARSALS",
    "REQUIRED",
    "SHORT",
    "TWO_CHAINS_V1",
    "NotebookRun",
    "notebook_text",
    "rehearse",
    "run_notebook",
    "sepolia_problems",
]

NOTEBOOK_DIR = Path(__file__).resolve().parents[2] / "notebooks"
#: every walkthrough notebook, in the order a reader meets them
NOTEBOOKS = tuple(sorted(p.stem for p in NOTEBOOK_DIR.glob("*.ipynb")))
#: the dashboard's Nitrolite v1 path: ``dashboard.ipynb`` with ``SETTLEMENT_NETWORK=sepolia-v1``,
#: then its channel buttons clicked (:data:`_DASHBOARD_CLICKS`)
DASHBOARD_V1 = "dashboard-v1"
#: a payment across the ``sepolia-v1`` node's two chains (:data:`_TWO_CHAINS_CELLS`, run as a
#: notebook): the payer's home channel on Sepolia, the payee's on Base Sepolia (reached
#: through ``BASE_SEPOLIA_RPC_URL``), an off-chain transfer between them, the payee paid out
#: on Base Sepolia from the node's vault there. Notebook 08 runs its two chains on a local
#: sandbox (``deposit_from`` and ``migrate`` are our node's: Yellow's node v1.4.1 refuses
#: escrow transitions), so this is the cross-chain path the public sandbox serves.
TWO_CHAINS_V1 = "two-chains-v1"
#: every rehearsal: each notebook, the dashboard's v1 path and the two-chain payment
REHEARSALS = (*NOTEBOOKS, DASHBOARD_V1, TWO_CHAINS_V1)
#: what runs on the v1 twin (``SETTLEMENT_NETWORK=sepolia-v1``); the rest on the v0.5 twin
ON_V1 = ("06_nitrolite_v1", DASHBOARD_V1, TWO_CHAINS_V1)
#: where the Sepolia branch differs from the sandbox's: the dispute waits for real blocks
#: past the challenge period (v0.5 and v1), v4 settles through the user's own deployment,
#: and v1 runs on the public profile, whose token the node names
SHORT = ("03_channel_lifecycle", "04_v4_contracts", "06_nitrolite_v1")
#: text each notebook's Sepolia run must show (its Sepolia-only steps ran)
REQUIRED: dict[str, tuple[str, ...]] = {
    "01_settlement_methods": ("network='sepolia'",),
    "02_faucet": ("sepolia",),
    "03_channel_lifecycle": (
        "network='sepolia'",
        "Waiting out the challenge period",
        "the challenge period is over on chain",
        "https://sepolia.etherscan.io/tx/0x",
    ),
    "04_v4_contracts": (
        "network='sepolia'",
        "(create2-factory): the mistake itself",
        "own v4 deployment of",
        "settleIntent: 0x",
        "https://sepolia.etherscan.io/tx/0x",
        "PolicyRejectedError: error PolicyRejected, reason SLIPPAGE_EXCEEDED",
    ),
    "05_aggregator_routes": ("NOT LIVE: a LI.FI-schema server on this machine",),
    "06_nitrolite_v1": (
        "network    sepolia-v1 (chain 11155111), protocol nitrolite-v1",
        "ChannelHub 0x5DBa8515af063Db0c243C15eCE7B99F91459C7C3",
        "Waiting out the challenge period",
        "the challenge period is over on chain",
        "https://sepolia.etherscan.io/tx/0x",
    ),
    "07_compare_methods": (
        "SETTLEMENT_NETWORK=sepolia: measured on a private local sandbox",
        "projected onto sepolia, gas price read from SEPOLIA_RPC_URL",
        "PROJECTION, not a measurement",
    ),
    "08_nitrolite_v1_two_chains": (
        "SETTLEMENT_NETWORK=sepolia: runs on a private local sandbox with two chains",
    ),
    "dashboard": ("network='sepolia'",),
    DASHBOARD_V1: (
        "network='sepolia-v1'",
        "faucet: [ok] faucet: +10 yusd off-chain",
        "open_channel: [ok] channel 0x01",
        "transfer: [ok] transfer",
        "close_channel: [ok] channel closed on chain",
        "https://sepolia.etherscan.io/tx/0x",
    ),
    TWO_CHAINS_V1: (
        "network sepolia-v1 serves chains [11155111, 84532]",
        "payee paid out on chain 84532: 2 yusd, node vault there -2 yusd",
        "https://sepolia.basescan.org/tx/0x",
        "payer paid out on chain 11155111",
        "https://sepolia.etherscan.io/tx/0x",
    ),
}
#: the cell appended to the dashboard notebook for :data:`DASHBOARD_V1`: each channel button
#: clicked in turn (the click schedules the action on the kernel's loop, as in Voila), what
#: it logged printed, and every line of it must be ``ok``
_DASHBOARD_CLICKS = """\
for action in ("faucet", "open_channel", "transfer", "close_channel"):
    before = len(dashboard.activity)
    dashboard.buttons[action].click()
    await dashboard.wait_idle(timeout=300)
    logged = dashboard.activity[before:]
    for line in logged:
        print(f"{action}: [{line.level}] {line.text} {line.href or ''}")
    assert logged and all(line.level == "ok" for line in logged), logged
assert dashboard.errors.messages == () and dashboard.channel.status == "final"
print(repr(dashboard))
await dashboard.aclose()
await session.aclose()
"""
#: :data:`TWO_CHAINS_V1`, one cell each: what a ``sepolia-v1`` user with two wallets does to
#: pay across the node's chains, with every balance checked exactly (the payer's off-chain
#: balance before, e.g. a faucet tip, is counted, so a second run on the same twin holds)
_TWO_CHAINS_CELLS = (
    """\
from settlement_widgets.channel.v1 import ChannelProviderV1
from settlement_widgets.channel.v1.chain.hub import ChannelHubClient
from settlement_widgets.keys import PrivateKey
from settlement_widgets.networks import get_network
from settlement_widgets.wallet import WalletClient

U = 10**6
home = get_network()
base = home.on_chain(84532)  # through BASE_SEPOLIA_RPC_URL
print(f"network {home.name} serves chains {list(home.chain_ids())}")
payer_wallet = WalletClient.from_env(home)
gas_wallet = WalletClient.from_env(base)  # the same key on Base Sepolia
payee_wallet = WalletClient(PrivateKey.generate(), rpc_url=base.rpc_url)
await gas_wallet.transact(to=payee_wallet.address, value=10**16)  # the second wallet's gas
payer = await ChannelProviderV1(home, payer_wallet).connect()
payee = await ChannelProviderV1(base, payee_wallet).connect()
vault = ChannelHubClient(gas_wallet, base.contracts.channel_hub)
assert (payee.token, payee.decimals) == (payer.token, payer.decimals)  # yusd, 6 on both
vault_before = await vault.get_node_balance(payee.token)
held_before = (await payer.balances()).get(payer.asset, 0)
payer_tokens = await payer.hub.token_balance(payer.token)
""",
    """\
mine = await payer.create_channel(payer.node_address, payer.asset, 3 * U)
sent = await payer.transfer(mine.id, 2 * U, payee_wallet.address)  # Sepolia -> Base, off chain
await payee.sync()
assert await payee.balances() == {payee.asset: 2 * U}
assert await payer.balances() == {payer.asset: held_before + U}
theirs = await payee.create_channel(payee.node_address, payee.asset, 0)  # carries the 2
closing = await payee.close_channel(theirs.id)
assert await payee.hub.token_balance(payee.token) == 2 * U
assert await vault.get_node_balance(payee.token) == vault_before - 2 * U
assert await payer.hub.token_balance(payer.token, payee_wallet.address) == 0
print(f"payee paid out on chain {base.chain_id}: 2 yusd, node vault there -2 yusd")
print(closing.explorer_url)
""",
    """\
closing = await payer.close_channel(mine.id)
assert await payer.hub.token_balance(payer.token) == payer_tokens + held_before - 2 * U
assert await payer.balances() == {payer.asset: 0}
print(f"payer paid out on chain {home.chain_id}: {held_before + U} units")
print(closing.explorer_url)
await payer.close()
await payee.close()
for wallet in (payer_wallet, gas_wallet, payee_wallet):
    await wallet.aclose()
""",
)
_SKIPPED = re.compile(r"^\s*skipped\b", re.IGNORECASE | re.MULTILINE)


@dataclass(frozen=True)
class NotebookRun:
    """One executed notebook: its name, the run (1, 2, ...), seconds, and what was wrong."""

    name: str
    run: int
    seconds: float
    problems: tuple[str, ...]


def notebook_text(nb: Any) -> list[tuple[int, str]]:
    """(cell index, text) of every code cell's outputs: streams, text/plain, text/html."""
    found = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        parts = []
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream":
                parts.append(out.get("text", ""))
            data = out.get("data", {})
            parts.extend(str(data.get(kind, "")) for kind in ("text/plain", "text/html"))
        found.append((index, "\n".join(parts)))
    return found


def sepolia_problems(name: str, nb: Any) -> list[str]:
    """Why a Sepolia run of notebook ``name`` is not a rehearsal of its Sepolia branch."""
    texts = notebook_text(nb)
    problems = [
        f"cell {index} skipped a step on Sepolia: {match.group(0).strip()}"
        + text[match.end() :].splitlines()[0][:160]
        for index, text in texts
        if (match := _SKIPPED.search(text))
    ]
    everything = "\n".join(text for _, text in texts)
    problems += [
        f"the Sepolia run never showed {needed!r}"
        for needed in REQUIRED.get(name, ())
        if needed not in everything
    ]
    return problems


async def run_notebook(name: str, env: dict[str, str], *, timeout: int = 600) -> Any:
    """Execute rehearsal ``name`` top to bottom in a fresh kernel started with ``env``; a
    failing cell raises (nbclient's ``CellExecutionError``). :data:`DASHBOARD_V1` is the
    dashboard notebook with :data:`_DASHBOARD_CLICKS` appended (the file is not changed);
    :data:`TWO_CHAINS_V1` a notebook of :data:`_TWO_CHAINS_CELLS`."""
    stem = "dashboard" if name == DASHBOARD_V1 else name
    path = NOTEBOOK_DIR / f"{stem}.ipynb"
    if name == TWO_CHAINS_V1:
        cells = [nbformat.v4.new_code_cell(source) for source in _TWO_CHAINS_CELLS]
        nb = nbformat.v4.new_notebook(cells=cells)
    else:
        nb = nbformat.read(path, as_version=4)
    if name == DASHBOARD_V1:
        nb.cells.append(nbformat.v4.new_code_cell(_DASHBOARD_CLICKS))
    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
    )
    await client.async_execute(env=env)
    return nb


async def rehearse(
    names: Iterable[str] = REHEARSALS,
    *,
    runs: int = 1,
    home: Path | None = None,
    report: Any = None,
) -> list[NotebookRun]:
    """Run each rehearsal ``runs`` times in a row on its twin with the Sepolia environment:
    those of :data:`ON_V1` on a :class:`SepoliaV1Twin`, the others on a :class:`SepoliaTwin`
    (each twin started only when a rehearsal needs it, one after the other), with one
    LI.FI test server and one ``SETTLEMENT_HOME``; ``report(run)`` is called after each.
    A run whose cell fails is reported with that error as its problem, and the next runs go
    on (on the same twin, as a user would try again)."""
    names = list(names)
    unknown = sorted(set(names) - set(REHEARSALS))
    if unknown:
        raise ValueError(f"no such notebook(s): {', '.join(unknown)}")
    groups: list[tuple[Callable[[], TwinBase], list[str]]] = [
        (SepoliaTwin, [n for n in names if n not in ON_V1]),
        (SepoliaV1Twin, [n for n in names if n in ON_V1]),
    ]
    results: list[NotebookRun] = []
    with tempfile.TemporaryDirectory(prefix="sepolia-rehearsal-") as tmp, LifiTestServer() as lifi:
        for twin_class, group in groups:
            if not group:
                continue
            async with twin_class() as twin:
                env = _user_env(twin, lifi.url, home or Path(tmp))
                for name in group:
                    for run in range(1, runs + 1):
                        started = time.perf_counter()
                        try:
                            nb = await run_notebook(name, env)
                            problems = tuple(sepolia_problems(name, nb))
                        except CellExecutionError as exc:  # the next rehearsals still run
                            problems = (f"a cell failed: {exc.ename}: {exc.evalue}"[:500],)
                        seconds = time.perf_counter() - started
                        result = NotebookRun(name, run, seconds, problems)
                        results.append(result)
                        if report is not None:
                            report(result)
    return results


def _user_env(twin: TwinBase, lifi_url: str, home: Path) -> dict[str, str]:
    """This process's environment as a user on the twin's public profile has it: the twin's
    variables, the LI.FI test server, ``home``; nothing that would point elsewhere (a local
    profile, the Jupyter server's shared sandbox, a protocol or wallet choice)."""
    env = dict(os.environ) | twin.env()
    env |= {"LIFI_API_URL": lifi_url, "SETTLEMENT_HOME": str(home)}
    dropped = ("SETTLEMENT_PROFILE", "SETTLEMENT_AGGREGATOR", "SETTLEMENT_LIFI_SEND")
    for var in (*dropped, "SETTLEMENT_PROTOCOL", "SETTLEMENT_WALLET"):
        env.pop(var, None)
    for var in [v for v in env if v.startswith("SETTLEMENT_SHARED_")]:
        env.pop(var)
    return env


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run the notebooks against the Sepolia twins.")
    parser.add_argument("notebooks", nargs="*", default=list(REHEARSALS))
    parser.add_argument("--runs", type=int, default=2, help="runs of each notebook (default 2)")
    args = parser.parse_args(argv)

    def report(run: NotebookRun) -> None:
        verdict = "ok" if not run.problems else "NOT A REHEARSAL"
        print(f"{run.name:<24} run {run.run}  {run.seconds:6.1f} s  {verdict}", flush=True)
        for problem in run.problems:
            print(f"    {problem}", flush=True)

    print(f"Sepolia rehearsal: {len(args.notebooks)} rehearsals x {args.runs} runs", flush=True)
    results = asyncio.run(rehearse(args.notebooks, runs=args.runs, report=report))
    failed = [r for r in results if r.problems]
    total = sum(r.seconds for r in results)
    print(f"{len(results) - len(failed)}/{len(results)} runs passed in {total:.1f} s", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
