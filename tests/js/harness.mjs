// harness.mjs -- what the Node test peers share (tests/browser, tests/interop):
// the suite's timeout factor, the pass/fail tally behind check and eq, a
// free loopback port and the watchdog. Node built-ins only, so each peer
// keeps its own node_modules and this file needs none.
import net from 'node:net';

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
