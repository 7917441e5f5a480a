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

import { check, eq, scaled } from '../js/harness.mjs';
import { lastRpc, oncedBinary, oncedUnderTest, parseJson, recordingFetch, sseEvents, webhookReceiver } from '../js/interop_harness.mjs';
import { collect, eventState, eventSummary, eventTaskId, expectAskAnswered, expectEcho } from './a2a_sdk_helpers.mjs';
import { expectLegacyDeliveries, expectLive, expectMintedIdReplays, expectResendReplays } from './a2a_sdk_helpers.mjs';
import { expectSameOver10, expectSdkError, expectState, expectStreamedEcho, EXT, keysOf, listReq } from './a2a_sdk_helpers.mjs';
import { loadSdk, opts, runV03Peer, sendConfig, sendLogged, sendReq, stateName, streamCall, userMessage } from './a2a_sdk_helpers.mjs';

const WATCHDOG_MS = scaled(130000);

const hook = webhookReceiver(); // scenario 8's push configs point at it
const { finish, fatal, requireBinary, start } = oncedUnderTest({
  binary: oncedBinary(), tmpPrefix: 'once-interop-v03-', watchdogMs: WATCHDOG_MS, onFinish: hook.close,
});

// ---- preconditions: the SDK and the server binary must both be present ----

const sdk = await loadSdk('@a2a-js/sdk/compat/v0_3/client', fatal);
const { LegacyJsonRpcTransport, isLegacyAgentCard, parseLegacyAgentCard, TaskState } = sdk;
for (const [name, v] of Object.entries({ LegacyJsonRpcTransport, isLegacyAgentCard, parseLegacyAgentCard })) {
  if (typeof v !== 'function') fatal(`@a2a-js/sdk/compat/v0_3/client does not export ${name}`);
}

requireBinary();

// ---- what went on the wire: the SDK transport's fetchImpl records it ----

// interop_harness.mjs, recordingFetch: {method, url, reqHeaders, body,
// status, resHeaders, text}.
const wire = [];

function rpcMethodOf(rec) {
  const b = parseJson(rec.body);
  return b ? b.method : null;
}

// The last request of `method`: it must exist (a check), and its params.
function sentParams(method, what) {
  const rec = lastRpc(wire, method);
  check(rec !== null, `${what}: the SDK sent a JSON-RPC "${method}" request (requests seen: ` +
        `${JSON.stringify(wire.map(rpcMethodOf))})`);
  return parseJson(rec.body).params;
}

// What onced answered to the last `method` request: the JSON-RPC result
// member of its (non-stream) body.
async function answeredResult(method, what) {
  const rec = lastRpc(wire, method);
  check(rec !== null, `${what}: a "${method}" request was sent`);
  const text = await rec.text;
  const body = parseJson(text);
  check(body !== null && typeof body === 'object' && 'result' in body,
        `${what}: onced answered "${method}" with a JSON-RPC result (HTTP ${rec.status}, body ${String(text).slice(0, 400)})`);
  return body.result;
}

function replayedHeader(method) {
  const rec = lastRpc(wire, method);
  return rec && rec.resHeaders ? rec.resHeaders.get('idempotent-replayed') : null;
}

// What the checks both 0.3 peers share (a2a_sdk_helpers.mjs) read off this
// binding's wire: the last message/send.
const onWire = {
  lastSend: () => lastRpc(wire, 'message/send'),
  sentMessage: (what) => sentParams('message/send', what).message,
  replayed: () => replayedHeader('message/send'),
};

// A 0.3 call that must fail with the SDK's error class `cls` carrying JSON-RPC
// code `code`.
async function expectRpcError(promise, cls, code, what) {
  const err = await expectSdkError(promise, cls, what);
  eq(err.transport, 'jsonrpc', `${what}: error transport`);
  eq(err.envelopeCode, code, `${what}: JSON-RPC error code`);
  return err;
}

// ---- scenarios ----

let base;
let endpoint;
let transport;
const st = {}; // state carried between scenarios

// 0. The card names the JSON-RPC endpoint; the SDK's 0.3 transport is built on it (and answered).
async function s0_endpoint_from_card({ url, card }) {
  base = url;
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
  transport = new LegacyJsonRpcTransport({ endpoint, fetchImpl: recordingFetch(wire) });
  eq(transport.protocolName, 'JSONRPC', 'LegacyJsonRpcTransport.protocolName');
  eq(transport.protocolVersion, '0.3', 'LegacyJsonRpcTransport.protocolVersion');
  const exts = (card.capabilities && card.capabilities.extensions) || [];
  check(exts.some((x) => x.uri === EXT), `the card declares ${EXT} (got ${JSON.stringify(exts.map((x) => x.uri))})`);
  return transport;
}

// 1. message/send "hello" (no configuration: 0.3's default is blocking).
async function s1_send_hello_completes() {
  const msg = userMessage('hello');
  const r = await sendLogged(transport, sendReq(msg), onWire, 'message/send');
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

  expectEcho(r, 'hello', 'send "hello"');
  st.hello = { task: r, message: msg };
}

// 2. The same message again (same messageId, no taskId): the same task, replayed.
async function s2_same_message_replays() {
  await expectResendReplays(transport, onWire, { getLabel: 'tasks/get', counts: true });
}

// 3. The extension: a client-minted UUIDv4 taskId is the task's id; a retry replays.
async function s3_extension_client_task_id() {
  // 0.3's spelling of the header, then 1.0's; also the replay's counts.
  await expectMintedIdReplays(transport, onWire, { counts: true });
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

  st.asked = await expectAskAnswered(transport, onWire, ask, r1, 'which?', 'that one');
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
  await expectSameOver10(endpoint, t.id, g, w.status, st.asked);
}

// 6. sleep:30 sent non-blocking, then tasks/cancel.
async function s6_cancel() {
  const t0 = Date.now();
  const r = await transport.sendMessage(sendReq(userMessage('sleep:30'), sendConfig({ returnImmediately: true })), opts());
  const took = Date.now() - t0;
  eq(sentParams('message/send', 'sleep:30').configuration.blocking, false,
     'returnImmediately:true went out as configuration.blocking');
  expectLive(r, took);

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
  const rec = lastRpc(wire, 'message/stream');
  console.log(`info: message/stream request headers ${JSON.stringify(Object.fromEntries(rec.reqHeaders))}; ` +
              `onced answered HTTP ${rec.status}, Content-Type ${rec.resHeaders && rec.resHeaders.get('content-type')}`);
  console.log(`info: message/stream events: ${JSON.stringify(events.map(eventSummary))}`);
  eq(rec.reqHeaders.get('accept'), 'text/event-stream', 'the SDK asked for text/event-stream');
  expectStreamedEcho(events, ended, 'hello stream', { states: true });

  // On the wire: 0.3 events, and the terminal status-update says final.
  const frames = sseEvents(await rec.text);
  const results = frames.map((f) => f.data && f.data.result).filter(Boolean);
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
  await expectRpcError(transport.getTaskPushNotificationConfig({ tenant: '', taskId: r.id, id: 'v03-hook-a' }, opts()),
                       sdk.errors.TaskNotFoundError, -32001, 'get of the deleted config');

  // deliveries: the continuation completes the task; config b (set over
  // 0.3) gets each event as a 0.3 body, read by the SDK's own 0.3 parser.
  await expectLegacyDeliveries(transport, hook, r, 'tok-b');
}

// 9. Errors: an unknown task; a cancel of a completed task.
async function s9_errors() {
  await expectRpcError(transport.getTask({ tenant: '', id: randomUUID() }, opts()),
                       sdk.errors.TaskNotFoundError, -32001, 'tasks/get of an unknown id');
  await expectRpcError(transport.cancelTask({ tenant: '', id: randomUUID(), metadata: undefined }, opts()),
                       sdk.errors.TaskNotFoundError, -32001, 'tasks/cancel of an unknown id');
  const done = await transport.sendMessage(sendReq(userMessage('done already')), opts());
  expectState(done, TaskState.TASK_STATE_COMPLETED, 'send "done already"');
  await expectRpcError(transport.cancelTask({ tenant: '', id: done.id, metadata: undefined }, opts()),
                       sdk.errors.TaskNotCancelableError, -32002, 'tasks/cancel of a completed task');
}

await runV03Peer({ hook, start, fatal, finish }, s0_endpoint_from_card, '0.3 transport', [
  s1_send_hello_completes, s2_same_message_replays, s3_extension_client_task_id, s4_input_required_then_continue,
  s5_get_task_both_versions, s6_cancel, s7_stream_and_resubscribe, s8_push_configs, s9_errors,
]);
