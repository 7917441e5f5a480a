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

import { check, eq, scaled } from '../js/harness.mjs';
import { oncedBinary, oncedUnderTest, parseJson, recordingFetch, sseEvents, webhookReceiver } from '../js/interop_harness.mjs';
import { CALL_TIMEOUT_MS, collect, eventState, eventSummary, eventTaskId, expectAskAnswered, expectEcho } from './a2a_sdk_helpers.mjs';
import { expectLegacyDeliveries, expectLive, expectMintedIdReplays, expectResendReplays } from './a2a_sdk_helpers.mjs';
import { expectSameOver10, expectSdkError, expectState, expectStreamedEcho, keysOf, listReq, loadSdk } from './a2a_sdk_helpers.mjs';
import { opts, runV03Peer, sendConfig, sendLogged, sendReq, stateName, streamCall, userMessage } from './a2a_sdk_helpers.mjs';

const WATCHDOG_MS = scaled(130000);

const hook = webhookReceiver(); // scenario 8's push configs point at it
const { finish, fatal, requireBinary, start } = oncedUnderTest({
  binary: oncedBinary(), tmpPrefix: 'once-interop-v03-rest-', watchdogMs: WATCHDOG_MS, onFinish: hook.close,
});

// ---- preconditions: the SDK and the server binary must both be present ----

const sdk = await loadSdk('@a2a-js/sdk/compat/v0_3/client', fatal);
const { LegacyRestTransport, TaskState } = sdk;
if (typeof LegacyRestTransport !== 'function') fatal('@a2a-js/sdk/compat/v0_3/client does not export LegacyRestTransport');

requireBinary();

// ---- what went on the wire: the SDK transport's fetchImpl records it ----

// interop_harness.mjs, recordingFetch with paths: {method, url, path, query,
// reqHeaders, body, status, resHeaders, text}.
const wire = [];

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

const SEND = /^\/v1\/message:send$/;
const STREAM = /^\/v1\/message:stream$/;
const TASK = /^\/v1\/tasks\/[^/:]+$/;
const CANCEL = /^\/v1\/tasks\/[^/]+:cancel$/;
const SUBSCRIBE = /^\/v1\/tasks\/[^/]+:subscribe$/;
const CONFIGS = /^\/v1\/tasks\/[^/]+\/pushNotificationConfigs$/;
const CONFIG = /^\/v1\/tasks\/[^/]+\/pushNotificationConfigs\/[^/]+$/;

function replayedHeader(method, re) {
  const rec = last(method, re);
  return rec && rec.resHeaders ? rec.resHeaders.get('idempotent-replayed') : null;
}

// What the checks both 0.3 peers share (a2a_sdk_helpers.mjs) read off this
// binding's wire: the last POST /v1/message:send.
const onWire = {
  lastSend: () => last('POST', SEND),
  sentMessage: (what) => sentBody('POST', SEND, what).message,
  replayed: () => replayedHeader('POST', SEND),
};

// A 0.3 REST call that must fail with the SDK's error class `cls`; onced's
// answer to the last `method` request on `re` must be HTTP `status` with the
// 0.3 REST error body {code, message, data}.
async function expectRestError(promise, cls, code, status, method, re, what) {
  const err = await expectSdkError(promise, cls, what);
  const body = await answered(method, re, what, status);
  eq(body.code, code, `${what}: the body's JSON-RPC code`);
  check(typeof body.message === 'string' && body.message !== '', `${what}: the body has a message`);
  check(Array.isArray(body.data), `${what}: the body's data is the ErrorInfo list (got ${JSON.stringify(body.data)})`);
  return err;
}

// ---- scenarios ----

let base;
let transport;
const st = {}; // state carried between scenarios

// 0. The card names the HTTP+JSON 0.3 interface; the SDK's 0.3 REST transport is built on it (and answered).
async function s0_endpoint_from_card({ url, card }) {
  base = url;
  const ifaces = card.supportedInterfaces || [];
  console.log(`info: card interfaces ${JSON.stringify(ifaces.map((i) => [i.protocolBinding, i.protocolVersion]))}`);
  eq(JSON.stringify(ifaces.slice(0, 2).map((i) => i.protocolVersion)), '["1.0","1.0"]', 'the 1.0 interfaces come first');
  const rest03 = ifaces.filter((i) => i.protocolBinding === 'HTTP+JSON' && String(i.protocolVersion).startsWith('0.'));
  eq(rest03.length, 1, `the card lists one HTTP+JSON 0.3 interface (interfaces: ${JSON.stringify(ifaces)})`);
  eq(rest03[0].url, `${base}/`, 'the HTTP+JSON 0.3 interface is on the 1.0 URL');
  // The 0.3 card, where 0.3 clients read it: JSONRPC primary, HTTP+JSON additional.
  const res = await fetch(`${base}/.well-known/agent.json`, { signal: AbortSignal.timeout(CALL_TIMEOUT_MS) });
  const card03 = await res.json();
  eq(card03.preferredTransport, 'JSONRPC', 'the 0.3 card\'s preferredTransport');
  const extra = (card03.additionalInterfaces || []).filter((i) => i.transport === 'HTTP+JSON');
  eq(JSON.stringify(extra), JSON.stringify([{ url: `${base}/`, transport: 'HTTP+JSON' }]),
     'the 0.3 card lists HTTP+JSON in additionalInterfaces');
  transport = new LegacyRestTransport({ endpoint: rest03[0].url, fetchImpl: recordingFetch(wire, { paths: true }) });
  eq(transport.protocolName, 'HTTP+JSON', 'LegacyRestTransport.protocolName');
  eq(transport.protocolVersion, '0.3', 'LegacyRestTransport.protocolVersion');
  return transport;
}

// 1. POST /v1/message:send "hello" (no configuration: blocking).
async function s1_send_hello_completes() {
  const msg = userMessage('hello');
  const r = await sendLogged(transport, sendReq(msg), onWire, 'message:send');
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

  expectEcho(r, 'hello', 'send "hello"');
  st.hello = { task: r, message: msg };
}

// 2. The same message again (same messageId, no taskId): the same task, replayed.
async function s2_same_message_replays() {
  await expectResendReplays(transport, onWire, { getLabel: 'GET /v1/tasks/{id}' });
}

// 3. The extension: a client-minted UUIDv4 taskId is the task's id; a retry replays.
async function s3_extension_client_task_id() {
  await expectMintedIdReplays(transport, onWire); // 0.3's spelling of the header, then 1.0's
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

  st.asked = await expectAskAnswered(transport, onWire, ask, r1, 'which?', 'that one');
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
  await expectSameOver10(`${base}/`, t.id, g, w.status, st.asked);
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
  expectLive(r, took);

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
  expectStreamedEcho(events, ended, 'hello stream');

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
  await expectRestError(transport.getTaskPushNotificationConfig({ tenant: '', taskId: r.id, id: 'rest-hook-a' }, opts()),
                        sdk.errors.TaskNotFoundError, -32001, 404, 'GET', CONFIG, 'get of the deleted config');

  // deliveries: the continuation completes the task; config b (set over
  // 0.3) gets each event as a 0.3 body, read by the SDK's own 0.3 parser.
  await expectLegacyDeliveries(transport, hook, r, 'tok-b');
}

// 9. Errors: an unknown task; a cancel of a completed task; the extended card.
async function s9_errors() {
  await expectRestError(transport.getTask({ tenant: '', id: randomUUID() }, opts()),
                        sdk.errors.TaskNotFoundError, -32001, 404, 'GET', TASK, 'GET of an unknown id');
  await expectRestError(transport.cancelTask({ tenant: '', id: randomUUID(), metadata: undefined }, opts()),
                        sdk.errors.TaskNotFoundError, -32001, 404, 'POST', CANCEL, 'cancel of an unknown id');
  const done = await transport.sendMessage(sendReq(userMessage('done already')), opts());
  expectState(done, TaskState.TASK_STATE_COMPLETED, 'send "done already"');
  await expectRestError(transport.cancelTask({ tenant: '', id: done.id, metadata: undefined }, opts()),
                        sdk.errors.TaskNotCancelableError, -32002, 400, 'POST', CANCEL, 'cancel of a completed task');
  await expectRestError(transport.getExtendedAgentCard({ tenant: '' }, opts()),
                        sdk.errors.ExtendedAgentCardNotConfiguredError, -32007, 400, 'GET', /^\/v1\/card$/,
                       'GET /v1/card (no extended card)');
  // A body that is no message at all: onced's own check names the field.
  await expectRestError(transport.sendMessage(sendReq({ ...userMessage('x'), messageId: '' }), opts()),
                        sdk.errors.RequestMalformedError, -32602, 400, 'POST', SEND, 'send without a messageId');
}

await runV03Peer({ hook, start, fatal, finish }, s0_endpoint_from_card, '0.3 REST transport', [
  s1_send_hello_completes, s2_same_message_replays, s3_extension_client_task_id, s4_input_required_then_continue,
  s5_get_task_both_versions, s6_cancel, s7_stream_and_resubscribe, s8_push_configs, s9_errors,
]);
