// peer_server.mjs -- the real A2A peer for bench/run.sh: an @a2a-js/sdk 1.3.0
// server (DefaultRequestHandler + InMemoryTaskStore, JSON-RPC over Express)
// whose executor completes every task at once with an echo artifact, like
// onced's built-in `echo` executor: Task(submitted) -> artifact "echo" with
// the first text part -> status completed.
//
//   node bench/peer_server.mjs PORT [GRPC_PORT]
//
// Listens on 127.0.0.1:PORT, serves JSON-RPC at POST / and the agent card at
// /.well-known/agent-card.json, prints one "peer listening ..." line, runs
// until SIGTERM/SIGINT. With GRPC_PORT it also serves the same handler over
// gRPC (lf.a2a.v1.A2AService, h2c, @a2a-js/sdk/server/grpc on
// @grpc/grpc-js) on 127.0.0.1:GRPC_PORT, for bench/grpc.sh, and prints a
// second line "peer grpc listening ...". The SDK and Express are the ones installed for the
// interop tests (tests/interop/node_modules); they are loaded through their
// CommonJS entry points, which the package exports for `require`.
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import fs from 'node:fs';

const here = path.dirname(fileURLToPath(import.meta.url));
const interop = path.join(here, '..', 'tests', 'interop');
const require = createRequire(path.join(interop, 'package.json'));
const express = require('express');
const {
  DefaultRequestHandler,
  InMemoryTaskStore,
  AgentEvent,
} = require('@a2a-js/sdk/server');
const { jsonRpcHandler, agentCardHandler, UserBuilder } = require('@a2a-js/sdk/server/express');
const sdkVersion = JSON.parse(
  fs.readFileSync(path.join(interop, 'node_modules', '@a2a-js', 'sdk', 'package.json'), 'utf8'),
).version;

const port = Number(process.argv[2] || 0);
const grpcPort = process.argv[3] === undefined ? 0 : Number(process.argv[3]);
const okPort = (p) => Number.isInteger(p) && p >= 1 && p <= 65535;
if (!okPort(port) || (process.argv[3] !== undefined && !okPort(grpcPort))) {
  console.error('usage: node bench/peer_server.mjs PORT [GRPC_PORT]');
  process.exit(2);
}

// TaskState / Role enum values of A2A 1.0 as the SDK's types number them.
const TASK_STATE_SUBMITTED = 1;
const TASK_STATE_COMPLETED = 3;

const card = {
  name: 'bench-peer',
  description: 'Echo agent for the once benchmark (completes at once)',
  supportedInterfaces: [
    { url: `http://127.0.0.1:${port}/`, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' },
    ...(grpcPort
      ? [{ url: `127.0.0.1:${grpcPort}`, protocolBinding: 'GRPC', tenant: '', protocolVersion: '1.0' }]
      : []),
  ],
  provider: undefined,
  version: '1.0.0',
  capabilities: { streaming: false, pushNotifications: false, extensions: [] },
  securitySchemes: {},
  securityRequirements: [],
  defaultInputModes: ['text/plain'],
  defaultOutputModes: ['text/plain'],
  skills: [
    {
      id: 'echo', name: 'echo', description: 'Echoes text', tags: ['echo'], examples: [],
      inputModes: ['text/plain'], outputModes: ['text/plain'], securityRequirements: [],
    },
  ],
  signatures: [],
};

function firstText(message) {
  for (const p of message?.parts ?? []) {
    if (p?.content?.$case === 'text') return p.content.value;
  }
  return '';
}

const now = () => new Date().toISOString();

const executor = {
  async execute(ctx, bus) {
    const { taskId, contextId } = ctx;
    const text = firstText(ctx.userMessage);
    bus.publish(AgentEvent.task({
      id: taskId,
      contextId,
      status: { state: TASK_STATE_SUBMITTED, message: undefined, timestamp: now() },
      artifacts: [],
      history: [ctx.userMessage],
      metadata: {},
    }));
    bus.publish(AgentEvent.artifactUpdate({
      taskId,
      contextId,
      artifact: {
        artifactId: 'echo', name: 'echo', description: '',
        parts: [{ content: { $case: 'text', value: text }, metadata: undefined }],
        metadata: undefined, extensions: [],
      },
      append: false,
      lastChunk: true,
      metadata: undefined,
    }));
    bus.publish(AgentEvent.statusUpdate({
      taskId,
      contextId,
      status: { state: TASK_STATE_COMPLETED, message: undefined, timestamp: now() },
      metadata: undefined,
    }));
    bus.finished();
  },
  async cancelTask(_taskId, bus) {
    bus.finished();
  },
};

const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), executor);
const app = express();
app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: handler }));
app.use('/', jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));

const server = app.listen(port, '127.0.0.1', () => {
  console.log(`peer listening on http://127.0.0.1:${port}/ (@a2a-js/sdk ${sdkVersion}, node ${process.version})`);
});
let grpcServer = null;
if (grpcPort) {
  const grpc = require('@grpc/grpc-js');
  const { grpcService, A2AService, UserBuilder: GrpcUserBuilder } = require('@a2a-js/sdk/server/grpc');
  grpcServer = new grpc.Server();
  grpcServer.addService(A2AService, grpcService({
    requestHandler: handler, userBuilder: GrpcUserBuilder.noAuthentication,
  }));
  grpcServer.bindAsync(`127.0.0.1:${grpcPort}`, grpc.ServerCredentials.createInsecure(), (err) => {
    if (err) {
      console.error(`peer grpc: cannot listen on 127.0.0.1:${grpcPort}: ${err.message}`);
      process.exit(1);
    }
    const v = JSON.parse(fs.readFileSync(require.resolve('@grpc/grpc-js/package.json'), 'utf8')).version;
    console.log(`peer grpc listening on 127.0.0.1:${grpcPort} (@a2a-js/sdk ${sdkVersion} server/grpc, @grpc/grpc-js ${v})`);
  });
}
const stop = () => {
  if (grpcServer) grpcServer.forceShutdown();
  server.close(() => process.exit(0));
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
