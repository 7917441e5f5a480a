// interop_harness.mjs -- what the interop peers that drive a real onced with
// @a2a-js/sdk share (tests/interop): the SDK version they pin and the onced
// they start, run and end. Node built-ins only, like harness.mjs: the SDK
// itself is imported by each peer, from its own node_modules.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { ending, freePort, reaperGuard, scaled, tally } from './harness.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

// The process's own fetch, taken when this module loads: before a peer wraps
// globalThis.fetch to record what its SDK sends (static imports run first),
// so waiting for onced's card never shows up in that record.
const realFetch = globalThis.fetch;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// The version of @a2a-js/sdk installed in dir/node_modules (the peer's own
// folder), which must be pin: a missing SDK or another version goes to
// fatal (a failure, never a skip), so this returns only pin.
export function pinnedSdkVersion(dir, pin, fatal) {
  const sdkDir = path.join(dir, 'node_modules', '@a2a-js', 'sdk');
  const pj = path.join(sdkDir, 'package.json');
  if (!fs.existsSync(pj)) {
    fatal(`@a2a-js/sdk is not installed (${sdkDir} missing). ` +
          `Run "npm ci" (or "npm install") in ${dir}, or "bash scripts/deps.sh".`);
  }
  const version = JSON.parse(fs.readFileSync(pj, 'utf8')).version;
  if (version !== pin) {
    fatal(`@a2a-js/sdk ${version} installed, this test pins ${pin} (see package.json)`);
  }
  return version;
}

// The onced a peer tests, and the peer's ending (harness.mjs, ending) around
// it: { finish, fatal, requireBinary, start }. onced is SIGKILLed whatever
// ends the peer (finish, fatal, SIGINT, SIGTERM, the watchdog, any exit; and
// scripts/reaper.py, which start() arms first, when the peer is killed).
// finish runs onFinish (the peer's own cleanup), then removes onced's
// temporary folder if nothing failed, else keeps it and prints where, with
// the tail of onced's log.
//   requireBinary(): a missing binary is a failure (fatal), never a skip.
//   start(args): onced on a free loopback port, its SQLite store and its log
//   (stdout and stderr) in a fresh temporary folder named by tmpPrefix, run
//   as `binary --listen 127.0.0.1:PORT --store sqlite:DIR/registry.db
//   ...args`; answers { url, card } once it serves its agent card (bounded:
//   scaled 15 s). An early exit or no card in time goes to fatal.
export function oncedUnderTest({ binary, tmpPrefix, watchdogMs, onFinish = () => {} }) {
  let proc = null;
  let tmpdir = null;

  function kill() {
    if (proc && proc.exitCode === null && proc.signalCode === null) {
      try {
        proc.kill('SIGKILL');
      } catch {
        // already gone
      }
    }
  }

  function logTail() {
    try {
      return fs.readFileSync(path.join(tmpdir, 'onced.log'), 'utf8').slice(-3000);
    } catch {
      return '(no log)';
    }
  }

  const { finish, fatal } = ending({
    watchdogMs,
    kill,
    cleanup: () => {
      onFinish();
      if (tally.failed === 0 && tmpdir) {
        fs.rmSync(tmpdir, { recursive: true, force: true });
      } else if (tmpdir) {
        console.error(`onced log and store kept in ${tmpdir}; log tail:\n${logTail()}`);
      }
    },
  });

  function requireBinary() {
    if (!fs.existsSync(binary)) {
      fatal(`onced binary not found at ${binary} (set ONCED or build it: cmake --build build --target onced)`);
    }
  }

  async function start(args) {
    if (!reaperGuard(ROOT)) fatal('scripts/reaper.py guard handed out no marker');
    tmpdir = fs.mkdtempSync(path.join(os.tmpdir(), tmpPrefix));
    const port = await freePort();
    const log = fs.openSync(path.join(tmpdir, 'onced.log'), 'a');
    const argv = ['--listen', `127.0.0.1:${port}`, '--store', `sqlite:${path.join(tmpdir, 'registry.db')}`, ...args];
    proc = spawn(binary, argv, { stdio: ['ignore', log, log] });
    fs.closeSync(log);
    proc.on('error', (e) => console.error(`spawn ${binary}: ${e.message}`));
    const url = `http://127.0.0.1:${port}`;
    const end = Date.now() + scaled(15000);
    while (Date.now() < end) {
      if (proc.exitCode !== null || proc.signalCode !== null) {
        fatal(`onced exited early (status ${proc.exitCode}, signal ${proc.signalCode}): ${argv.join(' ')}`);
      }
      try {
        const r = await realFetch(`${url}/.well-known/agent-card.json`, { signal: AbortSignal.timeout(scaled(1000)) });
        if (r.status === 200) return { url, card: await r.json() };
      } catch {
        // not listening yet
      }
      await sleep(50);
    }
    fatal(`onced did not serve its agent card within ${scaled(15000)} ms`);
    return null;
  }

  return { finish, fatal, requireBinary, start };
}
