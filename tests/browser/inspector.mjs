// The task inspector in a real browser: Debian's headless Chromium, driven
// by puppeteer-core, against a real onced --inspect --test-admin.
//
// It runs the story's task (docs/design.md section 9, demo/story.py): a send
// whose answer is lost, its retry (replayed: nothing new is stored; the
// journal counts it and the page shows "replayed 1 time"), the
// question the agent asks, the follow-up that answers it, and the 73-hour
// clock jump past --retention. At each point it checks what the pages show:
// the list, the task's state, fence, step, side-effect key, generations and
// events, the retention deadlines, the expired state; that the open task
// page follows the task by itself (its script's SubscribeToTask stream)
// without a reload; that every page carries the CSP and that the browser
// makes no request to anything but onced (request interception). With
// ONCE_SCREENSHOT=PATH it saves the completed task's page there
// (demo/inspector.png is one).
//
// Exit 77 (ctest: skipped) when Node's puppeteer-core or Chromium is not
// installed (scripts/deps.sh installs both); otherwise the output ends with
// "N passed, N failed". Every wait is for a condition, bounded by a timeout
// scaled by ONCE_TEST_TIMEOUT_FACTOR.
import { execFileSync, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { check, CheckFailed, eq, freePort, scaled, tally } from '../js/harness.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '..', '..');
const ONCED = process.env.ONCED || path.join(ROOT, 'build', 'onced');
const CHROMIUM = process.env.ONCE_CHROMIUM || '/usr/bin/chromium';
const EXT = 'urn:once:a2a:idempotency:v1';
const TOKEN = `tok-${randomUUID()}`;
const QUESTION = 'ask:Which jurisdiction governs this contract?';
const ANSWER = 'Swiss law (canton of Zurich)';
const JUMP_MS = 73 * 3600 * 1000;
const SKIP = 77;

let onced = null;
let browser = null;
let tmpdir = null;

// Stop onced with SIGTERM (so a sanitizer build reports leaks) and fail on
// any sanitizer report in its log.
async function stopOnced() {
  if (!onced || onced.exitCode !== null) return;
  const exited = new Promise((r) => onced.once('exit', r));
  onced.kill('SIGTERM');
  const timer = setTimeout(() => onced.kill('SIGKILL'), scaled(10000));
  await exited;
  clearTimeout(timer);
  const log = fs.readFileSync(path.join(tmpdir, 'onced.log'), 'utf8');
  const report = /ERROR: AddressSanitizer|ERROR: LeakSanitizer|WARNING: ThreadSanitizer|\.c:\d+:\d+: runtime error:/.exec(log);
  if (report) {
    tally.failed++;
    console.error('FAIL: onced reported:', log.slice(Math.max(0, report.index - 200), report.index + 3000));
  } else {
    tally.passed++;
  }
}

async function finish() {
  if (browser) await browser.close().catch(() => {});
  await stopOnced().catch((e) => { tally.failed++; console.error('FAIL: stopping onced:', e); });
  if (tally.failed === 0 && tmpdir) fs.rmSync(tmpdir, { recursive: true, force: true });
  else if (tmpdir) console.error(`onced log kept in ${tmpdir}`);
  console.log(`${tally.passed} passed, ${tally.failed} failed`);
  process.exit(tally.failed ? 1 : 0);
}

// ---- preconditions: skip (77) where the browser or its driver is missing ----

let puppeteer;
try {
  puppeteer = (await import('puppeteer-core')).default;
} catch {
  console.error(`puppeteer-core is not installed in ${HERE}: run "bash scripts/deps.sh"; skipped`);
  process.exit(SKIP);
}
if (!fs.existsSync(CHROMIUM)) {
  console.error(`no Chromium at ${CHROMIUM} (Debian package chromium): skipped`);
  process.exit(SKIP);
}
if (!fs.existsSync(ONCED)) {
  console.error(`onced binary not found at ${ONCED}`);
  tally.failed++;
  await finish();
}

// ---- onced ----

// Every process this script starts ends with it (scripts/reaper.py).
function guard() {
  const line = execFileSync('python3', [path.join(ROOT, 'scripts', 'reaper.py'), 'guard',
    String(process.pid)]).toString().trim();
  const m = /^export (ONCE_REAP_\w+)=1$/.exec(line);
  if (m) process.env[m[1]] = '1';
}

async function waitFor(fn, ms, what) {
  const end = Date.now() + scaled(ms);
  while (Date.now() < end) {
    const v = await fn().catch(() => null);
    if (v) return v;
    await new Promise((r) => setTimeout(r, 50));
  }
  check(false, `timed out waiting for ${what}`);
  return null;
}

async function startOnced() {
  guard();
  tmpdir = fs.mkdtempSync(path.join(os.tmpdir(), 'once-browser-'));
  fs.writeFileSync(path.join(tmpdir, 'tokens'), `${TOKEN} orchestrator\n`);
  const port = await freePort();
  const log = fs.openSync(path.join(tmpdir, 'onced.log'), 'a');
  onced = spawn(ONCED, ['--listen', `127.0.0.1:${port}`,
    '--store', `sqlite:${path.join(tmpdir, 'registry.db')}`, '--inspect', '--test-admin',
    '--auth-tokens', path.join(tmpdir, 'tokens')], { stdio: ['ignore', log, log] });
  fs.closeSync(log);
  const base = `http://127.0.0.1:${port}`;
  await waitFor(async () => (await fetch(`${base}/healthz`)).ok, 15000, 'onced to serve');
  return base;
}

async function rpc(base, method, params) {
  const res = await fetch(`${base}/`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0', 'A2A-Extensions': EXT,
      Authorization: `Bearer ${TOKEN}` },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  return { replayed: res.headers.get('idempotent-replayed') === 'true', doc: await res.json() };
}

async function timeline(base, id) {
  const res = await fetch(`${base}/inspect/api/task/${id}`, { headers: { Authorization: `Bearer ${TOKEN}` } });
  return res.ok ? res.json() : null;
}

const text = (page, sel) => page.$eval(sel, (e) => e.textContent.trim());
const generations = (page) => page.$$eval('#timeline tr[data-generation]',
  (rows) => rows.map((r) => Number(r.dataset.generation)));

// ---- the story ----

async function main() {
  const base = await startOnced();
  const id = randomUUID();
  const send = { message: { messageId: randomUUID(), taskId: id, role: 'ROLE_USER', parts: [{ text: QUESTION }] } };
  // The first answer is lost: the client never reads it, and retries.
  await rpc(base, 'SendMessage', send);
  const retry = await rpc(base, 'SendMessage', send);
  check(retry.replayed, 'the retry is replayed (Idempotent-Replayed: true)');
  eq(retry.doc.result.task.status.state, 'TASK_STATE_INPUT_REQUIRED', 'the agent asks its question');

  browser = await puppeteer.launch({ executablePath: CHROMIUM, headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
  const page = await browser.newPage();
  await page.setViewport({ width: 1200, height: 900 });
  const outside = [];
  const streams = [];
  await page.setRequestInterception(true);
  page.on('request', (req) => {
    if (!req.url().startsWith(base + '/')) {
      outside.push(req.url());
      req.abort();
      return;
    }
    if (req.method() === 'POST' && (req.postData() || '').includes('SubscribeToTask')) {
      streams.push(req.headers()['last-event-id']);
    }
    req.continue();
  });
  const scriptErrors = [];
  page.on('pageerror', (e) => scriptErrors.push(String(e)));

  // Without a token the list asks for one; the login form sets the cookie.
  let res = await page.goto(`${base}/inspect/`);
  eq(res.status(), 401, 'the list without a token');
  await page.goto(`${base}/inspect/login`);
  await page.type('#token', TOKEN);
  await Promise.all([page.waitForNavigation(), page.click('button[type=submit]')]);
  eq(new URL(page.url()).pathname, '/inspect/', 'the login leads to the list');
  const listed = await page.$$eval('#tasks tbody tr', (rows) => rows.map((r) => r.textContent));
  eq(listed.length, 1, 'the list: one task, the retry made none');
  check(listed[0].includes(id) && listed[0].includes('TASK_STATE_INPUT_REQUIRED'),
    `the list row names the task and its state: ${listed[0]}`);

  res = await Promise.all([page.waitForNavigation(), page.click(`#tasks a[href="/inspect/task/${id}"]`)]);
  const csp = res[0].headers()['content-security-policy'] || '';
  check(csp.includes("default-src 'self'") && !csp.includes('unsafe-inline'), `the CSP: ${csp}`);
  eq(await text(page, '#state'), 'TASK_STATE_INPUT_REQUIRED', 'the task page: state');
  eq(await text(page, '#f-fence'), '1', 'fence');
  eq(await text(page, '#f-step'), '0', 'step');
  check((await text(page, '#keys')).includes(`${id}:step-0`), 'the side-effect key');
  const before = await generations(page);
  eq(JSON.stringify(before), JSON.stringify([1, 2, 3]), 'generations 1..3: the replay stored nothing');
  check((await text(page, '#timeline')).includes('Which jurisdiction'), 'the question in the timeline');
  check((await text(page, '#r-tombstone')).includes('finished'), 'no deadline before the task ends');

  // Live: the follow-up arrives from elsewhere; the open page shows it.
  await page.evaluate(() => { window.stillTheSamePage = true; });
  await waitFor(async () => streams.length > 0, 10000, 'the page to open the task stream');
  const follow = await rpc(base, 'SendMessage', { message: { messageId: randomUUID(), taskId: id,
    role: 'ROLE_USER', parts: [{ text: ANSWER }] } });
  eq(follow.doc.result.task.status.state, 'TASK_STATE_COMPLETED', 'the follow-up completes the task');
  await page.waitForFunction(() => document.getElementById('state').textContent === 'TASK_STATE_COMPLETED',
    { timeout: scaled(15000) });
  check(await page.evaluate(() => window.stillTheSamePage === true), 'updated in place, not reloaded');
  eq(streams[0], '3', 'the stream resumed after the generation the page showed (Last-Event-ID)');
  const after = await generations(page);
  check(after.length > 3 && after.every((g, i) => g === i + 1), `generations 1..${after.length}`);
  check((await text(page, '#timeline')).includes(ANSWER), 'the follow-up in the timeline');
  check(/\d{4}-\d\d-\d\dT/.test(await text(page, '#r-tombstone')), 'the tombstone deadline');
  check(/\d{4}-\d\d-\d\dT/.test(await text(page, '#r-forget')), 'the forget deadline');
  // The lost answer's retry: counted in memory, written by the sweeper's
  // next pass (the replay itself stored nothing); the page shows it then.
  await waitFor(async () => (await timeline(base, id))?.replays?.count === 1, 15000,
    'the sweeper to write the replay count');
  await page.reload();
  check((await text(page, '#f-replays')).startsWith('replayed 1 time, last at'),
    `the replay count: ${await text(page, '#f-replays')}`);
  check((await text(page, '#timeline tr.k-replay')).includes('replayed 1 time'), 'the replay in the timeline');
  const turns = await page.$$eval('#timeline tr.k-turn', (rows) => rows.map((r) => r.textContent));
  eq(turns.length, 2, 'two turns: the question and the follow-up');
  check(turns.every((t) => t.includes('new turn on') && t.includes('fence')), `the turns: ${turns.join(' | ')}`);
  if (process.env.ONCE_SCREENSHOT) {
    await page.screenshot({ path: process.env.ONCE_SCREENSHOT, fullPage: true });
  }

  // The clock jump: 73 hours later the ID is a tombstone.
  const jump = await rpc(base, 'once/admin/setClockOffset', { offsetMs: JUMP_MS });
  check(jump.doc.result, `setClockOffset: ${JSON.stringify(jump.doc)}`);
  await waitFor(async () => (await timeline(base, id))?.expired, 15000, 'the sweep to tombstone the task');
  await page.reload();
  eq(await text(page, '#state'), 'TASK_EXPIRED', 'the expired state');
  check((await text(page, '#expired')).includes('TASK_EXPIRED'), 'the page explains it');

  eq(outside.length, 0, `requests outside onced: ${outside.join(' ')}`);
  eq(scriptErrors.length, 0, `script errors: ${scriptErrors.join(' ')}`);
}

try {
  await main();
} catch (e) {
  if (!(e instanceof CheckFailed)) {
    tally.failed++;
    console.error('FAIL:', e && e.stack ? e.stack : e);
  }
}
await finish();
