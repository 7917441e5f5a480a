// Interop: the once client CLI (build/once) against a real A2A 1.0 server
// built with @a2a-js/sdk 1.3.0: DefaultRequestHandler + InMemoryTaskStore
// behind the SDK's express JSON-RPC handler and agent-card handler.
//
// The agent executor here: "hello" (any plain text) completes with an
// artifact echoing it; "ask:Q" asks Q (input-required) and completes with
// the answer on the next turn; "sleep:N" works for N seconds unless it is
// canceled first. Its card declares streaming but not the idempotency
// extension, so `once` runs as a plain A2A 1.0 client: no taskId on a first
// message (the server mints the task ID), the minted ID is the messageId.
//
// Every request the server receives is recorded (method, A2A headers,
// params) so the test checks what once put on the wire, not only what it
// printed. The CLI runs as a child process (asynchronously: the server
// lives in this process's event loop) with a fresh outbox in a temporary
// folder. Output ends with "N passed, N failed"; the exit status is
// non-zero on any failure; a missing SDK, express or once binary is a
// failure, never a skip.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { check, CheckFailed, scaled, tally, watchdog } from '../js/harness.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '..', '..');
const BUILD = process.env.ONCE_BUILD || path.join(ROOT, 'build');
const ONCE = path.join(BUILD, 'once');
const SDK_DIR = path.join(HERE, 'node_modules', '@a2a-js', 'sdk');
const SDK_VERSION = '1.3.0';
const EXT = 'urn:once:a2a:idempotency:v1';
const WATCHDOG_MS = scaled(55000);

let tmpdir = null;
let server = null;

// Deep: the values compared here are arrays and objects.
function eq(got, want, what) {
  check(JSON.stringify(got) === JSON.stringify(want),
        `${what}: got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
}

function finish() {
  if (server) server.close();
  if (tmpdir && tally.failed === 0) fs.rmSync(tmpdir, { recursive: true, force: true });
  else if (tmpdir) console.error(`outboxes kept in ${tmpdir}`);
  console.log(`${tally.passed} passed, ${tally.failed} failed`);
  process.exit(tally.failed ? 1 : 0);
}

function fatal(msg) {
  tally.failed++;
  console.error('FAIL:', msg);
  finish();
}

watchdog(WATCHDOG_MS, finish);

// ---- preconditions ----

const pj = path.join(SDK_DIR, 'package.json');
if (!fs.existsSync(pj)) {
  fatal(`@a2a-js/sdk is not installed (${SDK_DIR} missing): run "npm ci" in ${HERE} or scripts/deps.sh`);
}
const sdkVersion = JSON.parse(fs.readFileSync(pj, 'utf8')).version;
if (sdkVersion !== SDK_VERSION) fatal(`@a2a-js/sdk ${sdkVersion} installed, this test pins ${SDK_VERSION}`);
if (!fs.existsSync(ONCE)) fatal(`once binary not found at ${ONCE} (set ONCE_BUILD or build it)`);

let sdk, srv, expressSdk, express;
try {
  sdk = await import('@a2a-js/sdk');
  srv = await import('@a2a-js/sdk/server');
  expressSdk = await import('@a2a-js/sdk/server/express');
  express = (await import('express')).default;
} catch (e) {
  fatal(`cannot load @a2a-js/sdk or express: ${e && e.stack ? e.stack : e}`);
}
const { Role, TaskState } = sdk;
const { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } = srv;
const { agentCardHandler, jsonRpcHandler, UserBuilder } = expressSdk;

// ---- the agent ----

const now = () => new Date().toISOString();
const textPart = (text) => ({ content: { $case: 'text', value: text }, mediaType: 'text/plain',
                              filename: '', metadata: {} });
const agentMessage = (taskId, contextId, text) => ({
  messageId: `m-${Math.random().toString(16).slice(2)}`, contextId, taskId, role: Role.ROLE_AGENT,
  parts: [textPart(text)], metadata: {}, extensions: [], referenceTaskIds: [],
});
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

class Executor {
  constructor() {
    this.canceled = new Set();
    this.asked = new Set();
    this.contexts = new Map();
    this.executions = [];   // [taskId, text] of every turn
  }

  async execute(ctx, bus) {
    const { taskId, contextId } = ctx;
    const msg = ctx.userMessage;
    const text = (msg.parts.find((p) => p.content?.$case === 'text')?.content.value) ?? '';
    const asked = this.asked.has(taskId);
    this.executions.push([taskId, text]);
    this.contexts.set(taskId, contextId);
    const status = (state, said) => AgentEvent.statusUpdate({
      taskId, contextId, metadata: {},
      status: { state, timestamp: now(), message: said ? agentMessage(taskId, contextId, said) : undefined },
    });
    const artifact = (t) => AgentEvent.artifactUpdate({
      taskId, contextId, append: false, lastChunk: true, metadata: {},
      artifact: { artifactId: 'echo', name: 'echo', description: '', parts: [textPart(t)],
                  metadata: {}, extensions: [] },
    });
    // Every turn starts with the Task (the SDK insists); a continuation's
    // is the stored one, at work again.
    bus.publish(AgentEvent.task(ctx.task
      ? { ...ctx.task, status: { state: TaskState.TASK_STATE_WORKING, timestamp: now() } }
      : { id: taskId, contextId, status: { state: TaskState.TASK_STATE_SUBMITTED, timestamp: now() },
          artifacts: [], history: [msg], metadata: {} }));
    bus.publish(status(TaskState.TASK_STATE_WORKING));
    if (asked) {
      bus.publish(artifact(`answer: ${text}`));
      bus.publish(status(TaskState.TASK_STATE_COMPLETED, 'thanks'));
    } else if (text.startsWith('ask:')) {
      this.asked.add(taskId);   // the next turn is the answer
      bus.publish(status(TaskState.TASK_STATE_INPUT_REQUIRED, text.slice(4)));
    } else if (text.startsWith('sleep:')) {
      const end = Date.now() + 1000 * Number(text.slice(6));
      while (Date.now() < end && !this.canceled.has(taskId)) await sleep(50);
      if (!this.canceled.has(taskId)) {
        bus.publish(artifact(text));
        bus.publish(status(TaskState.TASK_STATE_COMPLETED));
      }
    } else {
      bus.publish(artifact(text));
      bus.publish(status(TaskState.TASK_STATE_COMPLETED));
    }
    bus.finished();
  }

  async cancelTask(taskId, bus) {
    this.canceled.add(taskId);
    bus.publish(AgentEvent.statusUpdate({
      taskId, contextId: this.contexts.get(taskId) ?? '', metadata: {},
      status: { state: TaskState.TASK_STATE_CANCELED, timestamp: now() },
    }));
  }
}

// ---- the server ----

const store = new InMemoryTaskStore();
const executor = new Executor();
const received = [];   // {method, version, extensions, params}

async function startServer() {
  const app = express();
  const card = {
    name: 'sdk-echo', description: 'echo, ask and sleep, on @a2a-js/sdk', version: '1.0.0',
    supportedInterfaces: [], provider: undefined,
    capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: {}, securityRequirements: [], defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'], signatures: [],
    skills: [{ id: 'echo', name: 'echo', description: 'echoes', tags: ['test'], examples: [],
               inputModes: [], outputModes: [], securityRequirements: [] }],
  };
  const handler = new DefaultRequestHandler(card, store, executor);
  app.use(express.json({ limit: '1mb' }), (req, res, next) => {
    if (req.method === 'POST') {
      received.push({ method: req.body?.method, version: req.get('A2A-Version') ?? null,
                      extensions: req.get('A2A-Extensions') ?? null, accept: req.get('Accept'),
                      lastEventId: req.get('Last-Event-ID') ?? null, params: req.body?.params });
    }
    next();
  });
  app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: handler }));
  app.use('/', jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
  await new Promise((resolve) => { server = app.listen(0, '127.0.0.1', resolve); });
  const base = `http://127.0.0.1:${server.address().port}/`;
  card.supportedInterfaces = [{ url: base, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' }];
  return base;
}

// ---- the client ----

function once(outbox, ...args) {
  return new Promise((resolve) => {
    execFile(ONCE, ['--outbox', outbox, ...args], { timeout: scaled(30000), env: { ...process.env, XDG_STATE_HOME: tmpdir } },
             (err, stdout, stderr) => {
               const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
               resolve({ code, stdout, stderr });
             });
  });
}

async function onceJson(outbox, ...args) {
  const r = await once(outbox, '--json', ...args);
  let doc = null;
  try {
    doc = JSON.parse(r.stdout);
  } catch {
    check(false, `once ${args.join(' ')}: not JSON (exit ${r.code}): ${r.stdout} / ${r.stderr}`);
  }
  return { code: r.code, doc, stderr: r.stderr };
}

const artifactTexts = (task) => (task.artifacts ?? []).flatMap((a) => a.parts.map((p) => p.text));
const statusText = (task) => task.status?.message?.parts?.[0]?.text;
const calls = (method) => received.filter((r) => r.method === method);

// ---- scenarios ----

async function s1_send_wait_completes(url, outbox) {
  const before = received.length;
  const { code, doc } = await onceJson(outbox, 'send', '--agent', url, '--text', 'hello', '--wait');
  eq(code, 0, 'send --wait: exit 0');
  eq(doc.outcome, 'ok', 'outcome');
  eq(doc.state, 'TASK_STATE_COMPLETED', 'the task completed');
  eq(artifactTexts(doc.task), ['hello'], 'the echo artifact');
  const sends = received.slice(before).filter((r) => r.method === 'SendMessage');
  eq(sends.length, 1, 'one SendMessage');
  const m = sends[0].params.message;
  eq(sends[0].version, '1.0', 'A2A-Version: 1.0');
  eq(sends[0].extensions, null, 'plain mode: no A2A-Extensions header (the card does not declare it)');
  eq(m.taskId, undefined, 'plain mode: no taskId on a first message');
  eq(m.role, 'ROLE_USER', 'role');
  eq(m.parts, [{ text: 'hello' }], 'parts');
  check(doc.taskId !== m.messageId && /^[0-9a-f-]{36}$/.test(doc.taskId),
        `the server minted the task ID (${doc.taskId}), the messageId is ours (${m.messageId})`);
  eq(executor.executions.filter(([t]) => t === doc.taskId).length, 1, 'executed once');
  const { doc: ob } = await onceJson(outbox, 'outbox');
  const it = ob.intents.find((i) => i.messageId === m.messageId);
  eq([it.mode, it.taskId, it.state], ['plain', doc.taskId, 'final'],
     'the outbox: plain mode, the server\'s task ID learnt, final');
}

async function s2_ask_then_continue(url, outbox) {
  let { code, doc } = await onceJson(outbox, 'send', '--agent', url, '--text', 'ask:Which court?', '--wait');
  eq(code, 0, 'send --wait stops at input-required: exit 0');
  eq(doc.state, 'TASK_STATE_INPUT_REQUIRED', 'input-required');
  eq(statusText(doc.task), 'Which court?', 'the question');
  const id = doc.taskId;
  const before = received.length;
  ({ code, doc } = await onceJson(outbox, 'continue', id, '--text', 'Zurich', '--wait'));
  eq(code, 0, 'continue --wait: exit 0');
  eq(doc.state, 'TASK_STATE_COMPLETED', 'completed after the answer');
  eq(artifactTexts(doc.task), ['answer: Zurich'], 'the answer artifact');
  const cont = received.slice(before).filter((r) => r.method === 'SendMessage');
  eq(cont.length, 1, 'one continuation sent');
  eq(cont[0].params.message.taskId, id, 'the continuation names the task');
  // Once terminal, another message is refused and not retried.
  const n = calls('SendMessage').length;
  ({ code, doc } = await onceJson(outbox, 'continue', id, '--text', 'more'));
  eq(code, 3, 'a message to a completed task: refused, exit 3');
  eq([doc.outcome, doc.error.code], ['refused', -32004], 'UnsupportedOperationError -32004');
  eq(calls('SendMessage').length - n, 1, 'sent once, never retried');
}

async function s3_cancel_get_wait(url, outbox) {
  let { code, doc } = await onceJson(outbox, 'send', '--agent', url, '--text', 'sleep:20');
  eq(code, 0, 'send sleep:20 (no wait)');
  check(['TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING'].includes(doc.state), `running: ${doc.state}`);
  const id = doc.taskId;
  ({ code, doc } = await onceJson(outbox, 'wait', id, '--wait-timeout', '400ms'));
  eq([code, doc.error?.reason], [4, 'WAIT_TIMEOUT'], 'wait --wait-timeout gives up: exit 4');
  ({ code, doc } = await onceJson(outbox, 'cancel', id));
  eq(code, 0, `cancel: exit 0 (${JSON.stringify(doc)})`);
  eq(doc.state, 'TASK_STATE_CANCELED', 'canceled');
  ({ code, doc } = await onceJson(outbox, 'get', id));
  eq([code, doc.state], [0, 'TASK_STATE_CANCELED'], 'get: canceled');
  ({ code, doc } = await onceJson(outbox, 'wait', id));
  eq([code, doc.state], [5, 'TASK_STATE_CANCELED'], 'wait on a canceled task: exit 5');
  ({ code, doc } = await onceJson(outbox, 'cancel', id));
  eq([code, doc.state], [0, 'TASK_STATE_CANCELED'], 'cancel again: still canceled (idempotent)');
  const done = (await onceJson(outbox, 'send', '--agent', url, '--text', 'quick', '--wait')).doc.taskId;
  ({ code, doc } = await onceJson(outbox, 'cancel', done));
  eq([code, doc.outcome, doc.error.code], [3, 'refused', -32002],
     'cancel of a completed task: TaskNotCancelableError, exit 3');
  ({ code, doc } = await onceJson(outbox, 'get', '00000000-0000-4000-8000-000000000000', '--agent', url));
  eq([code, doc.error.code], [3, -32001], 'get of an unknown task: TaskNotFoundError, exit 3');
}

async function s4_wait_streams(url, outbox) {
  const before = received.length;
  const t0 = Date.now();
  const { code, doc } = await onceJson(outbox, 'send', '--agent', url, '--text', 'sleep:1', '--wait');
  eq(code, 0, 'send --wait on a 1 s task: exit 0');
  eq(doc.state, 'TASK_STATE_COMPLETED', 'completed');
  check(Date.now() - t0 >= 900, 'it waited for the task');
  eq(doc.streamed, true, 'followed over SSE (the card says streaming)');
  const subs = received.slice(before).filter((r) => r.method === 'SubscribeToTask');
  check(subs.length >= 1, 'SubscribeToTask was used');
  eq(subs[0].accept, 'text/event-stream', 'asking for an event stream');
  eq(subs[0].params, { id: doc.taskId }, 'for the task');
  eq(received.slice(before).filter((r) => r.method === 'GetTask').length <= 2, true,
     'no polling while the stream works');
}

// ---- main ----

try {
  tmpdir = fs.mkdtempSync(path.join(os.tmpdir(), 'once-interop-server-'));
  const url = await startServer();
  const outbox = path.join(tmpdir, 'outbox.db');
  for (const s of [s1_send_wait_completes, s2_ask_then_continue, s3_cancel_get_wait, s4_wait_streams]) {
    try {
      await s(url, outbox);
      console.log('ok  ', s.name);
    } catch (e) {
      if (!(e instanceof CheckFailed)) {
        tally.failed++;
        console.error('FAIL', s.name, e && e.stack ? e.stack : e);
      } else {
        console.error('FAIL', s.name);
      }
    }
  }
} catch (e) {
  fatal(`setup: ${e && e.stack ? e.stack : e}`);
}
finish();
