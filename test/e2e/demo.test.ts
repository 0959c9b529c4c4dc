/**
 * `npm run demo` as a process: it must print snippets that work right now. The printed curl command is parsed
 * and sent with fetch; the printed OpenAI-SDK and Anthropic-SDK programs are saved and run with node (from
 * test/artifacts, so they import the project's own packages). Ctrl+C (SIGINT) stops everything and removes the
 * demo's data directory.
 */
import { expect } from 'chai';
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { promisify } from 'node:util';
import fs from 'node:fs';
import path from 'node:path';
import { ROOT } from '../support/proc.js';

const run = promisify(execFile);
const ARTIFACTS = path.join(ROOT, 'test/artifacts');

/** The lines after a `# <title…>` heading up to the next blank line. */
function section(out: string, title: string): string {
  const lines = out.split('\n');
  const start = lines.findIndex((l) => l.startsWith(`# ${title}`));
  if (start < 0) throw new Error(`no "# ${title}" section in:\n${out}`);
  const end = lines.findIndex((l, i) => i > start && l.trim() === '');
  return lines.slice(start + 1, end).join('\n');
}

/** `curl -s URL -H "k: v" … -d 'json'` (with `\` line continuations) → a fetch request. */
function parseCurl(cmd: string): { url: string; headers: Record<string, string>; body: string } {
  const flat = cmd.replace(/\\\n\s*/g, ' ');
  const url = /^curl -s (\S+)/.exec(flat)?.[1];
  const headers = Object.fromEntries([...flat.matchAll(/-H "([^:"]+):\s*([^"]*)"/g)].map((m) => [m[1], m[2]]));
  const body = /-d '([^']*)'/.exec(flat)?.[1];
  if (!url || body === undefined) throw new Error(`not a curl command this test understands: ${cmd}`);
  return { url, headers, body };
}

describe('e2e: npm run demo', function () {
  this.timeout(120_000);
  let demo: ChildProcess;
  let out = '';
  let err = '';

  before(async () => {
    demo = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'scripts/demo.ts')], {
      cwd: ROOT, env: { ...process.env, PORT: '0' }, stdio: ['ignore', 'pipe', 'pipe'],
    });
    demo.stdout!.on('data', (d) => (out += d));
    demo.stderr!.on('data', (d) => (err += d));
    await new Promise<void>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`the demo did not get ready:\n${err}\n${out}`)), 90_000);
      demo.stdout!.on('data', () => { if (out.includes('Press Ctrl+C to stop.')) { clearTimeout(t); resolve(); } });
      demo.once('exit', (code) => { clearTimeout(t); reject(new Error(`the demo exited with ${code}:\n${err}\n${out}`)); });
    });
  });
  after(() => {
    if (demo && demo.exitCode === null) demo.kill('SIGINT');
  });

  it('reports progress on stderr and the gateway, key and data directory on stdout', () => {
    expect(err).to.contain('[demo] starting the upstream simulator').and.contain('[demo] starting the gateway');
    expect(out).to.match(/gateway {5}http:\/\/127\.0\.0\.1:\d+ {3}\(API reference: http:\/\/127\.0\.0\.1:\d+\/docs\)/);
    expect(out).to.match(/key {9}gw_live_[\w-]+ {3}\(10 USD of demo credits\)/);
  });

  it('the printed curl command works when sent as printed', async () => {
    const curl = parseCurl(section(out, 'curl'));
    expect(curl.url).to.match(/^http:\/\/127\.0\.0\.1:\d+\/v1\/chat\/completions$/);
    const res = await fetch(curl.url, { method: 'POST', headers: curl.headers, body: curl.body });
    expect(res.status).to.equal(200);
    const json = await res.json();
    expect(json.choices[0].message.content).to.equal('Echo: Hello, gateway');
    expect(json.model).to.equal('sim/echo');
    expect(json.gateway_usage.gateway).to.equal('openai');
  });

  it('the printed OpenAI-SDK and Anthropic-SDK programs run and print the echo', async () => {
    fs.mkdirSync(ARTIFACTS, { recursive: true });
    for (const [title, file] of [['OpenAI SDK', 'demo-openai.mjs'], ['Anthropic SDK', 'demo-anthropic.mjs']]) {
      const program = path.join(ARTIFACTS, file);
      fs.writeFileSync(program, section(out, title) + '\n');
      const r = await run(process.execPath, [program], { cwd: ROOT, timeout: 30_000 });
      expect(r.stdout.trim(), title).to.equal('Echo: Hello, gateway');
    }
  });

  it('Ctrl+C stops the gateway and the simulator and removes the data directory', async () => {
    const dataDir = /data {8}(\S+)/.exec(out)![1];
    const url = /gateway {5}(http:\/\/127\.0\.0\.1:\d+)/.exec(out)![1];
    const simUrl = /upstreams {3}(http:\/\/127\.0\.0\.1:\d+)/.exec(out)![1];
    expect(fs.existsSync(dataDir)).to.equal(true);
    const code = await new Promise<number | null>((resolve) => { demo.once('exit', (c) => resolve(c)); demo.kill('SIGINT'); });
    expect(code).to.equal(0);
    expect(fs.existsSync(dataDir)).to.equal(false);
    for (const u of [`${url}/health`, `${simUrl}/v1/models`]) {
      const after = await fetch(u).then((r) => r.status, (e: Error) => e.name);
      expect(after, u).to.equal('TypeError'); // connection refused: nothing listens any more
    }
  });
});
