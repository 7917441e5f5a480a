// Interop: the real A2A gRPC client, @a2a-js/sdk 1.3.0's GrpcTransport
// (@a2a-js/sdk/client/grpc, on @grpc/grpc-js and @bufbuild/protobuf), drives
// a real onced over loopback: A2A 1.0 section 10, service lf.a2a.v1.A2AService.
//
// Starts its own onced ($ONCED, else build/onced) as
//   onced --listen 127.0.0.1:P --grpc-listen 127.0.0.1:G --store memory:
//         --executor echo --plain-ids derived --push-allow 127.0.0.0/8
// on free loopback ports, waits for the agent card and the gRPC port, then
// runs the scenarios below through the SDK's public client API: a Client
// from ClientFactory (the card's GRPC interface, chosen by the SDK), and a
// GrpcTransport made directly by GrpcTransportFactory for 127.0.0.1:G.
//
// What the SDK does not expose, the test reads off the wire with a gRPC
// client interceptor handed to the SDK through its own option
// (GrpcTransportFactory's grpcCallOptions.interceptors): the method path,
// the request metadata the SDK sent (a2a-version, a2a-extensions), the
// initial metadata onced answered with (idempotent-replayed) and the status.
// The SDK gives neither the response metadata nor a replay flag to its
// caller, so "a replay" is asserted on that metadata plus what the SDK
// does give: the same task id, an unchanged status timestamp, and a
// history that holds the message once (the agent ran once).
//
// What the SDK cannot do, and so is not tested through it:
//   - An unsupported A2A-Version through a Client: Client.withNormalizedHeaders
//     sets A2A-Version to the transport's protocolVersion ('1.0') over any
//     value the caller gives. The raw GrpcTransport sends serviceParameters
//     as they are, so the version check goes through it (scenario 10).
//   - Plain-object requests: the SDK's generated protobuf encoders write
//     every string field that is !== '' (undefined too, as "undefined"), so
//     every request here is built in the SDK's full typed shape (tenant '',
//     a Message's taskId and contextId '' when absent: loadSdk blankIds).
//
// Invariants: onced is always killed on exit, also when this script is
// killed (scripts/reaper.py); a missing SDK, gRPC peer package or onced
// binary is a FAILURE (never a skip); no assertion depends on speed (every
// wait is a bounded poll or an SDK call bounded by a scaled timeout);
// output ends with "N passed, N failed", the exit status non-zero on any
// failure.
import { randomUUID } from 'node:crypto';
import net from 'node:net';

import { check, eq, freePort, scaled } from '../js/harness.mjs';
import { oncedBinary, oncedUnderTest, parseJson, recordingFetch, runScenario, webhookReceiver } from '../js/interop_harness.mjs';
import {
  CALL_TIMEOUT_MS, collect, EXT, eventState, eventSummary, eventTaskId, expectEcho, expectSdkError, expectState,
  keysOf, listReq, loadSdk, opts, SDK_VERSION, sendReq, stateName, streamCall, texts, userMessage, UUID_V4,
} from './a2a_sdk_helpers.mjs';

const ONCED = oncedBinary();
const WATCHDOG_MS = scaled(110000);
const SERVICE = '/lf.a2a.v1.A2AService/';

const hook = webhookReceiver();
const { finish, fatal, requireBinary, start } = oncedUnderTest({
  binary: ONCED, tmpPrefix: 'once-interop-grpc-', watchdogMs: WATCHDOG_MS, onFinish: () => hook.close(),
});

// ---- preconditions: the SDK, its gRPC transport and its peers, onced ----

// blankIds: the gRPC encoders need a Message's absent ids as '' (above).
const sdk = await loadSdk('@a2a-js/sdk/client', fatal, { blankIds: true, rejectMessages: true });
const { ClientFactory, ClientFactoryOptions, Role, TaskState } = sdk;
let grpc;
let grpcErrors;
let GrpcTransportFactory;
try {
  grpc = await import('@grpc/grpc-js');
  grpcErrors = await import('@a2a-js/sdk/errors/grpc');
  ({ GrpcTransportFactory } = await import('@a2a-js/sdk/client/grpc'));
} catch (e) {
  fatal(`cannot load the SDK's gRPC transport or its peer dependencies (@grpc/grpc-js, @bufbuild/protobuf): ` +
        `${e && e.message}. Run "npm ci" in tests/interop, or "bash scripts/deps.sh".`);
}
requireBinary();

// ---- what goes on the wire ----

// Every HTTP fetch of the process (the SDK's card fetch; this test's own
// JSON-RPC calls use plainFetch, taken before the wrapping, so they are not
// in it): after the card, the SDK's calls must all go over gRPC.
const plainFetch = globalThis.fetch;
const http = [];
globalThis.fetch = recordingFetch(http, { answers: false });

// Every gRPC call the SDK makes: {path, sent (request metadata), initial
// (the answer's initial metadata, or null), status: {code, details, trailers}}.
const calls = [];
function recorder(options, nextCall) {
  return new grpc.InterceptingCall(nextCall(options), {
    start(metadata, listener, next) {
      const rec = { path: options.method_definition.path, sent: metadata.getMap(), initial: null, status: null };
      calls.push(rec);
      next(metadata, {
        onReceiveMetadata(md, nx) {
          rec.initial = md.getMap();
          nx(md);
        },
        onReceiveMessage(m, nx) {
          nx(m);
        },
        onReceiveStatus(st, nx) {
          rec.status = { code: st.code, details: st.details, trailers: st.metadata ? st.metadata.getMap() : {} };
          nx(st);
        },
      });
    },
  });
}
const grpcOptions = () => ({ grpcCallOptions: { interceptors: [recorder] } });

// The last recorded call of method (SendMessage, GetTask, ...), or null.
function lastCall(method) {
  for (let i = calls.length - 1; i >= 0; i--) {
    if (calls[i].path === SERVICE + method) return calls[i];
  }
  return null;
}

// The idempotent-replayed initial metadata of the last call of method.
function replayed(method) {
  const c = lastCall(method);
  return c && c.initial ? (c.initial['idempotent-replayed'] ?? null) : null;
}

function logCall(method) {
  const c = lastCall(method);
  if (c) {
    console.log(`info: ${method} over gRPC sent ${JSON.stringify(c.sent)}; onced answered initial metadata ` +
                `${JSON.stringify(c.initial)}, status ${JSON.stringify(c.status && { code: c.status.code, details: c.status.details })}`);
  }
}

// ---- the JSON-RPC side (the same onced, plain fetch) ----

let base; // http://127.0.0.1:P
let grpcTarget; // 127.0.0.1:G

// A ProtoJSON user message of one text part, as a JSON-RPC client sends it.
function jsonMessage(text, { messageId, taskId, contextId } = {}) {
  const m = { messageId, role: 'ROLE_USER', parts: [{ text }] };
  if (taskId) m.taskId = taskId;
  if (contextId) m.contextId = contextId;
  return m;
}

// One A2A 1.0 JSON-RPC call to onced: {status, replayed (Idempotent-Replayed),
// body (parsed)}; a check that it answered a result.
async function jsonRpc(method, params, headers = {}) {
  const res = await plainFetch(`${base}/`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0', ...headers },
    body: JSON.stringify({ jsonrpc: '2.0', id: randomUUID(), method, params }),
    signal: AbortSignal.timeout(CALL_TIMEOUT_MS),
  });
  const text = await res.text();
  const body = parseJson(text);
  check(body !== null && 'result' in body,
        `JSON-RPC ${method} answers a result (HTTP ${res.status}, body ${text.slice(0, 400)})`);
  return { status: res.status, replayed: res.headers.get('idempotent-replayed'), body };
}

// Resolves true once fn() is true, false when ms ran out; polls every 50 ms.
async function waitFor(fn, ms) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await fn()) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return fn();
}

// Whether a TCP connection to host:port opens.
function tcpOpen(host, port) {
  return new Promise((resolve) => {
    const s = net.connect({ host, port });
    s.setTimeout(scaled(1000));
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
    s.once('timeout', () => {
      s.destroy();
      resolve(false);
    });
  });
}

// A call that must fail with the SDK's gRPC error cls (an A2AError of that
// class, transport grpc) read from onced's status: gRPC code want.
async function expectGrpcError(promise, cls, code, reason, what) {
  const err = await expectSdkError(promise, cls, what);
  eq(err.transport, 'grpc', `${what}: the error came from the gRPC transport`);
  eq(err.status, code, `${what}: gRPC status code (${grpc.status[err.status] ?? err.status})`);
  eq(err.reason, reason, `${what}: the SDK's reason (from onced's google.rpc.ErrorInfo)`);
  check(err.statusDetailsBin && err.statusDetailsBin.length > 0, `${what}: onced sent grpc-status-details-bin`);
  return err;
}

// ---- scenarios ----

let client = null; // the Client the SDK built from the card
let direct = null; // a GrpcTransport made directly for 127.0.0.1:G
let card = null;
const st = {};

// 1. The SDK resolves the card and, preferring GRPC, picks its GRPC
// interface; a client by default (no preference) would take the card's
// first interface, JSON-RPC. Separately: the transport made directly.
async function s1_client_from_card_and_direct() {
  const grpcIf = (card.supportedInterfaces || []).filter((i) => i.protocolBinding === 'GRPC');
  eq(grpcIf.length, 1, 'the card lists one GRPC interface');
  eq(grpcIf[0].url, grpcTarget, 'its url is the --grpc-listen address');
  eq(grpcIf[0].protocolVersion, '1.0', 'its protocolVersion');

  const factory = new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    transports: [new GrpcTransportFactory(grpcOptions())],
    preferredTransports: ['GRPC'],
  }));
  client = await factory.createFromUrl(base);
  eq(client.transport.protocolName, 'GRPC', 'the SDK chose the GRPC interface from supportedInterfaces');
  eq(client.protocolVersion, '1.0', 'protocol version from the card');
  check(http.some((r) => r.url.endsWith('/.well-known/agent-card.json')), 'the SDK fetched the card over HTTP');

  direct = await new GrpcTransportFactory(grpcOptions()).create(grpcTarget, card);
  eq(direct.protocolName, 'GRPC', 'GrpcTransportFactory.create made a gRPC transport');
}

// 2. sendMessage (blocking) through the card's client completes a task:
// the SDK called SendMessage on lf.a2a.v1.A2AService with a2a-version 1.0.
// The direct transport (no A2A-Version: onced takes it as 1.0) too.
async function s2_send_completes() {
  const before = http.length;
  const r = await client.sendMessage(sendReq(userMessage('hello grpc')), opts());
  logCall('SendMessage');
  const c = lastCall('SendMessage');
  check(c !== null, 'the SDK made a gRPC SendMessage call');
  eq(c.sent['a2a-version'], '1.0', 'the SDK sent metadata a2a-version: 1.0');
  eq(c.status && c.status.code, grpc.status.OK, 'gRPC status OK');
  eq(http.length, before, 'no HTTP request went out for it');
  expectEcho(r, 'hello grpc', 'send "hello grpc"');
  check(c.initial && c.initial['idempotent-replayed'] === undefined, 'a first send is not marked replayed');
  st.hello = r;

  const d = await direct.sendMessage(sendReq(userMessage('hello direct')), opts());
  const dc = lastCall('SendMessage');
  eq(dc.sent['a2a-version'], undefined, 'the bare transport sent no a2a-version');
  expectEcho(d, 'hello direct', 'send over the direct transport');
  const g = await direct.getTask({ tenant: '', id: d.id, historyLength: undefined }, opts());
  expectEcho(g, 'hello direct', 'GetTask over the direct transport');
}

// 2'. The extension: a client-minted UUIDv4 taskId with a2a-extensions set
// registers the task under that id; the same request again is a replay
// (idempotent-replayed: true), nothing ran twice. And a plain resend (same
// messageId, no taskId, no extension) replays its derived task.
async function s3_minted_id_replays() {
  const id = randomUUID();
  check(UUID_V4.test(id), `the minted task id is a UUIDv4 (${id})`);
  const msg = userMessage('minted over grpc', { taskId: id });
  const ext = () => opts({ serviceParameters: { [sdk.HTTP_EXTENSION_HEADER]: EXT } });

  const a = await client.sendMessage(sendReq(msg), ext());
  logCall('SendMessage');
  const ca = lastCall('SendMessage');
  eq(ca.sent['a2a-extensions'], EXT, 'the SDK sent metadata a2a-extensions');
  expectEcho(a, 'minted over grpc', 'first send with the minted id');
  eq(a.id, id, 'the task\'s id is the client\'s');
  eq(replayed('SendMessage'), null, 'the first answer is not marked replayed');
  eq(ca.initial['a2a-extensions'], EXT, 'onced answered a2a-extensions: the extension was activated');

  const b = await client.sendMessage(sendReq(msg), ext());
  logCall('SendMessage');
  expectState(b, TaskState.TASK_STATE_COMPLETED, 'the retry');
  eq(b.id, id, 'the retry answers the same task');
  eq(replayed('SendMessage'), 'true', 'the retry\'s initial metadata: idempotent-replayed: true');
  eq(b.status.timestamp, a.status.timestamp, 'the replayed status.timestamp (nothing new stored)');
  eq(keysOf(b.history, 'messageId'), keysOf(a.history, 'messageId'), 'the replayed history');

  const g = await client.getTask({ tenant: '', id, historyLength: undefined }, opts());
  const users = (g.history || []).filter((m) => m.role === Role.ROLE_USER);
  eq(users.length, 1, 'the task\'s history holds one user message (the agent ran once)');
  eq(users[0].messageId, msg.messageId, 'and it is the message sent');
  st.minted = { id, msg, task: a };

  // No extension, a plain resend: the derived task (onced --plain-ids derived).
  const plain = userMessage('plain resend over grpc');
  const p1 = await client.sendMessage(sendReq(plain), opts());
  const p2 = await client.sendMessage(sendReq(plain), opts());
  expectState(p2, TaskState.TASK_STATE_COMPLETED, 'plain resend');
  eq(p2.id, p1.id, 'a plain resend answers the same (derived) task');
  eq(replayed('SendMessage'), 'true', 'and is marked replayed');
}

// 3. The same request retried over JSON-RPC (another binding, plain fetch,
// the extension in the A2A-Extensions header) replays the task the gRPC
// send registered: the digest does not depend on the binding.
async function s4_retry_over_jsonrpc_replays() {
  check(st.minted !== undefined, 'prerequisite: scenario 3 registered a minted task');
  const { id, msg, task } = st.minted;
  const r = await jsonRpc('SendMessage', { message: jsonMessage('minted over grpc', { messageId: msg.messageId, taskId: id }) },
                          { 'A2A-Extensions': EXT });
  const t = r.body.result.task;
  check(t !== undefined, `the JSON-RPC retry answers a task (got ${JSON.stringify(r.body.result).slice(0, 300)})`);
  eq(t.id, id, 'the JSON-RPC retry answers the task gRPC registered');
  eq(t.status.state, 'TASK_STATE_COMPLETED', 'in its state');
  eq(r.replayed, 'true', 'JSON-RPC answer carries Idempotent-Replayed: true');
  const g = await client.getTask({ tenant: '', id, historyLength: undefined }, opts());
  eq(stateName(g.status.state), 'TASK_STATE_COMPLETED', 'GetTask over gRPC after the JSON-RPC retry');
  eq(g.status.timestamp, task.status.timestamp, 'the status timestamp is unchanged');
  eq((g.history || []).filter((m) => m.role === Role.ROLE_USER).length, 1, 'still one user message: nothing ran again');

  // And the other way: a task registered over JSON-RPC, retried over gRPC.
  const id2 = randomUUID();
  const mid2 = randomUUID();
  const j = await jsonRpc('SendMessage', { message: jsonMessage('minted over json-rpc', { messageId: mid2, taskId: id2 }) },
                          { 'A2A-Extensions': EXT });
  eq(j.body.result.task && j.body.result.task.id, id2, 'JSON-RPC registered the minted task');
  const b = await client.sendMessage(sendReq(userMessage('minted over json-rpc', { messageId: mid2, taskId: id2 })),
                                     opts({ serviceParameters: { [sdk.HTTP_EXTENSION_HEADER]: EXT } }));
  eq(b.id, id2, 'the gRPC retry answers the JSON-RPC task');
  eq(replayed('SendMessage'), 'true', 'marked replayed on gRPC');
}

// 4. An input-required task: the question in status.message; a
// continuation over gRPC completes it; GetTask (historyLength honoured);
// ListTasks by contextId; CancelTask of another input-required task.
async function s5_input_required_get_list_cancel() {
  const ask = userMessage('ask:Which jurisdiction?');
  const r1 = await client.sendMessage(sendReq(ask), opts());
  expectState(r1, TaskState.TASK_STATE_INPUT_REQUIRED, 'send "ask:Which jurisdiction?"');
  const q = r1.status.message;
  check(q !== undefined && q !== null, 'the input-required status carries a message');
  eq(q.role, Role.ROLE_AGENT, 'the question comes from the agent');
  check(texts(q.parts).some((t) => t.includes('Which jurisdiction?')), `status.message asks the question (${JSON.stringify(texts(q.parts))})`);

  const answer = userMessage('Delaware', { taskId: r1.id, contextId: r1.contextId });
  const r2 = await client.sendMessage(sendReq(answer), opts());
  expectState(r2, TaskState.TASK_STATE_COMPLETED, 'the continuation over gRPC');
  eq(r2.id, r1.id, 'the continuation stays on the task');
  eq(r2.contextId, r1.contextId, 'and its contextId');

  const g = await client.getTask({ tenant: '', id: r1.id, historyLength: undefined }, opts());
  const userIds = (g.history || []).filter((m) => m.role === Role.ROLE_USER).map((m) => m.messageId);
  eq(JSON.stringify(userIds), JSON.stringify([ask.messageId, answer.messageId]), 'GetTask: the history holds the ask, then the answer');
  const g1 = await client.getTask({ tenant: '', id: r1.id, historyLength: 1 }, opts());
  check((g1.history || []).length <= 1, `GetTask historyLength=1 gives at most one message (got ${(g1.history || []).length})`);

  // A second task in the same context (the client names the contextId).
  const other = await client.sendMessage(sendReq(userMessage('same context', { contextId: r1.contextId })), opts());
  expectState(other, TaskState.TASK_STATE_COMPLETED, 'a new task in the context');
  eq(other.contextId, r1.contextId, 'it keeps the contextId the client gave');
  const list = await client.listTasks({
    tenant: '', contextId: r1.contextId, status: TaskState.TASK_STATE_UNSPECIFIED, pageSize: undefined, pageToken: '',
    historyLength: undefined, statusTimestampAfter: undefined, includeArtifacts: undefined,
  }, opts());
  const ids = (list.tasks || []).map((t) => t.id).sort();
  eq(JSON.stringify(ids), JSON.stringify([r1.id, other.id].sort()), 'ListTasks by contextId lists the context\'s two tasks');
  check((list.tasks || []).every((t) => t.contextId === r1.contextId), 'every listed task is in the context');
  check(st.hello === undefined || !ids.includes(st.hello.id), 'a task of another context is not listed');

  const ask2 = await client.sendMessage(sendReq(userMessage('ask:Cancel me?')), opts());
  expectState(ask2, TaskState.TASK_STATE_INPUT_REQUIRED, 'another input-required task');
  const c = await client.cancelTask({ tenant: '', id: ask2.id, metadata: undefined }, opts());
  expectState(c, TaskState.TASK_STATE_CANCELED, 'CancelTask of the input-required task');
  eq(c.id, ask2.id, 'CancelTask answers that task');
  const gc = await client.getTask({ tenant: '', id: ask2.id, historyLength: undefined }, opts());
  expectState(gc, TaskState.TASK_STATE_CANCELED, 'GetTask after the cancel');
  st.asked = r2;
}

// 5. SendStreamingMessage: the task's events, ending completed, all of it;
// the server ends the stream.
async function s6_stream() {
  const { ac, gen } = streamCall((o) => client.sendMessageStream(sendReq(userMessage('streamed over grpc')), o));
  const { events, ended } = await collect(gen, ac, null, 'SendStreamingMessage');
  logCall('SendStreamingMessage');
  console.log(`info: SendStreamingMessage gave ${JSON.stringify(events.map(eventSummary))}`);
  check(ended, 'onced ended the stream');
  check(events.length > 0, 'the stream gave events');
  const ids = new Set(events.map(eventTaskId));
  eq(ids.size, 1, `every event names one task (${JSON.stringify([...ids])})`);
  const states = events.map(eventState).filter((s) => s !== undefined);
  eq(stateName(states[states.length - 1]), 'TASK_STATE_COMPLETED', 'the last state is completed');
  const arts = events.filter((e) => e.payload.$case === 'artifactUpdate').flatMap((e) => texts(e.payload.value.artifact.parts));
  const inTask = events.filter((e) => e.payload.$case === 'task').flatMap((e) => (e.payload.value.artifacts || []).flatMap((a) => texts(a.parts)));
  check(arts.concat(inTask).includes('streamed over grpc'), `the echo came on the stream (${JSON.stringify(arts.concat(inTask))})`);
  const g = await client.getTask({ tenant: '', id: [...ids][0], historyLength: undefined }, opts());
  expectEcho(g, 'streamed over grpc', 'GetTask of the streamed task');
}

// 5'. SubscribeToTask on an input-required task: the task as it stands
// first; then the continuation, sent over JSON-RPC, reaches the subscriber
// as the completion, and onced ends the stream.
async function s7_subscribe_sees_jsonrpc_continuation() {
  const ask = await client.sendMessage(sendReq(userMessage('ask:Subscribe?')), opts());
  expectState(ask, TaskState.TASK_STATE_INPUT_REQUIRED, 'an input-required task');
  const { ac, gen } = streamCall((o) => client.resubscribeTask({ tenant: '', id: ask.id }, o));
  const it = gen[Symbol.asyncIterator]();
  const events = [];
  try {
    const first = await it.next();
    check(!first.done, 'SubscribeToTask gave a first event');
    events.push(first.value);
    eq(first.value.payload.$case, 'task', 'the first event is the task');
    eq(stateName(eventState(first.value)), 'TASK_STATE_INPUT_REQUIRED', 'as it stands: input-required');

    const r = await jsonRpc('SendMessage', { message: jsonMessage('Yes', { messageId: randomUUID(), taskId: ask.id, contextId: ask.contextId }) });
    eq(r.body.result.task && r.body.result.task.status.state, 'TASK_STATE_COMPLETED', 'the JSON-RPC continuation completed the task');

    for (;;) {
      const n = await it.next();
      if (n.done) break;
      events.push(n.value);
    }
  } catch (e) {
    if (ac.signal.aborted || (e && /CANCELLED|cancel/i.test(String(e.message)))) {
      check(false, `SubscribeToTask ended within ${CALL_TIMEOUT_MS} ms (events: ${JSON.stringify(events.map(eventSummary))})`);
    }
    throw e;
  } finally {
    ac.abort();
  }
  logCall('SubscribeToTask');
  console.log(`info: SubscribeToTask gave ${JSON.stringify(events.map(eventSummary))}`);
  check(events.every((e) => eventTaskId(e) === ask.id), 'every event names the task');
  const states = events.map(eventState).filter((s) => s !== undefined);
  eq(stateName(states[states.length - 1]), 'TASK_STATE_COMPLETED', 'the subscriber saw the completion');
  eq(lastCall('SubscribeToTask').status.code, grpc.status.OK, 'onced ended the stream with OK');
}

// 6. Errors, read by the SDK's gRPC error mapping from onced's
// grpc-status-details-bin (google.rpc.Status with A2A's ErrorInfo first).
async function s8_errors() {
  const unknown = randomUUID();
  const e1 = await expectGrpcError(client.getTask({ tenant: '', id: unknown, historyLength: undefined }, opts()),
                                   sdk.errors.TaskNotFoundError, grpc.status.NOT_FOUND, 'TASK_NOT_FOUND', 'GetTask of an unknown id');
  console.log(`info: unknown GetTask: ${e1.name}, status ${e1.status}, message ${JSON.stringify(e1.message)}, metadata ${JSON.stringify(e1.metadata)}`);
  eq(e1.metadata && e1.metadata.taskId, unknown, 'the ErrorInfo metadata names the task');

  // The Client always sends its own version (above): the raw transport.
  const e2 = await expectGrpcError(direct.getTask({ tenant: '', id: unknown, historyLength: undefined },
                                                  opts({ serviceParameters: { 'A2A-Version': '9.9' } })),
                                   sdk.errors.VersionNotSupportedError, grpc.status.UNIMPLEMENTED, 'VERSION_NOT_SUPPORTED',
                                   'a2a-version 9.9');
  console.log(`info: a2a-version 9.9: ${e2.name}, status ${e2.status}, message ${JSON.stringify(e2.message)}`);
  eq(lastCall('GetTask').sent['a2a-version'], '9.9', 'the raw transport sent a2a-version 9.9');

  check(st.hello !== undefined, 'prerequisite: scenario 2 completed a task');
  await expectGrpcError(client.cancelTask({ tenant: '', id: st.hello.id, metadata: undefined }, opts()),
                        sdk.errors.TaskNotCancelableError, grpc.status.FAILED_PRECONDITION, 'TASK_NOT_CANCELABLE',
                        'CancelTask of a completed task');

  const late = userMessage('one more thing', { taskId: st.hello.id, contextId: st.hello.contextId });
  const e3 = await expectGrpcError(client.sendMessage(sendReq(late), opts()), sdk.errors.UnsupportedOperationError,
                                   grpc.status.UNIMPLEMENTED, 'UNSUPPORTED_OPERATION', 'a message to a completed task');
  eq(e3.metadata && e3.metadata.state, 'TASK_STATE_COMPLETED', 'the ErrorInfo metadata names the state');
  // The whole google.rpc.Status, decoded by the SDK's own codec: A2A's
  // ErrorInfo first, once's finer reason after it (docs/wire.md, "Errors").
  const status = grpcErrors.decodeStatus(e3.statusDetailsBin);
  eq(status.code, grpc.status.UNIMPLEMENTED, 'google.rpc.Status.code matches grpc-status');
  const infos = status.details.filter((d) => d.typeUrl === 'type.googleapis.com/google.rpc.ErrorInfo')
    .map((d) => grpcErrors.decodeErrorInfo(d.value));
  console.log(`info: a message to a completed task: status ${status.code}, ErrorInfos ${JSON.stringify(infos)}`);
  eq(JSON.stringify(infos.map((i) => i.reason)), JSON.stringify(['UNSUPPORTED_OPERATION', 'TASK_TERMINAL']),
     'the ErrorInfo reasons: A2A\'s, then once\'s');
  eq(infos[0].domain, 'a2a-protocol.org', 'the first ErrorInfo is in A2A\'s domain');
}

// 7. Push notification configs through the SDK: create on an input-required
// task, get, list, a delivery of the completion to the webhook, delete.
async function s9_push_configs() {
  const ask = await client.sendMessage(sendReq(userMessage('ask:Push?')), opts());
  expectState(ask, TaskState.TASK_STATE_INPUT_REQUIRED, 'an input-required task');
  const url = `http://127.0.0.1:${hook.port}/hook`;
  const created = await client.createTaskPushNotificationConfig({
    tenant: '', id: '', taskId: ask.id, url, token: 'tok-grpc', authentication: undefined,
  }, opts());
  logCall('CreateTaskPushNotificationConfig');
  eq(created.taskId, ask.id, 'the created config names the task');
  eq(created.url, url, 'and the url');
  eq(created.token, 'tok-grpc', 'and the token');
  check(typeof created.id === 'string' && created.id !== '', `onced gave the config an id (${created.id})`);

  const got = await client.getTaskPushNotificationConfig({ tenant: '', taskId: ask.id, id: created.id }, opts());
  eq(got.id, created.id, 'GetTaskPushNotificationConfig: the id');
  eq(got.url, url, 'GetTaskPushNotificationConfig: the url');

  const list = await client.listTaskPushNotificationConfig(listReq(ask.id), opts());
  eq(keysOf(list.configs, 'id'), JSON.stringify([created.id]), 'ListTaskPushNotificationConfigs lists it');

  const done = await client.sendMessage(sendReq(userMessage('pushed', { taskId: ask.id, contextId: ask.contextId })), opts());
  expectState(done, TaskState.TASK_STATE_COMPLETED, 'the continuation');
  const delivered = await waitFor(() => hook.posts.some((p) => p.url === '/hook' && p.body.includes('TASK_STATE_COMPLETED') &&
                                                       p.body.includes(ask.id)), scaled(15000));
  check(delivered, `the webhook got the completion (posts: ${JSON.stringify(hook.posts.map((p) => p.body.slice(0, 200)))})`);
  const post = hook.posts.find((p) => p.body.includes(ask.id));
  eq(post.headers['x-a2a-notification-token'], 'tok-grpc', 'the delivery carries the token (X-A2A-Notification-Token)');

  await client.deleteTaskPushNotificationConfig({ tenant: '', taskId: ask.id, id: created.id }, opts());
  const after = await client.listTaskPushNotificationConfig(listReq(ask.id), opts());
  eq((after.configs || []).length, 0, 'after DeleteTaskPushNotificationConfig the list is empty');
  const e = await expectSdkError(client.getTaskPushNotificationConfig({ tenant: '', taskId: ask.id, id: created.id }, opts()),
                                 null, 'GetTaskPushNotificationConfig of the deleted config');
  console.log(`info: get of a deleted config: ${e.name}, status ${e.status}, reason ${e.reason}, message ${JSON.stringify(e.message)}`);
  eq(e.status, grpc.status.NOT_FOUND, 'a deleted config is NOT_FOUND');
}

const scenarios = [
  s2_send_completes,
  s3_minted_id_replays,
  s4_retry_over_jsonrpc_replays,
  s5_input_required_get_list_cancel,
  s6_stream,
  s7_subscribe_sees_jsonrpc_continuation,
  s8_errors,
  s9_push_configs,
];

await hook.listen();
const gport = await freePort();
grpcTarget = `127.0.0.1:${gport}`;
const started = await start(['--grpc-listen', grpcTarget, '--executor', 'echo', '--plain-ids', 'derived',
                             // the webhook listens on loopback (SSRF guard)
                             '--push-allow', '127.0.0.0/8'], { store: 'memory:' });
base = started.url;
card = started.card;
if (!(await waitFor(() => tcpOpen('127.0.0.1', gport), scaled(15000)))) {
  fatal(`onced's gRPC listener ${grpcTarget} did not open within ${scaled(15000)} ms`);
}
console.log(`info: @a2a-js/sdk ${SDK_VERSION} (gRPC transport), node ${process.version}, onced ${ONCED} at ${base}, ` +
            `gRPC ${grpcTarget}, webhook on port ${hook.port}`);
if (!(await runScenario(s1_client_from_card_and_direct.name, s1_client_from_card_and_direct)) || !client || !direct) {
  fatal('no gRPC client (scenario 1 failed)');
}
for (const s of scenarios) {
  await runScenario(s.name, s);
}
finish();
