"""The checks each walkthrough notebook's run must pass, asserted from its own namespace.

The notebooks read as tutorials: narrative, the call, its output, and at most a short assert
where the check is the lesson. The checks that exist for the test suite live here. Under
``make notebooks`` (nbval, ``--notebook-probes``) the plugin in this folder runs a notebook's
probe as one more cell, just before its clean-up cell (the sandbox still serving), in the same
kernel and namespace: a failing assert fails that cell, so each notebook runs once and is both
compared with its committed outputs and checked.

Notebook 07 has none: its claims (every row's gas from its receipts, a row per method) are
``tests/integration/test_compare_methods.py``'s, on both chain backends.
"""

# ruff: noqa: E501 (the probes are notebook cells, written as the notebooks write theirs)

from __future__ import annotations

__all__ = ["PROBES"]

PROBES = {
    "08_nitrolite_v1_two_chains.ipynb": """
table = pd.DataFrame(steps).set_index("step")
assert table.loc["deposit_from 31338", "alice off-chain"] == 7 and table.loc["deposit_from 31338", "alice wallet Δ @31338"] == -2
assert table.loc["deposit_from 31338", "node vault @31338"] - table.loc["start", "node vault @31338"] == 2
assert table.loc["alice pays bob 3", "bob off-chain"] == 4
assert table.loc["both closed", "bob wallet Δ @31338"] == 3 and table.loc["both closed", "bob wallet Δ @31337"] == 0
assert table.loc["withdraw_to 31338", "alice off-chain"] == 3 and table.loc["withdraw_to 31338", "alice wallet Δ @31338"] == -1
assert table.loc["alice pays bob 3", "node vault @31338"] - table.loc["withdraw_to 31338", "node vault @31338"] == 1
assert payout.explorer_url == net.on_chain(OTHER).explorer.tx_url(payout.hash)
assert table.loc["both closed", "alice wallet Δ @31337"] == -5 and table.loc["both closed", "alice wallet Δ @31338"] == 2
moved = table.loc["alice migrates to 31338"] - table.loc["withdraw_to 31338"]
assert moved["node vault @31337"] == 3 and moved["node vault @31338"] == -3 and moved["alice off-chain"] == 0
assert on_chain[HOME]["status"] == "MIGRATED_OUT" and on_chain[OTHER] == {"status": "OPERATING", "locked": 3, "version": on_chain[HOME]["version"]}
assert migrated.explorer_url == net.on_chain(OTHER).explorer.tx_url(migrated.hash) and record["status"] == "settled"
assert closed_alice.explorer_url == net.on_chain(OTHER).explorer.tx_url(closed_alice.hash)
assert escrow.status == "FINALIZED" and escrow.locked_amount == 0
assert deposit.explorer_url == net.on_chain(OTHER).explorer.tx_url(deposit.hash) and "/chain/31338/" in deposit.explorer_url
assert {t["chain"] for t in txs} == {HOME, OTHER}
""",
    "01_settlement_methods.ipynb": """
assert selector.selected == "v4" and picked == ["v4"]
lines = selector.view_model.addresses
assert [line.label for line in lines] == ["PolicyHook", "Adapter", "PoolManager"]
assert all(line.href == net.explorer.address_url(line.address) for line in lines)
""",
    "02_faucet.ipynb": """
table = pd.DataFrame(rows).set_index("step")
first, last = table.iloc[0], table.loc["after request_faucet_tokens"]
assert round((last[f"off-chain {ASSET}"] - first[f"off-chain {ASSET}"]) * UNIT) == sum(credited) > 0
for column in (f"wallet {ASSET} (on-chain)", "wallet ETH (on-chain)", "wallet nonce"):
    assert last[column] == first[column], column
assert response.status_code == 200 and answer["status"] == "fallback"
assert broken.faucet_url in answer["message"]  # the notebook prints it without the dead URL
assert rows[-1] == {**rows[-2], "step": "after the fallback"}
""",
    "03_channel_lifecycle.ipynb": """
import re
import httpx

table = pd.DataFrame(steps).set_index("step")
assert table.loc["transfer 0.5", "alice txs sent"] == table.loc[f"fund {FUND / UNIT:g}", "alice txs sent"]
assert table.loc["transfer 0.5", "bob off-chain"] - table.loc[f"fund {FUND / UNIT:g}", "bob off-chain"] == 4
# the printed wallet change: what alice held off-chain before the close, less what she put in
closed = table.loc["close + withdraw"]
assert closed["alice wallet change"] == table.loc["transfer 0.5", "alice off-chain"] - FUND / UNIT
assert closed["alice wallet change"] == 6  # a private, fresh sandbox: the faucet's 10 + 1 - 5
# the history's explorer URLs and chain events are the chain's own, each once, in chain order
history = alice_channels.history(channel.id).dropna(subset=["tx_hash"])
assert all(url == net.explorer.tx_url(tx) for tx, url in zip(history["tx_hash"], history["explorer_url"]))
names = ("Created", "Resized", "Challenged", "Checkpointed", "Closed")
on_chain = await alice_channels.custody.get_events(0, "latest", names=names, channel_id=channel.id)
in_history = [(e.split(" ")[0], tx) for e, tx in zip(history["event"], history["tx_hash"]) if e.split(" ")[0] in names]
assert in_history == [(e.name, e.tx_hash) for e in on_chain], in_history
# the explorer page of the close: the transaction, successful, with its custody events
async with httpx.AsyncClient() as http:
    page = await http.get(f"{session.sandbox.http_url}/explorer/tx/{closing.hash}")
assert page.status_code == 200 and closing.hash in re.search(r"<title>(.*?)</title>", page.text).group(1)
assert "class='ok'>success" in page.text and "Closed" in re.findall(r"<h3>(\\w+)</h3>", page.text)
# the endpoint's proofs: each on-chain step once, with its explorer URL
assert [p["step"] for p in proofs] == [
    "create_channel", "approve", "deposit", "resize_channel", "resize_channel", "close_channel", "withdraw"
]
assert all(p["explorerUrl"] == net.explorer.tx_url(p["txHash"]) for p in proofs + dispute_proofs)
assert {p["txHash"] for p in proofs} >= {closing.hash, closing.withdrawal.hash}
assert [p["step"] for p in dispute_proofs][-2:] == ["challenge", "close_channel"]
assert panel.channel_status == "final" and panel.settlement_tx == settled.hash
""",
    "04_v4_contracts.ipynb": """
assert CAN_SETTLE
assert balances.loc["V4A (sold)", "change"] == -UNIT
assert balances.loc["V4B (bought)", "change"] >= intent.min_amount_out
assert await solver.is_settled(intent.id)
assert unchanged and not await solver.is_settled(bad.id)
assert tx.explorer_url == net.explorer.tx_url(tx.hash)
""",
    "05_aggregator_routes.ipynb": """
assert final.done and final.substatus == "COMPLETED"
assert round(sent * 10**6) == AMOUNT
assert round(received * 10**6) >= best_route.to_amount_min
assert swap_final.receiving.amount >= swap_best.to_amount_min
assert dest_final.substatus == "COMPLETED" and dest_final.receiving.amount >= dest_best.to_amount_min
# every transfer link is the sandbox explorer of the transaction's own chain
for leg in (final.sending, final.receiving):
    assert link(leg.chain_id, leg.tx_hash) == sb.explorer_tx(leg.chain_id, leg.tx_hash)
assert f"/chain/{TO_CHAIN}/tx/" in link(TO_CHAIN, final.receiving.tx_hash)
""",
    "06_nitrolite_v1.ipynb": """
import re
import httpx

table = pd.DataFrame(steps).set_index("step")
assert table.loc["transfer 0.25", "bob off-chain"] == 1.75
assert table.loc["transfer 0.25", "alice off-chain"] == 3.25
assert table.loc["transfer 0.25", "alice txs"] == table.loc["create 5", "alice txs"]
assert table.loc["alice closes", "alice wallet Δ"] == -3.25 and table.loc["bob closes", "bob wallet Δ"] == 3.25
assert table.loc["alice closes", "alice txs"] - table.loc["start", "alice txs"] == 4 + gas_for_bob
assert closing.explorer_url == net.explorer.tx_url(closing.hash)
async with httpx.AsyncClient() as http:
    page = await http.get(closing.explorer_url)
assert page.status_code == 200 and closing.hash in re.search(r"<title>(.*?)</title>", page.text).group(1)
""",
}
