// upstream_agent_check.mjs -- the self-test of upstream_agent.mjs, the A2A 1.0
// upstream peer the gateway (`onced --upstream URL`) is tested against.
//
// Starts the peer as a child process in five modes and drives it with the
// SDK's own client (@a2a-js/sdk 1.3.0: ClientFactory, sendMessage,
// sendMessageStream, getTask, cancelTask, listTasks, resubscribeTask), plus a
// few raw requests where the SDK client would not show the server's answer:
//
//   A. default (JSON-RPC and HTTP+JSON, streaming): the card, its ETag and
//      304; then every behaviour (echo, ask:, auth:, sleep: and cancel,
//      fail, reject, reply:, chunks:, effect:, SubscribeToTask, a client
//      contextId and ListTasks by contextId, a message to a finished task,
//      the same messageId twice = two tasks) once over each binding, each
//      checked in /counts and /requests; /counts/reset; SIGTERM -> exit 0.
//   B. --bindings rest --no-streaming --card-name NAME --port N: the card,
//      POST / is not served, streaming refused, the SDK client falls back.
//   C. --bindings jsonrpc --dedup-message-id: a repeated first messageId
//      replays (same task, nothing created or run), also concurrently, also
//      for a direct Message and over a stream; SIGINT -> exit 0.
//   D. --delay-answer-ms (large): the work is done while the answer waits.
//   E. --no-list-tasks: ListTasks refused as unsupported on both bindings
//      (SDK client, and raw: -32004, HTTP 400); sends still work.
//
// Every wait is a bound on a condition (scaled by ONCE_TEST_TIMEOUT_FACTOR),
// never a duration an assertion relies on. Output ends with
// "N passed, N failed"; the exit status is non-zero on any failure; a missing
// SDK or express is a failure, never a skip. The peers started here end with
// this script, however it ends (scripts/reaper.py marks their environment).
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { check, CheckFailed, ending, eq, freePort, reaperGuard, scaled, tally } from '../js/harness.mjs';
import { pinnedSdkVersion } from '../js/interop_harness.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '..', '..');
const AGENT = path.join(HERE, 'upstream_agent.mjs');
const SDK_VERSION = '1.3.0';
const CALL_MS = scaled(20000);
const WAIT_MS = scaled(15000);
const WATCHDOG_MS = scaled(120000);

const agents = new Set();

function killAll() {
  for (const a of agents) {
    if (a.proc.exitCode === null && a.proc.signalCode === null) {
      try {
        a.proc.kill('SIGKILL');
      } catch {
        // already gone
      }
    }
  }
}

const { finish, fatal } = ending({ watchdogMs: WATCHDOG_MS, kill: killAll });

// ---- preconditions ----

pinnedSdkVersion(HERE, SDK_VERSION, fatal);
let sdk;
try {
  sdk = {
    ...(await import('@a2a-js/sdk')),
    ...(await import('@a2a-js/sdk/client')),
    errors: await import('@a2a-js/sdk/errors'),
  };
  await import('express');
} catch (e) {
  fatal(`cannot load @a2a-js/sdk or express: ${e && e.stack ? e.stack : e}`);
}
const { ClientFactory, ClientFactoryOptions, Role, TaskState } = sdk;

// ---- helpers ----

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Deep equality, for arrays and objects.
function same(got, want, what) {
  check(JSON.stringify(got) === JSON.stringify(want),
        `${what}: got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
}

async function waitFor(cond, what, ms = WAIT_MS) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await cond();
    if (v) return v;
    if (Date.now() > end) {
      check(false, `${what}: not within ${ms} ms`);
    }
    await sleep(20);
  }
}

async function startAgent(args) {
  const proc = spawn(process.execPath, [AGENT, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  const a = { proc, args, stdout: '', stderr: '', base: null, port: null };
  agents.add(a);
  proc.stdout.on('data', (d) => { a.stdout += d; });
  proc.stderr.on('data', (d) => { a.stderr += d; });
  a.exited = new Promise((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal })));
  const line = await waitFor(() => {
    if (proc.exitCode !== null) {
      check(false, `upstream_agent ${args.join(' ')} exited early (${proc.exitCode}): ${a.stderr}`);
    }
    const nl = a.stdout.indexOf('\n');
    return nl >= 0 ? a.stdout.slice(0, nl) : null;
  }, `upstream_agent ${args.join(' ')} prints its listening line`);
  const m = /^listening (http:\/\/127\.0\.0\.1:(\d+)\/)$/.exec(line);
  check(m !== null, `the first stdout line is "listening http://127.0.0.1:PORT/": ${JSON.stringify(line)}`);
  a.base = m[1];
  a.port = Number(m[2]);
  return a;
}

async function stopAgent(a, sig = 'SIGTERM') {
  a.proc.kill(sig);
  let done = null;
  a.exited.then((r) => { done = r; });
  await waitFor(() => done, `upstream_agent exits on ${sig}`);
  same(done, { code: 0, signal: null }, `${sig}: the peer closed and exited 0`);
  same(a.stdout.split('\n').filter(Boolean).length, 1, 'stdout holds exactly the listening line');
  agents.delete(a);
}

async function getJson(a, p, init) {
  const r = await fetch(new URL(p, a.base), { signal: AbortSignal.timeout(CALL_MS), ...init });
  return r.json();
}
const counts = (a) => getJson(a, '/counts');
const requests = (a) => getJson(a, '/requests');

function userMessage(text, { messageId, taskId, contextId } = {}) {
  const m = {
    messageId: messageId || randomUUID(),
    role: Role.ROLE_USER,
    parts: [{ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: '' }],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
  if (taskId) m.taskId = taskId;
  if (contextId) m.contextId = contextId;
  return m;
}

const HEADERS = { Authorization: 'Bearer upstream-token', 'X-Trace-Id': 'trace-1',
                  'A2A-Extensions': 'urn:example:ext' };
const callOpts = () => ({ signal: AbortSignal.timeout(CALL_MS), serviceParameters: { ...HEADERS } });

const stateName = (s) => TaskState[s] ?? String(s);
const texts = (parts) => (parts || []).filter((p) => p.content?.$case === 'text').map((p) => p.content.value);
const artifactTexts = (task) => (task.artifacts || []).flatMap((x) => texts(x.parts));
const statusText = (task) => texts(task.status?.message?.parts)[0];
const isTask = (r) => r && typeof r.id === 'string' && r.id !== '' && 'status' in r;

function expectState(task, want, what) {
  check(isTask(task), `${what}: a Task (got ${JSON.stringify(task)})`);
  eq(stateName(task.status.state), stateName(want), `${what}: state`);
}

async function collect(iter) {
  const out = [];
  for await (const ev of iter) out.push(ev);
  return out;
}

async function expectError(promise, errorName, what) {
  let err = null;
  try {
    await promise;
  } catch (e) {
    err = e;
  }
  check(err !== null, `${what}: refused`);
  check(err instanceof sdk.errors[errorName], `${what}: ${errorName} (got ${err && err.name}: ${err && err.message})`);
  return err;
}

async function client(a, transport) {
  const options = ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    preferredTransports: [transport],
  });
  return new ClientFactory(options).createFromUrl(a.base);
}

// The wire names of the calls, per binding, as /requests shows them.
const WIRE = {
  jsonrpc: { send: () => 'SendMessage', stream: () => 'SendStreamingMessage', get: () => 'GetTask',
             cancel: () => 'CancelTask', list: () => 'ListTasks', sub: () => 'SubscribeToTask' },
  rest: { send: () => 'REST POST /message:send', stream: () => 'REST POST /message:stream',
          get: (id) => `REST GET /tasks/${id}`, cancel: (id) => `REST POST /tasks/${id}:cancel`,
          list: () => 'REST GET /tasks', sub: (id) => `REST POST /tasks/${id}:subscribe` },
};

// The last recorded request whose method is `method`.
async function lastRequest(a, method) {
  const reqs = await requests(a);
  for (let i = reqs.length - 1; i >= 0; i--) if (reqs[i].method === method) return reqs[i];
  check(false, `/requests holds a ${method} (has ${JSON.stringify(reqs.map((r) => r.method))})`);
  return null;
}

function checkHeaders(r, what) {
  eq(r.headers.authorization, HEADERS.Authorization, `${what}: authorization recorded`);
  eq(r.headers['a2a-version'], '1.0', `${what}: a2a-version recorded`);
  eq(r.headers['x-trace-id'], HEADERS['X-Trace-Id'], `${what}: x-* header recorded`);
  eq(r.headers['a2a-extensions'], HEADERS['A2A-Extensions'], `${what}: a2a-extensions recorded`);
}

// ---- A: the default peer, every behaviour over each binding ----

async function a_card(a) {
  const r = await fetch(new URL('/.well-known/agent-card.json', a.base), { signal: AbortSignal.timeout(CALL_MS) });
  eq(r.status, 200, 'card: 200');
  const etag = r.headers.get('etag');
  check(!!etag, 'card: an ETag');
  const card = await r.json();
  eq(card.name, 'Upstream test agent', 'card: the default name');
  check(typeof card.description === 'string' && card.description.length > 0, 'card: a description');
  same(card.supportedInterfaces, [
    { url: a.base, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
    { url: a.base, protocolBinding: 'HTTP+JSON', protocolVersion: '1.0' },
  ], 'card: both bindings, protocol 1.0, one URL');
  eq(card.capabilities.streaming, true, 'card: streaming');
  eq(card.skills.length, 2, 'card: two skills');
  same([card.defaultInputModes, card.defaultOutputModes], [['text/plain'], ['text/plain']], 'card: modes');
  eq(card.securitySchemes?.bearer?.httpAuthSecurityScheme?.scheme, 'Bearer', 'card: a bearer security scheme');
  const r304 = await fetch(new URL('/.well-known/agent-card.json', a.base),
                           { headers: { 'If-None-Match': etag }, signal: AbortSignal.timeout(CALL_MS) });
  // (Node's fetch adds Cache-Control: no-cache to a conditional request.)
  eq(r304.status, 304, 'card: If-None-Match with its ETag -> 304');
  eq(r304.headers.get('etag'), etag, 'card: the 304 names the ETag');
  const plain = await new Promise((resolve, reject) => {
    http.get(new URL('/.well-known/agent-card.json', a.base), { headers: { 'If-None-Match': etag } }, (res) => {
      res.resume();
      resolve(res.statusCode);
    }).on('error', reject);
  });
  eq(plain, 304, 'card: If-None-Match alone -> 304');
  const r200 = await fetch(new URL('/.well-known/agent-card.json', a.base),
                           { headers: { 'If-None-Match': '"other"' }, signal: AbortSignal.timeout(CALL_MS) });
  eq(r200.status, 200, 'card: another ETag -> 200');
  await r200.arrayBuffer();
  // The SDK client reads it (ProtoJSON) and picks what it is told.
  const c = await client(a, 'HTTP+JSON');
  eq(c.agentCard.securitySchemes?.bearer?.scheme?.$case, 'httpAuthSecurityScheme', 'the SDK parses the card');
}

async function s_echo(a, c, b) {
  const before = await counts(a);
  const msg = userMessage('hello');
  const task = await c.sendMessage({ message: msg }, callOpts());
  expectState(task, TaskState.TASK_STATE_COMPLETED, 'echo');
  same(artifactTexts(task), ['hello'], 'echo: the artifact echoes');
  const after = await counts(a);
  eq(after.tasksCreated - before.tasksCreated, 1, 'echo: one task created');
  eq(after.messages - before.messages, 1, 'echo: one message');
  eq(after.byMessageId[msg.messageId], 1, 'echo: byMessageId');
  same(after.tasks[task.id], { contextId: task.contextId, messages: 1, state: 'TASK_STATE_COMPLETED' },
       'echo: counts.tasks');
  check(after.contexts[task.contextId]?.includes(task.id), 'echo: counts.contexts');
  eq(after.requests - before.requests, 1, 'echo: one A2A request counted');
  const r = await lastRequest(a, WIRE[b].send());
  checkHeaders(r, 'echo');
  eq(r.body?.message?.messageId ?? r.body?.params?.message?.messageId, msg.messageId, 'echo: the body recorded');
  if (b === 'jsonrpc') eq(r.body.method, 'SendMessage', 'echo: the JSON-RPC body');
}

async function s_context(a, c, b) {
  const ctx = `ctx-${randomUUID()}`;
  const t1 = await c.sendMessage({ message: userMessage('first', { contextId: ctx }) }, callOpts());
  const t2 = await c.sendMessage({ message: userMessage('second', { contextId: ctx }) }, callOpts());
  const other = await c.sendMessage({ message: userMessage('elsewhere') }, callOpts());
  eq(t1.contextId, ctx, 'a client contextId on a first message is kept');
  eq(t2.contextId, ctx, 'and again');
  check(other.contextId !== ctx && other.contextId !== '', 'no contextId: the server mints one');
  same((await counts(a)).contexts[ctx], [t1.id, t2.id], 'counts.contexts lists both tasks');
  const list = await c.listTasks({ contextId: ctx, tenant: '', status: 0, pageToken: '' }, callOpts());
  same(list.tasks.map((t) => t.id).sort(), [t1.id, t2.id].sort(), 'ListTasks by contextId: exactly its tasks');
  for (const t of list.tasks) {
    same(texts(t.history?.[0]?.parts), [t.id === t1.id ? 'first' : 'second'], 'ListTasks: each with its history');
    eq(stateName(t.status.state), 'TASK_STATE_COMPLETED', 'ListTasks: each with its state');
  }
  const r = await lastRequest(a, WIRE[b].list());
  if (b === 'rest') eq(r.query.contextId, ctx, 'ListTasks: the contextId filter recorded');
  else eq(r.body.params.contextId, ctx, 'ListTasks: the contextId filter recorded');
  const withArt = await c.listTasks({ contextId: ctx, tenant: '', status: 0, pageToken: '', includeArtifacts: true },
                                    callOpts());
  same(withArt.tasks.map(artifactTexts).sort(), [['first'], ['second']], 'ListTasks includeArtifacts');
}

async function s_interrupted(a, c, b, kind) {
  const before = await counts(a);
  const state = kind === 'ask' ? TaskState.TASK_STATE_INPUT_REQUIRED : TaskState.TASK_STATE_AUTH_REQUIRED;
  const q = await c.sendMessage({ message: userMessage(`${kind}:Which court?`) }, callOpts());
  expectState(q, state, `${kind}: interrupted`);
  eq(statusText(q), 'Which court?', `${kind}: the question in status.message`);
  const polled = await c.getTask({ id: q.id, tenant: '' }, callOpts());
  expectState(polled, state, `${kind}: GetTask shows it`);
  const done = await c.sendMessage({ message: userMessage('Zurich', { taskId: q.id, contextId: q.contextId }) },
                                   callOpts());
  expectState(done, TaskState.TASK_STATE_COMPLETED, `${kind}: the answer completes it`);
  same(artifactTexts(done), ['answer:Zurich'], `${kind}: artifact "answer:" + text`);
  const after = await counts(a);
  eq(after.tasksCreated - before.tasksCreated, 1, `${kind}: one task created`);
  eq(after.messages - before.messages, 2, `${kind}: two messages`);
  same(after.tasks[q.id], { contextId: q.contextId, messages: 2, state: 'TASK_STATE_COMPLETED' },
       `${kind}: counts.tasks`);
  // A message to the finished task: the SDK refuses it, the executor never sees it.
  await expectError(c.sendMessage({ message: userMessage('more', { taskId: q.id }) }, callOpts()),
                    'UnsupportedOperationError', `${kind}: a message to a completed task`);
  eq((await counts(a)).messages, after.messages, `${kind}: the refused message never reached the executor`);
  // Over a stream, an interrupted turn ends the stream.
  if (kind === 'auth') {
    const evs = await collect(c.sendMessageStream({ message: userMessage('auth:Sign in') }, callOpts()));
    const last = evs[evs.length - 1]?.payload;
    eq(last?.$case, 'statusUpdate', 'auth over a stream: ends with a status update');
    eq(stateName(last.value.status.state), 'TASK_STATE_AUTH_REQUIRED', 'auth over a stream: the stream ends there');
  }
  await lastRequest(a, WIRE[b].get(q.id));
}

// D seconds: long enough that a cancel sent right after the send finds the
// task still asleep, on a slow machine too.
const SLEEP_S = scaled(2000) / 1000;

async function s_sleep_cancel(a, c, b) {
  const before = await counts(a);
  const t = await c.sendMessage({ message: userMessage(`sleep:${SLEEP_S}`),
                                  configuration: { returnImmediately: true } }, callOpts());
  check(isTask(t), 'sleep: returnImmediately gives the task');
  await waitFor(async () => (await c.getTask({ id: t.id, tenant: '' }, callOpts())).status.state ===
                  TaskState.TASK_STATE_WORKING, 'sleep: GetTask shows it working');
  const canceled = await c.cancelTask({ id: t.id, tenant: '' }, callOpts());
  expectState(canceled, TaskState.TASK_STATE_CANCELED, 'cancel');
  expectState(await c.getTask({ id: t.id, tenant: '' }, callOpts()), TaskState.TASK_STATE_CANCELED,
              'GetTask after cancel');
  const again = await c.cancelTask({ id: t.id, tenant: '' }, callOpts());
  expectState(again, TaskState.TASK_STATE_CANCELED, 'cancel again: idempotent');
  const after = await counts(a);
  eq(after.cancels - before.cancels, 2, 'counts.cancels: every CancelTask');
  eq(after.tasks[t.id].state, 'TASK_STATE_CANCELED', 'counts.tasks: canceled');
  eq(after.tasksCreated - before.tasksCreated, 1, 'sleep: one task');
  await lastRequest(a, WIRE[b].cancel(t.id));
  // The same sleep over a stream, started after the cancel: working, then
  // the artifact, then completed.
  const evs = await collect(c.sendMessageStream({ message: userMessage(`sleep:${SLEEP_S}`) }, callOpts()));
  same(evs.map((e) => e.payload.$case), ['task', 'statusUpdate', 'artifactUpdate', 'statusUpdate'],
       'sleep over a stream: the events');
  eq(stateName(evs[1].payload.value.status.state), 'TASK_STATE_WORKING', 'sleep: working first');
  same(texts(evs[2].payload.value.artifact.parts), [`slept ${SLEEP_S}`], 'sleep: artifact "slept N"');
  eq(stateName(evs[3].payload.value.status.state), 'TASK_STATE_COMPLETED', 'sleep: then completed');
  await lastRequest(a, WIRE[b].stream());
  // That sleep began after the canceled one and lasted as long, so the
  // canceled one's time is up too: it stayed canceled, with no artifact.
  const late = await c.getTask({ id: t.id, tenant: '' }, callOpts());
  expectState(late, TaskState.TASK_STATE_CANCELED, 'the canceled task stays canceled');
  same(artifactTexts(late), [], 'the canceled task never completed its sleep');
}

async function s_fail_reject_reply(a, c) {
  const before = await counts(a);
  const f = await c.sendMessage({ message: userMessage('fail') }, callOpts());
  expectState(f, TaskState.TASK_STATE_FAILED, 'fail');
  eq(statusText(f), 'upstream failed on purpose', 'fail: its message');
  const r = await c.sendMessage({ message: userMessage('reject') }, callOpts());
  expectState(r, TaskState.TASK_STATE_REJECTED, 'reject');
  eq(statusText(r), 'upstream rejected on purpose', 'reject: its message');
  const msg = userMessage('reply:just words');
  const m = await c.sendMessage({ message: msg }, callOpts());
  check(!isTask(m) && typeof m.messageId === 'string', `reply: a Message, not a Task (${JSON.stringify(m)})`);
  eq(m.role, Role.ROLE_AGENT, 'reply: from the agent');
  same(texts(m.parts), ['just words'], 'reply: its text');
  const after = await counts(a);
  eq(after.tasksCreated - before.tasksCreated, 2, 'fail and reject created tasks, reply did not');
  eq(after.messages - before.messages, 3, 'three messages');
  eq(after.byMessageId[msg.messageId], 1, 'reply: counted by messageId');
  same([after.tasks[f.id].state, after.tasks[r.id].state], ['TASK_STATE_FAILED', 'TASK_STATE_REJECTED'],
       'counts.tasks: failed, rejected');
  // Streamed, the reply is one message event.
  const evs = await collect(c.sendMessageStream({ message: userMessage('reply:streamed') }, callOpts()));
  same(evs.map((e) => e.payload.$case), ['message'], 'reply over a stream: one message');
  same(texts(evs[0].payload.value.parts), ['streamed'], 'reply over a stream: its text');
}

async function s_chunks(a, c) {
  const evs = await collect(c.sendMessageStream({ message: userMessage('chunks:3') }, callOpts()));
  same(evs.map((e) => e.payload.$case),
       ['task', 'statusUpdate', 'artifactUpdate', 'artifactUpdate', 'artifactUpdate', 'statusUpdate'],
       'chunks: the events');
  const chunks = evs.filter((e) => e.payload.$case === 'artifactUpdate').map((e) => e.payload.value);
  same(chunks.map((u) => [texts(u.artifact.parts)[0], !!u.append, !!u.lastChunk]),
       [['c1', false, false], ['c2', true, false], ['c3', true, true]], 'chunks: append and lastChunk');
  eq(new Set(chunks.map((u) => u.artifact.artifactId)).size, 1, 'chunks: one artifact');
  eq(stateName(evs[5].payload.value.status.state), 'TASK_STATE_COMPLETED', 'chunks: completed');
  const id = evs[0].payload.value.id;
  const t = await c.getTask({ id, tenant: '' }, callOpts());
  eq(t.artifacts.length, 1, 'chunks: GetTask shows one artifact');
  same(texts(t.artifacts[0].parts), ['c1', 'c2', 'c3'], 'chunks: GetTask shows the chunks appended');
}

async function s_effects(a, c) {
  const before = await counts(a);
  const k = `pay-${randomUUID().slice(0, 8)}`;
  const t1 = await c.sendMessage({ message: userMessage(`effect:${k}`) }, callOpts());
  const t2 = await c.sendMessage({ message: userMessage(`effect:${k}`) }, callOpts());
  expectState(t1, TaskState.TASK_STATE_COMPLETED, 'effect');
  same(artifactTexts(t1), [`effect ${k}`], 'effect: its artifact');
  check(t1.id !== t2.id, 'effect: two messages, two tasks');
  const after = await counts(a);
  eq(after.effects[k], 2, 'counts.effects: one per run');
  eq(after.tasksCreated - before.tasksCreated, 2, 'effect: two tasks');
}

async function s_subscribe(a, c, b) {
  const t = await c.sendMessage({ message: userMessage('sleep:0.5'), configuration: { returnImmediately: true } },
                                callOpts());
  const evs = await collect(c.resubscribeTask({ id: t.id, tenant: '' }, callOpts()));
  eq(evs[0]?.payload.$case, 'task', 'SubscribeToTask: the task first');
  eq(evs[0].payload.value.id, t.id, 'SubscribeToTask: that task');
  const last = evs[evs.length - 1].payload;
  eq(last.$case, 'statusUpdate', 'SubscribeToTask: ends with a status update');
  eq(stateName(last.value.status.state), 'TASK_STATE_COMPLETED', 'SubscribeToTask: completed');
  check(evs.some((e) => e.payload.$case === 'artifactUpdate'), 'SubscribeToTask: the artifact on the way');
  await lastRequest(a, WIRE[b].sub(t.id));
}

async function s_no_dedup(a, c) {
  const before = await counts(a);
  const msg = userMessage('twice');
  const t1 = await c.sendMessage({ message: msg }, callOpts());
  const t2 = await c.sendMessage({ message: { ...msg } }, callOpts());
  check(t1.id !== t2.id, 'no --dedup-message-id: the same messageId twice is two tasks');
  const after = await counts(a);
  eq(after.tasksCreated - before.tasksCreated, 2, 'two tasks created');
  eq(after.byMessageId[msg.messageId], 2, 'byMessageId counts both');
  eq(after.replays, 0, 'no replays');
}

async function a_requests_log(a) {
  const reqs = await requests(a);
  check(reqs.length > 0 && reqs.length <= 200, `/requests: at most 200 (${reqs.length})`);
  check(reqs.every((r) => typeof r.method === 'string' && r.headers && typeof r.headers === 'object'),
        '/requests: each with a method and headers');
  check(!reqs.some((r) => /counts|requests|agent-card/.test(r.method)), '/requests: only A2A requests');
  for (let i = 0; i < 210; i++) {
    await fetch(new URL('/tasks/none', a.base), { headers: { 'A2A-Version': '1.0' } }).then((r) => r.arrayBuffer());
  }
  const full = await requests(a);
  eq(full.length, 200, '/requests: the last 200');
  eq(full[199].method, 'REST GET /tasks/none', '/requests: the newest last');
  const before = await counts(a);
  const reset = await getJson(a, '/counts/reset', { method: 'POST' });
  eq(reset.ok, true, 'POST /counts/reset');
  const c = await counts(a);
  same(c, { tasksCreated: 0, messages: 0, byMessageId: {}, tasks: {}, contexts: {}, effects: {}, cancels: 0,
            requests: 0, replays: 0, cardFetches: 0 }, '/counts after reset');
  same(await requests(a), [], '/requests after reset');
  check(before.tasksCreated > 0, 'there was something to reset');
}

// ---- B: HTTP+JSON only, no streaming, a name, a port ----

async function b_rest_only() {
  const port = await freePort();
  const a = await startAgent(['--bindings', 'rest', '--no-streaming', '--card-name', 'Peer B', '--port', String(port)]);
  eq(a.port, port, '--port N: listens there');
  const card = await getJson(a, '/.well-known/agent-card.json');
  eq(card.name, 'Peer B', '--card-name');
  eq(card.capabilities.streaming, false, '--no-streaming: capabilities.streaming false');
  same(card.supportedInterfaces.map((i) => i.protocolBinding), ['HTTP+JSON'], '--bindings rest: one interface');
  const rpc = await fetch(a.base, { method: 'POST', headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0' },
                                    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'x' } }) });
  eq(rpc.status, 404, '--bindings rest: POST / (JSON-RPC) is not served');
  await rpc.arrayBuffer();
  const c = await client(a, 'HTTP+JSON');
  const t = await c.sendMessage({ message: userMessage('hello') }, callOpts());
  expectState(t, TaskState.TASK_STATE_COMPLETED, 'REST only: SendMessage');
  // The server refuses streams (the SDK client would fall back by itself).
  const r = await fetch(new URL('/message:stream', a.base), {
    method: 'POST', headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0' },
    body: JSON.stringify({ message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text: 'hi' }] } }),
  });
  const body = await r.json();
  check(r.status >= 400 && !String(r.headers.get('content-type')).startsWith('text/event-stream'),
        `--no-streaming: message:stream refused (HTTP ${r.status})`);
  check(JSON.stringify(body).includes('UNSUPPORTED_OPERATION'), `--no-streaming: UnsupportedOperation (${JSON.stringify(body)})`);
  await expectError(collect(c.resubscribeTask({ id: t.id, tenant: '' }, callOpts())), 'UnsupportedOperationError',
                    '--no-streaming: SubscribeToTask refused');
  const evs = await collect(c.sendMessageStream({ message: userMessage('fallback') }, callOpts()));
  same(evs.map((e) => e.payload.$case), ['task'], '--no-streaming: the SDK client falls back to SendMessage');
  const cnt = await counts(a);
  eq(cnt.tasksCreated, 2, 'the refused stream created nothing');
  const reqs = await requests(a);
  check(reqs.some((q) => q.method === 'REST POST /'), 'the JSON-RPC attempt is recorded as REST POST /');
  await stopAgent(a);
}

// ---- C: JSON-RPC only, dedup by messageId ----

async function c_dedup() {
  const a = await startAgent(['--bindings', 'jsonrpc', '--dedup-message-id']);
  const card = await getJson(a, '/.well-known/agent-card.json');
  same(card.supportedInterfaces.map((i) => i.protocolBinding), ['JSONRPC'], '--bindings jsonrpc: one interface');
  const rest = await fetch(new URL('/tasks/x', a.base), { headers: { 'A2A-Version': '1.0' } });
  eq(rest.status, 404, '--bindings jsonrpc: HTTP+JSON is not served');
  await rest.arrayBuffer();
  const c = await client(a, 'JSONRPC');
  const msg = userMessage('effect:once');
  const t1 = await c.sendMessage({ message: msg }, callOpts());
  const t2 = await c.sendMessage({ message: { ...msg } }, callOpts());
  eq(t2.id, t1.id, 'dedup: the same messageId gets the same task');
  expectState(t2, TaskState.TASK_STATE_COMPLETED, 'dedup: the replay shows its state');
  let cnt = await counts(a);
  same([cnt.tasksCreated, cnt.messages, cnt.byMessageId[msg.messageId], cnt.effects.once, cnt.replays],
       [1, 1, 1, 1, 1], 'dedup: created, received and run once; one replay');
  // Concurrently: both answers name one task.
  const cm = userMessage('sleep:0.3');
  const [p1, p2] = await Promise.all([c.sendMessage({ message: cm }, callOpts()),
                                      c.sendMessage({ message: { ...cm } }, callOpts())]);
  eq(p1.id, p2.id, 'dedup, concurrent: one task');
  cnt = await counts(a);
  same([cnt.tasksCreated, cnt.byMessageId[cm.messageId], cnt.replays], [2, 1, 2], 'dedup, concurrent: one created');
  await waitFor(async () => (await counts(a)).tasks[p1.id].state === 'TASK_STATE_COMPLETED',
                'dedup, concurrent: the task completes');
  // A direct Message is replayed as that Message.
  const rm = userMessage('reply:once only');
  const m1 = await c.sendMessage({ message: rm }, callOpts());
  const m2 = await c.sendMessage({ message: { ...rm } }, callOpts());
  eq(m2.messageId, m1.messageId, 'dedup: a reply replays the same Message');
  // Over a stream, a replay of a finished task is that task.
  const evs = await collect(c.sendMessageStream({ message: { ...msg } }, callOpts()));
  same(evs.map((e) => [e.payload.$case, e.payload.value.id]), [['task', t1.id]], 'dedup over a stream: the task');
  // A continuation is not a first message: never deduplicated away.
  const q = await c.sendMessage({ message: userMessage('ask:Why?') }, callOpts());
  const cont = userMessage('because', { taskId: q.id });
  const done = await c.sendMessage({ message: cont }, callOpts());
  expectState(done, TaskState.TASK_STATE_COMPLETED, 'dedup: a continuation runs');
  cnt = await counts(a);
  eq(cnt.tasks[q.id].messages, 2, 'dedup: the continuation counted on its task');
  eq(cnt.replays, 4, 'dedup: four replays in all');
  // A new messageId, a new task.
  const t3 = await c.sendMessage({ message: userMessage('effect:once') }, callOpts());
  check(t3.id !== t1.id, 'dedup: a new messageId is a new task');
  eq((await counts(a)).effects.once, 2, 'dedup: and runs again');
  await stopAgent(a, 'SIGINT');
}

// ---- D: a late answer ----

async function d_delay() {
  const a = await startAgent(['--delay-answer-ms', String(scaled(600000))]);
  const c = await client(a, 'JSONRPC');
  const ac = new AbortController();
  const msg = userMessage('effect:late');
  let settled = null;
  const p = c.sendMessage({ message: msg }, { signal: ac.signal }).then(
    (v) => { settled = { value: v }; }, (e) => { settled = { error: e }; });
  const id = await waitFor(async () => {
    const cnt = await counts(a);
    return Object.entries(cnt.tasks).find(([, t]) => t.state === 'TASK_STATE_COMPLETED')?.[0];
  }, '--delay-answer-ms: the task completes');
  eq(settled, null, '--delay-answer-ms: the work is done, the answer is not there yet');
  eq((await counts(a)).effects.late, 1, '--delay-answer-ms: the effect ran');
  ac.abort();
  await p;
  check(settled && settled.error, '--delay-answer-ms: the client gave up');
  const polled = await fetch(a.base, {
    method: 'POST', headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'GetTask', params: { id } }),
  }).then((r) => r.json());
  eq(polled.result?.status?.state, 'TASK_STATE_COMPLETED', '--delay-answer-ms: GetTask is not delayed');
  await stopAgent(a);
}

// ---- E: no ListTasks ----

async function e_no_list() {
  const a = await startAgent(['--no-list-tasks']);
  for (const transport of ['JSONRPC', 'HTTP+JSON']) {
    const c = await client(a, transport);
    const t = await c.sendMessage({ message: userMessage('hello') }, callOpts());
    expectState(t, TaskState.TASK_STATE_COMPLETED, `--no-list-tasks, ${transport}: SendMessage works`);
    await expectError(c.listTasks({ contextId: t.contextId, tenant: '', status: 0, pageToken: '' }, callOpts()),
                      'UnsupportedOperationError', `--no-list-tasks, ${transport}: ListTasks refused`);
  }
  const rpc = await getJson(a, '/', {
    method: 'POST', headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ListTasks', params: {} }),
  });
  eq(rpc.error?.code, -32004, '--no-list-tasks: JSON-RPC ListTasks answers -32004 UnsupportedOperation');
  const rest = await fetch(new URL('/tasks?pageSize=1', a.base), { headers: { 'A2A-Version': '1.0' } });
  eq(rest.status, 400, '--no-list-tasks: GET /tasks answers 400');
  check(JSON.stringify(await rest.json()).includes('UNSUPPORTED_OPERATION'), '--no-list-tasks: REST says why');
  eq((await counts(a)).tasksCreated, 2, '--no-list-tasks: the sends were counted');
  await stopAgent(a);
}

// ---- main ----

async function run(name, fn) {
  try {
    await fn();
    console.log('ok  ', name);
  } catch (e) {
    if (!(e instanceof CheckFailed)) {
      tally.failed++;
      console.error('FAIL', name, e && e.stack ? e.stack : e);
    } else {
      console.error('FAIL', name);
    }
  }
}

// Whatever ends this script, the peers it starts end with it.
if (!reaperGuard(ROOT)) fatal('scripts/reaper.py guard handed out no marker');
let A = null;
await run('A: start', async () => { A = await startAgent([]); });
if (A) {
  await run('A: card', () => a_card(A));
  for (const [b, transport] of [['jsonrpc', 'JSONRPC'], ['rest', 'HTTP+JSON']]) {
    let c = null;
    await run(`A/${b}: client`, async () => { c = await client(A, transport); });
    if (!c) continue;
    await run(`A/${b}: echo`, () => s_echo(A, c, b));
    await run(`A/${b}: client contextId, ListTasks`, () => s_context(A, c, b));
    await run(`A/${b}: ask`, () => s_interrupted(A, c, b, 'ask'));
    await run(`A/${b}: auth`, () => s_interrupted(A, c, b, 'auth'));
    await run(`A/${b}: sleep, cancel`, () => s_sleep_cancel(A, c, b));
    await run(`A/${b}: fail, reject, reply`, () => s_fail_reject_reply(A, c, b));
    await run(`A/${b}: chunks`, () => s_chunks(A, c, b));
    await run(`A/${b}: effects`, () => s_effects(A, c, b));
    await run(`A/${b}: SubscribeToTask`, () => s_subscribe(A, c, b));
    await run(`A/${b}: no dedup`, () => s_no_dedup(A, c, b));
  }
  await run('A: /requests, /counts/reset', () => a_requests_log(A));
  await run('A: SIGTERM', () => stopAgent(A));
}
await run('B: --bindings rest --no-streaming', b_rest_only);
await run('C: --bindings jsonrpc --dedup-message-id', c_dedup);
await run('D: --delay-answer-ms', d_delay);
await run('E: --no-list-tasks', e_no_list);
for (const a of agents) {
  if (tally.failed) console.error(`--- upstream_agent ${a.args.join(' ')} stderr:\n${a.stderr.slice(-3000)}`);
}
finish();
