// screenshots.mjs -- the inspector's pictures in docs/img, made again from
// a real run (scripts/inspector-screenshots.sh runs it; nothing in ctest):
// onced --inspect with an --exec agent that plays the demo's contract
// review (docs/design.md section 9) in miniature: it reads the contract,
// asks which jurisdiction governs it, and after the answer files its review
// as an artifact (a text, a Markdown file, a JSON summary). The send whose
// answer was lost is retried (a replay); two more contracts wait in the
// list. Headless Chromium signs in through the login form and saves:
//
//   docs/img/inspector-list.png   the task list
//   docs/img/inspector-task.png   the story's task page, whole
//
// ONCE_SCREENSHOT_DIR=DIR writes them elsewhere; ONCED names the binary
// (default build/onced). Every wait is for a condition, bounded.
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { CHROMIUM, endRun, puppeteerOrSkip, runSteps } from './chromium.mjs';
import { Rig, rpc as rpcAs, signIn, timeline, waitFor } from './rig.mjs';
import { check, eq } from '../js/harness.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '..', '..');
const ONCED = process.env.ONCED || path.join(ROOT, 'build', 'onced');
const OUT = process.env.ONCE_SCREENSHOT_DIR || path.join(ROOT, 'docs', 'img');
const TOKEN = `tok-${randomUUID()}`;
const CONTRACT = 'Supply agreement between Acme AG and Globex Ltd; clause 1: delivery within 30 days; ' +
  'clause 2: payment within 60 days; clause 3: liability capped at the order value';
const ANSWER = 'Swiss law (canton of Zurich)';

// The reviewer: turn 1 reads and asks; turn 2 (the continuation, its
// checkpoint says it asked) files the review.
const AGENT = `
import base64, json, sys
def emit(o):
    sys.stdout.write(json.dumps(o) + "\\n")
    sys.stdout.flush()
turn = json.loads(sys.stdin.readline())
text = "".join(p.get("text", "") for p in turn["message"]["parts"])
if not turn.get("checkpoint"):
    emit({"status": "working", "text": "reading the contract (%d characters)" % len(text)})
    clauses = [c for c in text.split(";") if c.strip()]
    emit({"checkpoint": json.dumps({"clauses": len(clauses)}), "step": 1})
    emit({"status": "working", "text": "extracted %d clauses" % len(clauses)})
    emit({"checkpoint": json.dumps({"asked": True}), "step": 2})
    emit({"status": "input-required", "text": "Which jurisdiction governs this contract?"})
else:
    emit({"status": "working", "text": "resuming the review under " + text})
    review = "# Review\\n\\nGoverning law: %s.\\n\\nNo blocking issues.\\n" % text
    emit({"checkpoint": json.dumps({"reviewed": True}), "step": 3})
    emit({"artifact": {"artifactId": "review", "name": "contract review",
                       "description": "the reviewed contract",
                       "parts": [{"text": "Reviewed under %s: no blocking issues." % text},
                                 {"raw": base64.b64encode(review.encode()).decode(),
                                  "filename": "review.md", "mediaType": "text/markdown"},
                                 {"data": {"jurisdiction": text, "blockingIssues": 0},
                                  "mediaType": "application/json"}]},
          "lastChunk": True})
    emit({"status": "completed", "text": "review filed"})
`;

let browser = null;
let rig = null;

async function finish() {
  if (browser) await browser.close().catch(() => {});
  if (rig) await rig.stop();
  endRun(rig ? rig.dir : null);
}

const puppeteer = await puppeteerOrSkip();

async function run() {
  check(fs.existsSync(ONCED), `onced binary at ${ONCED}`);
  rig = new Rig(ROOT, ONCED, [[TOKEN, 'orchestrator']]);
  fs.writeFileSync(path.join(rig.dir, 'reviewer.py'), AGENT);
  const { base } = await rig.start('onced', path.join(rig.dir, 'registry.db'),
    ['--exec', `python3 '${path.join(rig.dir, 'reviewer.py')}'`]);
  const rpc = (method, params) => rpcAs(base, TOKEN, method, params);
  const send = (id, text, messageId = randomUUID()) => rpc('SendMessage', {
    message: { messageId, taskId: id, role: 'ROLE_USER', parts: [{ text }] } });
  const state = async (id) => (await rpc('GetTask', { id })).doc.result?.status?.state;

  const id = `t-${randomUUID()}`;
  const first = randomUUID();
  await send(id, CONTRACT, first);
  await waitFor(async () => (await state(id)) === 'TASK_STATE_INPUT_REQUIRED', 15000, 'the question');
  // The first answer was lost: the client sends the same message again.
  check((await send(id, CONTRACT, first)).replayed, 'the retry is a replay');
  await send(id, ANSWER);
  await waitFor(async () => (await state(id)) === 'TASK_STATE_COMPLETED', 15000, 'the review');
  await waitFor(async () => (await timeline(base, TOKEN, id))?.replays?.count === 1, 15000,
    'the sweeper to write the replay count');
  for (const other of ['Lease of the Basel office; clause 1: term 5 years',
    'Licence of the Globex trade mark; clause 1: territory Europe']) {
    const oid = `t-${randomUUID()}`;
    await send(oid, other);
    await waitFor(async () => (await state(oid)) === 'TASK_STATE_INPUT_REQUIRED', 15000, 'its question');
  }

  browser = await puppeteer.launch({ executablePath: CHROMIUM, headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
  const page = await browser.newPage();
  await page.setViewport({ width: 1100, height: 700, deviceScaleFactor: 1 });
  await signIn(page, base, TOKEN);
  eq(await page.$$eval('#tasks tbody tr', (rows) => rows.length), 3, 'the list: three tasks');
  fs.mkdirSync(OUT, { recursive: true });
  const bottom = await page.$eval('#tasks', (t) => Math.ceil(t.getBoundingClientRect().bottom) + 24);
  await page.screenshot({ path: path.join(OUT, 'inspector-list.png'),
    clip: { x: 0, y: 0, width: 1100, height: Math.min(bottom, 700) } });
  await page.goto(`${base}/inspect/task/${id}`);
  check((await page.$$eval('#timeline q.user', (q) => q.map((e) => e.textContent))).includes(ANSWER),
    'the answer in the timeline');
  check(await page.$('#artifacts a.download'), 'the artifact with its download links');
  await page.screenshot({ path: path.join(OUT, 'inspector-task.png'), fullPage: true });
  console.log(`wrote ${path.join(OUT, 'inspector-list.png')} and inspector-task.png`);
}

await runSteps([run], finish);
