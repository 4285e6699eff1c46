// Browser half of the BrowserWallet anywidget.
//
// Python (in the kernel) asks this page's EIP-1193 wallet to connect, switch
// chain, sign and send transactions. Requests arrive as custom messages
// {type:"request", page, id, method, params}; this module answers each one with
// exactly one {type:"reply", page, id, result | error}. The only other message
// it ever sends is the {type:"hello"} announcement made once per initialize.
//
// Plain ES module: no imports, and nothing touches `window` or `document` at
// import time, so the helpers can be unit-tested in node.

// What the card says when the page has no wallet: once (the card's own line; the error
// line stays empty for it), in plain words. browser_wallet.py raises the same sentence.
export const NO_WALLET_MESSAGE =
  "No wallet found in this browser. Install a wallet extension (such as MetaMask) and " +
  "reload this page, or set SETTLEMENT_PRIVATE_KEY to a funded test key and run the " +
  "notebook again.";
export const REJECTED_MESSAGE = "The request was rejected in the wallet.";
const NO_WALLET_REPLY_MESSAGE = "no browser wallet (EIP-1193) in this page";
const DEFAULT_SETTLE_MS = 300;
const QUIET_TIMEOUT_MS = 5000;

// Providers are page-wide, not per model: remember the discovered ones per window
// so every view (and every model) can reach the selected wallet's provider.
const providersByWindow = new WeakMap();

function isObject(v) {
  return v !== null && (typeof v === "object" || typeof v === "function");
}

function jsonClone(value) {
  // Returns {ok, value} where value is the JSON round-trip of `value`.
  try {
    const text = JSON.stringify(value);
    if (text === undefined) return { ok: false };
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false };
  }
}

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function settleMsOverride() {
  const v = globalThis.__swWalletSettleMs;
  return typeof v === "number" && Number.isFinite(v) && v >= 0 ? v : DEFAULT_SETTLE_MS;
}

function makePageId() {
  const c = globalThis.crypto;
  if (c && typeof c.randomUUID === "function") {
    try {
      return c.randomUUID();
    } catch {
      // insecure context: fall through
    }
  }
  let s = "";
  for (let i = 0; i < 4; i++) s += Math.random().toString(16).slice(2, 10).padEnd(8, "0");
  return `page-${s}`;
}

/** "0x1234…abcd" (first 6, ellipsis, last 4), or "" for an empty value. */
export function shortAddress(a) {
  if (a === null || a === undefined) return "";
  const s = String(a);
  if (!s) return "";
  if (s.length <= 10) return s;
  return `${s.slice(0, 6)}\u2026${s.slice(-4)}`;
}

/** Parses "0x89", "137", 137 or 137n into an integer; 0 when unknown. */
export function parseChainId(v) {
  if (typeof v === "number") return Number.isSafeInteger(v) && v > 0 ? v : 0;
  if (typeof v === "bigint") return v > 0n ? Number(v) : 0;
  if (typeof v !== "string") return 0;
  const s = v.trim();
  let n = NaN;
  if (/^0x[0-9a-f]+$/i.test(s)) n = parseInt(s, 16);
  else if (/^[0-9]+$/.test(s)) n = parseInt(s, 10);
  return Number.isSafeInteger(n) && n > 0 ? n : 0;
}

function errorCode(err) {
  if (!isObject(err)) return null;
  if (typeof err.code === "number") return err.code;
  return null;
}

/** The code of a provider error, looking inside the wrappers some wallets use. */
function deepErrorCode(err) {
  const direct = errorCode(err);
  if (direct !== null) return direct;
  if (isObject(err) && isObject(err.data)) {
    const inner = errorCode(err.data.originalError) ?? errorCode(err.data);
    if (inner !== null) return inner;
  }
  return null;
}

function errorMessageText(err) {
  if (typeof err === "string" && err) return err;
  if (isObject(err) && typeof err.message === "string" && err.message) return err.message;
  return "wallet request failed";
}

/** A sentence for the person, for any error met while talking to the wallet. */
export function friendlyError(err) {
  if (isObject(err) && err.reason === "no_wallet") return NO_WALLET_MESSAGE;
  const code = deepErrorCode(err);
  if (code === 4001) return REJECTED_MESSAGE;
  return `Wallet error: ${errorMessageText(err)}`;
}

function noWalletError() {
  const e = new Error(NO_WALLET_REPLY_MESSAGE);
  e.code = null;
  e.reason = "no_wallet";
  return e;
}

/**
 * EIP-6963 discovery on `win`, falling back to `win.ethereum`.
 * Resolves to [{info:{uuid,name,rdns}, provider}], de-duplicated by uuid.
 */
export async function discoverWallets(win, { settleMs = DEFAULT_SETTLE_MS } = {}) {
  if (!win) return [];
  const found = [];
  const seen = new Set();
  const onAnnounce = (event) => {
    const detail = event && event.detail;
    if (!isObject(detail) || !isObject(detail.info) || !isObject(detail.provider)) return;
    if (typeof detail.provider.request !== "function") return;
    const uuid = detail.info.uuid;
    if (typeof uuid !== "string" || !uuid || seen.has(uuid)) return;
    seen.add(uuid);
    found.push({
      info: {
        uuid,
        name: typeof detail.info.name === "string" ? detail.info.name : "",
        rdns: typeof detail.info.rdns === "string" ? detail.info.rdns : "",
      },
      provider: detail.provider,
    });
  };
  const canListen =
    typeof win.addEventListener === "function" && typeof win.dispatchEvent === "function";
  if (canListen && typeof Event === "function") {
    win.addEventListener("eip6963:announceProvider", onAnnounce);
    try {
      win.dispatchEvent(new Event("eip6963:requestProvider"));
      await sleep(settleMs);
    } finally {
      win.removeEventListener("eip6963:announceProvider", onAnnounce);
    }
  }
  if (found.length === 0 && isObject(win.ethereum)) {
    found.push({
      info: { uuid: "injected", name: "Injected wallet", rdns: "" },
      provider: win.ethereum,
    });
  }
  return found;
}

/** Runs one wallet request and builds the reply message for Python. */
export async function handleRequest(provider, msg) {
  const base = { type: "reply", page: msg?.page, id: msg?.id };
  if (!isObject(provider) || typeof provider.request !== "function") {
    return {
      ...base,
      error: { code: null, reason: "no_wallet", message: NO_WALLET_REPLY_MESSAGE },
    };
  }
  try {
    const raw = await provider.request({ method: msg.method, params: msg.params ?? [] });
    const result = raw === undefined ? null : raw;
    const clone = jsonClone(result);
    if (!clone.ok) {
      return {
        ...base,
        error: { code: null, message: "the wallet returned a result that is not JSON" },
      };
    }
    return { ...base, result: clone.value };
  } catch (err) {
    const code = errorCode(err);
    const error = { code, message: errorMessageText(err) };
    if (code === 4001) error.reason = "rejected";
    if (isObject(err) && err.data !== undefined) {
      const data = jsonClone(err.data);
      if (data.ok) error.data = data.value;
    }
    return { ...base, error };
  }
}

function withTimeout(promise, ms) {
  let timer;
  return Promise.race([
    promise,
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error("timed out")), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

async function quietRequest(provider, method) {
  try {
    return await withTimeout(Promise.resolve(provider.request({ method, params: [] })), QUIET_TIMEOUT_MS);
  } catch {
    return undefined;
  }
}

function currentWindow() {
  return globalThis.window;
}

function rememberProviders(win, found) {
  if (!isObject(win)) return;
  const map = new Map();
  for (const w of found) map.set(w.info.uuid, w.provider);
  providersByWindow.set(win, map);
}

async function discoverAndRemember(win) {
  const found = await discoverWallets(win, { settleMs: settleMsOverride() });
  rememberProviders(win, found);
  return found;
}

function providerFor(win, uuid) {
  const map = isObject(win) ? providersByWindow.get(win) : undefined;
  if (!map || map.size === 0) return null;
  if (uuid && map.has(uuid)) return map.get(uuid);
  return map.values().next().value ?? null;
}

function walletInfos(found) {
  return found.map((w) => ({ uuid: w.info.uuid, name: w.info.name, rdns: w.info.rdns }));
}

function accountFrom(accounts) {
  return Array.isArray(accounts) && typeof accounts[0] === "string" ? accounts[0] : "";
}

const ACCOUNT_METHODS = new Set(["eth_requestAccounts", "eth_accounts"]);
const CHAIN_METHODS = new Set(["wallet_switchEthereumChain", "wallet_addEthereumChain"]);

function initialize({ model }) {
  const page = makePageId();
  const win = currentWindow();
  let disposed = false;
  let found = [];
  let subscribed = null; // {provider, onAccounts, onChain}

  const save = () => {
    if (!disposed) model.save_changes();
  };

  const unsubscribe = () => {
    if (!subscribed) return;
    const { provider, onAccounts, onChain } = subscribed;
    subscribed = null;
    const remove =
      typeof provider.removeListener === "function"
        ? provider.removeListener.bind(provider)
        : typeof provider.off === "function"
          ? provider.off.bind(provider)
          : null;
    if (remove) {
      try {
        remove("accountsChanged", onAccounts);
        remove("chainChanged", onChain);
      } catch {
        // a wallet that cannot unsubscribe is not our problem
      }
    }
  };

  const subscribe = (provider) => {
    if (subscribed && subscribed.provider === provider) return false;
    unsubscribe();
    if (!isObject(provider) || typeof provider.on !== "function") return true;
    const onAccounts = (accs) => {
      if (disposed) return;
      model.set("account", accountFrom(accs));
      save();
    };
    const onChain = (chain) => {
      if (disposed) return;
      model.set("wallet_chain_id", parseChainId(chain));
      save();
    };
    try {
      provider.on("accountsChanged", onAccounts);
      provider.on("chainChanged", onChain);
      subscribed = { provider, onAccounts, onChain };
    } catch {
      subscribed = null;
    }
    return true;
  };

  const readChain = async (provider) => {
    const chain = await quietRequest(provider, "eth_chainId");
    if (chain !== undefined && !disposed) model.set("wallet_chain_id", parseChainId(chain));
  };

  const quietFill = async (provider) => {
    if (!provider) return;
    const accs = await quietRequest(provider, "eth_accounts");
    if (disposed) return;
    if (accs !== undefined) model.set("account", accountFrom(accs));
    await readChain(provider);
    save();
  };

  // Applies a discovery result to the traits; returns the selected provider.
  const applyDiscovery = (result) => {
    found = result;
    const infos = walletInfos(found);
    const current = model.get("selected_wallet");
    const chosen = infos.find((w) => w.uuid === current) ?? infos[0] ?? null;
    const provider = chosen ? found.find((w) => w.info.uuid === chosen.uuid).provider : null;
    subscribe(provider);
    model.set("available", infos.length > 0 ? "yes" : "no");
    model.set("wallets", infos);
    model.set("selected_wallet", chosen ? chosen.uuid : "");
    model.set("wallet_name", chosen ? chosen.name : "");
    save();
    return provider;
  };

  const ready = (async () => {
    const result = await discoverAndRemember(win);
    if (disposed) return;
    const provider = applyDiscovery(result);
    model.send({ type: "hello", page, available: found.length > 0, wallets: walletInfos(found) });
    await quietFill(provider);
  })().catch(() => {
    // discovery never rejects in practice; keep the widget alive if it does
  });

  const selectedProvider = () => {
    const uuid = model.get("selected_wallet");
    const hit = found.find((w) => w.info.uuid === uuid) ?? found[0];
    return hit ? hit.provider : null;
  };

  const onMessage = async (msg) => {
    if (!isObject(msg) || msg.type !== "request" || msg.page !== page) return;
    await ready;
    if (disposed) return;
    let provider = selectedProvider();
    if (!provider) {
      // Wallets can inject late: look once more before giving up.
      const result = await discoverAndRemember(win);
      if (disposed) return;
      provider = applyDiscovery(result);
    }
    const reply = await handleRequest(provider, msg);
    if (disposed) return;
    if (!reply.error) {
      if (ACCOUNT_METHODS.has(msg.method)) {
        model.set("account", accountFrom(reply.result));
        await readChain(provider);
      } else if (msg.method === "eth_chainId") {
        model.set("wallet_chain_id", parseChainId(reply.result));
      } else if (CHAIN_METHODS.has(msg.method)) {
        await readChain(provider);
      }
      if (disposed) return;
      save();
    }
    model.send(reply);
  };

  const onSelected = () => {
    if (disposed) return;
    const uuid = model.get("selected_wallet");
    const hit = found.find((w) => w.info.uuid === uuid);
    if (!hit) return;
    if (!subscribe(hit.provider)) return; // already the active wallet
    model.set("wallet_name", hit.info.name);
    save();
    void quietFill(hit.provider);
  };

  model.on("msg:custom", onMessage);
  model.on("change:selected_wallet", onSelected);

  return () => {
    disposed = true;
    model.off("msg:custom", onMessage);
    model.off("change:selected_wallet", onSelected);
    unsubscribe();
  };
}

// ---------------------------------------------------------------- rendering

function make(doc, tag, className) {
  const node = doc.createElement(tag);
  if (className) node.className = className;
  return node;
}

function setHidden(node, hidden) {
  node.hidden = hidden;
  if (hidden) node.setAttribute("hidden", "");
  else node.removeAttribute("hidden");
}

async function connectWallet(model, win) {
  let provider = providerFor(win, model.get("selected_wallet"));
  if (!provider) {
    await discoverAndRemember(win);
    provider = providerFor(win, model.get("selected_wallet"));
  }
  if (!provider) throw noWalletError();
  const accs = await provider.request({ method: "eth_requestAccounts", params: [] });
  model.set("account", accountFrom(accs));
  let chain = parseChainId(await provider.request({ method: "eth_chainId", params: [] }));
  model.set("wallet_chain_id", chain);
  model.save_changes();
  const target = model.get("target_chain");
  const wanted = isObject(target) ? parseChainId(target.chainId) : 0;
  if (wanted && wanted !== chain) {
    try {
      await provider.request({
        method: "wallet_switchEthereumChain",
        params: [{ chainId: target.chainId }],
      });
    } catch (err) {
      if (deepErrorCode(err) !== 4902) throw err;
      await provider.request({ method: "wallet_addEthereumChain", params: [target] });
    }
    chain = parseChainId(await provider.request({ method: "eth_chainId", params: [] }));
    model.set("wallet_chain_id", chain);
    model.save_changes();
  }
}

function render({ model, el }) {
  const doc = el.ownerDocument;
  const win = currentWindow();
  const root = make(doc, "div", "sw-wallet");
  const title = make(doc, "div", "sw-wallet-title");
  const status = make(doc, "div", "sw-wallet-status");
  const account = make(doc, "span", "sw-wallet-account");
  const chain = make(doc, "span", "sw-wallet-chain");
  const controls = make(doc, "div", "sw-wallet-controls");
  const choice = make(doc, "select", "sw-wallet-choice");
  choice.setAttribute("aria-label", "Wallet");
  const button = make(doc, "button", "sw-wallet-connect");
  button.type = "button";
  const missing = make(doc, "div", "sw-wallet-missing");
  missing.textContent = NO_WALLET_MESSAGE;
  const pending = make(doc, "ul", "sw-wallet-pending");
  const error = make(doc, "div", "sw-wallet-error");
  error.setAttribute("role", "alert");

  status.append(account, chain);
  controls.append(choice, button);
  root.append(title, status, controls, missing, pending, error);
  el.replaceChildren(root);

  const renderLabel = () => {
    const label = model.get("label");
    title.textContent = typeof label === "string" && label ? label : "Browser wallet";
  };
  const renderAccount = () => {
    const a = model.get("account") || "";
    account.setAttribute("data-account", a);
    account.textContent = a ? shortAddress(a) : "not connected";
    if (a) account.setAttribute("title", a);
    else account.removeAttribute("title");
    root.setAttribute("data-connected", a ? "true" : "false");
    button.textContent = a ? "Reconnect" : "Connect wallet";
  };
  const renderChain = () => {
    const id = parseChainId(model.get("wallet_chain_id"));
    chain.setAttribute("data-chain-id", String(id));
    chain.textContent = id ? `chain ${id}` : "chain unknown";
  };
  const renderWallets = () => {
    const wallets = Array.isArray(model.get("wallets")) ? model.get("wallets") : [];
    const selected = model.get("selected_wallet") || "";
    const options = wallets.map((w) => {
      const option = make(doc, "option");
      option.value = String(w?.uuid ?? "");
      option.textContent = String(w?.name || w?.rdns || w?.uuid || "wallet");
      option.selected = option.value === selected;
      return option;
    });
    choice.replaceChildren(...options);
    if (wallets.some((w) => w?.uuid === selected)) choice.value = selected;
    setHidden(choice, wallets.length <= 1);
  };
  const renderAvailable = () => {
    const available = model.get("available") || "unknown";
    root.setAttribute("data-available", available);
    setHidden(missing, available !== "no");
    renderError();
  };
  const renderPending = () => {
    const items = Array.isArray(model.get("pending")) ? model.get("pending") : [];
    pending.replaceChildren(
      ...items.map((p) => {
        const li = make(doc, "li", "sw-wallet-request");
        li.setAttribute("data-method", String(p?.method ?? ""));
        li.setAttribute("data-id", String(p?.id ?? ""));
        li.textContent = `Waiting for your wallet: ${String(p?.summary ?? "")}`;
        return li;
      }),
    );
    setHidden(pending, items.length === 0);
  };
  function renderError() {
    const text = model.get("error") || "";
    error.textContent = text;
    // the missing-wallet line already says it: never the same sentence twice
    const repeated = text === NO_WALLET_MESSAGE && model.get("available") === "no";
    setHidden(error, !text || repeated);
  }

  let busy = false;
  const onClick = async () => {
    if (busy) return;
    busy = true;
    root.setAttribute("aria-busy", "true");
    model.set("error", "");
    model.save_changes();
    try {
      await connectWallet(model, win);
    } catch (err) {
      if (isObject(err) && err.reason === "no_wallet") {
        // said once, by the card's missing-wallet line
        model.set("available", "no");
        model.set("error", "");
      } else {
        model.set("error", friendlyError(err));
      }
      model.save_changes();
    } finally {
      busy = false;
      root.removeAttribute("aria-busy");
    }
  };
  const onChoice = () => {
    model.set("selected_wallet", choice.value);
    model.save_changes();
  };
  button.addEventListener("click", onClick);
  choice.addEventListener("change", onChoice);

  const handlers = {
    "change:label": renderLabel,
    "change:account": renderAccount,
    "change:wallet_chain_id": renderChain,
    "change:wallets": renderWallets,
    "change:selected_wallet": renderWallets,
    "change:available": renderAvailable,
    "change:pending": renderPending,
    "change:error": renderError,
  };
  for (const [name, cb] of Object.entries(handlers)) model.on(name, cb);
  renderLabel();
  renderAccount();
  renderChain();
  renderWallets();
  renderAvailable();
  renderPending();
  renderError();

  return () => {
    for (const [name, cb] of Object.entries(handlers)) model.off(name, cb);
    button.removeEventListener("click", onClick);
    choice.removeEventListener("change", onChoice);
    root.remove();
  };
}

export default { initialize, render };
