"""The comparison's JSON is read strictly (settlement_widgets.compare.wire): a valid one
round-trips exactly; every malformed field is refused with an error naming its path; and
publication writes only a parsed comparison of the right network, whole."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from settlement_widgets.compare import (
    ComparisonView,
    comparison_path,
    parse_comparison,
    publish_comparison,
    read_published,
)
from settlement_widgets.compare.wire import MAX_COMPARISON_BYTES
from settlement_widgets.errors import InvalidNetworkError, SettlementValueError
from tests.comparison_sample import PAYER, sample_comparison


def test_a_valid_comparison_round_trips_exactly() -> None:
    raw = sample_comparison()
    view = parse_comparison(raw)
    assert view.to_json() == raw
    # from JSON text and bytes, and from anything with to_json() (the engine's Comparison)
    assert parse_comparison(json.dumps(raw)) == view
    assert parse_comparison(json.dumps(raw).encode()) == view

    class Engine:
        def to_json(self) -> dict[str, Any]:
            return sample_comparison()

    assert parse_comparison(Engine()) == view
    assert parse_comparison(view) is view
    assert [r.label for r in view.runs_of("channel")] == ["channel v0.5"]
    assert view.runs_of("aggregator") == ()
    assert view.run("v4 hook").cost_usd == 0.42
    assert view.run("channel v0.5").prompts == 1 + 3
    assert view.unavailable == {"aggregator": "no route between the two chains"}
    assert view.measured_at.utcoffset() is not None
    assert repr(view) == "ComparisonView(network='local', runs=['channel v0.5', 'v4 hook'])"


def test_addresses_are_checksummed_and_hashes_lowercased() -> None:
    raw = sample_comparison()
    raw["runs"][0]["txs"][0]["payer"] = PAYER.lower()
    raw["runs"][0]["txs"][0]["hash"] = raw["runs"][0]["txs"][0]["hash"].upper().replace("0X", "0x")
    tx = parse_comparison(raw).runs[0].txs[0]
    assert tx.payer == PAYER and tx.hash == tx.hash.lower()


def _run(raw: dict[str, Any], **changes: Any) -> dict[str, Any]:
    raw["runs"][0].update(changes)
    return raw


def _tx(raw: dict[str, Any], **changes: Any) -> dict[str, Any]:
    raw["runs"][0]["txs"][0].update(changes)
    return raw


BAD: list[tuple[str, Any, str]] = [
    ("not an object", lambda r: [r], "expected a JSON object"),
    ("version", lambda r: {**r, "version": 2}, "comparison version: expected 1"),
    ("version bool", lambda r: {**r, "version": True}, "comparison version: expected 1"),
    ("missing", lambda r: {k: v for k, v in r.items() if k != "runs"}, "missing field 'runs'"),
    ("network", lambda r: {**r, "network": "../etc"}, "comparison network: expected a network"),
    ("measuredAt", lambda r: {**r, "measuredAt": "yesterday"}, "measuredAt: expected an ISO"),
    ("naive time", lambda r: {**r, "measuredAt": "2026-11-29T00:40:00"}, "time zone"),
    ("intent amount", lambda r: {**r, "intent": {**r["intent"], "amount": 100}}, "intent.amount"),
    ("intent chain", lambda r: {**r, "intent": {**r["intent"], "sourceChain": 0}}, "sourceChain"),
    ("payments", lambda r: {**r, "intent": {**r["intent"], "payments": 1.5}}, "intent.payments"),
    ("runs", lambda r: {**r, "runs": {}}, "comparison runs: expected an array"),
    ("method", lambda r: _run(r, method="lightning"), "runs[0].method: expected one of"),
    ("label empty", lambda r: _run(r, label=" "), "runs[0].label: must not be empty"),
    ("label long", lambda r: _run(r, label="x" * 201), "runs[0].label: at most 200"),
    ("gas not decimal", lambda r: _run(r, gasUsed="0x41eb0"), "runs[0].gasUsed: expected a whole"),
    ("gas sum", lambda r: _run(r, gasUsed=1), "is not the sum of its transactions' gasUsed"),
    ("cost float", lambda r: _run(r, costNativeWei=1.5), "runs[0].costNativeWei"),
    ("cost negative", lambda r: _run(r, costNativeWei=-1), "runs[0].costNativeWei"),
    ("cost huge", lambda r: _run(r, costNativeWei=2**256), "at most 2**256-1"),
    ("usd", lambda r: _run(r, costUsd="0.4"), "runs[0].costUsd"),
    ("usd negative", lambda r: _run(r, costUsd=-0.4), "runs[0].costUsd"),
    ("fees", lambda r: _run(r, feesBaseUnits={"bridge": 3}), "feesBaseUnits['bridge']"),
    ("fees list", lambda r: _run(r, feesBaseUnits=[]), "runs[0].feesBaseUnits"),
    ("received", lambda r: _run(r, receivedBaseUnits="1e6"), "runs[0].receivedBaseUnits"),
    ("received sign", lambda r: _run(r, receivedBaseUnits="-1"), "runs[0].receivedBaseUnits"),
    ("wall", lambda r: _run(r, wallSeconds=None), "runs[0].wallSeconds"),
    ("blocks", lambda r: _run(r, blocks=-1), "runs[0].blocks"),
    ("prompts", lambda r: _run(r, signaturePrompts=False), "runs[0].signaturePrompts"),
    ("locked", lambda r: _run(r, lockedBaseUnits=None), "runs[0].lockedBaseUnits"),
    ("dispute", lambda r: _run(r, disputeWindowSeconds="1h"), "runs[0].disputeWindowSeconds"),
    ("trust", lambda r: _run(r, trust=None), "runs[0].trust"),
    ("vanishes", lambda r: _run(r, ifCounterpartyVanishes="x" * 2001), "at most 2000"),
    ("tx hash", lambda r: _tx(r, hash="0x12"), "runs[0].txs[0].hash"),
    ("tx chain", lambda r: _tx(r, chainId="0x7a69"), "runs[0].txs[0].chainId"),
    ("tx payer", lambda r: _tx(r, payer="0xAbAbab" + "ab" * 17), "runs[0].txs[0].payer"),
    ("tx url js", lambda r: _tx(r, explorerUrl="javascript:alert(1)"), "txs[0].explorerUrl"),
    ("tx url rel", lambda r: _tx(r, explorerUrl="//evil.example/tx"), "txs[0].explorerUrl"),
    ("tx value", lambda r: _tx(r, valueWei=None), "runs[0].txs[0].valueWei"),
    ("duplicate label", lambda r: _run(r, label="v4 hook"), "runs[1].label: 'v4 hook' labels two"),
    ("unavailable", lambda r: {**r, "unavailable": {"bridge": "x"}}, "unavailable key"),
    ("unavailable why", lambda r: {**r, "unavailable": {"v4": 1}}, "unavailable.v4"),
    ("cheapest", lambda r: {**r, "cheapest": "nobody"}, "cheapest: 'nobody' is not the label"),
    ("fastest", lambda r: {**r, "fastest": None}, "comparison fastest: expected a string"),
]


@pytest.mark.parametrize(("case", "change", "message"), BAD, ids=[b[0] for b in BAD])
def test_every_malformed_field_is_refused_by_its_path(case: str, change: Any, message: str) -> None:
    with pytest.raises(SettlementValueError) as caught:
        parse_comparison(change(sample_comparison()))
    assert message in str(caught.value), (case, str(caught.value))


@pytest.mark.parametrize(
    ("change", "shown"),
    [
        (lambda r: _run(r, txs=None), "runs[0].txs: expected an array, got null"),
        (lambda r: _tx(r, gasUsed="-12"), 'got "-12" (string)'),
        (lambda r: {**r, "runs": {}}, "got {} (object)"),
        (lambda r: {**r, "fastest": True}, "got true (boolean)"),
    ],
)
def test_errors_name_json_types_not_python_ones(change: Any, shown: str) -> None:
    """The endpoint answers these errors to whoever posted the JSON: the fuzzer caught
    "got None (NoneType)"; a bad value is shown as JSON, with JSON's name for its type."""
    with pytest.raises(SettlementValueError) as caught:
        parse_comparison(change(sample_comparison()))
    text = str(caught.value)
    assert shown in text, text
    assert not any(name in text for name in ("NoneType", "(str)", "(dict)", "(bool)", "(int)"))


def test_strict_json_text() -> None:
    text = json.dumps(sample_comparison())
    for bad, message in [
        (text[:-1], "not valid JSON"),
        (b"\xff\xfe{", "not valid JSON"),
        ('{"version": 1, "version": 1}', "the key 'version' appears twice"),
        (text.replace('"wallSeconds": 4.25', '"wallSeconds": NaN'), "NaN is not a JSON number"),
        ("[" * 100_000 + "]" * 100_000, "not valid JSON"),
        (" " * (MAX_COMPARISON_BYTES + 1), f"at most {MAX_COMPARISON_BYTES} bytes"),
    ]:
        with pytest.raises(SettlementValueError, match="comparison") as caught:
            parse_comparison(bad)
        assert message in str(caught.value)


def test_a_comparison_without_runs_names_no_winner() -> None:
    raw = sample_comparison(runs=[], cheapest=None, fastest=None)
    assert parse_comparison(raw).cheapest is None


def test_publish_writes_the_canonical_json_atomically(tmp_path: Path) -> None:
    raw = sample_comparison()
    raw["runs"][0]["txs"][0]["payer"] = PAYER.lower()
    assert read_published("local", home=tmp_path) is None
    view = publish_comparison(json.dumps(raw), "local", home=tmp_path)
    path = comparison_path("local", tmp_path)
    assert path == tmp_path / "comparisons" / "local.json"
    assert json.loads(path.read_text()) == view.to_json() == sample_comparison()
    assert read_published("local", home=tmp_path) == view
    assert [p.name for p in path.parent.iterdir()] == ["local.json"]  # no temp file left


def test_publish_refuses_other_networks_and_bad_input(tmp_path: Path) -> None:
    with pytest.raises(InvalidNetworkError, match=r"measured on 'local'.*for 'sepolia'"):
        publish_comparison(sample_comparison(), "sepolia", home=tmp_path)
    with pytest.raises(InvalidNetworkError, match="network must be one of"):
        publish_comparison(sample_comparison(network="mainnet"), "mainnet", home=tmp_path)
    with pytest.raises(SettlementValueError, match="runs"):
        publish_comparison(sample_comparison(runs=3), "local", home=tmp_path)
    assert not (tmp_path / "comparisons").exists()  # nothing written


def test_a_tampered_published_file_is_an_error_not_a_display(tmp_path: Path) -> None:
    path = comparison_path("local", tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(sample_comparison(network="sepolia")))
    with pytest.raises(InvalidNetworkError, match="not 'local'"):
        read_published("local", home=tmp_path)
    path.write_text("{")
    with pytest.raises(SettlementValueError, match="not valid JSON"):
        read_published("local", home=tmp_path)


def test_the_view_is_read_only() -> None:
    view = parse_comparison(sample_comparison())
    assert isinstance(view, ComparisonView)
    with pytest.raises(AttributeError):
        view.network = "sepolia"  # type: ignore[misc]
    with pytest.raises(TypeError):
        view.unavailable["v4"] = "x"  # type: ignore[index]
    with pytest.raises(TypeError):
        view.runs[1].fees_base_units["pool fee"] = "0"  # type: ignore[index]


def test_a_kernel_publishes_into_its_servers_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A kernel's session has a home of its own; the server it runs under exports its home
    (SETTLEMENT_SERVER_HOME), and publications go there."""
    from settlement_widgets.compare.published import SERVER_HOME_ENV, server_home
    from settlement_widgets.networks import settlement_home

    assert server_home() == settlement_home()  # no server: this process's own
    monkeypatch.setenv(SERVER_HOME_ENV, str(tmp_path / "server"))
    publish_comparison(sample_comparison(), "local")
    assert (tmp_path / "server" / "comparisons" / "local.json").exists()
    assert read_published("local") == parse_comparison(sample_comparison())
    assert not (settlement_home() / "comparisons").exists()


def test_the_full_record_of_compare_methods_is_read_and_extra_fields_are_ignored() -> None:
    """What Comparison.to_json() writes (wei as decimal strings, fields the cards do not
    show) is what the views read."""
    from tests.unit import test_compare_pure as pure

    record = pure._comparison().to_json()
    view = parse_comparison({**record, "addedLater": {"by": "a newer writer"}})
    assert [run.label for run in view.runs] == [run["label"] for run in record["runs"]]
    assert [run.gas_used for run in view.runs] == [int(run["gasUsed"]) for run in record["runs"]]
