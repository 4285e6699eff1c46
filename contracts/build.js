#!/usr/bin/env node
// Compile contracts/src/**/*.sol with the pinned solc-js (one standard-JSON call) and write
// one artifact per contract to settlement_widgets/_artifacts/<Name>.json
// ({contractName, sourceName, abi, bytecode, deployedBytecode}, plus linkReferences and
// deployedLinkReferences for a contract calling external libraries: solc leaves a placeholder
// in its bytecode per library call site, {sourceName: {libraryName: [{start, length}]}} says
// where, and the deployer writes each library's address there before deploying; the keys are
// absent when there is nothing to link, so such artifacts keep their exact bytes).
// Also copies the compiled Uniswap v4 PoolManager, test routers and TestERC20 from the
// @uniswap/v4-core npm package (its own Foundry build, never recompiled or committed).
//
// Usage: node contracts/build.js [--out DIR] [--check]
//   --check  rebuild into a temp dir and compare with DIR; exit 1 on any difference.
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const crypto = require('crypto');

const HERE = __dirname;
const NODE_MODULES = path.join(HERE, 'node_modules');
const SRC = path.join(HERE, 'src');
const EVM_VERSION = 'prague'; // py-evm runs up to prague; solc 0.8.37 defaults to osaka
const V4_ARTIFACTS = ['PoolManager', 'PoolModifyLiquidityTest', 'PoolSwapTest', 'TestERC20'];

function parseArgs(argv) {
  const args = { out: path.join(HERE, '..', 'settlement_widgets', '_artifacts'), check: false };
  for (let i = 2; i < argv.length; i++) {
    if (argv[i] === '--out') args.out = path.resolve(argv[++i]);
    else if (argv[i] === '--check') args.check = true;
    else throw new Error(`unknown argument ${argv[i]}`);
  }
  return args;
}

function walk(dir) {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? walk(p) : e.name.endsWith('.sol') ? [p] : [];
  });
}

function findImport(importPath) {
  const candidates = [path.join(NODE_MODULES, importPath), path.join(HERE, importPath)];
  for (const c of candidates) {
    if (fs.existsSync(c)) return { contents: fs.readFileSync(c, 'utf8') };
  }
  return { error: `File not found: ${importPath}` };
}

function compile() {
  const solc = require(path.join(NODE_MODULES, 'solc'));
  const files = walk(SRC).sort();
  const sources = {};
  for (const f of files) {
    const key = 'src/' + path.relative(SRC, f).split(path.sep).join('/');
    sources[key] = { content: fs.readFileSync(f, 'utf8') };
  }
  if (files.length === 0) return { version: solc.version(), contracts: {} };
  const input = {
    language: 'Solidity',
    sources,
    settings: {
      optimizer: { enabled: true, runs: 200 },
      viaIR: true,
      evmVersion: EVM_VERSION,
      remappings: ['@uniswap/v4-core/=@uniswap/v4-core/', '@openzeppelin/=@openzeppelin/'],
      metadata: { bytecodeHash: 'none' },
      outputSelection: {
        '*': {
          '*': [
            'abi',
            'evm.bytecode.object',
            'evm.bytecode.linkReferences',
            'evm.deployedBytecode.object',
            'evm.deployedBytecode.linkReferences',
          ],
        },
      },
    },
  };
  const output = JSON.parse(solc.compile(JSON.stringify(input), { import: findImport }));
  const errors = (output.errors || []).filter((e) => e.severity === 'error');
  for (const e of output.errors || []) {
    if (e.severity !== 'error' && !/SPDX|Unreachable code|[Tt]ransient storage|will be promoted to keyword/.test(e.message)) {
      process.stderr.write(e.formattedMessage + '\n');
    }
  }
  if (errors.length) {
    for (const e of errors) process.stderr.write(e.formattedMessage + '\n');
    throw new Error(`solc reported ${errors.length} error(s)`);
  }
  const contracts = {};
  for (const [sourceName, byName] of Object.entries(output.contracts || {})) {
    if (!sourceName.startsWith('src/')) continue; // libraries from node_modules are not shipped
    for (const [name, c] of Object.entries(byName)) {
      if (contracts[name]) throw new Error(`duplicate contract name ${name}`);
      const artifact = {
        contractName: name,
        sourceName,
        abi: c.abi,
        bytecode: '0x' + c.evm.bytecode.object,
        deployedBytecode: '0x' + c.evm.deployedBytecode.object,
      };
      const links = c.evm.bytecode.linkReferences || {};
      if (Object.keys(links).length) {
        artifact.linkReferences = links;
        artifact.deployedLinkReferences = c.evm.deployedBytecode.linkReferences || {};
      }
      contracts[name] = artifact;
    }
  }
  return { version: solc.version(), contracts };
}

function v4Artifacts() {
  const out = {};
  for (const name of V4_ARTIFACTS) {
    const p = path.join(NODE_MODULES, '@uniswap', 'v4-core', 'out', `${name}.sol`, `${name}.json`);
    const j = JSON.parse(fs.readFileSync(p, 'utf8'));
    out[name] = {
      contractName: name,
      sourceName: `@uniswap/v4-core (npm, ${name}.sol)`,
      abi: j.abi,
      bytecode: j.bytecode.object,
      deployedBytecode: j.deployedBytecode.object,
    };
  }
  return out;
}

function writeAll(dir, artifacts) {
  fs.mkdirSync(dir, { recursive: true });
  for (const f of fs.readdirSync(dir)) if (f.endsWith('.json')) fs.unlinkSync(path.join(dir, f));
  for (const [name, a] of Object.entries(artifacts)) {
    fs.writeFileSync(path.join(dir, `${name}.json`), JSON.stringify(a, null, 1) + '\n');
  }
}

function digestDir(dir) {
  const h = {};
  for (const f of fs.readdirSync(dir).sort()) {
    if (!f.endsWith('.json')) continue;
    h[f] = crypto.createHash('sha256').update(fs.readFileSync(path.join(dir, f))).digest('hex');
  }
  return h;
}

function main() {
  const args = parseArgs(process.argv);
  const t0 = Date.now();
  const { version, contracts } = compile();
  const artifacts = { ...contracts, ...v4Artifacts() };
  if (args.check) {
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'sw-artifacts-'));
    writeAll(tmp, artifacts);
    const a = JSON.stringify(digestDir(tmp));
    const b = fs.existsSync(args.out) ? JSON.stringify(digestDir(args.out)) : '{}';
    fs.rmSync(tmp, { recursive: true, force: true });
    if (a !== b) {
      process.stderr.write(`artifacts in ${args.out} do not match a fresh build\n`);
      process.exit(1);
    }
    process.stdout.write(`artifacts match a fresh build (${Object.keys(artifacts).length})\n`);
    return;
  }
  writeAll(args.out, artifacts);
  const names = Object.keys(artifacts).sort().join(', ');
  process.stdout.write(
    `solc ${version}, evmVersion ${EVM_VERSION}: ${Object.keys(artifacts).length} artifacts ` +
      `in ${((Date.now() - t0) / 1000).toFixed(1)} s -> ${path.relative(process.cwd(), args.out)}\n  ${names}\n`,
  );
}

main();
