"""The test process's half of the injected EIP-1193 wallet (``eip1193_test_provider.js``).

A person's wallet extension keeps its key outside the page and answers the page's requests;
this does the same for the browser tests: the page calls the exposed binding
``__swTestWallet(method, paramsJson)`` and :class:`DevKeyWallet` answers it here, signing with
a sandbox dev key and sending through the sandbox's JSON-RPC. Like a real wallet it reveals
its account (``eth_accounts``) only once the page asked to connect. Every request is recorded
(``requests``), so a test can say exactly what the page asked. A ``personal_sign`` of
:data:`REJECTED_MESSAGE`, or any method in ``reject``, is answered as a person clicking
*Reject* (EIP-1193 4001).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import httpx
from eth_account import Account
from eth_account.messages import encode_defunct, encode_typed_data

#: what a notebook signs to see a rejection
REJECTED_MESSAGE = b"please reject this"


@dataclass
class DevKeyWallet:
    """Answers EIP-1193 requests as a wallet holding ``secret`` on the chain at ``rpc_url``."""

    secret: str
    rpc_url: str
    chain_id: int
    reject: set[str] = field(default_factory=set)
    requests: list[tuple[str, list[Any]]] = field(default_factory=list)
    #: whether the page was granted the account: as in a real wallet, ``eth_accounts`` is
    #: empty until ``eth_requestAccounts`` (a person approving the connection) has run
    authorized: bool = False

    def __post_init__(self) -> None:
        self.account = Account.from_key(self.secret)
        self._http = httpx.Client(timeout=60)

    @property
    def address(self) -> str:
        return str(self.account.address)

    def rpc(self, method: str, params: list[Any]) -> Any:
        reply = self._http.post(
            self.rpc_url, json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        ).json()
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return reply["result"]

    def answer(self, method: str, params_json: str) -> str:
        params = json.loads(params_json)
        self.requests.append((method, params))
        try:
            return json.dumps({"result": self._answer(method, params)})
        except _Refused as refused:
            return json.dumps({"error": {"code": refused.code, "message": str(refused)}})

    def _answer(self, method: str, params: list[Any]) -> Any:
        if method in self.reject:
            raise _Refused(4001, "User rejected the request.")
        if method == "eth_requestAccounts":
            self.authorized = True
            return [self.address]
        if method == "eth_accounts":
            return [self.address] if self.authorized else []
        if method == "eth_chainId":
            return hex(self.chain_id)
        if method == "wallet_switchEthereumChain":
            if int(params[0]["chainId"], 16) != self.chain_id:
                raise _Refused(4902, "Unrecognized chain ID.")
            return None
        if method == "personal_sign":
            message = bytes.fromhex(params[0][2:])
            self._check_account(params[1])
            if message == REJECTED_MESSAGE:
                raise _Refused(4001, "User rejected the request.")
            signed = Account.sign_message(encode_defunct(primitive=message), self.secret)
            return "0x" + bytes(signed.signature).hex()
        if method == "eth_signTypedData_v4":
            self._check_account(params[0])
            typed = encode_typed_data(full_message=json.loads(params[1]))
            return "0x" + bytes(Account.sign_message(typed, self.secret).signature).hex()
        if method == "eth_sendTransaction":
            return self._send(params[0])
        raise _Refused(4200, f"the test wallet does not support {method}")

    def _check_account(self, address: str) -> None:
        if address.lower() != self.address.lower():
            raise _Refused(4100, f"{address} is not this wallet's account")

    def _send(self, request: dict[str, Any]) -> str:
        """Fill in nonce and fees as a wallet does, sign, broadcast."""
        self._check_account(request["from"])
        tx: dict[str, Any] = {
            "chainId": self.chain_id,
            "to": request.get("to"),
            "data": request.get("data", "0x"),
            "value": int(request.get("value", "0x0"), 16),
            "nonce": int(self.rpc("eth_getTransactionCount", [self.address, "pending"]), 16),
        }
        if tx["to"] is None:
            del tx["to"]
        call = {k: v for k, v in request.items() if k in ("from", "to", "data", "value")}
        tx["gas"] = int(request.get("gas") or self.rpc("eth_estimateGas", [call]), 16)
        base = int(self.rpc("eth_getBlockByNumber", ["latest", False])["baseFeePerGas"], 16)
        tx["maxPriorityFeePerGas"] = 10**9
        tx["maxFeePerGas"] = 2 * base + 10**9
        signed = Account.sign_transaction(tx, self.secret)
        return str(self.rpc("eth_sendRawTransaction", ["0x" + bytes(signed.raw_transaction).hex()]))

    def methods(self) -> set[str]:
        return {method for method, _ in self.requests}


class _Refused(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
