// The task inspector in a real browser: Debian's headless Chromium, driven
// by puppeteer-core, against a real onced --inspect --test-admin.
//
// It runs the story's task (docs/design.md section 9, demo/story.py): a send
// whose answer is lost, its retry (replayed: nothing new is stored; the
// journal counts it and the page shows "replayed 1 time"), the
// question the agent asks, the follow-up that answers it, and the 73-hour
// clock jump past --retention. At each point it checks what the pages show:
// the list, the task's state, fence, step, side-effect key, generations and
// events, the retention deadlines, the expired state; that the page reads
// as the story (the timeline above the record, the user's question and
// answer quoted in their rows, the time since the row before, a line on
// fence, version and generation); that the open task
// page follows the task by itself (its script's stream, SubscribeToTask
// under /inspect as the signed-in principal) without a reload; that the
// login cookie is a session no script can read, holding no token; that every page carries the CSP and that the browser
// makes no request to anything but onced (request interception). The
// pictures in docs/img come from screenshots.mjs, not from this test.
//
// Then the takeover of tests/e2e/test_fencing.py: two replicas on one
// SQLite file, A's --exec agent holding the turn (fence 1) until a file
// appears, A frozen with SIGSTOP, B taking the task over (fence 2), A's late
// output refused after SIGCONT. B's task page (B never ran the first turn)
// must show the takeover from A at fence 1 to B at fence 2 and A's refused
// write naming its fence 1 and the task's 2, and B's artifact's file part
// must download (its link fetched from the page) as an attachment holding
// its bytes.
//
// Exit 77 (ctest: skipped) when Node's puppeteer-core or Chromium is not
// installed (scripts/deps.sh installs both); otherwise the output ends with
// "N passed, N failed". Every wait is for a condition, bounded by a timeout
// scaled by ONCE_TEST_TIMEOUT_FACTOR.
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { CHROMIUM, endRun, puppeteerOrSkip, runSteps } from './chromium.mjs';
import { Rig, rpc as rpcAs, signIn, timeline as timelineAs, waitFor } from './rig.mjs';
import { check, eq, scaled, tally } from '../js/harness.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '..', '..');
const ONCED = process.env.ONCED || path.join(ROOT, 'build', 'onced');
const TOKEN = `tok-${randomUUID()}`;
const QUESTION = 'ask:Which jurisdiction governs this contract?';
const ANSWER = 'Swiss law (canton of Zurich)';
const JUMP_MS = 73 * 3600 * 1000;

let browser = null;
let rig = null;
let tmpdir = null;

async function finish() {
  if (browser) await browser.close().catch(() => {});
  if (rig) await rig.stop();
  endRun(tmpdir);
}

// ---- preconditions: skip (77) where the browser or its driver is missing ----

const puppeteer = await puppeteerOrSkip();
if (!fs.existsSync(ONCED)) {
  console.error(`onced binary not found at ${ONCED}`);
  tally.failed++;
  await finish();
}

// ---- onced ----

// The scratch folder, the token file and the reaper's watch: once per run.
function setUp() {
  rig = new Rig(ROOT, ONCED, [[TOKEN, 'orchestrator']]);
  tmpdir = rig.dir;
}

const startOnced = (name, store, args = []) => rig.start(name, store, args);
const rpc = (base, method, params) => rpcAs(base, TOKEN, method, params);
const timeline = (base, id) => timelineAs(base, TOKEN, id);

const text = (page, sel) => page.$eval(sel, (e) => e.textContent.trim());
const rowTexts = (page, sel) => page.$$eval(sel, (rows) => rows.map((r) => r.textContent));
const generations = (page) => page.$$eval('#timeline tr[data-generation]',
  (rows) => rows.map((r) => Number(r.dataset.generation)));

// A browser tab on onced at base that lets through only requests to it
// (outside lists the others), notes the Last-Event-ID of each task stream
// its script opens (streams) and collects its script errors.
async function openPage(base) {
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
    if (req.method() === 'GET' && req.url().startsWith(base + '/inspect/api/stream/')) {
      streams.push(req.headers()['last-event-id']);
    }
    req.continue();
  });
  const scriptErrors = [];
  page.on('pageerror', (e) => scriptErrors.push(String(e)));
  return { page, outside, streams, scriptErrors };
}

// Log page in on onced at base through its login form: it sets the session
// cookie (HttpOnly: no script sees it; no token in it) and leads to the list.
async function login(page, base) {
  await signIn(page, base, TOKEN);
  eq(new URL(page.url()).pathname, '/inspect/', 'the login leads to the list');
  eq(await page.evaluate(() => document.cookie), '', 'the session cookie is out of scripts\' reach');
  const cookies = await page.cookies(`${base}/inspect/`);
  const session = cookies.find((c) => c.name === 'once_session');
  check(session && session.httpOnly && session.sameSite === 'Strict' && !session.value.includes(TOKEN),
    `the session cookie: ${JSON.stringify(cookies)}`);
}

// The task page reads as the story: the timeline above the record, the
// user's question in the first row and the answer in the continuation's row
// (its event is a bare working status: the text comes from the history),
// the time since the row before on every row after the first, and a line on
// fence, version and generation (a tooltip and the legend).
async function storyRows(page) {
  const order = await page.evaluate(() => {
    const tl = document.getElementById('timeline');
    const rec = document.getElementById('f-fence');
    return { before: Boolean(tl.compareDocumentPosition(rec) & Node.DOCUMENT_POSITION_FOLLOWING),
      above: tl.getBoundingClientRect().top < rec.getBoundingClientRect().top };
  });
  check(order.before && order.above, `the timeline above the record: ${JSON.stringify(order)}`);
  const users = await rowTexts(page, '#timeline tr.k-event q.user');
  eq(JSON.stringify(users), JSON.stringify([QUESTION, ANSWER]), "the user's messages in their rows");
  const answered = await page.$$eval('#timeline tr.k-event', (rows) => rows
    .filter((r) => r.textContent.includes('The user answered'))
    .map((r) => ({ gen: Number(r.dataset.generation), state: r.querySelector('.state')?.textContent })));
  eq(JSON.stringify(answered), JSON.stringify([{ gen: 4, state: 'TASK_STATE_WORKING' }]),
    "the continuation's row (generation 4, working) quotes the answer");
  const dts = await page.$$eval('#timeline td.dt', (cells) => cells.map((c) => c.textContent));
  check(dts[0] === '' && dts.length > 4 && dts.slice(1).every((d) => /^\+\d+(\.\d)? (ms|s|min|h|d)/.test(d)),
    `elapsed times: ${dts.join(' | ')}`);
  for (const word of ['Fence', 'Version', 'Generation']) {
    const tip = await page.$$eval('table.facts th[title]', (th, w) => th.some((t) => t.textContent === w &&
      t.title.length > 40), word);
    const line = await page.$$eval('#legend dt', (dt, w) => dt.some((d) => d.textContent === w &&
      d.nextElementSibling.textContent.length > 40), word);
    check(tip && line, `${word}: a tooltip and a line in the legend`);
  }
}

// The download link of each file part of the page: fetched from the page
// (its session cookie goes along), its bytes and headers.
async function downloads(page) {
  return page.$$eval('#artifacts li.p-file a.download[download]', (links) => Promise.all(links.map(async (a) => {
    const r = await fetch(a.href);
    return { name: a.textContent, status: r.status, type: r.headers.get('content-type'),
      disposition: r.headers.get('content-disposition'), nosniff: r.headers.get('x-content-type-options'),
      body: await r.text() };
  })));
}

// ---- the story ----

async function story() {
  const { base } = await startOnced('onced', path.join(tmpdir, 'registry.db'));
  const id = randomUUID();
  const send = { message: { messageId: randomUUID(), taskId: id, role: 'ROLE_USER', parts: [{ text: QUESTION }] } };
  // The first answer is lost: the client never reads it, and retries.
  await rpc(base, 'SendMessage', send);
  const retry = await rpc(base, 'SendMessage', send);
  check(retry.replayed, 'the retry is replayed (Idempotent-Replayed: true)');
  eq(retry.doc.result.task.status.state, 'TASK_STATE_INPUT_REQUIRED', 'the agent asks its question');

  browser = await puppeteer.launch({ executablePath: CHROMIUM, headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
  const { page, outside, streams, scriptErrors } = await openPage(base);

  // Without a token the list asks for one; the login form sets the cookie.
  const res401 = await page.goto(`${base}/inspect/`);
  eq(res401.status(), 401, 'the list without a token');
  await login(page, base);
  const listed = await page.$$eval('#tasks tbody tr', (rows) => rows.map((r) => r.textContent));
  eq(listed.length, 1, 'the list: one task, the retry made none');
  check(listed[0].includes(id) && listed[0].includes('TASK_STATE_INPUT_REQUIRED'),
    `the list row names the task and its state: ${listed[0]}`);

  const res = await Promise.all([page.waitForNavigation(), page.click(`#tasks a[href="/inspect/task/${id}"]`)]);
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
  await storyRows(page);
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

// ---- the takeover (tests/e2e/test_fencing.py), seen in the browser ----

// The --exec agent. A fresh turn checkpoints at step 1, says it holds the
// turn, and blocks until the file "release" appears in argv[1] (for at most
// argv[2] seconds); a resumed turn (the takeover) goes on at once. Then it
// prints its artifact and completion, named after $ONCE_FENCE, and writes
// printed-FENCE with the pid of the shell onced started it under.
const AGENT = `
import base64, json, os, sys, time
folder, bound = sys.argv[1], float(sys.argv[2])
sys.stdin.readline()
fence = os.environ["ONCE_FENCE"]
def emit(o):
    sys.stdout.write(json.dumps(o) + "\\n")
    sys.stdout.flush()
if os.environ["ONCE_RESUMED"] != "1":
    emit({"checkpoint": "half done by fence " + fence, "step": 1})
    emit({"status": "working", "text": "fence " + fence + " holds the turn"})
    end = time.time() + bound
    while not os.path.exists(os.path.join(folder, "release")) and time.time() < end:
        time.sleep(0.05)
report = base64.b64encode(("report of fence " + fence + "\\n").encode()).decode()
emit({"artifact": {"artifactId": "by-fence-" + fence, "name": "report",
                   "parts": [{"text": "fence " + fence},
                             {"raw": report, "filename": "report-" + fence + ".txt", "mediaType": "text/plain"}]},
      "lastChunk": True})
emit({"status": "completed", "text": "done by fence " + fence})
with open(os.path.join(folder, "printed.tmp"), "w") as f:
    f.write(str(os.getppid()))
os.rename(os.path.join(folder, "printed.tmp"), os.path.join(folder, "printed-" + fence))
`;

// The /proc state letter of pid ('T' stopped, 'Z' a zombie), null once gone.
function procState(pid) {
  try {
    return fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(')').pop().trim().split(' ')[0];
  } catch {
    return null;
  }
}

// True if a write transaction can start on the SQLite file db now.
function writeLockFree(db) {
  const probe = 'import sqlite3, sys\n' +
    'c = sqlite3.connect(sys.argv[1], timeout=0.3, isolation_level=None)\n' +
    'try:\n    c.execute("BEGIN IMMEDIATE"); c.execute("ROLLBACK"); print("free")\n' +
    'except sqlite3.OperationalError:\n    print("locked")\n';
  return execFileSync('python3', ['-c', probe, db]).toString().trim() === 'free';
}

// SIGSTOP proc, but never while it holds SQLite's write lock: a replica
// frozen inside a commit would block the other one too (a property of file
// locks, not of fencing), so thaw it and try again.
async function freeze(proc, db) {
  for (let i = 0; i < 20; i++) {
    proc.kill('SIGSTOP');
    await waitFor(async () => procState(proc.pid) === 'T', 5000, 'the replica to stop');
    if (writeLockFree(db)) return;
    proc.kill('SIGCONT');
    await new Promise((r) => setImmediate(r));
  }
  check(false, 'could not freeze the replica outside a write transaction');
}

async function getTask(base, id) {
  return (await rpc(base, 'GetTask', { id })).doc.result;
}


// Two replicas on one SQLite file with a short lease. A's agent holds the
// turn (fence 1); A is frozen; B takes the task over (fence 2) and completes
// it; A's agent prints its late output and A is thawed: its write is
// refused. B's task page (B never ran the first turn) shows the takeover
// and the refused write with both fences.
async function takeover() {
  const folder = fs.mkdtempSync(path.join(tmpdir, 'agent-'));
  fs.writeFileSync(path.join(tmpdir, 'agent.py'), AGENT);
  const db = path.join(tmpdir, 'fencing.db');
  const exec = ['python3', path.join(tmpdir, 'agent.py'), folder, String(scaled(60000) / 1000)]
    .map((w) => `'${w}'`).join(' ');
  // Short, so that the takeover comes quickly; scaled, so that a replica
  // that is merely slow (not frozen) keeps its lease.
  const common = ['--exec', exec, '--lease', `${scaled(1500)}ms`, '--exec-grace', '1s'];
  const a = await startOnced('replica-a', db, [...common, '--replica-id', 'replica-a']);
  const b = await startOnced('replica-b', db, [...common, '--replica-id', 'replica-b']);
  const id = `t-fence-${randomUUID()}`;
  const sent = await rpc(a.base, 'SendMessage', { configuration: { returnImmediately: true },
    message: { messageId: randomUUID(), taskId: id, role: 'ROLE_USER', parts: [{ text: 'long work' }] } });
  eq(sent.doc.result?.task?.id, id, 'replica A registered the task');
  await waitFor(async () => (await getTask(a.base, id)).status.message.parts[0].text ===
    'fence 1 holds the turn', 15000, "A's agent to checkpoint and hold the turn");

  await freeze(a.proc, db);
  await waitFor(async () => (await getTask(b.base, id)).status.state === 'TASK_STATE_COMPLETED',
    25000, 'B to take the task over and complete it');
  // A's agent prints its fence-1 output while A is frozen, and exits; its
  // shell waits, unreaped, for A.
  fs.writeFileSync(path.join(folder, 'release'), '');
  const printed = path.join(folder, 'printed-1');
  await waitFor(async () => fs.existsSync(printed), 15000, "A's agent to print its late output");
  const shell = Number(fs.readFileSync(printed, 'utf8'));
  await waitFor(async () => procState(shell) === 'Z', 10000, `A's command (pid ${shell}) to exit`);
  a.proc.kill('SIGCONT');
  await waitFor(async () => procState(shell) === null, 15000, "A to finish the fenced turn");

  const { page, outside, scriptErrors } = await openPage(b.base);
  await login(page, b.base);
  // The takeover and the refused write reach the task's journal by each
  // replica's sweeper: reload B's page until both rows are there.
  await waitFor(async () => {
    await page.goto(`${b.base}/inspect/task/${id}`);
    return (await page.$('#timeline tr.k-takeover')) && (await page.$('#timeline tr.k-fenced'));
  }, 20000, "the takeover and A's refused write on B's task page");
  eq(await text(page, '#state'), 'TASK_STATE_COMPLETED', "B's page: the task B completed");
  const taken = await rowTexts(page, '#timeline tr.k-takeover');
  eq(taken.length, 1, 'one takeover');
  check(taken[0].includes('takeover: lease of replica-a (fence 1) to replica-b (fence 2)'),
    `the takeover names both owners and fences: ${taken[0]}`);
  const refused = await rowTexts(page, '#timeline tr.k-fenced');
  check(refused.every((r) => /refused (write|lease renewal) of replica-a: its fence 1, the task's 2/.test(r)),
    `A's refused write names both fences: ${refused.join(' | ')}`);
  const turns = await rowTexts(page, '#timeline tr.k-turn');
  check(turns.length === 2 && turns[0].includes('new turn on replica-a, fence 1') &&
    turns[1].includes('resumed turn on replica-b, fence 2'), `the turns: ${turns.join(' | ')}`);
  // B's artifact (A's was refused): its file part downloads as an attachment.
  const files = await downloads(page);
  eq(JSON.stringify(files), JSON.stringify([{ name: 'report-2.txt', status: 200, type: 'text/plain',
    disposition: 'attachment; filename="report-2.txt"', nosniff: 'nosniff', body: 'report of fence 2\n' }]),
  'the artifact\'s file: its bytes, as an attachment');
  eq(outside.length, 0, `requests outside onced: ${outside.join(' ')}`);
  eq(scriptErrors.length, 0, `script errors: ${scriptErrors.join(' ')}`);
}

await runSteps([setUp, story, takeover], finish);
