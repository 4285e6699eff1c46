"""Our PolicyHook and SettlementAdapter keep the deployed contracts' ABI (``hashpass-tech/jack``):
same selectors, events and errors, plus the new errors the fixes need. Reads the built
artifacts (``node contracts/build.js``)."""

from __future__ import annotations

from typing import Any

from eth_hash.auto import keccak

from settlement_widgets.contracts import load_artifact


def _sig(item: dict[str, Any]) -> str:
    def typ(inp: dict[str, Any]) -> str:
        t: str = inp["type"]
        if t.startswith("tuple"):
            return "(" + ",".join(typ(c) for c in inp["components"]) + ")" + t[len("tuple") :]
        return t

    return f"{item['name']}({','.join(typ(i) for i in item.get('inputs', []))})"


def _selectors(name: str, kind: str) -> dict[str, str]:
    return {
        _sig(i): keccak(_sig(i).encode())[:4].hex()
        for i in load_artifact(name).abi
        if i["type"] == kind
    }


def test_hook_functions_events_errors() -> None:
    functions = _selectors("PolicyHook", "function")
    assert functions["checkPolicy(bytes32,uint256)"] == "2076b5a5"
    assert functions["setPolicy(bytes32,uint256,uint256,address)"] == "1ccbe5e5"
    assert (
        functions["setPolicyWithSlippage(bytes32,uint256,uint256,uint16,uint256,address)"]
        == "4e0da1ea"
    )
    assert functions["updatePolicyBounds(bytes32,uint256,uint256,uint16,uint256)"] == "176b93f2"
    assert functions["policies(bytes32)"] == "ddbfd8ef"
    for name in (
        "owner()",
        "poolManager()",
        "transferOwnership(address)",
        "getHookPermissions()",
        "REASON_OK()",
        "REASON_POLICY_MISSING()",
        "REASON_POLICY_EXPIRED()",
        "REASON_SLIPPAGE_EXCEEDED()",
    ):
        assert name in functions
    policies = next(i for i in load_artifact("PolicyHook").abi if i.get("name") == "policies")
    assert [o["name"] for o in policies["outputs"]] == [
        "minAmountOut",
        "referenceAmountOut",
        "deadline",
        "maxSlippageBps",
        "updater",
        "exists",
    ]
    events = set(_selectors("PolicyHook", "event"))
    assert {
        "OwnershipTransferred(address,address)",
        "PolicyUpdated(bytes32,uint256,uint256,uint16,uint256,address)",
        "PolicyChecked(bytes32,bool,bytes32)",
    } <= events
    errors = set(_selectors("PolicyHook", "error"))
    assert {
        "Unauthorized()",
        "InvalidSlippageBps(uint16)",
        "PolicyViolation(bytes32,bytes32)",
    } <= errors


def test_adapter_functions_events_errors() -> None:
    functions = _selectors("SettlementAdapter", "function")
    intent = "(bytes32,address,address,address,uint256,uint256,uint256,bytes)"
    assert functions[f"hashIntent({intent})"] == "4100b9b3"
    assert (
        functions[
            f"settleIntent({intent},(address,address,uint24,int24,address),(bool,int256,uint160),uint256)"
        ]
        == "49a5524b"
    )
    assert functions["setAuthorizedSolver(address,bool)"] == "c0332795"
    assert functions["authorizedSolvers(address)"] == "9672fb2e"
    assert functions["unlockCallback(bytes)"] == "91dd7346"
    assert functions["eip712Domain()"] == "84b0196e"  # ERC-5267
    for name in ("owner()", "policyHook()", "poolManager()", "settledIntents(bytes32)"):
        assert name in functions
    events = set(_selectors("SettlementAdapter", "event"))
    assert {
        "IntentSettled(bytes32,address)",
        "OwnershipTransferred(address,address)",
        "SolverAuthorizationUpdated(address,bool)",
    } <= events
    errors = set(_selectors("SettlementAdapter", "error"))
    assert {
        "PolicyRejected(bytes32,bytes32)",
        "InvalidSignature()",
        "UnauthorizedSolver(address)",
        "UnauthorizedPoolManager(address)",
        "IntentExpired(uint256,uint256)",
        "QuotedAmountOutTooLow(uint256,uint256)",
        "Unauthorized()",
        "IntentAlreadySettled(bytes32)",
        "NativeEthNotSupported()",
    } <= errors


def test_runtime_sizes_fit_eip170() -> None:
    for name in ("PolicyHook", "SettlementAdapter", "HookDeployer", "PoolManager"):
        code = load_artifact(name).deployed_bytecode
        assert 0 < (len(code) - 2) // 2 <= 24_576, name
