// a2a_sdk_helpers.mjs -- what the peers that drive a real onced with the
// client of @a2a-js/sdk share (client_vs_onced.mjs, v03_client_vs_onced.mjs,
// v03_rest_vs_onced.mjs): the SDK itself, loaded from this folder's
// node_modules, and helpers shaped by its types (ts-proto style: the 1.0 core
// types, which its 0.3 transports take and give too); last, the checks both
// 0.3 peers make alike, whichever binding they speak. The peers' own wire
// (the recording fetch), onced and the webhook are in ../js/interop_harness.mjs.
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { check, eq, scaled } from '../js/harness.mjs';
import { oncedBinary, pinnedSdkVersion, rpc10, runScenario } from '../js/interop_harness.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));

// The @a2a-js/sdk version the peers pin (package.json).
export const SDK_VERSION = '1.3.0';
// once's idempotency extension, which onced's card declares (docs/wire.md).
export const EXT = 'urn:once:a2a:idempotency:v1';
// The bound on one SDK call, a stream's included.
export const CALL_TIMEOUT_MS = scaled(30000);
// A UUID of version 4: the task ids a client mints under EXT.
export const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

// The SDK once loadSdk has loaded it, and how the peer's client shapes its
// messages and results (loadSdk's options).
let sdk = null;
let shape = { blankIds: true, rejectMessages: true };

// The SDK as one object: @a2a-js/sdk with the client entry clientEntry
// ('@a2a-js/sdk/client', '@a2a-js/sdk/compat/v0_3/client') spread in, and
// compat (@a2a-js/sdk/compat/v0_3) and errors (@a2a-js/sdk/errors) as
// members. The installed SDK must be SDK_VERSION, and every module must
// load: else fatal (a failure, never a skip). The helpers below use it.
//   blankIds: userMessage gives an absent taskId and contextId as '' (the
//   0.3 transports take the core Message in full); false leaves them out.
//   rejectMessages: isTask also refuses what has a messageId (a Message,
//   which a send may answer instead of a Task).
export async function loadSdk(clientEntry, fatal, { blankIds = true, rejectMessages = true } = {}) {
  pinnedSdkVersion(HERE, SDK_VERSION, fatal);
  try {
    sdk = {
      ...(await import('@a2a-js/sdk')),
      ...(await import(clientEntry)),
      compat: await import('@a2a-js/sdk/compat/v0_3'),
      errors: await import('@a2a-js/sdk/errors'),
    };
  } catch (e) {
    fatal(`cannot load @a2a-js/sdk: ${e && e.stack ? e.stack : e}`);
  }
  shape = { blankIds, rejectMessages };
  return sdk;
}

// ---- SDK-shaped helpers ----

// A user Message of one text part; a fresh messageId unless given.
export function userMessage(text, { messageId, taskId, contextId } = {}) {
  const m = {
    messageId: messageId || randomUUID(),
    role: sdk.Role.ROLE_USER,
    parts: [{ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: '' }],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
  if (taskId || shape.blankIds) m.taskId = taskId || '';
  if (contextId || shape.blankIds) m.contextId = contextId || '';
  return m;
}

// A SendMessageConfiguration that says only returnImmediately.
export function sendConfig({ returnImmediately }) {
  return { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately };
}

// A SendMessageRequest (1.0 core shape); no configuration unless given.
export function sendReq(message, configuration) {
  return { tenant: '', message, configuration, metadata: undefined };
}

// A ListTaskPushNotificationConfigRequest for the task taskId.
export function listReq(taskId) {
  return { tenant: '', taskId, pageSize: 0, pageToken: '' };
}

// The `key` of each entry, as one comparable string.
export function keysOf(list, key) {
  return JSON.stringify((list || []).map((x) => x[key]));
}

// The options of one SDK call: bounded by CALL_TIMEOUT_MS, and extra.
export function opts(extra = {}) {
  return { signal: AbortSignal.timeout(CALL_TIMEOUT_MS), ...extra };
}

// The options of a call that sends EXT in the HTTP header `header`.
export function withExt(header) {
  return opts({ serviceParameters: { [header]: EXT } });
}

// Whether r is a Task: an id and a status (and, rejectMessages, no messageId).
export function isTask(r) {
  return r && typeof r === 'object' && typeof r.id === 'string' && r.id !== '' && 'status' in r &&
    !(shape.rejectMessages && 'messageId' in r);
}

// A TaskState's name, TASK_STATE_*.
export function stateName(s) {
  return sdk.TaskState[s] ?? String(s);
}

// The texts of the text parts among parts.
export function texts(parts) {
  return (parts || []).filter((p) => p.content && p.content.$case === 'text').map((p) => p.content.value);
}

// A check that task is a Task, and one that its state is want.
export function expectState(task, want, what) {
  check(isTask(task), `${what}: result is a Task (got ${JSON.stringify(task)})`);
  eq(stateName(task.status && task.status.state), stateName(want), `${what}: task state`);
}

// A call that must fail: checks that the SDK raised an error, that it is an
// SDK A2AError and, given cls, a cls; answers the error.
export async function expectSdkError(promise, cls, what) {
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
  if (cls) {
    const code = err.envelopeCode !== undefined ? `, code ${err.envelopeCode}` : '';
    check(err instanceof cls, `${what}: the error is a ${cls.name} (got ${err.name}${code}: ${err.message})`);
  }
  return err;
}

// ---- streams ----

// An SDK stream call: startFn gets the call's options, with a signal that
// ac (an AbortController) or CALL_TIMEOUT_MS ends. Answers {ac, gen}.
export function streamCall(startFn) {
  const ac = new AbortController();
  const signal = AbortSignal.any([ac.signal, AbortSignal.timeout(CALL_TIMEOUT_MS)]);
  return { ac, gen: startFn({ signal }) };
}

// Runs an SDK stream to its end (or until stopAfter(events) says enough),
// bounded by CALL_TIMEOUT_MS. Answers {events, ended}: ended is true
// when the server closed the stream, false when the test left it.
export async function collect(gen, ac, stopAfter, what) {
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
export function eventSummary(ev) {
  const p = ev && ev.payload;
  if (!p) return JSON.stringify(ev);
  if (p.$case === 'task') return `task ${stateName(p.value.status && p.value.status.state)}`;
  if (p.$case === 'statusUpdate') return `statusUpdate ${stateName(p.value.status && p.value.status.state)}`;
  if (p.$case === 'artifactUpdate') return `artifactUpdate ${JSON.stringify(texts(p.value.artifact && p.value.artifact.parts))}`;
  return p.$case;
}

// The id of the task a StreamResponse event names.
export function eventTaskId(ev) {
  const p = ev.payload;
  if (p.$case === 'task') return p.value.id;
  if (p.$case === 'statusUpdate' || p.$case === 'artifactUpdate') return p.value.taskId;
  return p.value && p.value.taskId;
}

// The task state a StreamResponse event carries, or undefined.
export function eventState(ev) {
  const p = ev.payload;
  if (p.$case === 'task' || p.$case === 'statusUpdate') return p.value.status && p.value.status.state;
  return undefined;
}

// ---- the checks both 0.3 peers make alike ----
//
// What they read off their own binding's wire comes in `onWire`:
//   lastSend(): the recording of the last send request (or null);
//   sentMessage(what): the message the SDK sent in it (a check that it did);
//   replayed(): the Idempotent-Replayed header onced answered it with.

// transport.sendMessage(req), with an info line on the exchange as the
// recording saw it (label names the request), whether it answered or threw.
export async function sendLogged(transport, req, onWire, label) {
  try {
    return await transport.sendMessage(req, opts());
  } finally {
    const rec = onWire.lastSend();
    if (rec) {
      console.log(`info: ${label} request headers ${JSON.stringify(Object.fromEntries(rec.reqHeaders))}, ` +
                  `body ${rec.body}; onced answered HTTP ${rec.status}: ${String(await rec.text).slice(0, 600)}`);
    }
  }
}

// A completed task with a contextId and an artifact that echoes text.
export function expectEcho(task, text, what) {
  expectState(task, sdk.TaskState.TASK_STATE_COMPLETED, what);
  check(task.contextId !== '', 'the task has a contextId');
  const echoed = (task.artifacts || []).flatMap((a) => texts(a.parts));
  check(echoed.includes(text), `an artifact echoes "${text}" (artifact texts: ${JSON.stringify(echoed)})`);
}

// The same message sent twice (same messageId, no taskId): the resend
// answers the same task, marked replayed, and the agent ran once (getLabel
// names the peer's get). counts: also the artifact counts of the replay and
// of the task got.
export async function expectResendReplays(transport, onWire, { getLabel, counts = false }) {
  const { TaskState } = sdk;
  const msg = userMessage('hello again');
  const a = await transport.sendMessage(sendReq(msg), opts());
  const aHdr = onWire.replayed();
  expectState(a, TaskState.TASK_STATE_COMPLETED, 'first send');
  check(aHdr === null || aHdr === 'false', `the first answer is not marked replayed (Idempotent-Replayed: ${aHdr})`);

  const b = await transport.sendMessage(sendReq(msg), opts());
  const bHdr = onWire.replayed();
  check(!('taskId' in onWire.sentMessage('resend')), 'the resend carries no taskId');
  expectState(b, TaskState.TASK_STATE_COMPLETED, 'resend with the same messageId');
  eq(b.id, a.id, 'the resend answers the same (derived) task id');
  eq(b.contextId, a.contextId, 'the resend answers the same contextId');
  eq(bHdr, 'true', 'the resend\'s answer carries Idempotent-Replayed');
  eq(b.status.timestamp, a.status.timestamp, 'the replayed task\'s status.timestamp (nothing new stored)');
  eq(keysOf(b.history, 'messageId'), keysOf(a.history, 'messageId'), 'the replayed task\'s history messageIds');
  if (counts) eq((b.artifacts || []).length, (a.artifacts || []).length, 'the replayed task\'s artifact count');

  const g = await transport.getTask({ tenant: '', id: a.id }, opts());
  const mine = (g.history || []).filter((m) => m.messageId === msg.messageId);
  eq(mine.length, 1, `${getLabel}: the message is in the history once (the agent ran once)`);
  if (counts) eq((g.artifacts || []).length, (a.artifacts || []).length, `${getLabel}: the artifact count is unchanged`);
  const echoed = (g.artifacts || []).flatMap((x) => texts(x.parts));
  eq(echoed.filter((t) => t === 'hello again').length, 1, `${getLabel}: one echo of the text`);
}

// The extension, under 0.3's header spelling and then 1.0's (onced takes
// either): a client-minted UUIDv4 taskId is the task's id; a retry replays
// it. counts: also the replay's history length and artifact count.
export async function expectMintedIdReplays(transport, onWire, { counts = false } = {}) {
  const { TaskState } = sdk;
  for (const header of [sdk.compat.LEGACY_HTTP_EXTENSION_HEADER, sdk.HTTP_EXTENSION_HEADER]) {
    const id = randomUUID();
    check(UUID_V4.test(id), `the minted task id is a UUIDv4 (${id})`);
    const msg = userMessage(`minted under ${header}`, { taskId: id });
    const a = await transport.sendMessage(sendReq(msg), withExt(header));
    eq(onWire.lastSend().reqHeaders.get(header), EXT, `${header}: the SDK sent the header`);
    eq(onWire.sentMessage(header).taskId, id, `${header}: the SDK sent message.taskId`);
    const aHdr = onWire.replayed();
    expectState(a, TaskState.TASK_STATE_COMPLETED, `${header}: first send`);
    eq(a.id, id, `${header}: the task's id is the client's`);
    check(aHdr === null || aHdr === 'false', `${header}: the first answer is not marked replayed (Idempotent-Replayed: ${aHdr})`);

    const b = await transport.sendMessage(sendReq(msg), withExt(header));
    expectState(b, TaskState.TASK_STATE_COMPLETED, `${header}: retry`);
    eq(b.id, id, `${header}: the retry answers the same task`);
    eq(onWire.replayed(), 'true', `${header}: the retry's answer carries Idempotent-Replayed`);
    eq(b.status.timestamp, a.status.timestamp, `${header}: the replayed status.timestamp (nothing new stored)`);
    if (counts) {
      eq((b.history || []).length, (a.history || []).length, `${header}: the replayed history length`);
      eq((b.artifacts || []).length, (a.artifacts || []).length, `${header}: the replayed artifact count`);
    }
  }
}

// task, the answer to the message ask, is input-required and its status
// message, from the agent, asks question; answering it with text (blocking)
// completes it: the SDK sent the task's id, and the task keeps its id and
// contextId. Answers {task, askId, answerId}: the completed task, the
// messageIds of ask and of the answer.
export async function expectAskAnswered(transport, onWire, ask, task, question, text) {
  const { TaskState } = sdk;
  expectState(task, TaskState.TASK_STATE_INPUT_REQUIRED, `send "${texts(ask.parts).join('')}"`);
  const q = task.status.message;
  check(q !== undefined && q !== null, 'the input-required status carries a message');
  eq(q.role, sdk.Role.ROLE_AGENT, 'the question comes from the agent');
  check(texts(q.parts).includes(question), `status.message asks "${question}" (got ${JSON.stringify(texts(q.parts))})`);

  const answer = userMessage(text, { taskId: task.id, contextId: task.contextId });
  const done = await transport.sendMessage(sendReq(answer, sendConfig({ returnImmediately: false })), opts());
  eq(onWire.sentMessage('continuation').taskId, task.id, 'the continuation carried message.taskId');
  expectState(done, TaskState.TASK_STATE_COMPLETED, 'continuation');
  eq(done.id, task.id, 'the continuation stays on the same task');
  eq(done.contextId, task.contextId, 'the continuation keeps the contextId');
  return { task: done, askId: ask.messageId, answerId: answer.messageId };
}

// The task g, got over 0.3 by its id (its status on the wire: wireStatus),
// is the one GetTask over A2A 1.0 at url answers for id; and with asked
// ({askId, answerId}), its history holds the question's message, then the
// answer.
export async function expectSameOver10(url, id, g, wireStatus, asked) {
  const v1 = await rpc10(url, 'GetTask', { id }, CALL_TIMEOUT_MS);
  eq(v1.id, g.id, '1.0 GetTask id');
  eq(v1.contextId, g.contextId, '1.0 GetTask contextId');
  eq(v1.status && v1.status.state, stateName(g.status.state), '1.0 GetTask state');
  eq(v1.status && v1.status.timestamp, wireStatus && wireStatus.timestamp, '1.0 and 0.3 status.timestamp');
  eq(keysOf(v1.history, 'messageId'), keysOf(g.history, 'messageId'), '1.0 and 0.3 history messageIds');
  eq(keysOf(v1.artifacts, 'artifactId'), keysOf(g.artifacts, 'artifactId'), '1.0 and 0.3 artifact ids');
  if (asked) {
    const userIds = (g.history || []).filter((m) => m.role === sdk.Role.ROLE_USER).map((m) => m.messageId);
    const iAsk = userIds.indexOf(asked.askId);
    check(iAsk >= 0 && userIds.indexOf(asked.answerId) > iAsk,
          `the history holds the question's message, then the answer (user messageIds: ${JSON.stringify(userIds)})`);
  }
}

// A task sent non-blocking (took ms) came back at once, in a live state.
export function expectLive(r, took) {
  check(isTask(r), `sleep:30 non-blocking returns a Task (got ${JSON.stringify(r)})`);
  const s = stateName(r.status.state);
  check(s === 'TASK_STATE_SUBMITTED' || s === 'TASK_STATE_WORKING', `sleep:30 returned at once in a live state (got ${s})`);
  check(took < scaled(10000), `the non-blocking send did not block (${took} ms)`);
}

// A stream onced ended (ended) that names one task, ends in the completed
// state and carries the echo of text. states: also that it carried task
// states, the last one completed.
export function expectStreamedEcho(events, ended, text, { states = false } = {}) {
  check(ended, 'onced ended the stream');
  check(events.length > 0, 'the stream yielded events');
  const ids = [...new Set(events.map(eventTaskId))];
  check(ids.length === 1 && ids[0], `every event names the one task (task ids: ${JSON.stringify(ids)})`);
  if (states) {
    const seen = events.map(eventState).filter((x) => x !== undefined);
    check(seen.length > 0, 'the stream carried a task state');
    eq(stateName(seen[seen.length - 1]), 'TASK_STATE_COMPLETED', 'the last state in the stream');
  }
  const last = events[events.length - 1];
  eq(stateName(eventState(last)), 'TASK_STATE_COMPLETED', `the last event (${eventSummary(last)}) is the completed state`);
  const echoed = events.flatMap((ev) => {
    const p = ev.payload;
    if (p.$case === 'artifactUpdate') return texts(p.value.artifact.parts);
    if (p.$case === 'task') return (p.value.artifacts || []).flatMap((a) => texts(a.parts));
    return [];
  });
  check(echoed.includes(text), `the stream carries the echo artifact (texts: ${JSON.stringify(echoed)})`);
}

// Push deliveries: answering the input-required task r completes it, and
// the webhook (interop_harness.mjs, webhookReceiver) gets each event as a
// 0.3 body, which the SDK's own 0.3 parser reads, each with the token of
// the config left on the task (within a scaled 20 s).
export async function expectLegacyDeliveries(transport, hook, r, token) {
  const { TaskState } = sdk;
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
  check(hook.posts.slice(before).every((post) => post.headers['x-a2a-notification-token'] === token),
        `each delivery carries the config's token (${token})`);
}

// How both 0.3 peers run, once set up (peer: the webhook, hook, and what
// oncedUnderTest gave: start, fatal, finish): the webhook listens; onced
// starts with the echo executor, derived plain ids, and pushes allowed to
// loopback, where the webhook is; s0({url, card}) answers the SDK transport
// it built on onced's card, and if it fails or answers none the peer ends,
// fatal (no transportName); then each scenario runs, and the peer finishes.
export async function runV03Peer({ hook, start, fatal, finish }, s0, transportName, scenarios) {
  await hook.listen();
  const started = await start(['--executor', 'echo', '--plain-ids', 'derived',
                               // scenario 8's webhook listens on loopback (SSRF guard)
                               '--push-allow', '127.0.0.0/8']);
  console.log(`info: @a2a-js/sdk ${SDK_VERSION}, node ${process.version}, onced ${oncedBinary()} at ${started.url}, ` +
              `webhook on port ${hook.port}`);
  let transport = null;
  if (!(await runScenario(s0.name, async () => { transport = await s0(started); })) || !transport) {
    fatal(`no ${transportName} (scenario 0 failed)`);
  }
  for (const s of scenarios) {
    await runScenario(s.name, s);
  }
  finish();
}
