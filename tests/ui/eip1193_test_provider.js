// A test EIP-1193 wallet, injected into the page before it loads (Playwright add_init_script).
// It holds no key: every request goes to the test process through the exposed binding
// window.__swTestWallet(method, paramsJson), which signs with a sandbox dev key there and
// talks to the sandbox's /rpc (tests/ui/dev_key_wallet.py). It announces itself both ways a
// page finds wallets: window.ethereum and EIP-6963.
(() => {
  const listeners = new Map();
  // a personal_sign of window.__swHoldHex waits here until the test calls __swRelease(), as a
  // wallet's window waits for its person
  let release;
  const held = new Promise((resolve) => { release = resolve; });
  window.__swRelease = () => release();
  const emit = (event, value) => {
    for (const fn of listeners.get(event) ?? []) {
      try { fn(value); } catch (e) { console.error(e); }
    }
  };
  const provider = {
    isSettlementTestWallet: true,
    async request({ method, params }) {
      if (method === "personal_sign" && params?.[0] === window.__swHoldHex) await held;
      const answer = JSON.parse(await window.__swTestWallet(method, JSON.stringify(params ?? [])));
      for (const [event, value] of answer.events ?? []) emit(event, value);
      if (answer.error) {
        const error = new Error(answer.error.message);
        error.code = answer.error.code;
        throw error;
      }
      return answer.result;
    },
    on(event, fn) {
      if (!listeners.has(event)) listeners.set(event, new Set());
      listeners.get(event).add(fn);
      return provider;
    },
    removeListener(event, fn) {
      listeners.get(event)?.delete(fn);
      return provider;
    },
  };
  const info = Object.freeze({
    uuid: "5b8f5b38-7a4e-4f4b-9d0c-2f1f6c1b8a11",
    name: "Settlement test wallet",
    icon: "data:image/svg+xml,<svg xmlns='http://www.w3.org/2000/svg'/>",
    rdns: "test.settlement-widgets",
  });
  const announce = () =>
    window.dispatchEvent(
      new CustomEvent("eip6963:announceProvider", { detail: Object.freeze({ info, provider }) }),
    );
  window.addEventListener("eip6963:requestProvider", announce);
  window.ethereum = provider;
  announce();
})();
