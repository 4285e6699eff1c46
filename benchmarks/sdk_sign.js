// Request signing with the official SDK, for the side-by-side in benchmarks/sdk.py.
//
// Reads one JSON line on stdin: {"key": "0x..", "destination": "0x..", "asset": "..",
// "amount": "..", "count": N, "warmup": N, "requestId": n, "timestamp": ms}
// (the key on stdin, never on the command line), then signs `count` transfer frames exactly
// as a Nitrolite v0.5 client does: createECDSAMessageSigner(key) + createTransferMessage.
// Prints one JSON line: frames per second (wall and CPU) and the first frame, which the
// Python side compares byte for byte with its own (RFC 6979 makes both deterministic).
// Uses the SDK installed for the interop tests (tests/interop/node_modules).
'use strict';

const path = require('path');
const { createRequire } = require('module');

const interop = createRequire(path.join(__dirname, '..', 'tests', 'interop', 'package.json'));
const n = interop('@erc7824/nitrolite');

async function main() {
  const input = await new Promise((resolve) => {
    let text = '';
    process.stdin.setEncoding('utf8');
    process.stdin.on('data', (chunk) => { text += chunk; });
    process.stdin.on('end', () => resolve(text));
  });
  const a = JSON.parse(input);
  const signer = n.createECDSAMessageSigner(a.key);
  const params = { destination: a.destination, allocations: [{ asset: a.asset, amount: a.amount }] };
  const first = await n.createTransferMessage(signer, params, a.requestId, a.timestamp);
  for (let i = 0; i < a.warmup; i++) {
    await n.createTransferMessage(signer, params, a.requestId + 1 + i, a.timestamp);
  }
  const cpu0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < a.count; i++) {
    await n.createTransferMessage(signer, params, a.requestId + 1 + i, a.timestamp);
  }
  const wallNs = Number(process.hrtime.bigint() - t0);
  const cpu = process.cpuUsage(cpu0);
  const cpuUs = cpu.user + cpu.system;
  process.stdout.write(JSON.stringify({
    sdk: 'v' + (interop('@erc7824/nitrolite/package.json').version || '?'),
    viem: interop('viem/package.json').version,
    node: process.version,
    count: a.count,
    wall_s: wallNs / 1e9,
    cpu_s: cpuUs / 1e6,
    first_frame: first,
  }) + '\n');
}

main().catch((err) => {
  process.stderr.write(String(err && err.stack ? err.stack : err) + '\n');
  process.exit(1);
});
