// harness.mjs -- what the Node test peers share (tests/browser, tests/interop):
// the suite's timeout factor, the pass/fail tally behind check and eq, a
// free loopback port, the watchdog and the way a peer ends. Node built-ins
// only, so each peer keeps its own node_modules and this file needs none.
import { execFileSync } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';

// The suite's one timeout factor (tests/e2e/harness.py, tests/timeout.h): every
// bound a peer sets is multiplied by it; ctest sets it (more in sanitizer builds).
export const FACTOR = Number(process.env.ONCE_TEST_TIMEOUT_FACTOR) > 0 ? Number(process.env.ONCE_TEST_TIMEOUT_FACTOR) : 1;
export const scaled = (ms) => Math.round(ms * FACTOR);

// Counted by check and by each peer's own failures (a fatal setup problem, an
// unexpected exception); the peer prints "N passed, N failed" from it.
export const tally = { passed: 0, failed: 0 };

// Thrown by check, so a scenario stops at its first failed check; a peer
// counts any other exception as one more failure.
export class CheckFailed extends Error {}

export function check(cond, what) {
  if (cond) {
    tally.passed++;
    return;
  }
  tally.failed++;
  console.error('FAIL:', what);
  throw new CheckFailed(what);
}

export function eq(got, want, what) {
  check(got === want, `${what}: got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
}

// A loopback port the kernel just handed out and released.
export function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

// A run that has not finished after ms counts one more failure and ends
// through finish (which prints the tally and exits).
export function watchdog(ms, finish) {
  setTimeout(() => {
    console.error(`watchdog: test did not finish within ${ms} ms`);
    tally.failed++;
    finish();
  }, ms).unref();
}

// How a peer ends, however it ends: finish() ends what the peer started
// (kill), runs its own cleanup, prints "N passed, N failed" last and exits,
// non-zero on any failure; fatal(msg) counts a setup problem (a missing
// package or binary: a failure, never a skip) as one failure, says it and
// finishes. Neither returns. kill also runs on any exit of the process;
// SIGINT, SIGTERM and the watchdog (watchdogMs) count one more failure and
// finish. Call it once, first, so nothing the peer starts can outlive it.
export function ending({ watchdogMs, kill = () => {}, cleanup = () => {} }) {
  function finish() {
    kill();
    cleanup();
    console.log(`${tally.passed} passed, ${tally.failed} failed`);
    process.exit(tally.failed ? 1 : 0);
  }
  function fatal(msg) {
    tally.failed++;
    console.error('FAIL:', msg);
    finish();
  }
  process.on('exit', kill);
  for (const sig of ['SIGINT', 'SIGTERM']) {
    process.on(sig, () => {
      console.error(`interrupted by ${sig}`);
      tally.failed++;
      finish();
    });
  }
  watchdog(watchdogMs, finish);
  return { finish, fatal };
}

// Whatever ends a peer (a failure, a ctest timeout, SIGKILL), the processes it
// starts end with it: scripts/reaper.py watches this process and ends every
// process whose environment carries the marker it hands out (root: the
// source tree). False when the reaper gave no marker.
export function reaperGuard(root) {
  const line = execFileSync('python3', [path.join(root, 'scripts', 'reaper.py'), 'guard',
    String(process.pid)]).toString().trim();
  const m = /^export (ONCE_REAP_\w+)=1$/.exec(line);
  if (m) process.env[m[1]] = '1';
  return m !== null;
}
