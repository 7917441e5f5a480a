// Interop: the real A2A client, @a2a-js/sdk 1.3.0, drives a real onced.
//
// Starts its own onced ($ONCED, else build/onced) on a free loopback port
// with a fresh SQLite store in a temporary folder, waits for the agent card,
// then runs the scenarios below through the SDK's public client API only
// (ClientFactory().createFromUrl, client.sendMessage/getTask/cancelTask).
// Every request the SDK makes goes through a recording wrapper around
// globalThis.fetch, so the test can also assert what the SDK put on the wire
// (A2A-Version) and what onced answered in HTTP headers (Idempotent-Replayed).
//
// Invariants: onced is always killed on exit, also when this script is
// killed (scripts/reaper.py marks its environment); a missing SDK, node_modules or
// onced binary is a FAILURE (never a skip); output ends with
// "N passed, N failed" and the exit status is non-zero on any failure.
import { randomUUID } from 'node:crypto';

import { check, eq, scaled, tally } from '../js/harness.mjs';
import { lastRpc, oncedBinary, oncedUnderTest, recordingFetch, runScenario } from '../js/interop_harness.mjs';
import { expectEcho, expectSdkError, expectState, EXT, isTask, loadSdk, opts, SDK_VERSION, stateName } from './a2a_sdk_helpers.mjs';
import { texts, userMessage } from './a2a_sdk_helpers.mjs';

const ONCED = oncedBinary();
// onced --plain-ids (docs/wire.md, "Identity"): derived (the default) or server.
const PLAIN_IDS = process.env.ONCE_PLAIN_IDS || 'derived';
const WATCHDOG_MS = scaled(110000);

const { finish, fatal, requireBinary, start } = oncedUnderTest({
  binary: ONCED, tmpPrefix: 'once-interop-', watchdogMs: WATCHDOG_MS,
});

// ---- preconditions: the SDK and the server binary must both be present ----

// The 1.0 client takes a Message with only the ids it has, and its isTask
// takes what has an id and a status (a2a_sdk_helpers.mjs, loadSdk).
const sdk = await loadSdk('@a2a-js/sdk/client', fatal, { blankIds: false, rejectMessages: false });
const { ClientFactory, Role, TaskState } = sdk;

requireBinary();

// ---- recording fetch: what the SDK sends, what onced answers ----

// Every fetch of the process goes through it (interop_harness.mjs,
// recordingFetch): {method, url, reqHeaders: Headers, body, status, resHeaders: Headers}.
const wire = [];
globalThis.fetch = recordingFetch(wire, { answers: false });

// The A2A ErrorInfo inside a JSON-RPC error.data, as onced sends it.
function errorInfos(err) {
  const data = Array.isArray(err && err.data) ? err.data : [];
  return data.filter((d) => d && typeof d === 'object' && String(d['@type'] || '').endsWith('google.rpc.ErrorInfo'));
}

async function expectRpcError(promise, code, reason, meta, what) {
  const err = await expectSdkError(promise, null, what);
  eq(err.transport, 'jsonrpc', `${what}: error transport`);
  eq(err.envelopeCode, code, `${what}: JSON-RPC error code`);
  // A2A's own ErrorInfo first (A2A 1.0 section 9.5), once's finer reason, if
  // any, last (docs/wire.md, "Errors").
  const infos = errorInfos(err);
  check(infos.length > 0, `${what}: error.data carries a google.rpc.ErrorInfo (data: ${JSON.stringify(err.data)})`);
  eq(infos[0].domain, 'a2a-protocol.org', `${what}: the first ErrorInfo is A2A's`);
  const info = infos[infos.length - 1];
  eq(info.reason, reason, `${what}: ErrorInfo.reason`);
  for (const [k, v] of Object.entries(meta)) {
    eq(info.metadata && info.metadata[k], v, `${what}: ErrorInfo.metadata.${k}`);
  }
  return err;
}

// ---- scenarios ----

let base;
let client;
const st = {}; // state carried between scenarios

async function s1_client_from_agent_card() {
  client = await new ClientFactory().createFromUrl(base);
  check(client !== null && typeof client.sendMessage === 'function', 'createFromUrl returned a client');
  eq(client.transport.protocolName, 'JSONRPC', 'transport chosen from supportedInterfaces');
  eq(client.protocolVersion, '1.0', 'protocol version negotiated from the card');
  const card = await client.getAgentCard(opts());
  const exts = (card.capabilities && card.capabilities.extensions) || [];
  check(exts.some((x) => x.uri === EXT), `agent card declares ${EXT} (got ${JSON.stringify(exts.map((x) => x.uri))})`);
  const cardReq = wire.find((r) => r.url.endsWith('/.well-known/agent-card.json'));
  check(cardReq !== undefined, 'the SDK fetched /.well-known/agent-card.json');
  console.log(`info: card fetch sent A2A-Version=${JSON.stringify(cardReq.reqHeaders.get('a2a-version'))}, ` +
              `onced answered HTTP ${cardReq.status}`);
}

async function s2_send_hello_completes() {
  const msg = userMessage('hello');
  let r;
  try {
    r = await client.sendMessage({ message: msg }, opts());
  } finally {
    const rec = lastRpc(wire, 'SendMessage');
    if (rec) {
      console.log(`info: SendMessage sent A2A-Version=${JSON.stringify(rec.reqHeaders.get('a2a-version'))}, ` +
                  `A2A-Extensions=${JSON.stringify(rec.reqHeaders.get('a2a-extensions'))}, ` +
                  `body=${rec.body}; onced answered HTTP ${rec.status}`);
    }
  }
  eq(lastRpc(wire, 'SendMessage').reqHeaders.get('a2a-version'), '1.0', 'SDK sent A2A-Version: 1.0 on SendMessage');
  expectEcho(r, 'hello', 'send "hello"');
  st.hello = { task: r, messageId: msg.messageId };
}

async function s3_input_required_then_continue() {
  const ask = userMessage('ask:Which jurisdiction?');
  const r1 = await client.sendMessage({ message: ask }, opts());
  expectState(r1, TaskState.TASK_STATE_INPUT_REQUIRED, 'send "ask:Which jurisdiction?"');
  const q = r1.status.message;
  check(q !== undefined && q !== null, 'input-required status carries a message');
  eq(q.role, Role.ROLE_AGENT, 'the question comes from the agent');
  check(texts(q.parts).some((t) => t.includes('Which jurisdiction?')),
        `status.message asks the question (got ${JSON.stringify(texts(q.parts))})`);

  const answer = userMessage('Delaware', { taskId: r1.id, contextId: r1.contextId });
  const r2 = await client.sendMessage({ message: answer }, opts());
  expectState(r2, TaskState.TASK_STATE_COMPLETED, 'continuation with the answer');
  eq(r2.id, r1.id, 'continuation stays on the same task');
  eq(r2.contextId, r1.contextId, 'continuation keeps the contextId');
  st.asked = { task: r2, askId: ask.messageId, answerId: answer.messageId };
}

async function s4_new_message_to_completed_task() {
  check(st.asked !== undefined, 'prerequisite: scenario 3 produced a completed task');
  const t = st.asked.task;
  const late = userMessage('one more thing', { taskId: t.id, contextId: t.contextId });
  const err = await expectRpcError(client.sendMessage({ message: late }, opts()), -32004, 'TASK_TERMINAL',
                                   { taskId: t.id, state: 'TASK_STATE_COMPLETED' }, 'message to a completed task');
  check(err instanceof sdk.errors.UnsupportedOperationError,
        `the SDK maps -32004 to UnsupportedOperationError (got ${err.name})`);
}

async function s5_get_task_with_history() {
  check(st.asked !== undefined, 'prerequisite: scenario 3 produced a completed task');
  const t = st.asked.task;
  const g = await client.getTask({ id: t.id }, opts());
  expectState(g, TaskState.TASK_STATE_COMPLETED, 'GetTask');
  eq(g.id, t.id, 'GetTask id');
  eq(g.contextId, t.contextId, 'GetTask contextId');
  const hist = g.history || [];
  const userIds = hist.filter((m) => m.role === Role.ROLE_USER).map((m) => m.messageId);
  const iAsk = userIds.indexOf(st.asked.askId);
  const iAns = userIds.indexOf(st.asked.answerId);
  check(iAsk >= 0 && iAns > iAsk,
        `history holds the first message then the answer (user messageIds: ${JSON.stringify(userIds)})`);
  check(!hist.some((m) => texts(m.parts).includes('one more thing')),
        'the refused message did not enter the history');
  check((g.artifacts || []).length > 0, 'GetTask returns the artifacts');

  const g1 = await client.getTask({ id: t.id, historyLength: 1 }, opts());
  check((g1.history || []).length <= 1, `GetTask historyLength=1 returns at most 1 message (got ${(g1.history || []).length})`);

  await expectRpcError(client.getTask({ id: randomUUID() }, opts()), -32001, 'TASK_NOT_FOUND', {}, 'GetTask of an unknown id');
}

async function s6_cancel() {
  const t0 = Date.now();
  const r = await client.sendMessage({ message: userMessage('sleep:30'), configuration: { returnImmediately: true } }, opts());
  const took = Date.now() - t0;
  check(isTask(r), `sleep:30 with returnImmediately returns a Task (got ${JSON.stringify(r)})`);
  const s = stateName(r.status.state);
  check(s === 'TASK_STATE_SUBMITTED' || s === 'TASK_STATE_WORKING', `sleep:30 returned at once in a live state (got ${s})`);
  check(took < scaled(10000), `returnImmediately did not block (${took} ms)`);

  const c = await client.cancelTask({ id: r.id }, opts());
  expectState(c, TaskState.TASK_STATE_CANCELED, 'CancelTask of a running task');
  eq(c.id, r.id, 'CancelTask returns the same task');

  // The next task runs on the one turn worker only once the canceled turn is
  // over: a worker that ignored the cancel would have written by then.
  const after = await client.sendMessage({ message: userMessage('after the cancel') }, opts());
  expectState(after, TaskState.TASK_STATE_COMPLETED, 'a task after the cancel (the turn is over)');
  const g = await client.getTask({ id: r.id }, opts());
  expectState(g, TaskState.TASK_STATE_CANCELED, 'GetTask after cancel');

  const again = await client.cancelTask({ id: r.id }, opts());
  expectState(again, TaskState.TASK_STATE_CANCELED, 'CancelTask again (idempotent on a canceled task)');

  check(st.hello !== undefined, 'prerequisite: scenario 2 produced a completed task');
  await expectRpcError(client.cancelTask({ id: st.hello.task.id }, opts()), -32002, 'TASK_NOT_CANCELABLE',
                       { taskId: st.hello.task.id, state: 'TASK_STATE_COMPLETED' }, 'CancelTask of a completed task');
}

// With --plain-ids derived a plain client's resend lands on the same task;
// with server it is a new task, as on any other A2A server.
async function s7_same_message_twice() {
  const id = randomUUID();
  const a = await client.sendMessage({ message: userMessage('hello twice', { messageId: id }) }, opts());
  const aHdr = lastRpc(wire, 'SendMessage').resHeaders.get('idempotent-replayed');
  const b = await client.sendMessage({ message: userMessage('hello twice', { messageId: id }) }, opts());
  const bHdr = lastRpc(wire, 'SendMessage').resHeaders.get('idempotent-replayed');
  expectState(a, TaskState.TASK_STATE_COMPLETED, 'first send');
  expectState(b, TaskState.TASK_STATE_COMPLETED, 'resend with the same messageId');
  check(aHdr === null || aHdr === 'false', `first answer is not marked replayed (Idempotent-Replayed: ${aHdr})`);
  if (PLAIN_IDS === 'server') {
    check(b.id !== a.id, '--plain-ids server: the resend is a new task');
    check(bHdr === null || bHdr === 'false', `and no replay (Idempotent-Replayed: ${bHdr})`);
  } else {
    eq(b.id, a.id, 'both answers carry the same (derived) task id');
    eq(b.contextId, a.contextId, 'both answers carry the same contextId');
    eq(bHdr, 'true', 'second answer carries Idempotent-Replayed: true');
  }

  const c = await client.sendMessage({ message: userMessage('hello twice') }, opts());
  expectState(c, TaskState.TASK_STATE_COMPLETED, 'same text, new messageId');
  check(c.id !== a.id, 'a new messageId makes a new task');
}

const scenarios = [
  s1_client_from_agent_card,
  s2_send_hello_completes,
  s3_input_required_then_continue,
  s4_new_message_to_completed_task,
  s5_get_task_with_history,
  s6_cancel,
  s7_same_message_twice,
];

base = (await start(['--executor', 'echo', '--plain-ids', PLAIN_IDS,
                     // one turn at a time: a task sent after another's turn runs
                     // only once that turn is over (scenario 6)
                     '--turn-workers', '1'])).url;
console.log(`info: @a2a-js/sdk ${SDK_VERSION}, node ${process.version}, onced ${ONCED} --plain-ids ${PLAIN_IDS} at ${base}`);
for (const s of scenarios) {
  if (!client && s !== s1_client_from_agent_card) {
    tally.failed++;
    console.error(`FAIL ${s.name}: no client (scenario 1 failed)`);
    continue;
  }
  await runScenario(s.name, s);
}
finish();
