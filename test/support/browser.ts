/**
 * Headless Chromium for page tests: Debian's `chromium` package driven by playwright-core (no browser download).
 * Without the binary a test skips with a notice on the console, except under CI, where it must run (.ci/run
 * installs it).
 */
import fs from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

export const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium';

// Offline and quiet: no first-run work, no background or component-update traffic, no QUIC probing.
const ARGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
  '--disable-component-update', '--disable-sync',
];

/** The browser, or null (after printing why) when the binary is missing outside CI. */
export async function launchChromium(): Promise<Browser | null> {
  if (!fs.existsSync(CHROMIUM)) {
    if (process.env.CI) throw new Error(`${CHROMIUM} is missing, and CI is set: install Debian's chromium package`);
    console.log(`      NOTICE: browser test skipped: ${CHROMIUM} not found (apt-get install chromium; CI fails instead of skipping)`);
    return null;
  }
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: ARGS, timeout: 30_000 });
}
