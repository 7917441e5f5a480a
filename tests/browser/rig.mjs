// rig.mjs -- what the inspector's browser scripts share (inspector.mjs, the
// test; screenshots.mjs, the pictures in docs/img): onced processes started
// and stopped in one scratch folder, waits for a condition, JSON-RPC calls
// with a token, and the login form. One rig per run: its scratch folder
// holds the tokens file and each onced's log.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { check, reaperGuard, scaled, freePort, tally } from '../js/harness.mjs';

export const EXT = 'urn:once:a2a:idempotency:v1';

// Wait (bounded, scaled) until fn() resolves to something true; its value.
export async function waitFor(fn, ms, what) {
  const end = Date.now() + scaled(ms);
  while (Date.now() < end) {
    const v = await fn().catch(() => null);
    if (v) return v;
    await new Promise((r) => setTimeout(r, 50));
  }
  check(false, `timed out waiting for ${what}`);
  return null;
}

export class Rig {
  // root: the source tree; onced: the binary; tokens: "TOKEN PRINCIPAL" lines.
  constructor(root, onced, tokens) {
    reaperGuard(root);   // every process this run starts ends with it
    this.onced = onced;
    this.dir = fs.mkdtempSync(path.join(os.tmpdir(), 'once-browser-'));
    this.tokens = path.join(this.dir, 'tokens');
    fs.writeFileSync(this.tokens, tokens.map((t) => t.join(' ')).join('\n') + '\n');
    this.servers = [];   // { name, proc }: stop() ends them all
  }

  // One onced --inspect --test-admin on a free port, logging to NAME.log in
  // the scratch folder, with the extra flags in args; its base URL once it
  // serves.
  async start(name, store, args = []) {
    const port = await freePort();
    const log = fs.openSync(path.join(this.dir, `${name}.log`), 'a');
    const proc = spawn(this.onced, ['--listen', `127.0.0.1:${port}`, '--drain-delay', '0', '--store',
      `sqlite:${store}`, '--inspect', '--test-admin', '--auth-tokens', this.tokens, ...args],
    { stdio: ['ignore', log, log] });
    fs.closeSync(log);
    this.servers.push({ name, proc });
    const base = `http://127.0.0.1:${port}`;
    await waitFor(async () => (await fetch(`${base}/healthz`)).ok, 15000, `${name} to serve`);
    return { base, proc };
  }

  // Stop one onced with SIGTERM (so a sanitizer build reports leaks; SIGCONT
  // first, in case a check failed while it was frozen) and fail on any
  // sanitizer report in its log.
  async stopOne({ name, proc }) {
    if (proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = new Promise((r) => proc.once('exit', r));
    proc.kill('SIGCONT');
    proc.kill('SIGTERM');
    const timer = setTimeout(() => proc.kill('SIGKILL'), scaled(10000));
    await exited;
    clearTimeout(timer);
    const log = fs.readFileSync(path.join(this.dir, `${name}.log`), 'utf8');
    const report = /ERROR: AddressSanitizer|ERROR: LeakSanitizer|WARNING: ThreadSanitizer|\.c:\d+:\d+: runtime error:/.exec(log);
    if (report) {
      tally.failed++;
      console.error(`FAIL: ${name} reported:`, log.slice(Math.max(0, report.index - 200), report.index + 3000));
    } else {
      tally.passed++;
    }
  }

  async stop() {
    for (const srv of this.servers) {
      await this.stopOne(srv).catch((e) => { tally.failed++; console.error(`FAIL: stopping ${srv.name}:`, e); });
    }
  }
}

// One JSON-RPC call with token; whether it was a replay, and the answer.
export async function rpc(base, token, method, params) {
  const res = await fetch(`${base}/`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0', 'A2A-Extensions': EXT,
      Authorization: `Bearer ${token}` },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  return { replayed: res.headers.get('idempotent-replayed') === 'true', doc: await res.json() };
}

// The task's timeline JSON, or null.
export async function timeline(base, token, id) {
  const res = await fetch(`${base}/inspect/api/task/${id}`, { headers: { Authorization: `Bearer ${token}` } });
  return res.ok ? res.json() : null;
}

// Sign page in on onced at base through the login form (it leads to the list).
export async function signIn(page, base, token) {
  await page.goto(`${base}/inspect/login`);
  await page.type('#token', token);
  await Promise.all([page.waitForNavigation(), page.click('button[type=submit]')]);
}
