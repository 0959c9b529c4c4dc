/**
 * npm run demo: the gateway in front of the upstream simulator, with a funded key, ready to try.
 *
 * Starts scripts/simulator.ts (OpenAI, Anthropic and Gemini wire formats on 127.0.0.1) and src/main.ts with
 * OPENAI_/ANTHROPIC_/GOOGLE_/GROQ_ BASE_URL pointed at it, a temporary DATA_DIR (embedded SQLite) and a key with
 * 10 USD of credits made by scripts/keys.ts. It waits until catalog discovery has picked up the simulator's model
 * list, sends each snippet's request once to check it, then prints the curl, OpenAI-SDK and Anthropic-SDK
 * snippets on stdout (progress goes to stderr). Ctrl+C stops both processes and removes the data directory.
 *
 *   npm run demo                 gateway on http://127.0.0.1:8000 (a free port when 8000 is taken)
 *   PORT=9000 npm run demo       that port, or fail
 *   PORT=0 npm run demo          any free port
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const UPSTREAM_KEY = 'demo-upstream-key';
const OPENAI_MODEL = 'openai/sim/echo';
const ANTHROPIC_MODEL = 'anthropic/sim/echo';
const PROMPT = 'Hello, gateway';
const CREDITS_USD = 10;

const progress = (s: string) => process.stderr.write(`[demo] ${s}\n`);
const children: ChildProcess[] = [];
let dataDir = '';

function spawnTs(script: string, args: string[], env: Record<string, string>): ChildProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, script), ...args], {
    cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  return child;
}

/** Resolves with the first match of `re` in the child's output; rejects if it exits first or takes too long. */
function waitFor(child: ChildProcess, re: RegExp, what: string, ms = 30_000): Promise<RegExpMatchArray> {
  let out = '';
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`${what} did not start in ${ms / 1000} s:\n${out}`)), ms);
    const on = (d: Buffer) => {
      out += d;
      const m = out.match(re);
      if (m) { clearTimeout(t); resolve(m); }
    };
    child.stdout!.on('data', on);
    child.stderr!.on('data', on);
    child.once('exit', (code) => { clearTimeout(t); reject(new Error(`${what} exited with ${code}:\n${out}`)); });
  });
}

function runTs(script: string, args: string[], env: Record<string, string>): Promise<string> {
  const child = spawnTs(script, args, env);
  let out = '';
  let err = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (err += d));
  return new Promise((resolve, reject) => child.on('exit', (code) => (code === 0 ? resolve(out.trim()) : reject(new Error(`${script} ${args.join(' ')} failed:\n${err}`)))));
}

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = net.createServer().once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

/** The gateway's port, and whether it was picked here (not asked for with PORT=<n>): a picked one may be picked again. */
async function pickPort(): Promise<{ port: number; picked: boolean }> {
  const asked = process.env.PORT;
  if (asked !== undefined && !/^\d{1,5}$/.test(asked)) throw new Error(`PORT must be a port number, got "${asked}"`);
  const want = asked === undefined ? 8000 : Number(asked);
  if (want !== 0 && (await portFree(want))) return { port: want, picked: asked === undefined };
  if (want !== 0 && asked !== undefined) throw new Error(`port ${want} is in use (PORT=0 picks a free one)`);
  const port = await new Promise<number>((resolve) => {
    const srv = net.createServer().listen(0, '127.0.0.1', () => {
      const p = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(p));
    });
  });
  if (want !== 0) progress(`port ${want} is in use: using ${port}`);
  return { port, picked: true };
}

/** What the snippets send, as fetch calls: the demo checks each one before printing it. */
function chatRequest(url: string, key: string) {
  return { url: `${url}/v1/chat/completions`, headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
    body: { model: OPENAI_MODEL, messages: [{ role: 'user', content: PROMPT }] } };
}
function messagesRequest(url: string, key: string) {
  return { url: `${url}/v1/messages`, headers: { 'x-api-key': key, 'anthropic-version': '2023-06-01', 'Content-Type': 'application/json' },
    body: { model: ANTHROPIC_MODEL, max_tokens: 100, messages: [{ role: 'user', content: PROMPT }] } };
}

async function post(r: { url: string; headers: Record<string, string>; body: unknown }): Promise<{ status: number; json: any }> {
  const res = await fetch(r.url, { method: 'POST', headers: r.headers, body: JSON.stringify(r.body) });
  return { status: res.status, json: await res.json().catch(() => null) };
}

/** Discovery runs in the background after start-up: retry until both models answer through their gateway. */
async function checkSnippets(url: string, key: string): Promise<void> {
  const expected = `Echo: ${PROMPT}`;
  for (let i = 0; ; i++) {
    const chat = await post(chatRequest(url, key));
    const msg = await post(messagesRequest(url, key));
    const chatOk = chat.status === 200 && chat.json?.choices?.[0]?.message?.content === expected && chat.json?.gateway_usage?.gateway === 'openai';
    const msgOk = msg.status === 200 && msg.json?.content?.[0]?.text === expected && msg.json?.gateway_usage?.gateway === 'anthropic';
    if (chatOk && msgOk) return;
    if (i === 100) throw new Error(`the snippets do not work: chat ${chat.status} ${JSON.stringify(chat.json)}; messages ${msg.status} ${JSON.stringify(msg.json)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

function snippets(url: string, simUrl: string, key: string): string {
  const chat = chatRequest(url, key);
  return `
Model Gateway demo: running
  gateway     ${url}   (API reference: ${url}/docs)
  upstreams   ${simUrl}   (the simulator: OpenAI, Anthropic and Gemini wire formats; sim/* models)
  key         ${key}   (${CREDITS_USD} USD of demo credits)
  data        ${dataDir}   (removed on exit)

# curl — an OpenAI-format chat completion through the openai gateway
curl -s ${chat.url} \\
  -H "Authorization: Bearer ${key}" \\
  -H "Content-Type: application/json" \\
  -d '${JSON.stringify(chat.body)}'

# OpenAI SDK (Node, the openai package) — save as demo-openai.mjs and run: node demo-openai.mjs
import OpenAI from 'openai';
const openai = new OpenAI({ baseURL: '${url}/v1', apiKey: '${key}' });
const completion = await openai.chat.completions.create({
  model: '${OPENAI_MODEL}',
  messages: [{ role: 'user', content: '${PROMPT}' }],
});
console.log(completion.choices[0].message.content);

# Anthropic SDK (Node, the @anthropic-ai/sdk package) — save as demo-anthropic.mjs and run: node demo-anthropic.mjs
import Anthropic from '@anthropic-ai/sdk';
const anthropic = new Anthropic({ baseURL: '${url}', apiKey: '${key}' });
const message = await anthropic.messages.create({
  model: '${ANTHROPIC_MODEL}',
  max_tokens: 100,
  messages: [{ role: 'user', content: '${PROMPT}' }],
});
console.log(message.content[0].type === 'text' ? message.content[0].text : message.content[0]);

# The typed TypeScript client (model-gateway/client)
GATEWAY_URL=${url} GATEWAY_KEY=${key} node --import tsx examples/client.ts

The curl, OpenAI-SDK and Anthropic-SDK requests were each just sent once and answered "Echo: ${PROMPT}".
Press Ctrl+C to stop.
`;
}

let stopping = false;
async function stop(code: number): Promise<never> {
  if (!stopping) {
    stopping = true;
    await Promise.all(children.filter((c) => c.exitCode === null && c.signalCode === null).map((c) => new Promise<void>((resolve) => {
      const t = setTimeout(() => { c.kill('SIGKILL'); }, 10_000);
      c.once('exit', () => { clearTimeout(t); resolve(); });
      c.kill('SIGTERM');
    })));
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
  }
  process.exit(code);
}

/**
 * Starts the gateway on `port` and waits for its /health: its URL, or '' when it stopped at once because the port was
 * taken and `mayRetry`. Any other stop before it answered is an error; once it answered, its stop ends the demo.
 */
async function startGateway(port: number, env: Record<string, string>, mayRetry: boolean): Promise<string> {
  progress(`starting the gateway on port ${port}`);
  const gateway = spawnTs('src/main.ts', [], { ...env, PORT: String(port) });
  let out = '';
  let exitCode: number | null | undefined;
  let started = false;
  gateway.stdout!.on('data', (d: Buffer) => process.stderr.write(d)); // warnings and errors only (LOG_LEVEL)
  gateway.stderr!.on('data', (d: Buffer) => { out += d; process.stderr.write(d); });
  gateway.once('close', (code) => { // after its output: the EADDRINUSE is in `out` by then
    exitCode = code;
    if (started && !stopping) { progress(`the gateway exited with ${code}`); void stop(1); }
  });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    if (exitCode !== undefined) {
      if (!mayRetry || !out.includes('EADDRINUSE')) throw new Error(`the gateway exited with ${exitCode}`);
      progress(`port ${port} was taken before the gateway could bind it: picking another`);
      return '';
    }
    const up = await fetch(`${url}/health`).then((r) => r.ok, () => false);
    if (up && exitCode === undefined) {
      started = true;
      return url;
    }
    if (i === 300) throw new Error('the gateway did not answer /health in 30 s');
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function main(): Promise<void> {
  process.once('SIGINT', () => { progress('stopping'); void stop(0); });
  process.once('SIGTERM', () => { progress('stopping'); void stop(0); });
  process.on('exit', () => { for (const c of children) if (c.exitCode === null) c.kill('SIGKILL'); });

  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'gateway-demo-'));
  progress('starting the upstream simulator');
  const sim = spawnTs('scripts/simulator.ts', ['--port', '0', '--api-key', UPSTREAM_KEY], {});
  const simUrl = (await waitFor(sim, /(http:\/\/127\.0\.0\.1:\d+)/, 'the simulator'))[1];

  const env = {
    DATA_DIR: dataDir, HOST: '127.0.0.1', LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
    OPENAI_API_KEY: UPSTREAM_KEY, OPENAI_BASE_URL: `${simUrl}/v1`,
    ANTHROPIC_API_KEY: UPSTREAM_KEY, ANTHROPIC_BASE_URL: simUrl,
    GOOGLE_API_KEY: UPSTREAM_KEY, GOOGLE_BASE_URL: simUrl,
    // Groq's catalog offers whisper-large-v3, so transcription has a model to route to in the demo.
    GROQ_API_KEY: UPSTREAM_KEY, GROQ_BASE_URL: `${simUrl}/v1`,
  };
  progress(`creating a key with ${CREDITS_USD} USD of credits`);
  const key = (await runTs('scripts/keys.ts', ['create', '--name', 'demo', '--credits', String(CREDITS_USD)], { ...env, LOG_LEVEL: 'silent' })).split('\n').pop()!;

  sim.once('exit', (code) => { if (!stopping) { progress(`the simulator exited with ${code}`); void stop(1); } });
  // A port found free here may be taken by another process before the gateway binds it (seen in CI): the gateway then
  // stops at once naming EADDRINUSE, and a port picked here is picked again (an asked-for PORT=<n> is not).
  let url = '';
  for (let attempt = 1; !url; attempt++) {
    const { port, picked } = await pickPort();
    url = await startGateway(port, env, picked && attempt < 5);
  }
  progress('waiting for catalog discovery of the simulator\'s models, then checking every snippet');
  await checkSnippets(url, key);
  process.stdout.write(snippets(url, simUrl, key));
}

main().catch((err: Error) => {
  progress(`failed: ${err.message}`);
  void stop(1);
});
