// amplify_js_agent.mjs -- one level of the amplification experiment's
// delegation tree made of PLAIN @a2a-js/sdk 1.3.0 agents (demo/amplify.py,
// modes js-naive and js-gateway). No once code, no once extension: an
// ordinary A2A 1.0 server (DefaultRequestHandler + InMemoryTaskStore behind
// the SDK's express JSON-RPC handler) whose executor, for a non-leaf task,
// delegates to its two children with the SDK's CLIENT, and for a leaf
// performs one side effect on the counting service (demo/amplify_counter.py).
//
//   node demo/amplify_js_agent.mjs serve --level L --depth D --next URL
//   node demo/amplify_js_agent.mjs send URL TEXT
//
// serve  listens on 127.0.0.1 (a free port) and prints the port, one line,
//        on stdout once listening; everything else goes to stderr. Its tasks
//        are level L of a tree of depth D (L == D: a leaf). URL is where the
//        children are (the next level's agent in js-naive, the next level's
//        onced gateway in js-gateway; either through a lossy proxy), or for a
//        leaf the counting service's POST /effect.
// send   the root client: one plain, blocking SendMessage of TEXT to URL with
//        the SDK client, retried like the agents retry; exit 0 once the task
//        it got back (or polled) is completed.
//
// A task's text is "amp ROOT pPATH" (as in demo/amplify_agent.sh): PATH is
// the node's place under root task ROOT, one digit 0/1 per level. A non-leaf
// sends "amp ROOT pPATH0" and "amp ROOT pPATH1" to URL, both at once, waits
// until both completed, and completes (or fails, saying why).
//
// How a plain A2A client retries (the same in every mode): it builds the
// Message once (a fresh messageId, no taskId, no contextId) and, when an
// attempt gets no answer (the connection closed, an HTTP or JSON-RPC error,
// its per-attempt timeout), sends THAT SAME Message object again after a
// full-jitter backoff: the retry repeats the messageId. The A2A 1.0 spec
// lets a server dedup on it (3.3.1 MAY); the SDK's server does not, so in
// js-naive every retry that reached the server is a new task and re-runs
// the subtree below it. An onced gateway derives the task ID of a plain
// first message from (principal, messageId) (--plain-ids derived, the
// default), so there the retry replays the task it already has.
// A blocking answer that is not terminal yet (onced's --max-wait) is
// followed with GetTask until it is, with the same per-call retries.
//
// The leaf's side effect carries Idempotency-Key: <its own a2a-js task ID>,
// the one ID a plain agent has: its retries of one effect call are
// deduplicated by the service, but a second upstream task for the same leaf
// has a new ID and makes a second effect. X-Amplify-Slot (ROOT.PATH) is for
// the experiment's accounting only.
//
// Every request this process sends opens a connection of its own (no
// keep-alive, like the once CLI and onced), so the lossy proxy in front of
// the next level (tests/tools/proxy.c, which decides per connection) loses
// each answer with its probability p.
//
// Test control (plain JSON, not A2A): GET /counts ->
//   {"level","tasksCreated","bySlot":{"ROOT.PATH":n},"completed","failed",
//    "sends","sendAttempts","effects","effectAttempts"}
// tasksCreated counts the a2a-js tasks this agent made (executions of a new
// task): the "upstream tasks" of demo/amplify.py's second table.
//
// Environment (set by demo/amplify.py, as for demo/amplify_agent.sh):
// AMP_ATTEMPTS, AMP_TIMEOUT_S, AMP_BACKOFF_BASE_MS, AMP_BACKOFF_CAP_MS.
// SIGTERM / SIGINT close the server and exit 0.
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { createRequire } from 'node:module';
import path from 'node:path';
import process from 'node:process';
import { fileURLToPath } from 'node:url';

// The SDK and express installed for the interop tests (scripts/deps.sh),
// through their CommonJS entry points (as bench/peer_server.mjs does).
const HERE = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(HERE, '..', 'tests', 'interop', 'package.json'));
const express = require('express');
const { Role, TaskState } = require('@a2a-js/sdk');
const { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } = require('@a2a-js/sdk/server');
const { agentCardHandler, jsonRpcHandler, UserBuilder } = require('@a2a-js/sdk/server/express');
const { ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory } = require('@a2a-js/sdk/client');

const env = (k, d) => Number(process.env[k] ?? d);
const POLICY = {
  attempts: env('AMP_ATTEMPTS', 10),
  timeoutMs: env('AMP_TIMEOUT_S', 60) * 1000,
  baseMs: env('AMP_BACKOFF_BASE_MS', 50),
  capMs: env('AMP_BACKOFF_CAP_MS', 1000),
};
const POLL_MS = 100;

const log = (msg) => process.stderr.write(`amplify_js_agent: ${msg}\n`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
// Before retry n (1, 2, ...): U[0, min(cap, base * 2^(n-1))] ms.
const backoff = (n) => sleep(Math.floor(Math.random() * (Math.min(POLICY.capMs, POLICY.baseMs * 2 ** (n - 1)) + 1)));

const TERMINAL = new Set([TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_FAILED,
                          TaskState.TASK_STATE_CANCELED, TaskState.TASK_STATE_REJECTED]);
const stateName = (s) => TaskState[s] ?? String(s);
const now = () => new Date().toISOString();
const textPart = (text) => ({ content: { $case: 'text', value: text }, mediaType: 'text/plain',
                              filename: '', metadata: {} });
const firstText = (msg) => msg?.parts?.find((p) => p.content?.$case === 'text')?.content.value ?? '';

// ---- fetch without keep-alive: one connection per request ----

function fetchOneConnection(url, init = {}) {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const headers = {};
    new Headers(init.headers ?? {}).forEach((v, k) => { headers[k] = v; });
    const body = init.body == null ? null : Buffer.from(init.body);
    if (body) headers['content-length'] = String(body.length);
    const req = http.request({ host: u.hostname, port: u.port, path: u.pathname + u.search,
                               method: init.method ?? 'GET', headers, agent: false,
                               signal: init.signal ?? undefined }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => {
        const h = new Headers();
        for (const [k, v] of Object.entries(res.headers)) {
          for (const one of [].concat(v)) h.append(k, one);
        }
        const noBody = [101, 204, 205, 304].includes(res.statusCode);
        resolve(new Response(noBody ? null : Buffer.concat(chunks),
                             { status: res.statusCode, statusText: res.statusMessage, headers: h }));
      });
    });
    req.on('error', reject);
    req.end(body ?? undefined);
  });
}

// ---- the client side: a plain A2A client with blind retries ----

// The SDK client for the agent at url: the card is read there (retried: the
// link loses answers too), and its JSON-RPC interface is addressed at url
// itself, since the card names the server's own address, not the proxy a
// caller goes through.
async function clientFor(url) {
  let card;
  for (let n = 1; ; n++) {
    try {
      const r = await fetchOneConnection(new URL('/.well-known/agent-card.json', url).href,
                                         { signal: AbortSignal.timeout(POLICY.timeoutMs) });
      if (r.status !== 200) throw new Error(`card: HTTP ${r.status}`);
      card = await r.json();
      break;
    } catch (e) {
      if (n >= POLICY.attempts * 3) throw new Error(`no card at ${url}: ${e.message}`);
      await backoff(Math.min(n, 6));
    }
  }
  card.supportedInterfaces = (card.supportedInterfaces ?? [])
    .filter((i) => i.protocolBinding === 'JSONRPC').map((i) => ({ ...i, url }));
  const factory = new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    transports: [new JsonRpcTransportFactory({ fetchImpl: fetchOneConnection })],
  }));
  return factory.createFromAgentCard(card);
}

const clients = new Map();
function cachedClient(url) {
  if (!clients.has(url)) {
    const p = clientFor(url);
    p.catch(() => clients.delete(url));
    clients.set(url, p);
  }
  return clients.get(url);
}

// One call with the retry policy: fn(signal) is attempted until it returns.
async function retried(what, fn, stats) {
  let last;
  for (let n = 1; n <= POLICY.attempts; n++) {
    if (n > 1) await backoff(n - 1);
    if (stats) stats.sendAttempts++;
    try {
      return await fn(AbortSignal.timeout(POLICY.timeoutMs));
    } catch (e) {
      last = e;
      log(`${what}: attempt ${n}: ${e.message ?? e}`);
    }
  }
  throw new Error(`${what}: no answer after ${POLICY.attempts} attempts: ${last?.message ?? last}`);
}

// Send text to the agent at url, blocking, blind retries of the same
// Message; then follow the task until it is terminal. Resolves to the
// final state's name (a direct Message answer counts as completed).
async function delegate(url, text, stats) {
  const client = await cachedClient(url);
  const message = { messageId: randomUUID(), role: Role.ROLE_USER, parts: [textPart(text)],
                    metadata: {}, extensions: [], referenceTaskIds: [] };
  if (stats) stats.sends++;
  let r = await retried(`send ${text}`, (signal) => client.sendMessage({ message }, { signal }), stats);
  if (r && r.messageId !== undefined && r.id === undefined) return 'TASK_STATE_COMPLETED';
  while (!TERMINAL.has(r.status?.state)) {
    await sleep(POLL_MS);
    const id = r.id;
    r = await retried(`get ${id}`, (signal) => client.getTask({ id }, { signal }), null);
  }
  return stateName(r.status.state);
}

// ---- the server side ----

function parseLabel(text) {
  const m = /^amp ([A-Za-z0-9]+) p([01]*)$/.exec(text);
  return m ? { root: m[1], path: m[2] } : null;
}

async function serve(argv) {
  const o = { level: -1, depth: -1, next: null };
  for (let i = 0; i < argv.length; i += 2) {
    const v = argv[i + 1];
    if (argv[i] === '--level') o.level = Number(v);
    else if (argv[i] === '--depth') o.depth = Number(v);
    else if (argv[i] === '--next') o.next = v;
    else usage(`unknown option ${argv[i]}`);
  }
  if (!(o.level >= 0 && o.depth >= o.level && o.next)) usage('serve needs --level, --depth, --next');
  const leaf = o.level === o.depth;
  const counts = { level: o.level, tasksCreated: 0, bySlot: {}, completed: 0, failed: 0,
                   sends: 0, sendAttempts: 0, effects: 0, effectAttempts: 0 };

  // The side effect: POST /effect, retried; keyed by this task's own ID.
  async function effect(slot, key) {
    counts.effects++;
    await retried(`effect ${slot}`, async (signal) => {
      counts.effectAttempts++;
      const r = await fetchOneConnection(o.next, { method: 'POST', signal, body: '',
        headers: { 'X-Amplify-Slot': slot, 'Idempotency-Key': key } });
      if (r.status !== 200) throw new Error(`effect: HTTP ${r.status}`);
      await r.arrayBuffer();
    }, null);
  }

  const executor = {
    async execute(ctx, bus) {
      const { taskId, contextId } = ctx;
      const text = firstText(ctx.userMessage);
      const status = (state, said) => AgentEvent.statusUpdate({
        taskId, contextId, metadata: {},
        status: { state, timestamp: now(), message: said === undefined ? undefined : {
          messageId: randomUUID(), contextId, taskId, role: Role.ROLE_AGENT, parts: [textPart(said)],
          metadata: {}, extensions: [], referenceTaskIds: [] } },
      });
      if (!ctx.task) {
        counts.tasksCreated++;
        bus.publish(AgentEvent.task({ id: taskId, contextId, artifacts: [], history: [ctx.userMessage],
          metadata: {}, status: { state: TaskState.TASK_STATE_SUBMITTED, timestamp: now() } }));
      }
      const label = parseLabel(text);
      if (!label || label.path.length !== o.level) {
        counts.failed++;
        bus.publish(status(TaskState.TASK_STATE_REJECTED, `not a level-${o.level} amplify task: ${text}`));
        bus.finished();
        return;
      }
      const slot = `${label.root}.${label.path}`;
      counts.bySlot[slot] = (counts.bySlot[slot] ?? 0) + 1;
      bus.publish(status(TaskState.TASK_STATE_WORKING));
      try {
        if (leaf) {
          await effect(slot, taskId);
        } else {
          const states = await Promise.all(['0', '1'].map((d) =>
            delegate(o.next, `amp ${label.root} p${label.path}${d}`, counts)
              .catch((e) => `error: ${e.message}`)));
          const bad = states.filter((s) => s !== 'TASK_STATE_COMPLETED');
          if (bad.length) throw new Error(`children ended ${states.join(', ')}`);
        }
        counts.completed++;
        bus.publish(status(TaskState.TASK_STATE_COMPLETED, 'done'));
      } catch (e) {
        counts.failed++;
        log(`${slot}: failed: ${e.message}`);
        bus.publish(status(TaskState.TASK_STATE_FAILED, e.message));
      }
      bus.finished();
    },
    async cancelTask(taskId, bus) {
      bus.finished();
    },
  };

  const card = {
    name: `amplify level ${o.level}`,
    description: 'A plain @a2a-js/sdk agent of the amplification experiment (demo/amplify.py)',
    supportedInterfaces: [],
    version: '1.0.0',
    capabilities: { streaming: false, pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [{ id: 'amplify', name: 'amplify', description: 'delegate to two children, or perform one effect',
               tags: ['demo'], examples: ['amp R0000 p'], inputModes: ['text/plain'],
               outputModes: ['text/plain'], securityRequirements: [] }],
    signatures: [],
  };
  const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), executor);
  const app = express();
  app.disable('x-powered-by');
  app.get('/counts', (_req, res) => res.json(counts));
  app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: handler }));
  app.post('/', jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
  const server = await new Promise((resolve, reject) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
    s.once('error', reject);
  });
  server.requestTimeout = 0;       // a blocking send waits for its whole subtree
  server.headersTimeout = 60000;
  const port = server.address().port;
  card.supportedInterfaces = [{ url: `http://127.0.0.1:${port}/`, protocolBinding: 'JSONRPC',
                                tenant: '', protocolVersion: '1.0' }];
  const shutdown = () => {
    server.close(() => process.exit(0));
    server.closeAllConnections();
    setTimeout(() => process.exit(0), 2000).unref();
  };
  process.on('SIGTERM', shutdown);
  process.on('SIGINT', shutdown);
  process.stdout.write(`${port}\n`);
}

function usage(msg) {
  process.stderr.write(`amplify_js_agent: ${msg}\nusage: node amplify_js_agent.mjs serve --level L ` +
                       '--depth D --next URL | send URL TEXT\n');
  process.exit(2);
}

const [cmd, ...rest] = process.argv.slice(2);
if (cmd === 'serve') {
  await serve(rest);
} else if (cmd === 'send') {
  if (rest.length !== 2) usage('send needs URL and TEXT');
  try {
    const state = await delegate(rest[0], rest[1], null);
    if (state !== 'TASK_STATE_COMPLETED') {
      log(`send ${rest[1]}: ended ${state}`);
      process.exit(1);
    }
    process.exit(0);
  } catch (e) {
    log(`send ${rest[1]}: ${e.message}`);
    process.exit(1);
  }
} else {
  usage('serve or send');
}
