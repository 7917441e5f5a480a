// chromium.mjs -- what the browser tests share: puppeteer-core (from this
// folder's node_modules) and Debian's headless Chromium, or exit 77 (ctest:
// skipped) where either is missing (scripts/deps.sh installs both); and the
// run of steps (a failed check stops it; any other exception counts one
// more failure), and the end of a run: the scratch folder removed when every check passed (kept and
// named otherwise), "N passed, N failed", the exit status.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { CheckFailed, tally } from '../js/harness.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
export const CHROMIUM = process.env.ONCE_CHROMIUM || '/usr/bin/chromium';
const SKIP = 77;

export async function puppeteerOrSkip() {
  let puppeteer;
  try {
    puppeteer = (await import('puppeteer-core')).default;
  } catch {
    console.error(`puppeteer-core is not installed in ${HERE}: run "bash scripts/deps.sh"; skipped`);
    process.exit(SKIP);
  }
  if (!fs.existsSync(CHROMIUM)) {
    console.error(`no Chromium at ${CHROMIUM} (Debian package chromium): skipped`);
    process.exit(SKIP);
  }
  return puppeteer;
}

export function endRun(tmpdir) {
  if (tally.failed === 0 && tmpdir) fs.rmSync(tmpdir, { recursive: true, force: true });
  else if (tmpdir) console.error(`onced logs kept in ${tmpdir}`);
  console.log(`${tally.passed} passed, ${tally.failed} failed`);
  process.exit(tally.failed ? 1 : 0);
}

// Run steps (async functions) in order until one fails, then finish().
export async function runSteps(steps, finish) {
  try {
    for (const step of steps) await step();
  } catch (e) {
    if (!(e instanceof CheckFailed)) {
      tally.failed++;
      console.error('FAIL:', e && e.stack ? e.stack : e);
    }
  }
  await finish();
}
