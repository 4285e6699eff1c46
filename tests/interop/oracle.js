// Long-lived conformance oracle: the official @erc7824/nitrolite SDK (0.5.3, viem 2.39.3)
// answering JSON-lines commands on stdin, one JSON line per command on stdout, so a
// hypothesis test can drive hundreds of cases without starting node for each.
//
// Command: {"id": n, "op": "<name>", ...args}; answer: {"id": n, "ok": true, "result": ...}
// or {"id": n, "ok": false, "error": "..."}. Big integers travel as decimal strings.
// Runs offline: the viem wallet client points at a dead RPC and local accounts sign offline.
'use strict';

const readline = require('readline');
const n = require('@erc7824/nitrolite');
const viem = require('viem');
const { privateKeyToAccount } = require('viem/accounts');

const DEAD_RPC = 'http://127.0.0.1:1';

function walletClient(pk) {
  return viem.createWalletClient({ account: privateKeyToAccount(pk), transport: viem.http(DEAD_RPC) });
}

function channelOf(c) {
  return {
    participants: c.participants,
    adjudicator: c.adjudicator,
    challenge: BigInt(c.challenge),
    nonce: BigInt(c.nonce),
  };
}

function stateOf(s) {
  return {
    intent: s.intent,
    version: BigInt(s.version),
    data: s.data,
    allocations: s.allocations.map((a) => ({
      destination: a.destination,
      token: a.token,
      amount: BigInt(a.amount),
    })),
    sigs: [],
  };
}

const ops = {
  async channel_id(a) {
    return n.getChannelId(channelOf(a.channel), BigInt(a.chainId));
  },

  async state(a) {
    const st = stateOf(a.state);
    return {
      packed: n.getPackedState(a.channelId, st),
      hash: n.getStateHash(a.channelId, st),
      challengePacked: n.getPackedChallengeState(a.channelId, st),
      challengeHash: n.getChallengeHash(a.channelId, st),
    };
  },

  async sign_state(a) {
    const st = stateOf(a.state);
    const signer = a.scheme === 'eip191'
      ? new n.WalletStateSigner(walletClient(a.key))
      : new n.SessionKeyStateSigner(a.key);
    const result = { state: await signer.signState(a.channelId, st) };
    // the challenger signature the SDK client makes (_prepareAndSignChallengeState)
    result.challenge = await signer.signRawMessage(n.getPackedChallengeState(a.channelId, st));
    return result;
  },

  async stringify(a) {
    return JSON.stringify(JSON.parse(a.text));
  },

  async frames(a) {
    const s = n.createECDSAMessageSigner(a.sessionKey);
    const ids = a.ids;
    const ts = a.timestamps;
    const out = {};
    out.get_ledger_balances = await n.createGetLedgerBalancesMessage(s, a.accountId || undefined, ids[0], ts[0]);
    out.create_channel = await n.createCreateChannelMessage(s, { chain_id: a.chainId, token: a.token }, ids[1], ts[1]);
    const resize = { channel_id: a.channelId };
    if (a.resizeAmount !== null) resize.resize_amount = BigInt(a.resizeAmount);
    if (a.allocateAmount !== null) resize.allocate_amount = BigInt(a.allocateAmount);
    resize.funds_destination = a.destination;
    out.resize_channel = await n.createResizeChannelMessage(s, resize, ids[2], ts[2]);
    out.close_channel = await n.createCloseChannelMessage(s, a.channelId, a.destination, ids[3], ts[3]);
    out.transfer = await n.createTransferMessage(
      s, { destination: a.destination, allocations: a.allocations }, ids[4], ts[4]);
    out.transfer_tag = await n.createTransferMessage(
      s, { destination_user_tag: a.userTag, allocations: a.allocations }, ids[5], ts[5]);
    out.ping = await n.createPingMessage(s, ids[6], ts[6]);
    out.get_config = await n.createGetConfigMessage(s, ids[7], ts[7]);
    out.auth_request = await n.createAuthRequestMessage({
      address: a.wallet,
      session_key: a.sessionAddress,
      application: a.application,
      allowances: a.allowances,
      expires_at: BigInt(a.expiresAt),
      scope: a.scope,
    }, ids[8], ts[8]);
    const eip712 = n.createEIP712AuthMessageSigner(walletClient(a.walletKey), {
      scope: a.scope,
      session_key: a.sessionAddress,
      expires_at: BigInt(a.expiresAt),
      allowances: a.allowances,
    }, { name: a.application });
    out.auth_verify = await n.createAuthVerifyMessageFromChallenge(eip712, a.challenge, ids[9], ts[9]);
    out.auth_verify_jwt = await n.createAuthVerifyMessageWithJWT(a.jwt, ids[10], ts[10]);
    out.revoke_session_key = await n.createRevokeSessionKeyMessage(s, a.sessionAddress, ids[11], ts[11]);
    out.get_user_tag = await n.createGetUserTagMessage(s, ids[12], ts[12]);
    out.get_session_keys = await n.createGetSessionKeysMessage(s, ids[13], ts[13]);
    out.get_channels = await n.createGetChannelsMessage(s, a.wallet, a.status || undefined, ids[14], ts[14]);
    out.get_assets = await n.createGetAssetsMessage(s, a.chainId, ids[15], ts[15]);
    return out;
  },

  async parse_response(a) {
    const parsed = n.parseAnyRPCResponse(a.frame);
    return JSON.parse(JSON.stringify(parsed, (_, v) => (typeof v === 'bigint' ? v.toString() : v)));
  },
};

const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
let queue = Promise.resolve();
rl.on('line', (line) => {
  queue = queue.then(async () => {
    let cmd = { id: null };
    try {
      cmd = JSON.parse(line);
      const op = ops[cmd.op];
      if (!op) throw new Error(`unknown op ${cmd.op}`);
      const result = await op(cmd);
      process.stdout.write(JSON.stringify({ id: cmd.id, ok: true, result }) + '\n');
    } catch (e) {
      process.stdout.write(JSON.stringify({ id: cmd.id, ok: false, error: String(e && e.message || e) }) + '\n');
    }
  });
});
rl.on('close', () => { queue.then(() => process.exit(0)); });
process.stdout.write(JSON.stringify({ id: 0, ok: true, result: 'ready' }) + '\n');
