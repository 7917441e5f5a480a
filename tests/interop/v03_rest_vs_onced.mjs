// Interop, A2A 0.3 over HTTP+JSON: the real 0.3 REST client transport of
// @a2a-js/sdk 1.3.0 (LegacyRestTransport, from @a2a-js/sdk/compat/v0_3/client)
// drives a real onced on 0.3's routes (POST /v1/message:send, GET
// /v1/tasks/{id}, ...), below the URL that serves A2A 1.0. 0.3's REST binding
// carries the JSON mapping of 0.3's a2a.proto, not the 0.3 JSON-RPC objects:
// messages hold `content`, states read TASK_STATE_*, roles ROLE_*, a send
// answers {task}|{message}, errors are {code, message, data} bodies with the
// HTTP status the SDK's own 0.3 REST server gives them.
//
// Starts its own onced ($ONCED, else build/onced) on a free loopback port
// with a fresh SQLite store in a temporary folder, waits for the agent card,
// takes the HTTP+JSON 0.3 interface from it, then runs the scenarios below.
// Every 0.3 call goes through the SDK transport's public methods (it takes
// and returns the SDK's 1.0 core types and speaks 0.3 proto JSON on the
// wire); raw fetch is used only to cross-check a task over 1.0 (GetTask with
// A2A-Version: 1.0). The transport's fetch is a recording wrapper, so the
// test also asserts what went on the wire (paths, the proto JSON bodies, the
// answers onced gave, its SSE frames, HTTP statuses) and the HTTP headers
// onced answered (Idempotent-Replayed). Push configs point at a webhook
// receiver this script runs on another loopback port (onced gets
// --push-allow 127.0.0.0/8).
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
  binary: ONCED, tmpPrefix: 'once-interop-v03-rest-', watchdogMs: WATCHDOG_MS,
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
const { LegacyRestTransport, Role, TaskState } = sdk;
if (typeof LegacyRestTransport !== 'function') fatal('@a2a-js/sdk/compat/v0_3/client does not export LegacyRestTransport');

requireBinary();

// ---- recording fetch, given to the SDK transport as its fetchImpl ----

// {method, url, path, reqHeaders: Headers, body, status, resHeaders: Headers,
//  text: Promise<string|null> (the answer's body, read from a clone)}
const wire = [];
const realFetch = globalThis.fetch;
async function recordingFetch(input, init = {}) {
  const url = new URL(String(input));
  const rec = {
    method: init.method || 'GET',
    url: String(input),
    path: url.pathname,
    query: url.search,
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

// The last request whose method is `method` and whose path matches `re`.
function last(method, re) {
  for (let i = wire.length - 1; i >= 0; i--) {
    if (wire[i].method === method && re.test(wire[i].path)) return wire[i];
  }
  return null;
}

function seen() {
  return JSON.stringify(wire.map((r) => `${r.method} ${r.path}`));
}

// The last `method` request to a path matching `re`: it must exist (a check).
function sent(method, re, what) {
  const rec = last(method, re);
  check(rec !== null, `${what}: the SDK sent ${method} ${re} (requests seen: ${seen()})`);
  return rec;
}

// The JSON body the SDK sent with the last such request.
function sentBody(method, re, what) {
  return parseJson(sent(method, re, what).body);
}

// What onced answered to the last such request: its JSON body, with HTTP
// status `status` (any 2xx when undefined).
async function answered(method, re, what, status) {
  const rec = sent(method, re, what);
  const text = await rec.text;
  const body = parseJson(text);
  const ok = status === undefined ? rec.status >= 200 && rec.status < 300 : rec.status === status;
  check(ok && body !== null && typeof body === 'object',
        `${what}: onced answered ${method} ${rec.path} with HTTP ${status || '2xx'} and a JSON object ` +
        `(HTTP ${rec.status}, body ${String(text).slice(0, 400)})`);
  return body;
}

// The SSE events of a stream body: {event, data (parsed)} per block.
function sseEvents(text) {
  const events = [];
  for (const block of String(text || '').split(/\r?\n\r?\n/)) {
    const lines = block.split(/\r?\n/);
    const data = lines.filter((l) => l.startsWith('data:')).map((l) => l.slice(5).replace(/^ /, ''));
    const ev = lines.find((l) => l.startsWith('event:'));
    if (data.length) events.push({ event: ev ? ev.slice(6).trim() : 'message', data: parseJson(data.join('\n')) });
  }
  return events;
}

const SEND = /^\/v1\/message:send$/;
const STREAM = /^\/v1\/message:stream$/;
const TASK = /^\/v1\/tasks\/[^/:]+$/;
const CANCEL = /^\/v1\/tasks\/[^/]+:cancel$/;
const SUBSCRIBE = /^\/v1\/tasks\/[^/]+:subscribe$/;
const CONFIGS = /^\/v1\/tasks\/[^/]+\/pushNotificationConfigs$/;
const CONFIG = /^\/v1\/tasks\/[^/]+\/pushNotificationConfigs\/[^/]+$/;

// ---- raw A2A 1.0 JSON-RPC, only to cross-check a task created over 0.3 ----

let base;

async function rpc10(method, params) {
  const res = await realFetch(`${base}/`, {
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

function replayedHeader(method, re) {
  const rec = last(method, re);
  return rec && rec.resHeaders ? rec.resHeaders.get('idempotent-replayed') : null;
}

// A 0.3 REST call that must fail with the SDK's error class `cls`; onced's
// answer to the last `method` request on `re` must be HTTP `status` with the
// 0.3 REST error body {code, message, data}.
async function expectSdkError(promise, cls, code, status, method, re, what) {
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
  check(err instanceof cls, `${what}: the error is a ${cls.name} (got ${err.name}: ${err.message})`);
  const body = await answered(method, re, what, status);
  eq(body.code, code, `${what}: the body's JSON-RPC code`);
  check(typeof body.message === 'string' && body.message !== '', `${what}: the body has a message`);
  check(Array.isArray(body.data), `${what}: the body's data is the ErrorInfo list (got ${JSON.stringify(body.data)})`);
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

function streamCall(startFn) {
  const ac = new AbortController();
  const signal = AbortSignal.any([ac.signal, AbortSignal.timeout(CALL_TIMEOUT_MS)]);
  return { ac, gen: startFn({ signal }) };
}

// ---- scenarios ----

let transport;
const st = {}; // state carried between scenarios

// 0. The card names the HTTP+JSON 0.3 interface; the SDK's 0.3 REST transport is built on it.
async function s0_endpoint_from_card(card) {
  const ifaces = card.supportedInterfaces || [];
  console.log(`info: card interfaces ${JSON.stringify(ifaces.map((i) => [i.protocolBinding, i.protocolVersion]))}`);
  eq(JSON.stringify(ifaces.slice(0, 2).map((i) => i.protocolVersion)), '["1.0","1.0"]', 'the 1.0 interfaces come first');
  const rest03 = ifaces.filter((i) => i.protocolBinding === 'HTTP+JSON' && String(i.protocolVersion).startsWith('0.'));
  eq(rest03.length, 1, `the card lists one HTTP+JSON 0.3 interface (interfaces: ${JSON.stringify(ifaces)})`);
  eq(rest03[0].url, `${base}/`, 'the HTTP+JSON 0.3 interface is on the 1.0 URL');
  // The 0.3 card, where 0.3 clients read it: JSONRPC primary, HTTP+JSON additional.
  const res = await realFetch(`${base}/.well-known/agent.json`, { signal: AbortSignal.timeout(CALL_TIMEOUT_MS) });
  const card03 = await res.json();
  eq(card03.preferredTransport, 'JSONRPC', 'the 0.3 card\'s preferredTransport');
  const extra = (card03.additionalInterfaces || []).filter((i) => i.transport === 'HTTP+JSON');
  eq(JSON.stringify(extra), JSON.stringify([{ url: `${base}/`, transport: 'HTTP+JSON' }]),
     'the 0.3 card lists HTTP+JSON in additionalInterfaces');
  transport = new LegacyRestTransport({ endpoint: rest03[0].url, fetchImpl: recordingFetch });
  eq(transport.protocolName, 'HTTP+JSON', 'LegacyRestTransport.protocolName');
  eq(transport.protocolVersion, '0.3', 'LegacyRestTransport.protocolVersion');
}

// 1. POST /v1/message:send "hello" (no configuration: blocking).
async function s1_send_hello_completes() {
  const msg = userMessage('hello');
  let r;
  try {
    r = await transport.sendMessage(sendReq(msg), opts());
  } finally {
    const rec = last('POST', SEND);
    if (rec) {
      console.log(`info: message:send request headers ${JSON.stringify(Object.fromEntries(rec.reqHeaders))}, ` +
                  `body ${rec.body}; onced answered HTTP ${rec.status}: ${String(await rec.text).slice(0, 600)}`);
    }
  }
  const b = sentBody('POST', SEND, 'send "hello"');
  eq(b.message && b.message.role, 'ROLE_USER', 'the SDK sent message.role');
  eq(JSON.stringify(b.message && b.message.content), '[{"text":"hello"}]', 'the SDK sent message.content');
  check(b.configuration === undefined, `no configuration was sent (got ${JSON.stringify(b.configuration)})`);

  const w = await answered('POST', SEND, 'send "hello"');
  check(w.task && typeof w.task === 'object', `onced answered a SendMessageResponse {task} (got ${JSON.stringify(w).slice(0, 300)})`);
  check(!('kind' in w.task), 'the task carries no JSON-RPC kind');
  eq(w.task.status && w.task.status.state, 'TASK_STATE_COMPLETED', 'onced answered task.status.state');
  const hist = w.task.history || [];
  check(hist.length > 0 && hist.every((m) => Array.isArray(m.content) && !('parts' in m) && !('kind' in m)),
        `every history message holds content, not parts (got ${JSON.stringify(hist)})`);
  const wparts = (w.task.artifacts || []).flatMap((a) => a.parts || []);
  check(wparts.some((x) => x.text === 'hello' && !('kind' in x)),
        `onced's artifacts carry {text:"hello"} (got ${JSON.stringify(w.task.artifacts)})`);

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
  const aHdr = replayedHeader('POST', SEND);
  expectState(a, TaskState.TASK_STATE_COMPLETED, 'first send');
  check(aHdr === null || aHdr === 'false', `the first answer is not marked replayed (Idempotent-Replayed: ${aHdr})`);

  const b = await transport.sendMessage(sendReq(msg), opts());
  const bHdr = replayedHeader('POST', SEND);
  check(!('taskId' in sentBody('POST', SEND, 'resend').message), 'the resend carries no taskId');
  expectState(b, TaskState.TASK_STATE_COMPLETED, 'resend with the same messageId');
  eq(b.id, a.id, 'the resend answers the same (derived) task id');
  eq(b.contextId, a.contextId, 'the resend answers the same contextId');
  eq(bHdr, 'true', 'the resend\'s answer carries Idempotent-Replayed');
  eq(b.status.timestamp, a.status.timestamp, 'the replayed task\'s status.timestamp (nothing new stored)');
  eq(keysOf(b.history, 'messageId'), keysOf(a.history, 'messageId'), 'the replayed task\'s history messageIds');

  const g = await transport.getTask({ tenant: '', id: a.id }, opts());
  const mine = (g.history || []).filter((m) => m.messageId === msg.messageId);
  eq(mine.length, 1, 'GET /v1/tasks/{id}: the message is in the history once (the agent ran once)');
  const echoed = (g.artifacts || []).flatMap((x) => texts(x.parts));
  eq(echoed.filter((t) => t === 'hello again').length, 1, 'GET /v1/tasks/{id}: one echo of the text');
}

// 3. The extension: a client-minted UUIDv4 taskId is the task's id; a retry replays.
async function s3_extension_client_task_id() {
  // 0.3's spelling, then 1.0's: onced takes either.
  for (const header of [sdk.compat.LEGACY_HTTP_EXTENSION_HEADER, sdk.HTTP_EXTENSION_HEADER]) {
    const id = randomUUID();
    check(UUID_V4.test(id), `the minted task id is a UUIDv4 (${id})`);
    const msg = userMessage(`minted under ${header}`, { taskId: id });
    const a = await transport.sendMessage(sendReq(msg), withExt(header));
    const rec = last('POST', SEND);
    eq(rec.reqHeaders.get(header), EXT, `${header}: the SDK sent the header`);
    eq(sentBody('POST', SEND, header).message.taskId, id, `${header}: the SDK sent message.taskId`);
    const aHdr = replayedHeader('POST', SEND);
    expectState(a, TaskState.TASK_STATE_COMPLETED, `${header}: first send`);
    eq(a.id, id, `${header}: the task's id is the client's`);
    check(aHdr === null || aHdr === 'false', `${header}: the first answer is not marked replayed (Idempotent-Replayed: ${aHdr})`);

    const b = await transport.sendMessage(sendReq(msg), withExt(header));
    expectState(b, TaskState.TASK_STATE_COMPLETED, `${header}: retry`);
    eq(b.id, id, `${header}: the retry answers the same task`);
    eq(replayedHeader('POST', SEND), 'true', `${header}: the retry's answer carries Idempotent-Replayed`);
    eq(b.status.timestamp, a.status.timestamp, `${header}: the replayed status.timestamp (nothing new stored)`);
  }
}

// 4. input-required, then a continuation completes the task.
async function s4_input_required_then_continue() {
  const ask = userMessage('ask:which?');
  const r1 = await transport.sendMessage(sendReq(ask, sendConfig({ returnImmediately: false })), opts());
  const b = sentBody('POST', SEND, 'ask');
  eq(b.configuration && b.configuration.blocking, true, 'returnImmediately:false went out as configuration.blocking');
  const w = await answered('POST', SEND, 'ask');
  eq(w.task && w.task.status && w.task.status.state, 'TASK_STATE_INPUT_REQUIRED', 'onced answered task.status.state');
  const q03 = w.task.status.message;
  eq(q03 && q03.role, 'ROLE_AGENT', 'onced answered status.message.role');
  eq(JSON.stringify(q03 && q03.content), '[{"text":"which?"}]', 'onced answered status.message.content');

  expectState(r1, TaskState.TASK_STATE_INPUT_REQUIRED, 'send "ask:which?"');
  const q = r1.status.message;
  check(q !== undefined && q !== null, 'the input-required status carries a message');
  eq(q.role, Role.ROLE_AGENT, 'the question comes from the agent');
  check(texts(q.parts).includes('which?'), `status.message asks "which?" (got ${JSON.stringify(texts(q.parts))})`);

  const answer = userMessage('that one', { taskId: r1.id, contextId: r1.contextId });
  const r2 = await transport.sendMessage(sendReq(answer, sendConfig({ returnImmediately: false })), opts());
  eq(sentBody('POST', SEND, 'continuation').message.taskId, r1.id, 'the continuation carried message.taskId');
  expectState(r2, TaskState.TASK_STATE_COMPLETED, 'continuation');
  eq(r2.id, r1.id, 'the continuation stays on the same task');
  eq(r2.contextId, r1.contextId, 'the continuation keeps the contextId');
  st.asked = { task: r2, askId: ask.messageId, answerId: answer.messageId };
}

// 5. GET /v1/tasks/{id} over 0.3 and GetTask over 1.0 return the same task.
async function s5_get_task_both_versions() {
  const t = (st.asked && st.asked.task) || (st.hello && st.hello.task);
  check(t !== undefined, 'prerequisite: scenario 4 or 1 produced a task');
  const g = await transport.getTask({ tenant: '', id: t.id }, opts());
  eq(sent('GET', TASK, 'get').path, `/v1/tasks/${t.id}`, 'the SDK asked GET /v1/tasks/{id}');
  const w = await answered('GET', TASK, 'get', 200);
  eq(w.id, t.id, 'onced answered the bare Task');
  eq(w.status && w.status.state, 'TASK_STATE_COMPLETED', 'onced answered status.state');
  const roles = (w.history || []).map((m) => m.role);
  check(roles.length > 0 && roles.every((x) => x === 'ROLE_USER' || x === 'ROLE_AGENT'),
        `history roles are ROLE_USER/ROLE_AGENT (got ${JSON.stringify(roles)})`);

  expectState(g, TaskState.TASK_STATE_COMPLETED, 'GET /v1/tasks/{id}');
  const v1 = await rpc10('GetTask', { id: t.id });
  eq(v1.id, g.id, '1.0 GetTask id');
  eq(v1.contextId, g.contextId, '1.0 GetTask contextId');
  eq(v1.status && v1.status.state, stateName(g.status.state), '1.0 GetTask state');
  eq(v1.status && v1.status.timestamp, w.status && w.status.timestamp, '1.0 and 0.3 status.timestamp');
  eq(keysOf(v1.history, 'messageId'), keysOf(g.history, 'messageId'), '1.0 and 0.3 history messageIds');
  eq(keysOf(v1.artifacts, 'artifactId'), keysOf(g.artifacts, 'artifactId'), '1.0 and 0.3 artifact ids');
  if (st.asked) {
    const userIds = (g.history || []).filter((m) => m.role === Role.ROLE_USER).map((m) => m.messageId);
    const iAsk = userIds.indexOf(st.asked.askId);
    check(iAsk >= 0 && userIds.indexOf(st.asked.answerId) > iAsk,
          `the history holds the question's message, then the answer (user messageIds: ${JSON.stringify(userIds)})`);
  }
  // historyLength rides in the query.
  const h1 = await transport.getTask({ tenant: '', id: t.id, historyLength: 1 }, opts());
  eq(sent('GET', TASK, 'get historyLength').query, '?historyLength=1', 'the SDK sent ?historyLength=1');
  eq((h1.history || []).length, 1, 'historyLength=1: one history message');
  eq(h1.history[0].messageId, g.history[g.history.length - 1].messageId, 'historyLength=1: the last message');
}

// 6. sleep:30 sent non-blocking, then POST /v1/tasks/{id}:cancel.
async function s6_cancel() {
  const t0 = Date.now();
  const r = await transport.sendMessage(sendReq(userMessage('sleep:30'), sendConfig({ returnImmediately: true })), opts());
  const took = Date.now() - t0;
  const conf = sentBody('POST', SEND, 'sleep:30').configuration;
  check(conf !== undefined && conf.blocking === undefined,
        `returnImmediately:true went out as a configuration without blocking (proto3's false) (got ${JSON.stringify(conf)})`);
  check(isTask(r), `sleep:30 non-blocking returns a Task (got ${JSON.stringify(r)})`);
  const s = stateName(r.status.state);
  check(s === 'TASK_STATE_SUBMITTED' || s === 'TASK_STATE_WORKING', `sleep:30 returned at once in a live state (got ${s})`);
  check(took < scaled(10000), `the non-blocking send did not block (${took} ms)`);

  const c = await transport.cancelTask({ tenant: '', id: r.id, metadata: undefined }, opts());
  eq(sent('POST', CANCEL, 'cancel').path, `/v1/tasks/${r.id}:cancel`, 'the SDK asked POST /v1/tasks/{id}:cancel');
  const w = await answered('POST', CANCEL, 'cancel', 200);
  eq(w.status && w.status.state, 'TASK_STATE_CANCELLED', 'onced answered 0.3\'s spelling TASK_STATE_CANCELLED');
  expectState(c, TaskState.TASK_STATE_CANCELED, 'cancel of a running task');
  eq(c.id, r.id, 'the cancel answers the same task');
  const g = await transport.getTask({ tenant: '', id: r.id }, opts());
  expectState(g, TaskState.TASK_STATE_CANCELED, 'GET after the cancel');
}

// 7. POST /v1/message:stream to completion; GET /v1/tasks/{id}:subscribe of an input-required task.
async function s7_stream_and_resubscribe() {
  const msg = userMessage('hello stream');
  const { ac, gen } = streamCall((o) => transport.sendMessageStream({ tenant: '', message: msg }, o));
  const { events, ended } = await collect(gen, ac, null, 'message:stream');
  const rec = sent('POST', STREAM, 'message:stream');
  console.log(`info: message:stream onced answered HTTP ${rec.status}, Content-Type ${rec.resHeaders && rec.resHeaders.get('content-type')}`);
  console.log(`info: message:stream events: ${JSON.stringify(events.map(eventSummary))}`);
  eq(rec.reqHeaders.get('accept'), 'text/event-stream', 'the SDK asked for text/event-stream');
  check(ended, 'onced ended the stream');
  check(events.length > 0, 'the stream yielded events');
  const ids = [...new Set(events.map(eventTaskId))];
  check(ids.length === 1 && ids[0], `every event names the one task (task ids: ${JSON.stringify(ids)})`);
  const lastEv = events[events.length - 1];
  eq(stateName(eventState(lastEv)), 'TASK_STATE_COMPLETED', `the last event (${eventSummary(lastEv)}) is the completed state`);
  const echoed = events.flatMap((ev) => {
    const p = ev.payload;
    if (p.$case === 'artifactUpdate') return texts(p.value.artifact.parts);
    if (p.$case === 'task') return (p.value.artifacts || []).flatMap((a) => texts(a.parts));
    return [];
  });
  check(echoed.includes('hello stream'), `the stream carries the echo artifact (texts: ${JSON.stringify(echoed)})`);

  // On the wire: bare proto StreamResponses, and the last status update says final.
  const frames = sseEvents(await rec.text);
  const members = frames.map((f) => (f.data ? Object.keys(f.data).join(',') : null));
  check(frames.length > 0 && members.every((m) => ['task', 'message', 'statusUpdate', 'artifactUpdate'].includes(m)),
        `every SSE frame is one StreamResponse member (got ${JSON.stringify(members)})`);
  const updates = frames.map((f) => f.data.statusUpdate).filter(Boolean);
  check(updates.length > 0, 'the stream carried status updates');
  eq(updates[updates.length - 1].status.state, 'TASK_STATE_COMPLETED', 'the last status update\'s state');
  eq(updates[updates.length - 1].final, true, 'the last status update carries final');

  // Resubscribe to a task waiting for input: at least its current state.
  const r = await transport.sendMessage(sendReq(userMessage('ask:still there?')), opts());
  expectState(r, TaskState.TASK_STATE_INPUT_REQUIRED, 'send "ask:still there?"');
  const sub = streamCall((o) => transport.resubscribeTask({ tenant: '', id: r.id }, o));
  const got = await collect(sub.gen, sub.ac, (evs) => evs.length >= 1, 'subscribe');
  console.log(`info: subscribe events: ${JSON.stringify(got.events.map(eventSummary))} ` +
              `(${got.ended ? 'onced ended the stream' : 'left open by onced; the test left it'})`);
  eq(sent('GET', SUBSCRIBE, 'subscribe').path, `/v1/tasks/${r.id}:subscribe`, 'the SDK asked GET /v1/tasks/{id}:subscribe');
  check(got.events.length >= 1, 'the subscription yielded an event');
  eq(eventTaskId(got.events[0]), r.id, 'the first subscription event names the task');
  eq(stateName(eventState(got.events[0])), 'TASK_STATE_INPUT_REQUIRED', 'the first subscription event\'s state');
}

// 8. Push notification configs over 0.3 REST: create / get / list / delete.
async function s8_push_configs() {
  const r = await transport.sendMessage(sendReq(userMessage('ask:push?')), opts());
  expectState(r, TaskState.TASK_STATE_INPUT_REQUIRED, 'send "ask:push?"');
  const url = `http://127.0.0.1:${hook.port}/hook`;
  const cfg = (id, token) => ({ tenant: '', taskId: r.id, id, url, token, authentication: undefined });
  const name = (id) => `tasks/${r.id}/pushNotificationConfigs/${id}`;

  // create, with the client's config id
  const a = await transport.createTaskPushNotificationConfig(cfg('rest-hook-a', 'tok-a'), opts());
  const sb = sentBody('POST', CONFIGS, 'create');
  eq(sent('POST', CONFIGS, 'create').path, `/v1/tasks/${r.id}/pushNotificationConfigs`, 'create: the path');
  eq(JSON.stringify(sb), JSON.stringify({ name: name('rest-hook-a'), pushNotificationConfig: { id: 'rest-hook-a', url, token: 'tok-a' } }),
     'create: the SDK sent the proto TaskPushNotificationConfig');
  const w = await answered('POST', CONFIGS, 'create');
  eq(w.name, name('rest-hook-a'), 'create: onced answered the resource name');
  eq(JSON.stringify(w.pushNotificationConfig), JSON.stringify({ id: 'rest-hook-a', url, token: 'tok-a' }),
     'create: onced answered pushNotificationConfig');
  eq(a.taskId, r.id, 'create: SDK result taskId');
  eq(a.id, 'rest-hook-a', 'create: SDK result id');
  eq(a.url, url, 'create: SDK result url');
  eq(a.token, 'tok-a', 'create: SDK result token');

  // create, no id: onced mints one
  const b = await transport.createTaskPushNotificationConfig(cfg('', 'tok-b'), opts());
  const sb2 = sentBody('POST', CONFIGS, 'create without id');
  check(!('id' in sb2.pushNotificationConfig), 'create without id: the SDK sent no pushNotificationConfig.id');
  check(typeof b.id === 'string' && b.id !== '', `create without id: onced minted a config id (got ${JSON.stringify(b.id)})`);
  eq(b.token, 'tok-b', 'create without id: token');

  // get
  const g = await transport.getTaskPushNotificationConfig({ tenant: '', taskId: r.id, id: 'rest-hook-a' }, opts());
  eq(sent('GET', CONFIG, 'get').path, `/v1/tasks/${r.id}/pushNotificationConfigs/rest-hook-a`, 'get: the path');
  eq((await answered('GET', CONFIG, 'get', 200)).name, name('rest-hook-a'), 'get: onced answered the resource name');
  eq(g.taskId, r.id, 'get: taskId');
  eq(g.id, 'rest-hook-a', 'get: id');
  eq(g.url, url, 'get: url');
  eq(g.token, 'tok-a', 'get: token');

  // list
  const l = await transport.listTaskPushNotificationConfig(listReq(r.id), opts());
  const lw = await answered('GET', CONFIGS, 'list', 200);
  check(Array.isArray(lw.configs), `list: onced answered {configs: [...]} (got ${JSON.stringify(lw)})`);
  const listed = (l.configs || []).map((c) => `${c.id} ${c.url} ${c.token}`).sort();
  eq(JSON.stringify(listed), JSON.stringify([`rest-hook-a ${url} tok-a`, `${b.id} ${url} tok-b`].sort()),
     'list: both configs (id url token)');

  // delete
  await transport.deleteTaskPushNotificationConfig({ tenant: '', taskId: r.id, id: 'rest-hook-a' }, opts());
  eq(sent('DELETE', CONFIG, 'delete').path, `/v1/tasks/${r.id}/pushNotificationConfigs/rest-hook-a`, 'delete: the path');
  const dw = await answered('DELETE', CONFIG, 'delete', 200);
  eq(JSON.stringify(dw), '{}', 'delete: onced answered google.protobuf.Empty');
  const l2 = await transport.listTaskPushNotificationConfig(listReq(r.id), opts());
  eq(keysOf(l2.configs, 'id'), JSON.stringify([b.id]), 'list after delete: the other config only');
  await expectSdkError(transport.getTaskPushNotificationConfig({ tenant: '', taskId: r.id, id: 'rest-hook-a' }, opts()),
                       sdk.errors.TaskNotFoundError, -32001, 404, 'GET', CONFIG, 'get of the deleted config');

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

// 9. Errors: an unknown task; a cancel of a completed task; the extended card.
async function s9_errors() {
  await expectSdkError(transport.getTask({ tenant: '', id: randomUUID() }, opts()),
                       sdk.errors.TaskNotFoundError, -32001, 404, 'GET', TASK, 'GET of an unknown id');
  await expectSdkError(transport.cancelTask({ tenant: '', id: randomUUID(), metadata: undefined }, opts()),
                       sdk.errors.TaskNotFoundError, -32001, 404, 'POST', CANCEL, 'cancel of an unknown id');
  const done = await transport.sendMessage(sendReq(userMessage('done already')), opts());
  expectState(done, TaskState.TASK_STATE_COMPLETED, 'send "done already"');
  await expectSdkError(transport.cancelTask({ tenant: '', id: done.id, metadata: undefined }, opts()),
                       sdk.errors.TaskNotCancelableError, -32002, 400, 'POST', CANCEL, 'cancel of a completed task');
  await expectSdkError(transport.getExtendedAgentCard({ tenant: '' }, opts()),
                       sdk.errors.ExtendedAgentCardNotConfiguredError, -32007, 400, 'GET', /^\/v1\/card$/,
                       'GET /v1/card (no extended card)');
  // A body that is no message at all: onced's own check names the field.
  await expectSdkError(transport.sendMessage(sendReq({ ...userMessage('x'), messageId: '' }), opts()),
                       sdk.errors.RequestMalformedError, -32602, 400, 'POST', SEND, 'send without a messageId');
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
      const cause = e && e.cause ? ` (cause: ${e.cause.name}: ${e.cause.message})` : '';
      console.error(`FAIL ${name}: ${e && e.name}: ${e && e.message}${cause}`);
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
  fatal('no 0.3 REST transport (scenario 0 failed)');
}
for (const s of scenarios) {
  await run(s.name, s);
}
finish();
