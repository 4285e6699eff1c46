"""The pre-serialised ``GET /api/settlement`` body (:class:`ConfigDocument`) and when
:class:`SettlementService` builds it again: what the body depends on is the network name,
the base URL, and on ``local`` the sandbox profile (a file another process rewrites when its
sandbox restarts) or, when the server owns the sandbox, the network that sandbox produced."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

import settlement_widgets.methods as methods
from settlement_widgets.api.service import (
    CONFIG_CACHE_CONTROL,
    ConfigDocument,
    SettlementService,
    with_base_url,
)
from settlement_widgets.errors import ConfigurationError
from settlement_widgets.methods import settlement_config
from settlement_widgets.networks import Network, local

HOUR_NS = 3600 * 10**9


def network(faucet_port: int = 9, chain_id: int = 31337) -> Network:
    return local(
        chain_id=chain_id,
        custody="0x" + "11" * 20,
        adjudicator="0x" + "22" * 20,
        policy_hook="0x" + "33" * 20,
        settlement_adapter="0x" + "44" * 20,
        pool_manager="0x" + "55" * 20,
        node_url="ws://127.0.0.1:9/ws",
        faucet_url=f"http://127.0.0.1:{faucet_port}/faucet/requestTokens",
        explorer_base="http://127.0.0.1:9/explorer",
    )


def spec_bytes(net: Network | str, base_url: str = "/") -> bytes:
    """What the handler wrote before the body was pre-serialised: ``json.dumps`` of it."""
    # the last published comparison rides last: none in these tests
    return json.dumps(
        {**with_base_url(settlement_config(net), base_url), "comparison": None}
    ).encode()


@pytest.fixture
def profile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "profile.json"
    monkeypatch.setenv("SETTLEMENT_PROFILE", str(path))
    return path


def write(path: Path, net: Network, *, age_ns: int | None = HOUR_NS) -> None:
    """Write ``net``'s profile in place; ``age_ns``: how old its mtime is made to look
    (None: as written; negative: in the future, i.e. certainly just written)."""
    path.write_text(json.dumps(net.to_json()))
    if age_ns is not None:
        stamp = time.time_ns() - age_ns
        os.utime(path, ns=(stamp, stamp))


def replace_file(path: Path, net: Network) -> None:
    """As the sandbox writes its profile: a new file renamed over the old one."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(net.to_json()))
    stamp = time.time_ns() - HOUR_NS
    os.utime(tmp, ns=(stamp, stamp))
    os.replace(tmp, path)


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every call of ``settlement_config`` (the body's source) from now on."""
    calls: list[Any] = []
    real = methods.settlement_config

    def counting(net: Any = None) -> dict[str, Any]:
        calls.append(net)
        return real(net)

    monkeypatch.setattr(methods, "settlement_config", counting)
    return calls


def test_the_document_is_the_json_bytes_with_a_strong_etag_of_them() -> None:
    body = {**settlement_config("sepolia"), "comparison": None}
    doc = ConfigDocument.of(body)
    assert doc.body == spec_bytes("sepolia")
    assert doc.etag == '"' + hashlib.sha256(doc.body).hexdigest()[:40] + '"'
    assert not doc.etag.startswith("W/")
    # equal bytes, equal ETag; a rebuild that changed nothing returns the same document
    assert ConfigDocument.of(dict(body)) == doc
    assert ConfigDocument.of(dict(body), doc) is doc
    other = ConfigDocument.of(settlement_config(network()), doc)
    assert other is not doc and other.etag != doc.etag


def test_cache_control_lets_only_the_browser_keep_it_and_revalidate() -> None:
    directives = {d.strip() for d in CONFIG_CACHE_CONTROL.split(",")}
    assert directives == {"private", "no-cache"}


async def test_sepolia_is_built_once_per_base_url(builds: list[Any]) -> None:
    service = SettlementService(network="sepolia")
    assert service.cached_config("/") is None
    doc = await service.config_document("/")
    assert doc.body == spec_bytes("sepolia")
    assert [service.cached_config("/") for _ in range(3)] == [doc] * 3
    assert len(builds) == 1
    assert service.cached_config("/user/ada/") is None  # the base URL is part of the body
    prefixed = await service.config_document("/user/ada/")
    assert prefixed.body == spec_bytes("sepolia", "/user/ada/")
    assert json.loads(prefixed.body)["testnetProofs"]["v4"] == "/user/ada/api/settlement/proofs/v4"
    assert prefixed.etag != doc.etag
    assert service.cached_config("/") is doc  # both kept
    assert len(builds) == 2


async def test_changing_the_network_drops_the_body(profile: Path) -> None:
    write(profile, network())
    service = SettlementService(network="sepolia")
    sepolia = await service.config_document("/")
    service.network_name = "local"
    assert service.cached_config("/") is None
    local_doc = await service.config_document("/")
    assert local_doc.body == spec_bytes(network())
    assert local_doc.etag != sepolia.etag


async def test_a_settled_local_profile_is_not_read_again(profile: Path, builds: list[Any]) -> None:
    write(profile, network())
    service = SettlementService(network="local")
    doc = await service.config_document("/")
    assert doc.body == spec_bytes(network())
    assert [service.cached_config("/") for _ in range(3)] == [doc] * 3
    assert len(builds) == 1


async def test_a_restarted_sandbox_profile_changes_body_and_etag(
    profile: Path, builds: list[Any]
) -> None:
    write(profile, network(faucet_port=9))
    service = SettlementService(network="local")
    before = await service.config_document("/")
    replace_file(profile, network(faucet_port=10))  # a new inode, as the sandbox writes it
    assert service.cached_config("/") is None
    after = await service.config_document("/")
    assert after.etag != before.etag
    assert json.loads(after.body)["methods"]["channel"]["faucetUrl"].endswith(
        ":10/faucet/requestTokens"
    )
    assert service.cached_config("/") is after


async def test_an_in_place_rewrite_is_seen(profile: Path) -> None:
    write(profile, network(chain_id=31337))
    service = SettlementService(network="local")
    before = await service.config_document("/")
    write(profile, network(chain_id=31338), age_ns=HOUR_NS // 2)  # same size, other bytes
    assert service.cached_config("/") is None
    after = await service.config_document("/")
    assert json.loads(after.body)["methods"]["v4"]["chainId"] == 31338
    assert after.etag != before.etag


async def test_a_just_written_profile_is_read_again_until_it_settles(
    profile: Path, builds: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read within a timestamp tick of the write is not trusted: a second same-size write
    in that tick would leave the stat as it was. Here the stat is frozen, the worst case."""
    import settlement_widgets.api.service as service_module

    write(profile, network(chain_id=31337), age_ns=-HOUR_NS)  # mtime: just now (or later)
    frozen = service_module._stamp(profile)
    monkeypatch.setattr(service_module, "_stamp", lambda path: frozen)
    service = SettlementService(network="local")
    first = await service.config_document("/")
    assert service.cached_config("/") is None  # not trusted yet
    write(profile, network(chain_id=31338), age_ns=None)
    second = await service.config_document("/")
    assert json.loads(second.body)["methods"]["v4"]["chainId"] == 31338
    assert second.etag != first.etag
    assert len(builds) == 2


async def test_a_missing_profile_is_an_error_that_is_not_kept(profile: Path) -> None:
    service = SettlementService(network="local")
    with pytest.raises(ConfigurationError, match="no local sandbox profile"):
        await service.config_document("/")
    assert service.cached_config("/") is None
    write(profile, network())
    doc = await service.config_document("/")
    assert doc.body == spec_bytes(network())
    profile.unlink()  # the sandbox stopped and removed its profile
    assert service.cached_config("/") is None
    with pytest.raises(ConfigurationError):
        await service.config_document("/")


class FakeSandbox:
    """The part of ServerSandbox the service uses: ensure(), linked(), network."""

    def __init__(self, net: Network) -> None:
        self.network: Network | None = net
        self.explorer_path = "/settlement/explorer"
        self.gate: asyncio.Event | None = None
        self.entered = asyncio.Event()

    async def ensure(self) -> Network:
        self.entered.set()
        if self.gate is not None:
            await self.gate.wait()
        assert self.network is not None
        return self.network

    def linked(self, net: Network) -> Network:
        from dataclasses import replace

        return replace(net, explorer_base=self.explorer_path)


async def test_an_owned_sandbox_is_followed_by_identity(builds: list[Any]) -> None:
    sandbox = FakeSandbox(network(faucet_port=9))
    service = SettlementService(network="local", sandbox=sandbox)  # type: ignore[arg-type]
    doc = await service.config_document("/")
    assert json.loads(doc.body)["methods"]["v4"]["explorerBase"] == "/settlement/explorer"
    assert service.cached_config("/") is doc
    sandbox.network = network(faucet_port=11)  # started again (or another one adopted)
    assert service.cached_config("/") is None
    again = await service.config_document("/")
    assert again.etag != doc.etag
    assert service.cached_config("/") is again
    assert len(builds) == 2


async def test_a_build_overtaken_by_a_network_change_is_not_kept() -> None:
    sandbox = FakeSandbox(network())
    sandbox.gate = asyncio.Event()
    service = SettlementService(network="local", sandbox=sandbox)  # type: ignore[arg-type]
    building = asyncio.ensure_future(service.config_document("/"))
    await sandbox.entered.wait()  # the build waits for the sandbox, still starting
    service.network_name = "sepolia"
    sandbox.gate.set()
    stale = await building
    assert json.loads(stale.body)["methods"]["v4"]["network"] == "local"  # its own answer
    assert service.cached_config("/") is None  # but not kept for the next request
    fresh = await service.config_document("/")
    assert fresh.body == spec_bytes("sepolia")
