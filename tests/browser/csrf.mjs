// Cross-site request forgery in a real browser (docs/wire.md, "Who may
// call"): Debian's headless Chromium, driven by puppeteer-core, loads a page
// from another loopback origin (another port: another origin, the same
// site) and tries, against an onced without --auth-tokens, every request a
// page can make without a CORS preflight, on both bindings:
//
//   - fetch no-cors POST with a Blob body (no Content-Type: the attack of
//     issue 31), a text body (text/plain), URLSearchParams (a form type)
//     and FormData (multipart);
//   - HTML form submits (urlencoded, multipart, and text/plain carrying a
//     JSON body) into a hidden frame;
//   - fetch in cors mode with application/json (stopped by the preflight);
//
// each to register a task whose push config names the page's collector, to
// attach a push config to an existing task and to cancel it. Then, from
// outside (Node's http, no Origin, like curl or the once client), nothing
// was registered, the existing task is as it was with no push config, and
// the collector heard nothing. The same calls from outside still work.
//
// A second onced with --cors-origin <the page's origin>: the page's cors
// fetch with application/json is answered and the page reads the answer,
// its Idempotent-Replayed header and the card; its no-cors Blob is still
// refused (no Content-Type).
//
// Exit 77 (ctest: skipped) when puppeteer-core or Chromium is missing;
// otherwise the output ends with "N passed, N failed". Every wait is for a
// condition, bounded by a timeout scaled by ONCE_TEST_TIMEOUT_FACTOR.
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { CHROMIUM, endRun, puppeteerOrSkip, runSteps } from './chromium.mjs';
import { check, eq, freePort, reaperGuard, scaled, tally, watchdog } from '../js/harness.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '..', '..');
const ONCED = process.env.ONCED || path.join(ROOT, 'build', 'onced');
const EXT = 'urn:once:a2a:idempotency:v1';

let browser = null;
let tmpdir = null;
const servers = [];     // onced processes
const listeners = [];   // the page's and the collector's Node servers

async function finish() {
  if (browser) await browser.close().catch(() => {});
  for (const l of listeners) l.close();
  for (const { name, proc } of servers) {
    if (proc.exitCode === null && proc.signalCode === null) {
      const exited = new Promise((r) => proc.once('exit', r));
      proc.kill('SIGTERM');
      await exited;
    }
    const log = fs.readFileSync(path.join(tmpdir, `${name}.log`), 'utf8');
    if (/ERROR: AddressSanitizer|ERROR: LeakSanitizer|runtime error:/.test(log)) {
      tally.failed++;
      console.error(`FAIL: ${name} reported a sanitizer error (log in ${tmpdir})`);
    }
  }
  endRun(tmpdir);
}

const puppeteer = await puppeteerOrSkip();
watchdog(scaled(150000), finish);

// ---- the world outside the browser ----

// One request the way a client that is not a browser sends it: Node's http,
// no Origin, no Sec-Fetch-*. Resolves { status, headers, body }.
function plain(base, method, route, body, headers = {}) {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? null : Buffer.from(JSON.stringify(body));
    const req = http.request(`${base}${route}`, {
      method,
      headers: { 'A2A-Version': '1.0', ...(data ? { 'Content-Type': 'application/json' } : {}), ...headers },
    }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c) => { text += c; });
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers,
        body: /json/.test(res.headers['content-type'] || '') ? JSON.parse(text) : text }));
    });
    req.on('error', reject);
    req.end(data);
  });
}

async function rpc(base, method, params, headers) {
  return (await plain(base, 'POST', '/', { jsonrpc: '2.0', id: 1, method, params }, headers)).body;
}

// A Node server on a free loopback port answering every request with
// answer(req, body); its base URL.
async function listen(answer) {
  const port = await freePort();
  const srv = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => { body += c; });
    req.on('end', () => answer(req, res, body));
  });
  await new Promise((r) => srv.listen(port, '127.0.0.1', r));
  listeners.push(srv);
  return `http://127.0.0.1:${port}`;
}

async function startOnced(name, args) {
  const port = await freePort();
  const log = fs.openSync(path.join(tmpdir, `${name}.log`), 'a');
  const proc = spawn(ONCED, ['--listen', `127.0.0.1:${port}`, '--drain-delay', '0', '--store', 'memory:',
    '--push-allow', '127.0.0.1/32', ...args], { stdio: ['ignore', log, log] });
  fs.closeSync(log);
  servers.push({ name, proc });
  const base = `http://127.0.0.1:${port}`;
  const end = Date.now() + scaled(15000);
  for (;;) {
    const up = await plain(base, 'GET', '/healthz').then((r) => r.status === 200, () => false);
    if (up) return base;
    check(Date.now() < end, `${name} to serve`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const message = (text, extra = {}) => ({ messageId: randomUUID(), role: 'ROLE_USER',
  parts: [{ text }], ...extra });

// ---- the attacks, run inside the page (no closure: puppeteer sends the
// function's text) ----

// Every request a page can make without a preflight, and the cors one a
// preflight stops; resolves the list of what was tried and how it ended.
async function attack({ target, hook, victim }) {
  const q = '?A2A-Version=1.0';
  const msg = (n) => ({ messageId: `csrf-${n}`, role: 'ROLE_USER', parts: [{ text: 'planted' }] });
  const push = { url: `${hook}/stolen`, token: 'csrf' };
  const calls = [];
  let n = 0;
  for (const via of ['rpc', 'rest']) {
    const send = () => (via === 'rpc'
      ? { url: `${target}/${q}`, body: { jsonrpc: '2.0', id: 1, method: 'SendMessage',
        params: { message: msg(n++), configuration: { taskPushNotificationConfig: push } } } }
      : { url: `${target}/message:send${q}`,
        body: { message: msg(n++), configuration: { taskPushNotificationConfig: push } } });
    const attach = () => (via === 'rpc'
      ? { url: `${target}/${q}`, body: { jsonrpc: '2.0', id: 1,
        method: 'CreateTaskPushNotificationConfig', params: { taskId: victim, ...push } } }
      : { url: `${target}/tasks/${victim}/pushNotificationConfigs${q}`, body: push });
    const cancel = () => (via === 'rpc'
      ? { url: `${target}/${q}`, body: { jsonrpc: '2.0', id: 1, method: 'CancelTask',
        params: { id: victim } } }
      : { url: `${target}/tasks/${victim}:cancel${q}`, body: null });
    for (const make of [send, attach, cancel]) {
      const bodies = {
        blob: (t) => new Blob([t]),
        text: (t) => t,
        urlencoded: (t) => new URLSearchParams({ json: t }),
        multipart: (t) => { const f = new FormData(); f.append('json', t); return f; },
      };
      for (const [kind, wrap] of Object.entries(bodies)) {
        const { url, body } = make();
        const init = { method: 'POST', mode: 'no-cors' };
        if (body !== null) init.body = wrap(JSON.stringify(body));
        const r = await fetch(url, init).then((res) => res.type, (e) => `rejected: ${e}`);
        calls.push(`${via} no-cors ${kind}: ${r}`);
      }
      for (const enctype of ['application/x-www-form-urlencoded', 'multipart/form-data', 'text/plain']) {
        const { url, body } = make();
        const frame = document.createElement('iframe');
        frame.name = `f${calls.length}`;
        document.body.appendChild(frame);
        const form = document.createElement('form');
        Object.assign(form, { method: 'POST', action: url, enctype, target: frame.name });
        const input = document.createElement('input');
        // text/plain sends name=value: a JSON body whose last member
        // swallows the '='
        const text = JSON.stringify({ ...(body || {}), pad: '' });
        input.name = enctype === 'text/plain' ? text.slice(0, -2) : 'json';
        input.value = enctype === 'text/plain' ? '"}' : text;
        form.appendChild(input);
        document.body.appendChild(form);
        // Loaded from onced (another origin) once its location is unreadable.
        await new Promise((resolve) => {
          frame.onload = () => { try { void frame.contentWindow.location.href; } catch { resolve(); } };
          form.submit();
        });
        calls.push(`${via} form ${enctype}: loaded`);
      }
      const { url, body } = make();
      const r = await fetch(url, { method: 'POST', mode: 'cors',
        headers: { 'Content-Type': 'application/json' },
        body: body === null ? undefined : JSON.stringify(body) })
        .then((res) => `answered ${res.status}`, () => 'rejected');
      calls.push(`${via} cors json: ${r}`);
    }
  }
  return calls;
}

// The calls of a page on an allowed origin: cors fetches with
// application/json on both bindings, read back.
async function allowed({ target, ext, id }) {
  const headers = { 'Content-Type': 'application/json', 'A2A-Version': '1.0', 'A2A-Extensions': ext };
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendMessage',
    params: { message: { messageId: `m-${id}`, taskId: id, role: 'ROLE_USER', parts: [{ text: 'hello' }] } } });
  const first = await fetch(`${target}/`, { method: 'POST', headers, body });
  const doc = await first.json();
  const again = await fetch(`${target}/`, { method: 'POST', headers, body });
  const rest = await fetch(`${target}/message:send`, { method: 'POST', headers,
    body: JSON.stringify({ message: { messageId: `r-${id}`, taskId: `${id}-rest`, role: 'ROLE_USER',
      parts: [{ text: 'hello' }] } }) });
  const restDoc = await rest.json();
  const card = await (await fetch(`${target}/.well-known/agent-card.json`)).json();
  const blob = await fetch(`${target}/?A2A-Version=1.0`, { method: 'POST', mode: 'no-cors',
    body: new Blob([JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendMessage',
      params: { message: { messageId: `b-${id}`, role: 'ROLE_USER', parts: [{ text: 'x' }] } } })]) });
  return { status: first.status, task: doc.result?.task?.id, state: doc.result?.task?.status?.state,
    replayed: again.headers.get('Idempotent-Replayed'), restStatus: rest.status,
    restTask: restDoc.task?.id, card: Array.isArray(card.supportedInterfaces), blob: blob.type };
}

// ---- the run ----

async function main() {
  reaperGuard(ROOT);
  tmpdir = fs.mkdtempSync(path.join(os.tmpdir(), 'once-csrf-'));
  const heard = [];
  const hook = await listen((req, res, body) => { heard.push(`${req.method} ${req.url} ${body}`); res.end(); });
  const page = await listen((req, res) => {
    res.setHeader('Content-Type', 'text/html; charset=utf-8');
    res.end('<!doctype html><title>elsewhere</title><body><p>another origin</p></body>');
  });
  const target = await startOnced('onced', []);
  const open = await startOnced('onced-cors', ['--cors-origin', page]);

  // The task the page goes after: waiting for input, no push config.
  const victim = randomUUID();
  const asked = await rpc(target, 'SendMessage', { message: message('ask:Which one?', { taskId: victim }) },
    { 'A2A-Extensions': EXT });
  eq(asked.result?.task?.status?.state, 'TASK_STATE_INPUT_REQUIRED', 'the victim task, from outside');

  browser = await puppeteer.launch({ executablePath: CHROMIUM, headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
  const tab = await browser.newPage();
  const answers = [];
  tab.on('response', (r) => {
    if (r.url().startsWith(target) && r.request().method() === 'POST') answers.push(r.status());
  });
  await tab.goto(`${page}/`);
  const calls = await tab.evaluate(attack, { target, hook, victim });
  console.log(calls.join('\n'));
  eq(calls.length, 2 * 3 * 8, 'every variant was tried');
  check(calls.filter((c) => c.includes('cors json')).every((c) => c.endsWith('rejected')),
    'a cors fetch with application/json is stopped by its preflight');

  // From outside: nothing registered, the victim untouched, no push config.
  const list = await rpc(target, 'ListTasks', {});
  eq(JSON.stringify((list.result?.tasks || []).map((t) => t.id)), JSON.stringify([victim]),
    'ListTasks: the victim alone, nothing registered from the page');
  const got = await rpc(target, 'GetTask', { id: victim });
  eq(got.result?.status?.state, 'TASK_STATE_INPUT_REQUIRED', 'the victim was not canceled');
  const configs = await rpc(target, 'ListTaskPushNotificationConfigs', { taskId: victim });
  eq(JSON.stringify(configs.result?.configs), '[]', 'no push config stored on the victim');
  eq(heard.length, 0, `the page's collector heard nothing: ${heard.join(' | ')}`);
  check(answers.length > 0 && answers.every((s) => s === 403),
    `onced answered every request that reached it 403: ${answers.join(' ')}`);
  // Clients that are not browsers still change state.
  const canceled = await rpc(target, 'CancelTask', { id: victim });
  eq(canceled.result?.status?.state, 'TASK_STATE_CANCELED', 'a client without Origin cancels');

  // An allowed origin: its page reads the answers.
  await tab.goto(`${page}/`);
  const id = randomUUID();
  const r = await tab.evaluate(allowed, { target: open, ext: EXT, id });
  eq(r.status, 200, 'the allowed page: SendMessage answered');
  eq(r.task, id, 'the allowed page reads the task');
  eq(r.state, 'TASK_STATE_COMPLETED', 'and its state');
  eq(r.replayed, 'true', 'and the exposed Idempotent-Replayed of the retry');
  eq(r.restStatus, 200, 'the HTTP+JSON message:send answered');
  eq(r.restTask, `${id}-rest`, 'the allowed page reads the HTTP+JSON answer');
  check(r.card, 'the allowed page reads the card');
  const openList = await rpc(open, 'ListTasks', {});
  eq(JSON.stringify((openList.result?.tasks || []).map((t) => t.id).sort()),
    JSON.stringify([id, `${id}-rest`].sort()), 'the allowed page registered its two tasks, its Blob none');
}

await runSteps([main], finish);
