// upstream_agent.mjs -- the upstream A2A 1.0 agent that `onced --upstream URL`
// (the gateway) is tested against: a real server built on @a2a-js/sdk 1.3.0
// (DefaultRequestHandler + InMemoryTaskStore behind the SDK's express
// JSON-RPC handler, its HTTP+JSON (REST) handler and its agent-card handler),
// running an executor of ours that COUNTS what it is asked to do.
//
//   node tests/interop/upstream_agent.mjs [--port N] [--bindings jsonrpc,rest,grpc]
//        [--no-streaming] [--dedup-message-id] [--no-list-tasks] [--card-name NAME]
//        [--delay-answer-ms N] [--a2a-version 1.0|0.3]
//
// --port N            127.0.0.1 only; 0 (the default) picks a free port. When
//                     ready, exactly one line goes to stdout:
//                       listening http://127.0.0.1:PORT/
//                     everything else (logs, the SDK's own) goes to stderr.
// --bindings LIST     which A2A bindings are served and declared, in this order
//                     (the first is the SDK client's choice): jsonrpc, rest,
//                     grpc, or several (default "jsonrpc,rest"). grpc: the
//                     SDK's gRPC service (lf.a2a.v1.A2AService, @grpc/grpc-js)
//                     on a port of its own, declared as GRPC "127.0.0.1:PORT";
//                     its calls are in /requests as method "GRPC <Method>"
//                     with the metadata as headers (body null).
// --no-streaming      capabilities.streaming false; the SDK then refuses
//                     SendStreamingMessage and SubscribeToTask (-32004
//                     UnsupportedOperationError; HTTP 400 on REST).
// --dedup-message-id  a first message (no taskId) whose messageId was seen
//                     before gets the earlier answer back (the same task, as it
//                     is now; or the same direct Message): nothing runs, nothing
//                     is counted as created or received (counts.replays + 1).
//                     Models an upstream that deduplicates (A2A 1.0 3.3.1 MAY).
// --no-list-tasks     ListTasks is refused as unsupported on both bindings (the
//                     SDK's UnsupportedOperationError: JSON-RPC -32004, REST
//                     GET /tasks HTTP 400 FAILED_PRECONDITION); nothing else
//                     changes. Models an upstream without ListTasks (no rung 2
//                     for the gateway: it falls to rung 3 or 4).
// --card-name NAME    the card's name (default "Upstream test agent").
// --a2a-version V     1.0 (the default), or 0.3: an A2A 0.3 agent as the SDK
//                     serves one (its legacyCompat): every interface on the
//                     card says protocolVersion 0.3, the card is served in
//                     0.3 form to a request without A2A-Version (or 0.3) and
//                     as 1.0 JSON to one that asks for 1.0, and only the 0.3
//                     methods and routes are served (a 1.0 request is refused
//                     VersionNotSupported, since the card names no 1.0
//                     interface).
// --delay-answer-ms N hold every SendMessage answer N ms after the turn
//                     finished (and a SendStreamingMessage's first event N ms):
//                     the work is done, the answer is late -- a gateway with a
//                     shorter timeout sees a lost response. Replays too.
//
// Routes (one base URL, http://127.0.0.1:PORT/, for both bindings):
//   GET  /.well-known/agent-card.json  the card (ProtoJSON), ETag; If-None-Match -> 304
//   POST /                             JSON-RPC 2.0 (SendMessage, SendStreamingMessage,
//                                      GetTask, ListTasks, CancelTask, SubscribeToTask, ...)
//   HTTP+JSON, as the SDK's restHandler serves them, mounted at the root (A2A 1.0
//   paths, no /v1 prefix; relative to the interface URL without its trailing slash):
//     POST /message:send            POST /message:stream (SSE)
//     GET  /tasks/{id}[?historyLength=N]
//     GET  /tasks[?contextId=&status=&pageSize=&pageToken=&historyLength=&includeArtifacts=]
//     POST /tasks/{id}:cancel       GET|POST /tasks/{id}:subscribe (SSE)
//     GET  /extendedAgentCard       /tasks/{id}/pushNotificationConfigs[/{configId}]
//     and each again under /{tenant}/...
//   Test control (plain JSON, not A2A, not recorded):
//     GET  /counts        {"tasksCreated","messages","byMessageId":{messageId:n},
//                          "tasks":{taskId:{"contextId","messages","state":"TASK_STATE_..."}},
//                          "contexts":{contextId:[taskIds]},"effects":{K:n},"cancels",
//                          "requests","replays","cardFetches"}
//     GET  /requests      the last 200 A2A requests: [{"method","headers","query","body"}];
//                         method = the JSON-RPC method or "REST <VERB> <path>",
//                         headers = every request header (lowercased names),
//                         body = the parsed JSON body (null for GET/DELETE)
//     POST /counts/reset  zeroes the counts and the request log (the tasks stay)
//     POST /release/K     completes every hold:K task, now and to come
//
// The executor, by the first text part of the user message:
//   ask:Q       input-required, agent message Q; the next message to the task
//               completes it with artifact text "answer:" + that message's text
//   auth:Q      auth-required, agent message Q; the next message: as for ask
//   sleep:N     working, then completed after N s with artifact "slept N";
//               CancelTask meanwhile -> canceled
//   hold:K      working until POST /release/K, then completed with artifact
//               "released K" (a release before the task comes is kept);
//               CancelTask meanwhile -> canceled
//   fail        working, then failed, agent message "upstream failed on purpose"
//   reject      rejected, agent message "upstream rejected on purpose"
//   reply:T     a direct Message answer T (no Task)
//   chunks:N    working, one artifact in N chunks "c1".."cN" (append after the
//               first, lastChunk on the last), then completed
//   effect:K    counts.effects[K] += 1, then completed with artifact "effect K"
//   otherwise   completed with an artifact echoing the text
// Every turn publishes through the SDK's event bus (Task first, then status
// and artifact updates), so streams, SubscribeToTask, GetTask and ListTasks all
// show it. A turn ends with eventBus.finished(), so a stream also ends at
// auth-required (the SDK alone would keep it open: it expects credentials out
// of band and the same execution to resume).
//
// What the SDK 1.3.0 itself provides here, unchanged:
// - ListTasks (JSON-RPC "ListTasks", REST GET /tasks; unless --no-list-tasks):
//   filters by contextId and status, paginates (pageSize 1..100, default 50; nextPageToken), newest
//   status first; history in full unless historyLength; artifacts only with
//   includeArtifacts=true.
// - A contextId given by the client on a first message is kept on the task
//   (contextId = message.contextId || task.contextId || a new UUID); a
//   continuation whose contextId differs from its task's is refused (-32602).
// - The card handler's ETag and 304 on a matching If-None-Match.
//
// SIGTERM / SIGINT close the server and exit 0.
import { randomUUID } from 'node:crypto';
import process from 'node:process';

import { AgentCard, Role, TaskState, taskStateToJSON } from '@a2a-js/sdk';
import { UnsupportedOperationError } from '@a2a-js/sdk/errors';
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, restHandler, UserBuilder } from '@a2a-js/sdk/server/express';
import { legacyAgentCardRouter } from '@a2a-js/sdk/compat/v0_3/server/express';
import express from 'express';

// ---- the command line ----

const USAGE = 'usage: node upstream_agent.mjs [--port N] [--bindings jsonrpc,rest,grpc] [--no-streaming] ' +
              '[--dedup-message-id] [--no-list-tasks] [--card-name NAME] [--delay-answer-ms N] ' +
              '[--a2a-version 1.0|0.3]';

function parseArgs(argv) {
  const o = { port: 0, bindings: ['jsonrpc', 'rest'], streaming: true, dedup: false, listTasks: true, version: '1.0',
              cardName: 'Upstream test agent', delayMs: 0 };
  const value = (i, name) => {
    if (i + 1 >= argv.length) usage(`${name} needs a value`);
    return argv[i + 1];
  };
  const count = (s, name) => {
    if (!/^\d+$/.test(s)) usage(`${name}: not a non-negative integer: ${s}`);
    return Number(s);
  };
  for (let i = 0; i < argv.length; i++) {
    let a = argv[i];
    let inline = null;
    const eqAt = a.indexOf('=');
    if (a.startsWith('--') && eqAt > 0) {
      inline = a.slice(eqAt + 1);
      a = a.slice(0, eqAt);
    }
    const take = () => {
      if (inline !== null) return inline;
      const v = value(i, a);
      i++;
      return v;
    };
    switch (a) {
      case '--port':
        o.port = count(take(), a);
        if (o.port > 65535) usage(`--port: out of range: ${o.port}`);
        break;
      case '--bindings': {
        const list = take().split(',').map((s) => s.trim().toLowerCase()).filter(Boolean);
        if (list.length === 0 || list.some((b) => !['jsonrpc', 'rest', 'grpc'].includes(b)) ||
            new Set(list).size !== list.length) {
          usage('--bindings: a list of jsonrpc, rest and grpc');
        }
        o.bindings = list;
        break;
      }
      case '--no-streaming': o.streaming = false; break;
      case '--dedup-message-id': o.dedup = true; break;
      case '--no-list-tasks': o.listTasks = false; break;
      case '--card-name': o.cardName = take(); break;
      case '--delay-answer-ms': o.delayMs = count(take(), a); break;
      case '--a2a-version':
        o.version = take();
        if (o.version !== '1.0' && o.version !== '0.3') usage('--a2a-version: 1.0 or 0.3');
        break;
      case '-h': case '--help':
        process.stdout.write(`${USAGE}\n`);
        process.exit(0);
        break;
      default:
        usage(`unknown argument: ${argv[i]}`);
    }
  }
  return o;
}

function usage(msg) {
  process.stderr.write(`upstream_agent: ${msg}\n${USAGE}\n`);
  process.exit(2);
}

const opts = parseArgs(process.argv.slice(2));

// stdout carries the one "listening" line; anything else, the SDK's logging
// included, goes to stderr.
const log = (...a) => console.error('upstream_agent:', ...a);
console.log = (...a) => console.error(...a);
console.info = (...a) => console.error(...a);

// ---- the counts ----

function freshCounts() {
  return { tasksCreated: 0, messages: 0, byMessageId: {}, tasks: {}, contexts: {}, effects: {},
           cancels: 0, requests: 0, replays: 0, cardFetches: 0 };
}
let counts = freshCounts();
let requestLog = [];   // the last REQUEST_LOG_MAX A2A requests
const REQUEST_LOG_MAX = 200;

const stateName = (s) => (s === undefined ? 'TASK_STATE_UNSPECIFIED' : taskStateToJSON(s));

// The store tells /counts each task's state as it is saved (by the SDK's
// result manager, whatever wrote it: our events, a cancel, an executor error).
class CountingTaskStore extends InMemoryTaskStore {
  async save(task, context) {
    await super.save(task, context);
    const t = counts.tasks[task.id];
    if (t) t.state = stateName(task.status?.state);
  }
}

// ---- the executor ----

const now = () => new Date().toISOString();
const textPart = (text) => ({ content: { $case: 'text', value: text }, mediaType: 'text/plain',
                              filename: '', metadata: {} });
const agentMessage = (taskId, contextId, text) => ({
  messageId: randomUUID(), contextId, taskId, role: Role.ROLE_AGENT,
  parts: [textPart(text)], metadata: {}, extensions: [], referenceTaskIds: [],
});
const firstText = (msg) => msg?.parts?.find((p) => p.content?.$case === 'text')?.content.value ?? '';
const INTERRUPTED = new Set([TaskState.TASK_STATE_INPUT_REQUIRED, TaskState.TASK_STATE_AUTH_REQUIRED]);
const TERMINAL = new Set([TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_FAILED,
                          TaskState.TASK_STATE_CANCELED, TaskState.TASK_STATE_REJECTED]);

// messageId -> {taskId, reply, ready, resolve}: the first answer to a first
// message, for --dedup-message-id.
const firstMessages = new Map();

// hold:K: the released keys, and the turns waiting for one (K -> [resolve]).
const released = new Set();
const holding = new Map();
function release(key) {
  released.add(key);
  for (const resolve of holding.get(key) ?? []) resolve();
  holding.delete(key);
}

class CountingExecutor {
  constructor() {
    this.awaiting = new Set();      // tasks whose next message is the answer (ask:, auth:)
    this.cancelers = new Map();     // taskId -> () => void, for a sleeping turn
    this.canceled = new Set();
    this.contexts = new Map();      // taskId -> contextId
  }

  count(ctx, created) {
    const msg = ctx.userMessage;
    counts.messages++;
    counts.byMessageId[msg.messageId] = (counts.byMessageId[msg.messageId] ?? 0) + 1;
    if (created) {
      counts.tasksCreated++;
      (counts.contexts[ctx.contextId] ??= []).push(ctx.taskId);
    }
    const t = (counts.tasks[ctx.taskId] ??= {
      contextId: ctx.contextId, messages: 0,
      state: stateName(ctx.task?.status?.state ?? TaskState.TASK_STATE_SUBMITTED),
    });
    t.messages++;
  }

  async execute(ctx, bus) {
    const { taskId, contextId } = ctx;
    const msg = ctx.userMessage;
    const text = firstText(msg);
    const created = !ctx.task;
    // (the SDK has put the minted taskId on the message already)
    const pending = created ? firstMessages.get(msg.messageId) : undefined;
    this.contexts.set(taskId, contextId);

    const status = (state, said) => AgentEvent.statusUpdate({
      taskId, contextId, metadata: {},
      status: { state, timestamp: now(), message: said ? agentMessage(taskId, contextId, said) : undefined },
    });
    const artifact = (name, t, { append = false, lastChunk = true } = {}) => AgentEvent.artifactUpdate({
      taskId, contextId, append, lastChunk, metadata: {},
      artifact: { artifactId: `${name}-1`, name, description: '', parts: [textPart(t)],
                  metadata: {}, extensions: [] },
    });
    const complete = (name, t) => {
      bus.publish(artifact(name, t));
      bus.publish(status(TaskState.TASK_STATE_COMPLETED));
    };

    // A direct Message answer: no Task, nothing created.
    if (created && text.startsWith('reply:')) {
      this.count(ctx, false);
      const reply = { ...agentMessage('', contextId, text.slice(6)), taskId: '' };
      if (pending) {
        pending.reply = reply;
        pending.resolve();
      }
      bus.publish(AgentEvent.message(reply));
      bus.finished();
      return;
    }

    this.count(ctx, created);
    // Every turn starts with the Task (the SDK's stream ordering): a new one
    // submitted, a continuation's the stored one, at work again.
    bus.publish(AgentEvent.task(created
      ? { id: taskId, contextId, status: { state: TaskState.TASK_STATE_SUBMITTED, timestamp: now() },
          artifacts: [], history: [msg], metadata: {} }
      : { ...ctx.task, status: { state: TaskState.TASK_STATE_WORKING, timestamp: now() } }));
    if (pending) {
      pending.taskId = taskId;
      pending.resolve();
    }

    if (this.awaiting.has(taskId)) {
      this.awaiting.delete(taskId);
      bus.publish(status(TaskState.TASK_STATE_WORKING));
      complete('answer', `answer:${text}`);
    } else if (text === 'reject') {
      bus.publish(status(TaskState.TASK_STATE_REJECTED, 'upstream rejected on purpose'));
    } else {
      bus.publish(status(TaskState.TASK_STATE_WORKING));
      if (text.startsWith('ask:') || text.startsWith('auth:')) {
        const auth = text.startsWith('auth:');
        this.awaiting.add(taskId);
        bus.publish(status(auth ? TaskState.TASK_STATE_AUTH_REQUIRED : TaskState.TASK_STATE_INPUT_REQUIRED,
                           text.slice(auth ? 5 : 4)));
      } else if (text.startsWith('sleep:')) {
        const n = text.slice(6);
        const secs = Number(n);
        const ms = Number.isFinite(secs) && secs > 0 ? secs * 1000 : 0;
        await new Promise((resolve) => {
          const timer = setTimeout(resolve, ms);
          this.cancelers.set(taskId, () => {
            clearTimeout(timer);
            resolve();
          });
        });
        this.cancelers.delete(taskId);
        if (!this.canceled.has(taskId)) complete('sleep', `slept ${n}`);
      } else if (text.startsWith('hold:')) {
        const key = text.slice(5);
        if (!released.has(key)) {
          await new Promise((resolve) => {
            (holding.get(key) ?? holding.set(key, []).get(key)).push(resolve);
            this.cancelers.set(taskId, resolve);
          });
        }
        this.cancelers.delete(taskId);
        if (!this.canceled.has(taskId)) complete('released', `released ${key}`);
      } else if (text === 'fail') {
        bus.publish(status(TaskState.TASK_STATE_FAILED, 'upstream failed on purpose'));
      } else if (text.startsWith('chunks:')) {
        const n = Math.max(1, Math.floor(Number(text.slice(7))) || 1);
        for (let i = 1; i <= n; i++) {
          bus.publish(artifact('chunks', `c${i}`, { append: i > 1, lastChunk: i === n }));
        }
        bus.publish(status(TaskState.TASK_STATE_COMPLETED));
      } else if (text.startsWith('effect:')) {
        const k = text.slice(7);
        counts.effects[k] = (counts.effects[k] ?? 0) + 1;
        complete('effect', `effect ${k}`);
      } else {
        complete('echo', text);
      }
    }
    // The turn is over: streams on this bus end (also at auth-required).
    bus.finished();
  }

  async cancelTask(taskId, bus) {
    this.canceled.add(taskId);
    this.awaiting.delete(taskId);
    const contextId = this.contexts.get(taskId) ?? '';
    bus.publish(AgentEvent.statusUpdate({
      taskId, contextId, metadata: {},
      status: { state: TaskState.TASK_STATE_CANCELED, timestamp: now(),
                message: agentMessage(taskId, contextId, 'canceled on request') },
    }));
    this.cancelers.get(taskId)?.();
  }
}

// ---- the request handler: the SDK's, plus counting, dedup and delay ----

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const delayAnswer = () => (opts.delayMs > 0 ? sleep(opts.delayMs) : Promise.resolve());

class UpstreamRequestHandler extends DefaultRequestHandler {
  // The earlier answer to a first message seen before: the task as it is
  // now, or the same direct Message.
  async replayed(entry, params, context) {
    await entry.ready;
    if (entry.failed) throw entry.failed;
    if (entry.reply) return structuredClone(entry.reply);
    // The task event is published; the SDK's result manager saves it
    // asynchronously: wait for it (bounded).
    const end = Date.now() + 10000;
    for (;;) {
      try {
        return await this.getTask({ id: entry.taskId, historyLength: params.configuration?.historyLength },
                                  context);
      } catch (e) {
        if (Date.now() > end) throw e;
        await sleep(10);
      }
    }
  }

  // The dedup entry of a first message: {entry, replay}.
  claim(params) {
    const m = params.message;
    if (!opts.dedup || !m || m.taskId || !m.messageId) return { entry: null, replay: false };
    const seen = firstMessages.get(m.messageId);
    if (seen) {
      counts.replays++;
      return { entry: seen, replay: true };
    }
    let resolve;
    const ready = new Promise((r) => { resolve = r; });
    const entry = { taskId: null, reply: null, failed: null, ready, resolve };
    firstMessages.set(m.messageId, entry);
    return { entry, replay: false };
  }

  forget(params, entry, error) {
    // The first message failed before reaching the executor: nothing to
    // replay; a duplicate waiting meanwhile gets the same error.
    if (entry && entry.taskId === null && entry.reply === null) {
      firstMessages.delete(params.message.messageId);
      entry.failed = error;
      entry.resolve();
    }
  }

  async sendMessage(params, context) {
    const { entry, replay } = this.claim(params);
    let result;
    if (replay) {
      result = await this.replayed(entry, params, context);
    } else {
      try {
        result = await super.sendMessage(params, context);
      } catch (e) {
        this.forget(params, entry, e);
        throw e;
      }
    }
    await delayAnswer();
    return result;
  }

  async *sendMessageStream(params, context) {
    let stream;
    const { entry, replay } = this.agentCard.capabilities?.streaming ? this.claim(params)
                                                                      : { entry: null, replay: false };
    if (replay) {
      stream = this.replayStream(entry, params, context);
    } else {
      stream = super.sendMessageStream(params, context);
    }
    let first = true;
    try {
      for await (const ev of stream) {
        if (first) {
          first = false;
          await delayAnswer();
        }
        yield ev;
      }
    } catch (e) {
      if (!replay) this.forget(params, entry, e);
      throw e;
    }
  }

  async *replayStream(entry, params, context) {
    const r = await this.replayed(entry, params, context);
    if (r.messageId !== undefined && r.id === undefined) {
      yield { payload: { $case: 'message', value: r } };
      return;
    }
    const state = r.status?.state;
    if (TERMINAL.has(state) || INTERRUPTED.has(state)) {
      yield { payload: { $case: 'task', value: r } };
      return;
    }
    // Still at work: follow it like SubscribeToTask (the task, then its events).
    try {
      yield* this.resubscribe({ id: r.id, tenant: '' }, context);
    } catch {
      yield { payload: { $case: 'task', value: await this.getTask({ id: r.id }, context) } };
    }
  }

  async cancelTask(params, context) {
    counts.cancels++;
    return super.cancelTask(params, context);
  }

  async listTasks(params, context) {
    if (!opts.listTasks) throw new UnsupportedOperationError('ListTasks is not supported here (--no-list-tasks)');
    return super.listTasks(params, context);
  }
}

// ---- the card and the server ----

const BINDING_NAME = { jsonrpc: 'JSONRPC', rest: 'HTTP+JSON', grpc: 'GRPC' };

const card = {
  name: opts.cardName,
  description: 'A2A 1.0 upstream test agent (@a2a-js/sdk 1.3.0) for the once gateway: ' +
               'echo, ask:Q, auth:Q, sleep:N, fail, reject, reply:T, chunks:N, effect:K; counts at /counts',
  supportedInterfaces: [],
  provider: { organization: 'once tests', url: 'https://github.com/' },
  version: '1.0.0',
  documentationUrl: undefined,
  capabilities: { streaming: opts.streaming, pushNotifications: false, extensions: [],
                  extendedAgentCard: false },
  securitySchemes: {
    bearer: { scheme: { $case: 'httpAuthSecurityScheme',
                        value: { description: 'Any bearer token; recorded, not checked',
                                 scheme: 'Bearer', bearerFormat: 'opaque' } } },
  },
  securityRequirements: [{ schemes: { bearer: { list: [] } } }],
  defaultInputModes: ['text/plain'],
  defaultOutputModes: ['text/plain'],
  skills: [
    { id: 'echo', name: 'Echo', description: 'Completes with an artifact echoing the text',
      tags: ['test', 'echo'], examples: ['hello'], inputModes: ['text/plain'], outputModes: ['text/plain'],
      securityRequirements: [] },
    { id: 'scripted', name: 'Scripted behaviours',
      description: 'ask:Q, auth:Q, sleep:N, fail, reject, reply:T, chunks:N, effect:K',
      tags: ['test', 'lifecycle'], examples: ['ask:Which court?', 'sleep:2', 'effect:pay'],
      inputModes: ['text/plain'], outputModes: ['text/plain'], securityRequirements: [] },
  ],
  signatures: [],
  iconUrl: undefined,
};

const store = new CountingTaskStore();
const executor = new CountingExecutor();
const handler = new UpstreamRequestHandler(card, store, executor);

const app = express();
app.disable('x-powered-by');

const CARD_PATH = '/.well-known/agent-card.json';
const CONTROL = new Set(['/counts', '/requests', '/counts/reset']);

function pathOf(req) {
  return req.originalUrl.split('?')[0];
}

// The recorder: every A2A request (everything but the card and the control
// routes). The body is read from req.body, which the SDK's own parser fills
// later in the chain: when the answer ends, or when /requests is asked.
function settle(entry, final) {
  const req = entry._req;
  if (!req) return entry;
  const hasBody = !['GET', 'HEAD', 'DELETE'].includes(req.method);
  entry.body = hasBody && req.body !== undefined ? req.body : null;
  if (entry._rpc) entry.method = typeof req.body?.method === 'string' ? req.body.method : null;
  if (final) {
    delete entry._req;
    delete entry._rpc;
  }
  return entry;
}

app.use((req, res, next) => {
  const p = pathOf(req);
  if (CONTROL.has(p)) return next();
  if (p === CARD_PATH) {
    counts.cardFetches++;
    return next();
  }
  counts.requests++;
  const rpc = req.method === 'POST' && p === '/' && opts.bindings.includes('jsonrpc');
  const entry = { method: rpc ? null : `REST ${req.method} ${p}`, headers: { ...req.headers },
                  query: { ...req.query }, body: null, _req: req, _rpc: rpc };
  requestLog.push(entry);
  if (requestLog.length > REQUEST_LOG_MAX) requestLog.splice(0, requestLog.length - REQUEST_LOG_MAX);
  res.on('close', () => settle(entry, true));
  next();
});

const publicEntry = (e) => {
  settle(e, false);
  return { method: e.method, headers: e.headers, query: e.query, body: e.body };
};
app.get('/counts', (_req, res) => res.json(counts));
app.get('/requests', (_req, res) => res.json(requestLog.map(publicEntry)));
app.post('/release/:key', (req, res) => {
  release(req.params.key);
  res.json({ released: req.params.key });
});
app.post('/counts/reset', (_req, res) => {
  counts = freshCounts();
  requestLog = [];
  res.json({ ok: true });
});

// The card in its 1.0 wire form (ProtoJSON: the security scheme as
// {"httpAuthSecurityScheme": ...}); the SDK's handler adds the ETag and
// answers a matching If-None-Match with 304 -- but through express's
// req.fresh, which ignores If-None-Match when the request says
// Cache-Control: no-cache (Node's fetch adds it to every conditional
// request). An origin server evaluates If-None-Match regardless (RFC 9110
// 13.1.2), so the handler does not see that directive. Our Cache-Control:
// no-cache (maxAge 0): a client revalidates.
app.use(CARD_PATH, (req, _res, next) => {
  if (req.headers['if-none-match'] !== undefined) {
    delete req.headers['cache-control'];
    delete req.headers.pragma;
  }
  next();
}, ...(opts.version === '0.3'
  // The 0.3 card is converted from the card object itself (the SDK's own
  // legacy router, which agentCardHandler's legacyCompat would mount with
  // the 1.0 JSON provider below, where it fails on the security scheme).
  ? [legacyAgentCardRouter({ agentCardProvider: () => handler.getAgentCard(), cache: { maxAge: 0 } })]
  : []), agentCardHandler({
  agentCardProvider: async () => AgentCard.toJSON(await handler.getAgentCard()),
  cache: { maxAge: 0 },
}));

if (opts.bindings.includes('jsonrpc')) {
  // Only POST / : the JSON-RPC router's content-type guard must not see the
  // HTTP+JSON routes.
  const rpc = jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication,
                               legacyCompat: { enabled: opts.version === '0.3' } });
  app.post('/', rpc);
}
if (opts.bindings.includes('rest')) {
  app.use('/', restHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication,
                             legacyCompat: { enabled: opts.version === '0.3' } }));
}

const server = await new Promise((resolve, reject) => {
  const s = app.listen(opts.port, '127.0.0.1', () => resolve(s));
  s.once('error', reject);
}).catch((e) => {
  process.stderr.write(`upstream_agent: cannot listen on 127.0.0.1:${opts.port}: ${e.message}\n`);
  process.exit(1);
});
const base = `http://127.0.0.1:${server.address().port}/`;

// The gRPC binding: the SDK's service on @grpc/grpc-js (optional peer
// dependencies of the SDK, loaded only when asked for).
let grpcServer = null;
let grpcTarget = null;
if (opts.bindings.includes('grpc')) {
  const grpc = await import('@grpc/grpc-js');
  const sdkGrpc = await import('@a2a-js/sdk/server/grpc');
  grpcServer = new grpc.Server();
  const impl = sdkGrpc.grpcService({
    requestHandler: handler, userBuilder: sdkGrpc.UserBuilder.noAuthentication,
  });
  // Each call recorded as the HTTP ones are, then handed to the SDK.
  const recorded = {};
  for (const [name, fn] of Object.entries(impl)) {
    const method = `GRPC ${sdkGrpc.A2AService[name].path.split('/').pop()}`;
    recorded[name] = (call, callback) => {
      counts.requests++;
      requestLog.push({ method, headers: call.metadata.getMap(), query: {}, body: null });
      if (requestLog.length > REQUEST_LOG_MAX) requestLog.splice(0, requestLog.length - REQUEST_LOG_MAX);
      return fn(call, callback);
    };
  }
  grpcServer.addService(sdkGrpc.A2AService, recorded);
  const port = await new Promise((resolve, reject) => {
    grpcServer.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(),
                         (e, p) => (e ? reject(e) : resolve(p)));
  }).catch((e) => {
    process.stderr.write(`upstream_agent: cannot serve gRPC: ${e.message}\n`);
    process.exit(1);
  });
  grpcTarget = `127.0.0.1:${port}`;
}
card.supportedInterfaces = opts.bindings.map((b) => ({
  url: b === 'grpc' ? grpcTarget : base, protocolBinding: BINDING_NAME[b], tenant: '',
  protocolVersion: opts.version,
}));

let closing = false;
function shutdown(sig) {
  if (closing) return;
  closing = true;
  log(`${sig}: closing`);
  if (grpcServer) grpcServer.forceShutdown();
  server.close(() => process.exit(0));
  server.closeAllConnections();
  setTimeout(() => process.exit(0), 2000).unref();
}
process.on('SIGTERM', () => shutdown('SIGTERM'));
process.on('SIGINT', () => shutdown('SIGINT'));

process.stdout.write(`listening ${base}\n`);
log(`bindings=${opts.bindings.join(',')} streaming=${opts.streaming} dedup=${opts.dedup} ` +
    `list-tasks=${opts.listTasks} ` +
    `delay-answer-ms=${opts.delayMs} card-name=${JSON.stringify(opts.cardName)} ` +
    `a2a-version=${opts.version}`);
