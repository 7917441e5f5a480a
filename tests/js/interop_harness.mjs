// interop_harness.mjs -- what the interop peers that drive a real onced with
// @a2a-js/sdk share (tests/interop): the SDK version they pin, the onced they
// start, run and end, the recording of what goes on the wire, a webhook
// receiver and the way a scenario runs. Node built-ins only, like
// harness.mjs: the SDK itself is imported by each peer, from its own
// node_modules (tests/interop/a2a_sdk_helpers.mjs).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { check, CheckFailed, ending, freePort, reaperGuard, scaled, tally } from './harness.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

// The process's own fetch, taken when this module loads: before a peer wraps
// globalThis.fetch to record what its SDK sends (static imports run first),
// so waiting for onced's card never shows up in that record.
const realFetch = globalThis.fetch;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// The onced a peer tests: $ONCED, else the build folder's.
export function oncedBinary() {
  return process.env.ONCED || path.join(ROOT, 'build', 'onced');
}

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
//   ...args` (store: another --store URL, e.g. memory:); answers { url, card }
//   once it serves its agent card (bounded: scaled 15 s). An early exit or no
//   card in time goes to fatal.
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

  async function start(args, { store } = {}) {
    if (!reaperGuard(ROOT)) fatal('scripts/reaper.py guard handed out no marker');
    tmpdir = fs.mkdtempSync(path.join(os.tmpdir(), tmpPrefix));
    const port = await freePort();
    const log = fs.openSync(path.join(tmpdir, 'onced.log'), 'a');
    const argv = ['--listen', `127.0.0.1:${port}`, '--store', store || `sqlite:${path.join(tmpdir, 'registry.db')}`,
                  '--drain-delay', '0', ...args];
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

// JSON.parse, or null for what is not JSON (null, a cut body, HTML).
export function parseJson(s) {
  try {
    return JSON.parse(s);
  } catch {
    return null;
  }
}

// A fetch that records each exchange in the array wire, then makes it with
// the process's own fetch. A record: {method, url, reqHeaders: Headers, body
// (the request's, a string or null)}, and once onced answers, status and
// resHeaders: Headers.
//   paths: also path and query, the URL's pathname and search (a REST peer
//   tells its requests apart by them).
//   answers (the default): also text, Promise<string|null>, the answer's body
//   read from a clone beside the caller's own read; an aborted call (a
//   stream the test leaves) rejects it, and text is null.
export function recordingFetch(wire, { paths = false, answers = true } = {}) {
  return async (input, init = {}) => {
    const rec = {
      method: init.method || 'GET',
      url: String(input),
      reqHeaders: new Headers(init.headers || {}),
      body: typeof init.body === 'string' ? init.body : null,
    };
    if (paths) {
      const url = new URL(rec.url);
      rec.path = url.pathname;
      rec.query = url.search;
    }
    wire.push(rec);
    const res = await realFetch(input, init);
    rec.status = res.status;
    rec.resHeaders = res.headers;
    if (answers) rec.text = res.clone().text().catch(() => null);
    return res;
  };
}

// The last record in wire (recordingFetch) of a JSON-RPC request for
// method, or null.
export function lastRpc(wire, method) {
  for (let i = wire.length - 1; i >= 0; i--) {
    const body = parseJson(wire[i].body);
    if (body && body.method === method) return wire[i];
  }
  return null;
}

// The events of an SSE body: {event (its event: line, else "message"), data
// (the parsed JSON of its data: lines, or null)} per block that has data.
export function sseEvents(text) {
  const events = [];
  for (const block of String(text || '').split(/\r?\n\r?\n/)) {
    const lines = block.split(/\r?\n/);
    const data = lines.filter((l) => l.startsWith('data:')).map((l) => l.slice(5).replace(/^ /, ''));
    const ev = lines.find((l) => l.startsWith('event:'));
    if (data.length) events.push({ event: ev ? ev.slice(6).trim() : 'message', data: parseJson(data.join('\n')) });
  }
  return events;
}

// A raw A2A 1.0 JSON-RPC call (A2A-Version: 1.0) to url, with the process's
// own fetch, bounded by timeoutMs: a check that onced answered a result,
// which it answers.
export async function rpc10(url, method, params, timeoutMs) {
  const res = await realFetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    signal: AbortSignal.timeout(timeoutMs),
  });
  const text = await res.text();
  const body = parseJson(text);
  check(body !== null && 'result' in body,
        `1.0 ${method} answers a JSON-RPC result (HTTP ${res.status}, body ${text.slice(0, 400)})`);
  return body.result;
}

// A webhook receiver on loopback, for push configs to point at:
// { posts, port, listen, close }. listen() takes a free port (port) and
// answers once it listens; every request it then gets is answered 200 "{}"
// and kept in posts as {url, headers, body}. close() ends it, and may run
// before listen (a peer hands it to oncedUnderTest as onFinish).
export function webhookReceiver() {
  let server = null;
  const hook = {
    posts: [],
    port: null,
    async listen() {
      hook.port = await freePort();
      server = http.createServer((req, res) => {
        const chunks = [];
        req.on('data', (c) => chunks.push(c));
        req.on('end', () => {
          hook.posts.push({ url: req.url, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
          res.writeHead(200, { 'Content-Type': 'application/json' });
          res.end('{}');
        });
      });
      await new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(hook.port, '127.0.0.1', resolve);
      });
    },
    close() {
      if (server) server.close();
    },
  };
  return hook;
}

// Runs one scenario, fn: "ok   name" when it ends, else "FAIL name". A
// failed check is counted already (harness.mjs, check); any other exception
// (an SDK error where a result was expected) counts one failure, named with
// its JSON-RPC code and data and its cause where it has them. Answers
// whether it passed; the next scenario runs either way.
export async function runScenario(name, fn) {
  try {
    await fn();
    console.log('ok  ', name);
    return true;
  } catch (e) {
    if (!(e instanceof CheckFailed)) {
      tally.failed++;
      const extra = e && e.envelopeCode !== undefined ? ` (JSON-RPC code ${e.envelopeCode}, data ${JSON.stringify(e.data)})` : '';
      const cause = e && e.cause ? ` (cause: ${e.cause.name}: ${e.cause.message})` : '';
      console.error(`FAIL ${name}: ${e && e.name}: ${e && e.message}${extra}${cause}`);
    } else {
      console.error(`FAIL ${name}`);
    }
    return false;
  }
}
