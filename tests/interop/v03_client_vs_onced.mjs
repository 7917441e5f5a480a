// Interop, A2A 0.3: the real 0.3 client transport of @a2a-js/sdk 1.3.0
// (LegacyJsonRpcTransport, from @a2a-js/sdk/compat/v0_3/client) drives a real
// onced on its JSON-RPC endpoint, the same URL that serves A2A 1.0
// (dual-stack: the 0.3 method names message/send, tasks/get, ... beside
// SendMessage, GetTask, ...).
//
// Starts its own onced ($ONCED, else build/onced) on a free loopback port
// with a fresh SQLite store in a temporary folder, waits for the agent card,
// takes the JSON-RPC endpoint from it, then runs the scenarios below. Every
// 0.3 call goes through the SDK transport's public methods (it takes and
// returns the SDK's 1.0 core types and speaks 0.3 on the wire); raw fetch is
// used only to cross-check a task over 1.0 (GetTask with A2A-Version: 1.0).
// The transport's fetch is a recording wrapper, so the test also asserts what
// went on the wire (the 0.3 request members, the 0.3 result shapes onced
// answered, its SSE frames) and the HTTP headers onced answered
// (Idempotent-Replayed). Push configs point at a webhook receiver this script
// runs on another loopback port (onced gets --push-allow 127.0.0.0/8).
//
// Invariants: onced is always killed on exit, also when this script is
// killed (scripts/reaper.py marks its environment); a missing SDK,
// node_modules or onced binary is a FAILURE (never a skip); every wait is
// for a condition, bounded by a scaled timeout; a failed check names what
// was expected and what came, and the next scenario still runs; output ends
// with "N passed, N failed" and the exit status is non-zero on any failure.
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { check, CheckFailed, eq, freePort, scaled, tally } from '../js/harness.mjs';
import { oncedUnderTest, pinnedSdkVersion } from '../js/interop_harness.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '..', '..');
const ONCED = process.env.ONCED || path.join(ROOT, 'build', 'onced');
const SDK_VERSION = '1.3.0';
const EXT = 'urn:once:a2a:idempotency:v1';
const CALL_TIMEOUT_MS = scaled(30000);
const WATCHDOG_MS = scaled(130000);
const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

let hook = null; // the webhook receiver: { server, port, posts: [{headers, body}] }

const { finish, fatal, requireBinary, start } = oncedUnderTest({
  binary: ONCED, tmpPrefix: 'once-interop-v03-', watchdogMs: WATCHDOG_MS,
  onFinish: () => {
    if (hook) hook.server.close();
  },
});

// ---- preconditions: the SDK and the server binary must both be present ----

const sdkVersion = pinnedSdkVersion(HERE, SDK_VERSION, fatal);
let sdk;
try {
  sdk = {
    ...(await import('@a2a-js/sdk')),
    ...(await import('@a2a-js/sdk/compat/v0_3/client')),
    compat: await import('@a2a-js/sdk/compat/v0_3'),
    errors: await import('@a2a-js/sdk/errors'),
  };
} catch (e) {
  fatal(`cannot load @a2a-js/sdk: ${e && e.stack ? e.stack : e}`);
}
const { LegacyJsonRpcTransport, isLegacyAgentCard, parseLegacyAgentCard, Role, TaskState } = sdk;
for (const [name, v] of Object.entries({ LegacyJsonRpcTransport, isLegacyAgentCard, parseLegacyAgentCard })) {
  if (typeof v !== 'function') fatal(`@a2a-js/sdk/compat/v0_3/client does not export ${name}`);
}

requireBinary();

// ---- recording fetch, given to the SDK transport as its fetchImpl ----

// {method, url, reqHeaders: Headers, body, status, resHeaders: Headers,
//  text: Promise<string|null> (the answer's body, read from a clone)}
const wire = [];
const realFetch = globalThis.fetch;
async function recordingFetch(input, init = {}) {
  const rec = {
    method: init.method || 'GET',
    url: String(input),
    reqHeaders: new Headers(init.headers || {}),
    body: typeof init.body === 'string' ? init.body : null,
  };
  wire.push(rec);
  const res = await realFetch(input, init);
  rec.status = res.status;
  rec.resHeaders = res.headers;
  // A clone, read to its end beside the SDK's own read; an aborted call
  // (a stream the test leaves) rejects it, hence the catch.
  rec.text = res.clone().text().catch(() => null);
  return res;
}

function parseJson(s) {
  try {
    return JSON.parse(s);
  } catch {
    return null;
  }
}

function rpcMethodOf(rec) {
  const b = parseJson(rec.body);
  return b ? b.method : null;
}

function lastRpc(method) {
  for (let i = wire.length - 1; i >= 0; i--) {
    if (rpcMethodOf(wire[i]) === method) return wire[i];
  }
  return null;
}

// The last request of `method`: it must exist (a check), and its params.
function sentParams(method, what) {
  const rec = lastRpc(method);
  check(rec !== null, `${what}: the SDK sent a JSON-RPC "${method}" request (requests seen: ` +
        `${JSON.stringify(wire.map(rpcMethodOf))})`);
  return parseJson(rec.body).params;
}

// What onced answered to the last `method` request: the JSON-RPC result
// member of its (non-stream) body.
async function answeredResult(method, what) {
  const rec = lastRpc(method);
  check(rec !== null, `${what}: a "${method}" request was sent`);
  const text = await rec.text;
  const body = parseJson(text);
  check(body !== null && typeof body === 'object' && 'result' in body,
        `${what}: onced answered "${method}" with a JSON-RPC result (HTTP ${rec.status}, body ${String(text).slice(0, 400)})`);
  return body.result;
}

// The JSON-RPC envelopes in an SSE body: one per event's data lines.
function sseFrames(text) {
  const frames = [];
  for (const block of String(text || '').split(/\r?\n\r?\n/)) {
    const data = block.split(/\r?\n/).filter((l) => l.startsWith('data:')).map((l) => l.slice(5).replace(/^ /, ''));
    if (data.length) frames.push(parseJson(data.join('\n')));
  }
  return frames;
}

// ---- raw A2A 1.0 JSON-RPC, only to cross-check a task created over 0.3 ----

let base;
let endpoint;

async function rpc10(method, params) {
  const res = await realFetch(endpoint, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    signal: AbortSignal.timeout(CALL_TIMEOUT_MS),
  });
  const text = await res.text();
  const body = parseJson(text);
  check(body !== null && 'result' in body,
        `1.0 ${method} answers a JSON-RPC result (HTTP ${res.status}, body ${text.slice(0, 400)})`);
  return body.result;
}

// ---- the webhook receiver ----

async function startHook() {
  const port = await freePort();
  const posts = [];
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      posts.push({ url: req.url, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end('{}');
    });
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  });
  return { server, port, posts };
}

// ---- SDK-shaped helpers (the transport takes the SDK's 1.0 core types) ----

function userMessage(text, { messageId, taskId, contextId } = {}) {
  return {
    messageId: messageId || randomUUID(),
    contextId: contextId || '',
    taskId: taskId || '',
    role: Role.ROLE_USER,
    parts: [{ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: '' }],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

function sendConfig({ returnImmediately }) {
  return { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately };
}

// A SendMessageRequest (1.0 core shape); no configuration unless given.
const sendReq = (message, configuration) => ({ tenant: '', message, configuration, metadata: undefined });
const listReq = (taskId) => ({ tenant: '', taskId, pageSize: 0, pageToken: '' });
// The `key` of each entry, as one comparable string.
const keysOf = (list, key) => JSON.stringify((list || []).map((x) => x[key]));

const opts = (extra = {}) => ({ signal: AbortSignal.timeout(CALL_TIMEOUT_MS), ...extra });
const withExt = (header) => opts({ serviceParameters: { [header]: EXT } });

function isTask(r) {
  return r && typeof r === 'object' && typeof r.id === 'string' && r.id !== '' && 'status' in r && !('messageId' in r);
}

function stateName(s) {
  return TaskState[s] ?? String(s);
}

function texts(parts) {
  return (parts || []).filter((p) => p.content && p.content.$case === 'text').map((p) => p.content.value);
}

function expectState(task, want, what) {
  check(isTask(task), `${what}: result is a Task (got ${JSON.stringify(task)})`);
  eq(stateName(task.status && task.status.state), stateName(want), `${what}: task state`);
}

function replayedHeader(method) {
  const rec = lastRpc(method);
  return rec && rec.resHeaders ? rec.resHeaders.get('idempotent-replayed') : null;
}

// A 0.3 call that must fail with the SDK's error class `cls` carrying JSON-RPC
// code `code`.
async function expectSdkError(promise, cls, code, what) {
  let err = null;
  let result;
  try {
    result = await promise;
  } catch (e) {
    err = e;
  }
  check(err !== null, `${what}: the SDK raised an error (it returned ${JSON.stringify(result)})`);
  check(err instanceof sdk.errors.A2AError,
        `${what}: the error is an SDK A2AError (got ${err && err.name}: ${err && err.message})`);
  check(err instanceof cls, `${what}: the error is a ${cls.name} (got ${err.name}, code ${err.envelopeCode}: ${err.message})`);
  eq(err.transport, 'jsonrpc', `${what}: error transport`);
  eq(err.envelopeCode, code, `${what}: JSON-RPC error code`);
  return err;
}

// Runs an SDK stream to its end (or until stopAfter(events) says enough),
// bounded by CALL_TIMEOUT_MS. Answers {events, ended}: ended is true
// when the server closed the stream, false when the test left it.
async function collect(gen, ac, stopAfter, what) {
  const events = [];
  let ended = true;
  try {
    for await (const ev of gen) {
      events.push(ev);
      if (stopAfter && stopAfter(events)) {
        ended = false;
        break;
      }
    }
  } catch (e) {
    if (ac.signal.aborted || (e && e.name === 'TimeoutError') || (e && e.name === 'AbortError')) {
      check(false, `${what}: the stream ended within ${CALL_TIMEOUT_MS} ms (it gave ${events.length} events: ` +
            `${JSON.stringify(events.map(eventSummary))})`);
    }
    throw e;
  } finally {
    ac.abort(); // lets go of the connection (and the recording's clone)
  }
  return { events, ended };
}

// A StreamResponse event (1.0 core shape, as the SDK yields it) in a word.
function eventSummary(ev) {
  const p = ev && ev.payload;
  if (!p) return JSON.stringify(ev);
  if (p.$case === 'task') return `task ${stateName(p.value.status && p.value.status.state)}`;
  if (p.$case === 'statusUpdate') return `statusUpdate ${stateName(p.value.status && p.value.status.state)}`;
  if (p.$case === 'artifactUpdate') return `artifactUpdate ${JSON.stringify(texts(p.value.artifact && p.value.artifact.parts))}`;
  return p.$case;
}

function eventTaskId(ev) {
  const p = ev.payload;
  if (p.$case === 'task') return p.value.id;
  if (p.$case === 'statusUpdate' || p.$case === 'artifactUpdate') return p.value.taskId;
  return p.value && p.value.taskId;
}

function eventState(ev) {
  const p = ev.payload;
  if (p.$case === 'task' || p.$case === 'statusUpdate') return p.value.status && p.value.status.state;
  return undefined;
}

function streamCall(start) {
  const ac = new AbortController();
  const signal = AbortSignal.any([ac.signal, AbortSignal.timeout(CALL_TIMEOUT_MS)]);
  return { ac, gen: start({ signal }) };
}

// ---- scenarios ----

let transport;
const st = {}; // state carried between scenarios

// 0. The card names the JSON-RPC endpoint; the SDK's 0.3 transport is built on it.
async function s0_endpoint_from_card(card) {
  const legacy = isLegacyAgentCard(card);
  // A 0.3-shaped card (url + preferredTransport) goes through the SDK's own
  // translation; a 1.0 card (supportedInterfaces) is read as it is.
  const ifaces = legacy ? parseLegacyAgentCard(card).supportedInterfaces : (card.supportedInterfaces || []);
  const jsonrpc = ifaces.filter((i) => String(i.protocolBinding).toUpperCase() === 'JSONRPC');
  console.log(`info: card: isLegacyAgentCard=${legacy}, JSONRPC interfaces ` +
              `${JSON.stringify(jsonrpc.map((i) => ({ url: i.url, protocolVersion: i.protocolVersion })))}`);
  check(jsonrpc.length > 0, `the card names a JSONRPC interface (interfaces: ${JSON.stringify(ifaces)})`);
  const v03 = jsonrpc.find((i) => String(i.protocolVersion || '').startsWith('0.'));
  endpoint = (v03 || jsonrpc[0]).url;
  eq(endpoint, `${base}/`, 'the JSON-RPC endpoint (0.3 is served on the 1.0 URL)');
  transport = new LegacyJsonRpcTransport({ endpoint, fetchImpl: recordingFetch });
  eq(transport.protocolName, 'JSONRPC', 'LegacyJsonRpcTransport.protocolName');
  eq(transport.protocolVersion, '0.3', 'LegacyJsonRpcTransport.protocolVersion');
  const exts = (card.capabilities && card.capabilities.extensions) || [];
  check(exts.some((x) => x.uri === EXT), `the card declares ${EXT} (got ${JSON.stringify(exts.map((x) => x.uri))})`);
}

// 1. message/send "hello" (no configuration: 0.3's default is blocking).
async function s1_send_hello_completes() {
  const msg = userMessage('hello');
  let r;
  try {
    r = await transport.sendMessage(sendReq(msg), opts());
  } finally {
    const rec = lastRpc('message/send');
    if (rec) {
      console.log(`info: message/send request headers ${JSON.stringify(Object.fromEntries(rec.reqHeaders))}, ` +
                  `body ${rec.body}; onced answered HTTP ${rec.status}: ${String(await rec.text).slice(0, 600)}`);
    }
  }
  const p = sentParams('message/send', 'send "hello"');
  eq(p.message && p.message.kind, 'message', 'the SDK sent message.kind');
  eq(p.message && p.message.role, 'user', 'the SDK sent message.role');
  check(p.configuration === undefined, `no configuration was sent (got ${JSON.stringify(p.configuration)})`);

  const w = await answeredResult('message/send', 'send "hello"');
  eq(w.kind, 'task', 'onced answered result.kind');
  eq(w.status && w.status.state, 'completed', 'onced answered result.status.state');
  const wparts = (w.artifacts || []).flatMap((a) => a.parts || []);
  check(wparts.some((x) => x.kind === 'text' && x.text === 'hello'),
        `onced's artifacts carry {kind:"text",text:"hello"} (got ${JSON.stringify(w.artifacts)})`);

  expectState(r, TaskState.TASK_STATE_COMPLETED, 'send "hello"');
  check(r.contextId !== '', 'the task has a contextId');
  const echoed = (r.artifacts || []).flatMap((a) => texts(a.parts));
  check(echoed.includes('hello'), `an artifact echoes "hello" (artifact texts: ${JSON.stringify(echoed)})`);
  st.hello = { task: r, message: msg };
}

// 2. The same message again (same messageId, no taskId): the same task, replayed.
async function s2_same_message_replays() {
  const msg = userMessage('hello again');
  const a = await transport.sendMessage(sendReq(msg), opts());
  const aHdr = replayedHeader('message/send');
  expectState(a, TaskState.TASK_STATE_COMPLETED, 'first send');
  check(aHdr === null || aHdr === 'false', `the first answer is not marked replayed (Idempotent-Replayed: ${aHdr})`);

  const b = await transport.sendMessage(sendReq(msg), opts());
  const bHdr = replayedHeader('message/send');
  check(!('taskId' in sentParams('message/send', 'resend').message), 'the resend carries no taskId');
  expectState(b, TaskState.TASK_STATE_COMPLETED, 'resend with the same messageId');
  eq(b.id, a.id, 'the resend answers the same (derived) task id');
  eq(b.contextId, a.contextId, 'the resend answers the same contextId');
  eq(bHdr, 'true', 'the resend\'s answer carries Idempotent-Replayed');
  eq(b.status.timestamp, a.status.timestamp, 'the replayed task\'s status.timestamp (nothing new stored)');
  eq(keysOf(b.history, 'messageId'), keysOf(a.history, 'messageId'), 'the replayed task\'s history messageIds');
  eq((b.artifacts || []).length, (a.artifacts || []).length, 'the replayed task\'s artifact count');

  const g = await transport.getTask({ tenant: '', id: a.id }, opts());
  const mine = (g.history || []).filter((m) => m.messageId === msg.messageId);
  eq(mine.length, 1, 'tasks/get: the message is in the history once (the agent ran once)');
  eq((g.artifacts || []).length, (a.artifacts || []).length, 'tasks/get: the artifact count is unchanged');
  const echoed = (g.artifacts || []).flatMap((x) => texts(x.parts));
  eq(echoed.filter((t) => t === 'hello again').length, 1, 'tasks/get: one echo of the text');
}

// 3. The extension: a client-minted UUIDv4 taskId is the task's id; a retry replays.
async function s3_extension_client_task_id() {
  // 0.3's spelling, then 1.0's: onced takes either.
  for (const header of [sdk.compat.LEGACY_HTTP_EXTENSION_HEADER, sdk.HTTP_EXTENSION_HEADER]) {
    const id = randomUUID();
    check(UUID_V4.test(id), `the minted task id is a UUIDv4 (${id})`);
    const msg = userMessage(`minted under ${header}`, { taskId: id });
    const a = await transport.sendMessage(sendReq(msg), withExt(header));
    const rec = lastRpc('message/send');
    eq(rec.reqHeaders.get(header), EXT, `${header}: the SDK sent the header`);
    eq(sentParams('message/send', header).message.taskId, id, `${header}: the SDK sent message.taskId`);
    const aHdr = replayedHeader('message/send');
    expectState(a, TaskState.TASK_STATE_COMPLETED, `${header}: first send`);
    eq(a.id, id, `${header}: the task's id is the client's`);
    check(aHdr === null || aHdr === 'false', `${header}: the first answer is not marked replayed (Idempotent-Replayed: ${aHdr})`);

    const b = await transport.sendMessage(sendReq(msg), withExt(header));
    expectState(b, TaskState.TASK_STATE_COMPLETED, `${header}: retry`);
    eq(b.id, id, `${header}: the retry answers the same task`);
    eq(replayedHeader('message/send'), 'true', `${header}: the retry's answer carries Idempotent-Replayed`);
    eq(b.status.timestamp, a.status.timestamp, `${header}: the replayed status.timestamp (nothing new stored)`);
    eq((b.history || []).length, (a.history || []).length, `${header}: the replayed history length`);
    eq((b.artifacts || []).length, (a.artifacts || []).length, `${header}: the replayed artifact count`);
  }
}

// 4. input-required, then a continuation completes the task.
async function s4_input_required_then_continue() {
  const ask = userMessage('ask:which?');
  const r1 = await transport.sendMessage(sendReq(ask, sendConfig({ returnImmediately: false })), opts());
  const p = sentParams('message/send', 'ask');
  eq(p.configuration && p.configuration.blocking, true, 'returnImmediately:false went out as configuration.blocking');
  const w = await answeredResult('message/send', 'ask');
  eq(w.kind, 'task', 'onced answered result.kind');
  eq(w.status && w.status.state, 'input-required', 'onced answered result.status.state');
  eq(w.status && w.status.message && w.status.message.kind, 'message', 'onced answered result.status.message.kind');
  eq(w.status && w.status.message && w.status.message.role, 'agent', 'onced answered result.status.message.role');

  expectState(r1, TaskState.TASK_STATE_INPUT_REQUIRED, 'send "ask:which?"');
  const q = r1.status.message;
  check(q !== undefined && q !== null, 'the input-required status carries a message');
  eq(q.role, Role.ROLE_AGENT, 'the question comes from the agent');
  check(texts(q.parts).includes('which?'), `status.message asks "which?" (got ${JSON.stringify(texts(q.parts))})`);

  const answer = userMessage('that one', { taskId: r1.id, contextId: r1.contextId });
  const r2 = await transport.sendMessage(sendReq(answer, sendConfig({ returnImmediately: false })), opts());
  eq(sentParams('message/send', 'continuation').message.taskId, r1.id, 'the continuation carried message.taskId');
  expectState(r2, TaskState.TASK_STATE_COMPLETED, 'continuation');
  eq(r2.id, r1.id, 'the continuation stays on the same task');
  eq(r2.contextId, r1.contextId, 'the continuation keeps the contextId');
  st.asked = { task: r2, askId: ask.messageId, answerId: answer.messageId };
}

// 5. tasks/get over 0.3 and GetTask over 1.0 return the same task.
async function s5_get_task_both_versions() {
  const t = (st.asked && st.asked.task) || (st.hello && st.hello.task);
  check(t !== undefined, 'prerequisite: scenario 4 or 1 produced a task');
  const g = await transport.getTask({ tenant: '', id: t.id }, opts());
  eq(sentParams('tasks/get', 'tasks/get').id, t.id, 'the SDK sent params.id');
  const w = await answeredResult('tasks/get', 'tasks/get');
  eq(w.kind, 'task', 'onced answered tasks/get result.kind');
  eq(w.status && w.status.state, 'completed', 'onced answered tasks/get result.status.state');
  const kinds = (w.history || []).map((m) => m.kind);
  check(kinds.length > 0 && kinds.every((k) => k === 'message'),
        `every history entry is kind "message" (got ${JSON.stringify(kinds)})`);
  const roles = (w.history || []).map((m) => m.role);
  check(roles.every((x) => x === 'user' || x === 'agent'), `history roles are "user"/"agent" (got ${JSON.stringify(roles)})`);

  expectState(g, TaskState.TASK_STATE_COMPLETED, 'tasks/get');
  const v1 = await rpc10('GetTask', { id: t.id });
  eq(v1.id, g.id, '1.0 GetTask id');
  eq(v1.contextId, g.contextId, '1.0 GetTask contextId');
  eq(v1.status && v1.status.state, stateName(g.status.state), '1.0 GetTask state (0.3 "completed" = TASK_STATE_COMPLETED)');
  eq(v1.status && v1.status.timestamp, w.status && w.status.timestamp, '1.0 and 0.3 status.timestamp');
  eq(keysOf(v1.history, 'messageId'), keysOf(g.history, 'messageId'), '1.0 and 0.3 history messageIds');
  eq(keysOf(v1.artifacts, 'artifactId'), keysOf(g.artifacts, 'artifactId'), '1.0 and 0.3 artifact ids');
  if (st.asked) {
    const userIds = (g.history || []).filter((m) => m.role === Role.ROLE_USER).map((m) => m.messageId);
    const iAsk = userIds.indexOf(st.asked.askId);
    check(iAsk >= 0 && userIds.indexOf(st.asked.answerId) > iAsk,
          `the history holds the question's message, then the answer (user messageIds: ${JSON.stringify(userIds)})`);
  }
}

// 6. sleep:30 sent non-blocking, then tasks/cancel.
async function s6_cancel() {
  const t0 = Date.now();
  const r = await transport.sendMessage(sendReq(userMessage('sleep:30'), sendConfig({ returnImmediately: true })), opts());
  const took = Date.now() - t0;
  eq(sentParams('message/send', 'sleep:30').configuration.blocking, false,
     'returnImmediately:true went out as configuration.blocking');
  check(isTask(r), `sleep:30 non-blocking returns a Task (got ${JSON.stringify(r)})`);
  const s = stateName(r.status.state);
  check(s === 'TASK_STATE_SUBMITTED' || s === 'TASK_STATE_WORKING', `sleep:30 returned at once in a live state (got ${s})`);
  check(took < scaled(10000), `the non-blocking send did not block (${took} ms)`);

  const c = await transport.cancelTask({ tenant: '', id: r.id, metadata: undefined }, opts());
  eq(sentParams('tasks/cancel', 'tasks/cancel').id, r.id, 'the SDK sent params.id');
  const w = await answeredResult('tasks/cancel', 'tasks/cancel');
  eq(w.kind, 'task', 'onced answered tasks/cancel result.kind');
  eq(w.status && w.status.state, 'canceled', 'onced answered tasks/cancel result.status.state');
  expectState(c, TaskState.TASK_STATE_CANCELED, 'tasks/cancel of a running task');
  eq(c.id, r.id, 'tasks/cancel answers the same task');
  const g = await transport.getTask({ tenant: '', id: r.id }, opts());
  expectState(g, TaskState.TASK_STATE_CANCELED, 'tasks/get after the cancel');
}

// 7. message/stream to completion; tasks/resubscribe of an input-required task.
async function s7_stream_and_resubscribe() {
  const msg = userMessage('hello stream');
  const { ac, gen } = streamCall((o) => transport.sendMessageStream({ tenant: '', message: msg }, o));
  const { events, ended } = await collect(gen, ac, null, 'message/stream');
  const rec = lastRpc('message/stream');
  console.log(`info: message/stream request headers ${JSON.stringify(Object.fromEntries(rec.reqHeaders))}; ` +
              `onced answered HTTP ${rec.status}, Content-Type ${rec.resHeaders && rec.resHeaders.get('content-type')}`);
  console.log(`info: message/stream events: ${JSON.stringify(events.map(eventSummary))}`);
  eq(rec.reqHeaders.get('accept'), 'text/event-stream', 'the SDK asked for text/event-stream');
  check(ended, 'onced ended the stream');
  check(events.length > 0, 'the stream yielded events');
  const ids = [...new Set(events.map(eventTaskId))];
  check(ids.length === 1 && ids[0], `every event names the one task (task ids: ${JSON.stringify(ids)})`);
  const states = events.map(eventState).filter((x) => x !== undefined);
  check(states.length > 0, 'the stream carried a task state');
  eq(stateName(states[states.length - 1]), 'TASK_STATE_COMPLETED', 'the last state in the stream');
  const last = events[events.length - 1];
  eq(stateName(eventState(last)), 'TASK_STATE_COMPLETED', `the last event (${eventSummary(last)}) is the completed state`);
  const echoed = events.flatMap((ev) => {
    const p = ev.payload;
    if (p.$case === 'artifactUpdate') return texts(p.value.artifact.parts);
    if (p.$case === 'task') return (p.value.artifacts || []).flatMap((a) => texts(a.parts));
    return [];
  });
  check(echoed.includes('hello stream'), `the stream carries the echo artifact (texts: ${JSON.stringify(echoed)})`);

  // On the wire: 0.3 events, and the terminal status-update says final.
  const frames = sseFrames(await rec.text);
  const results = frames.map((f) => f && f.result).filter(Boolean);
  const wkinds = results.map((x) => x.kind);
  check(wkinds.length > 0 && wkinds.every((k) => ['task', 'message', 'status-update', 'artifact-update'].includes(k)),
        `every SSE frame's result is a 0.3 kind (got ${JSON.stringify(wkinds)})`);
  const terminalUpdates = results.filter((x) => x.kind === 'status-update' && x.status && x.status.state === 'completed');
  if (terminalUpdates.length > 0) {
    eq(terminalUpdates[terminalUpdates.length - 1].final, true, 'the completed status-update frame carries final');
  } else {
    console.log(`info: the stream had no completed status-update frame (kinds ${JSON.stringify(wkinds)})`);
  }

  // tasks/resubscribe of a task waiting for input: at least its current state.
  const r = await transport.sendMessage(sendReq(userMessage('ask:still there?')), opts());
  expectState(r, TaskState.TASK_STATE_INPUT_REQUIRED, 'send "ask:still there?"');
  const sub = streamCall((o) => transport.resubscribeTask({ tenant: '', id: r.id }, o));
  const got = await collect(sub.gen, sub.ac, (evs) => evs.length >= 1, 'tasks/resubscribe');
  console.log(`info: tasks/resubscribe events: ${JSON.stringify(got.events.map(eventSummary))} ` +
              `(${got.ended ? 'onced ended the stream' : 'left open by onced; the test left it'})`);
  eq(sentParams('tasks/resubscribe', 'tasks/resubscribe').id, r.id, 'the SDK sent params.id');
  check(got.events.length >= 1, 'tasks/resubscribe yielded an event');
  eq(eventTaskId(got.events[0]), r.id, 'the first resubscribe event names the task');
  eq(stateName(eventState(got.events[0])), 'TASK_STATE_INPUT_REQUIRED', 'the first resubscribe event\'s state');
}

// 8. Push notification configs over 0.3: set / get / list / delete.
async function s8_push_configs() {
  const r = await transport.sendMessage(sendReq(userMessage('ask:push?')), opts());
  expectState(r, TaskState.TASK_STATE_INPUT_REQUIRED, 'send "ask:push?"');
  const url = `http://127.0.0.1:${hook.port}/hook`;
  const cfg = (id, token) => ({ tenant: '', taskId: r.id, id, url, token, authentication: undefined });

  // set, with the client's config id
  const a = await transport.createTaskPushNotificationConfig(cfg('v03-hook-a', 'tok-a'), opts());
  const p = sentParams('tasks/pushNotificationConfig/set', 'set');
  eq(p.taskId, r.id, 'set: the SDK sent params.taskId');
  eq(JSON.stringify(p.pushNotificationConfig), JSON.stringify({ url, id: 'v03-hook-a', token: 'tok-a' }),
     'set: the SDK sent params.pushNotificationConfig');
  const w = await answeredResult('tasks/pushNotificationConfig/set', 'set');
  eq(w && w.taskId, r.id, 'set: onced answered result.taskId');
  check(w && w.pushNotificationConfig && typeof w.pushNotificationConfig === 'object',
        `set: onced answered the 0.3 shape {taskId, pushNotificationConfig} (got ${JSON.stringify(w)})`);
  eq(w.pushNotificationConfig.id, 'v03-hook-a', 'set: result.pushNotificationConfig.id');
  eq(w.pushNotificationConfig.url, url, 'set: result.pushNotificationConfig.url');
  eq(w.pushNotificationConfig.token, 'tok-a', 'set: result.pushNotificationConfig.token');
  eq(a.taskId, r.id, 'set: SDK result taskId');
  eq(a.id, 'v03-hook-a', 'set: SDK result id');
  eq(a.url, url, 'set: SDK result url');
  eq(a.token, 'tok-a', 'set: SDK result token');

  // set, no id: onced mints one
  const b = await transport.createTaskPushNotificationConfig(cfg('', 'tok-b'), opts());
  check(!('id' in sentParams('tasks/pushNotificationConfig/set', 'set without id').pushNotificationConfig),
        'set without id: the SDK sent no pushNotificationConfig.id');
  check(typeof b.id === 'string' && b.id !== '', `set without id: onced minted a config id (got ${JSON.stringify(b.id)})`);
  eq(b.url, url, 'set without id: url');
  eq(b.token, 'tok-b', 'set without id: token');

  // get
  const g = await transport.getTaskPushNotificationConfig({ tenant: '', taskId: r.id, id: 'v03-hook-a' }, opts());
  eq(JSON.stringify(sentParams('tasks/pushNotificationConfig/get', 'get')),
     JSON.stringify({ id: r.id, pushNotificationConfigId: 'v03-hook-a' }), 'get: the SDK sent params');
  const gw = await answeredResult('tasks/pushNotificationConfig/get', 'get');
  check(gw && gw.taskId === r.id && gw.pushNotificationConfig && gw.pushNotificationConfig.id === 'v03-hook-a',
        `get: onced answered {taskId, pushNotificationConfig:{id:"v03-hook-a",...}} (got ${JSON.stringify(gw)})`);
  eq(g.taskId, r.id, 'get: taskId');
  eq(g.id, 'v03-hook-a', 'get: id');
  eq(g.url, url, 'get: url');
  eq(g.token, 'tok-a', 'get: token');

  // list
  const l = await transport.listTaskPushNotificationConfig(listReq(r.id), opts());
  eq(JSON.stringify(sentParams('tasks/pushNotificationConfig/list', 'list')), JSON.stringify({ id: r.id }),
     'list: the SDK sent params');
  const lw = await answeredResult('tasks/pushNotificationConfig/list', 'list');
  check(Array.isArray(lw), `list: onced answered an array of 0.3 configs (got ${JSON.stringify(lw)})`);
  const listed = (l.configs || []).map((c) => `${c.id} ${c.url} ${c.token}`).sort();
  eq(JSON.stringify(listed), JSON.stringify([`v03-hook-a ${url} tok-a`, `${b.id} ${url} tok-b`].sort()),
     'list: both configs (id url token)');

  // delete
  await transport.deleteTaskPushNotificationConfig({ tenant: '', taskId: r.id, id: 'v03-hook-a' }, opts());
  eq(JSON.stringify(sentParams('tasks/pushNotificationConfig/delete', 'delete')),
     JSON.stringify({ id: r.id, pushNotificationConfigId: 'v03-hook-a' }), 'delete: the SDK sent params');
  const l2 = await transport.listTaskPushNotificationConfig(listReq(r.id), opts());
  eq(keysOf(l2.configs, 'id'), JSON.stringify([b.id]), 'list after delete: the other config only');
  await expectSdkError(transport.getTaskPushNotificationConfig({ tenant: '', taskId: r.id, id: 'v03-hook-a' }, opts()),
                       sdk.errors.TaskNotFoundError, -32001, 'get of the deleted config');

  // deliveries: the continuation completes the task; config b (set over
  // 0.3) gets each event as a 0.3 body, read by the SDK's own 0.3 parser.
  const before = hook.posts.length;
  const done = await transport.sendMessage(
    sendReq(userMessage('the answer', { taskId: r.id, contextId: r.contextId }),
            sendConfig({ returnImmediately: false })), opts());
  expectState(done, TaskState.TASK_STATE_COMPLETED, 'the continuation completes the task');
  const parsed = () => hook.posts.slice(before).map((post) => {
    try {
      return sdk.compat.legacyPushNotificationToV1StreamResponse(JSON.parse(post.body));
    } catch (e) {
      return { error: String(e), body: post.body };
    }
  });
  const completed = (list) => list.some((ev) => ev.payload && ev.payload.$case === 'statusUpdate' &&
    ev.payload.value.status.state === TaskState.TASK_STATE_COMPLETED);
  const until = Date.now() + scaled(20000);
  while (!completed(parsed()) && Date.now() < until) await new Promise((res) => setTimeout(res, 50));
  const got = parsed();
  check(completed(got), `the webhook got the completion as a 0.3 body (got ${JSON.stringify(got).slice(0, 400)})`);
  eq(got.filter((ev) => ev.error).length, 0, 'every delivered body is a 0.3 event the SDK reads');
  check(hook.posts.slice(before).every((post) => post.headers['x-a2a-notification-token'] === 'tok-b'),
        'each delivery carries config b\'s token');
}

// 9. Errors: an unknown task; a cancel of a completed task.
async function s9_errors() {
  await expectSdkError(transport.getTask({ tenant: '', id: randomUUID() }, opts()),
                       sdk.errors.TaskNotFoundError, -32001, 'tasks/get of an unknown id');
  await expectSdkError(transport.cancelTask({ tenant: '', id: randomUUID(), metadata: undefined }, opts()),
                       sdk.errors.TaskNotFoundError, -32001, 'tasks/cancel of an unknown id');
  const done = await transport.sendMessage(sendReq(userMessage('done already')), opts());
  expectState(done, TaskState.TASK_STATE_COMPLETED, 'send "done already"');
  await expectSdkError(transport.cancelTask({ tenant: '', id: done.id, metadata: undefined }, opts()),
                       sdk.errors.TaskNotCancelableError, -32002, 'tasks/cancel of a completed task');
}

const scenarios = [
  s1_send_hello_completes,
  s2_same_message_replays,
  s3_extension_client_task_id,
  s4_input_required_then_continue,
  s5_get_task_both_versions,
  s6_cancel,
  s7_stream_and_resubscribe,
  s8_push_configs,
  s9_errors,
];

async function run(name, fn) {
  try {
    await fn();
    console.log('ok  ', name);
    return true;
  } catch (e) {
    if (!(e instanceof CheckFailed)) {
      tally.failed++; // an unexpected exception, e.g. an SDK error where a result was expected
      const extra = e && e.envelopeCode !== undefined ? ` (JSON-RPC code ${e.envelopeCode}, data ${JSON.stringify(e.data)})` : '';
      const cause = e && e.cause ? ` (cause: ${e.cause.name}: ${e.cause.message})` : '';
      console.error(`FAIL ${name}: ${e && e.name}: ${e && e.message}${extra}${cause}`);
    } else {
      console.error(`FAIL ${name}`);
    }
    return false;
  }
}

hook = await startHook();
const started = await start(['--executor', 'echo', '--plain-ids', 'derived',
                             // scenario 8's webhook listens on loopback (SSRF guard)
                             '--push-allow', '127.0.0.0/8']);
base = started.url;
console.log(`info: @a2a-js/sdk ${sdkVersion}, node ${process.version}, onced ${ONCED} at ${base}, webhook on port ${hook.port}`);
if (!(await run('s0_endpoint_from_card', () => s0_endpoint_from_card(started.card))) || !transport) {
  fatal('no 0.3 transport (scenario 0 failed)');
}
for (const s of scenarios) {
  await run(s.name, s);
}
finish();
