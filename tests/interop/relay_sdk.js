// Drives our relay node with the official @erc7824/nitrolite 0.5.3 SDK (viem 2.39.3).
//
// Configuration comes as JSON in $RELAY_SDK_CONFIG:
//   {relayUrl, rpcUrl, chainId, custody, adjudicator, token, asset, userKey, destination}
// Every frame the relay sends must pass parseAnyRPCResponse AND the per-method parser, and
// carry a broker signature over the exact bytes of its `res` array; anything else exits 1.
// On success it prints one JSON line (what it saw) and exits 0.
'use strict';

const n = require('@erc7824/nitrolite');
const viem = require('viem');
const { privateKeyToAccount, generatePrivateKey } = require('viem/accounts');

const cfg = JSON.parse(process.env.RELAY_SDK_CONFIG || '{}');
const WebSocketImpl = globalThis.WebSocket;
const TIMEOUT_MS = 60000;

function fail(message) {
  process.stderr.write(`relay_sdk.js: ${message}\n`);
  process.exit(1);
}

if (typeof WebSocketImpl !== 'function') fail('no WebSocket: run node with --experimental-websocket');

// the per-method parser for every method the relay may send
const PARSERS = {
  auth_challenge: n.parseAuthChallengeResponse,
  auth_verify: n.parseAuthVerifyResponse,
  error: n.parseErrorResponse,
  get_config: n.parseGetConfigResponse,
  get_assets: n.parseGetAssetsResponse,
  assets: n.parseAssetsResponse,
  get_ledger_balances: n.parseGetLedgerBalancesResponse,
  get_ledger_transactions: n.parseGetLedgerTransactionsResponse,
  get_channels: n.parseGetChannelsResponse,
  create_channel: n.parseCreateChannelResponse,
  transfer: n.parseTransferResponse,
  tr: n.parseTransferNotificationResponse,
  bu: n.parseBalanceUpdateResponse,
  channels: n.parseChannelsUpdateResponse,
  cu: n.parseChannelUpdateResponse,
  pong: n.parsePongResponse,
};

const seen = {}; // method -> count
const signatureChecks = []; // [raw res text, signature]
let frameCount = 0;

class Connection {
  constructor(url) {
    this.url = url;
    this.frames = [];
    this.waiters = [];
  }

  open() {
    return new Promise((resolve, reject) => {
      this.ws = new WebSocketImpl(this.url);
      this.ws.onopen = () => resolve();
      this.ws.onerror = (e) => reject(new Error(`websocket error on ${this.url}: ${e.message || e}`));
      this.ws.onmessage = (event) => this.onFrame(String(event.data));
    });
  }

  onFrame(text) {
    let any;
    try {
      any = n.parseAnyRPCResponse(text);
      const specific = PARSERS[any.method];
      if (!specific) throw new Error(`no per-method parser registered for '${any.method}'`);
      specific(text);
    } catch (e) {
      fail(`frame rejected by the SDK: ${e.message}\n${text}`);
    }
    if (!text.startsWith('{"res":')) fail(`frame does not start with {"res": ${text}`);
    const cut = text.lastIndexOf(',"sig":');
    if (cut < 0 || any.signatures.length !== 1) fail(`frame without exactly one signature: ${text}`);
    signatureChecks.push([text.slice(7, cut), any.signatures[0]]);
    seen[any.method] = (seen[any.method] || 0) + 1;
    frameCount += 1;
    const frame = { ...any, text };
    this.frames.push(frame);
    for (const waiter of [...this.waiters]) {
      if (waiter.predicate(frame)) {
        this.waiters.splice(this.waiters.indexOf(waiter), 1);
        clearTimeout(waiter.timer);
        waiter.resolve(frame);
      }
    }
  }

  waitFor(predicate, what) {
    const found = this.frames.find(predicate);
    if (found) return Promise.resolve(found);
    return new Promise((resolve) => {
      const waiter = { predicate, resolve };
      waiter.timer = setTimeout(() => fail(`timed out waiting for ${what}`), TIMEOUT_MS);
      this.waiters.push(waiter);
    });
  }

  async call(message, expectMethod) {
    const requestId = JSON.parse(message).req[0];
    const start = this.frames.length;
    this.ws.send(message);
    const reply = await this.waitFor(
      (f) => f.requestId === requestId && this.frames.indexOf(f) >= start,
      `the reply to request ${requestId}`,
    );
    if (expectMethod && reply.method !== expectMethod) {
      fail(`expected ${expectMethod}, got ${reply.method}: ${reply.text}`);
    }
    return reply;
  }

  notification(method, predicate = () => true) {
    return this.waitFor((f) => f.requestId === 0 && f.method === method && predicate(f), `a '${method}' push`);
  }

  close() {
    this.ws.close();
  }
}

async function main() {
  const user = privateKeyToAccount(cfg.userKey);
  const chain = viem.defineChain({
    id: cfg.chainId,
    name: 'settlement sandbox',
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [cfg.rpcUrl] } },
  });
  const transport = viem.http(cfg.rpcUrl);
  const walletClient = viem.createWalletClient({ account: user, chain, transport });
  const publicClient = viem.createPublicClient({ chain, transport, pollingInterval: 100 });

  const a = new Connection(cfg.relayUrl);
  await a.open();
  await a.notification('assets'); // pushed on connect, before auth

  const config = await a.call(await n.createGetConfigMessage(null), 'get_config');
  const broker = config.params.brokerAddress;
  const assets = await a.call(await n.createGetAssetsMessage(null, cfg.chainId), 'get_assets');
  if (!assets.params.assets.some((x) => x.token === cfg.token && x.symbol === cfg.asset)) {
    fail(`get_assets does not list ${cfg.asset} at ${cfg.token}`);
  }

  // EIP-712 auth with a fresh session key
  const sessionKey = generatePrivateKey();
  const session = privateKeyToAccount(sessionKey);
  const application = 'sdk-interop';
  const allowances = [{ asset: cfg.asset, amount: '100' }];
  const expiresAt = BigInt(Math.floor(Date.now() / 1000) + 3600);
  const challenge = await a.call(
    await n.createAuthRequestMessage({
      address: user.address,
      session_key: session.address,
      application,
      allowances,
      expires_at: expiresAt,
      scope: 'console',
    }),
    'auth_challenge',
  );
  const eip712 = n.createEIP712AuthMessageSigner(
    walletClient,
    { scope: 'console', session_key: session.address, expires_at: expiresAt, allowances },
    { name: application },
  );
  const verified = await a.call(await n.createAuthVerifyMessage(eip712, challenge), 'auth_verify');
  if (!verified.params.success || !verified.params.jwtToken) fail(`auth failed: ${verified.text}`);
  await a.notification('channels');
  await a.notification('bu');
  const signer = n.createECDSAMessageSigner(sessionKey);

  const balances = await a.call(await n.createGetLedgerBalancesMessage(signer), 'get_ledger_balances');
  const start = balances.params.ledgerBalances.find((b) => b.asset === cfg.asset);
  if (!start || Number(start.amount) < 1.5) fail(`unexpected balances: ${balances.text}`);

  // create_channel: the SDK checks the id, signs with the wallet and submits Custody.create
  const created = await a.call(
    await n.createCreateChannelMessage(signer, { chain_id: cfg.chainId, token: cfg.token }),
    'create_channel',
  );
  const { channel, state, serverSignature, channelId } = created.params;
  if (n.getChannelId(channel, cfg.chainId) !== channelId) fail('channel id does not match the channel');
  const unsigned = { intent: state.intent, version: BigInt(state.version), data: state.stateData, allocations: state.allocations };
  const serverSigner = await viem.recoverAddress({ hash: n.getStateHash(channelId, { ...unsigned, sigs: [] }), signature: serverSignature });
  if (serverSigner !== broker) fail(`server_signature is by ${serverSigner}, not the broker ${broker}`);
  const nitrolite = new n.NitroliteClient({
    publicClient,
    walletClient,
    stateSigner: new n.WalletStateSigner(walletClient),
    addresses: { custody: cfg.custody, adjudicator: cfg.adjudicator },
    chainId: cfg.chainId,
    challengeDuration: 3600n,
  });
  const opened = await nitrolite.createChannel({ channel, unsignedInitialState: unsigned, serverSignature });
  const receipt = await publicClient.waitForTransactionReceipt({ hash: opened.txHash });
  if (receipt.status !== 'success') fail(`Custody.create reverted: ${opened.txHash}`);
  await a.notification('cu', (f) => f.params.channelId === channelId && f.params.status === 'open');
  const listed = await a.call(await n.createGetChannelsMessage(signer, user.address), 'get_channels');
  if (!listed.params.channels.some((c) => c.channelId === channelId && c.wallet === user.address)) {
    fail(`get_channels does not list ${channelId}`);
  }

  // transfer (channel amount is zero, so v0.5 allows it)
  const transfer = await a.call(
    await n.createTransferMessage(signer, { destination: cfg.destination, allocations: [{ asset: cfg.asset, amount: '1.5' }] }),
    'transfer',
  );
  const tx = transfer.params.transactions[0];
  if (tx.amount !== '1.5' || tx.toAccount !== cfg.destination || tx.fromAccount !== user.address) {
    fail(`unexpected transfer result: ${transfer.text}`);
  }
  await a.notification('tr', (f) => f.params.transactions.some((t) => t.id === tx.id));
  const history = await a.call(await n.createGetLedgerTransactionsMessage(signer, user.address, { tx_type: 'transfer' }), 'get_ledger_transactions');
  if (!history.params.ledgerTransactions.some((t) => t.id === tx.id)) fail('the transfer is not in the history');

  // refused requests come back as parseable error frames
  const refused = await a.call(
    await n.createTransferMessage(signer, { destination: user.address, allocations: [{ asset: cfg.asset, amount: '1' }] }),
    'error',
  );
  const pong = await a.call(await n.createPingMessage(signer), 'pong');

  // JWT re-login on a second connection
  const b = new Connection(cfg.relayUrl);
  await b.open();
  await b.notification('assets');
  const relogin = await b.call(await n.createAuthVerifyMessageWithJWT(verified.params.jwtToken), 'auth_verify');
  if (relogin.params.address !== user.address) fail(`JWT re-login answered for ${relogin.params.address}`);
  await b.notification('bu');

  for (const [raw, signature] of signatureChecks) {
    const who = await viem.recoverAddress({ hash: viem.keccak256(viem.toBytes(raw)), signature });
    if (who !== broker) fail(`a frame is signed by ${who}, not by the broker ${broker}: ${raw}`);
  }
  a.close();
  b.close();
  process.stdout.write(
    JSON.stringify({
      broker,
      channelId,
      createTx: opened.txHash,
      transferId: tx.id,
      refused: refused.params.error,
      pong: pong.method,
      frames: frameCount,
      methods: seen,
    }) + '\n',
  );
  process.exit(0);
}

main().catch((e) => fail(e && e.stack ? e.stack : String(e)));
