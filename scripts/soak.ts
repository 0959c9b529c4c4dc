/**
 * Soak test: a real gateway process under steady load, its memory (RSS) and open file descriptors sampled
 * over time, and the trend reported. Everything runs on the loopback interface: this script starts the
 * upstream simulator and the gateway (SQLite in a temporary directory) itself and talks to nothing else.
 *
 *   npm run soak -- [--duration 10m] [--concurrency 8] [--interval 5s] [--warmup 20%] [--json]
 *                   [--max-rss-growth-mb N] [--max-fd-growth N]
 *
 * Load: a mix of non-streamed and streamed completions, streams the client abandons after the first chunk,
 * session reads, unknown models (404) and invalid bodies (422), spread over several keys.
 * Trend: least-squares slope of RSS (MB/min) and fds (/min) over the samples after the warm-up, plus the
 * growth from the end of the warm-up to the end. With --max-* bounds the exit code is 1 when one is exceeded.
 * Linux only (reads /proc/<pid>).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { startSimulator } from '../test/support/simulator.js';
import { openStore } from '../src/store/index.js';
import { KeyService } from '../src/auth.js';
import { usdToNano } from '../src/store/credits.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

export interface SoakOptions {
  durationMs: number;
  concurrency: number;
  intervalMs: number;
  /** Fraction of the run excluded from the trend (start-up, JIT, pools filling). */
  warmup: number;
  log?: (line: string) => void;
}

export interface Sample { tMs: number; rssMb: number; fds: number; requests: number; errors: number }

export interface SoakReport {
  samples: Sample[];
  requests: number;
  /** Answers that were not what the load expected (a 5xx, a broken connection). */
  errors: number;
  rssSlopeMbPerMin: number;
  fdSlopePerMin: number;
  /** From the first sample after the warm-up to the last one. */
  rssGrowthMb: number;
  fdGrowth: number;
  rssMaxMb: number;
  fdMax: number;
}

function procStats(pid: number): { rssMb: number; fds: number } {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return { rssMb: kb / 1024, fds: fs.readdirSync(`/proc/${pid}/fd`).length };
}

/** Least-squares slope of y over x. */
export function slope(xs: number[], ys: number[]): number {
  const n = xs.length;
  if (n < 2) return 0;
  const mx = xs.reduce((a, b) => a + b, 0) / n;
  const my = ys.reduce((a, b) => a + b, 0) / n;
  let num = 0;
  let den = 0;
  for (let i = 0; i < n; i++) {
    num += (xs[i] - mx) * (ys[i] - my);
    den += (xs[i] - mx) ** 2;
  }
  return den === 0 ? 0 : num / den;
}

async function waitHealthy(url: string, child: ChildProcess, output: () => string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (child.exitCode !== null) throw new Error(`gateway exited with ${child.exitCode}:\n${output()}`);
    try {
      if ((await fetch(`${url}/health`)).ok) return;
    } catch { /* not up yet */ }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`gateway did not start:\n${output()}`);
}

async function freePort(): Promise<number> {
  const net = await import('node:net');
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
    srv.on('error', reject);
  });
}

export async function soak(opts: SoakOptions): Promise<SoakReport> {
  const log = opts.log ?? (() => undefined);
  const sim = await startSimulator();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-soak-'));
  const secret = 'soak-secret-0123456789abcdef';
  const catalog = path.join(dir, 'catalog.json');
  fs.writeFileSync(catalog, JSON.stringify({
    gateways: [{ id: 'openai', url: `${sim.url}/v1`, key: 'sk-soak' }],
    offers: [['soak/echo', 'sim/echo'], ['soak/chunks', 'sim/chunks-20'], ['soak/slow', 'sim/slow-20ms']]
      .map(([modelId, upstreamModel]) => ({ gateway: 'openai', upstreamModel, modelId, pricing: { prompt: 1e-9, completion: 1e-9 }, maxOutputTokens: 100 })),
  }));
  const db = path.join(dir, 'gateway.db');
  const store = await openStore({ dialect: 'sqlite', file: db });
  const keyService = new KeyService(store.keys, secret, undefined);
  const keys: string[] = [];
  for (let i = 0; i < 4; i++) {
    const { key, record } = await keyService.create(`soak-${i}`);
    await store.credits.grant(record.user_id, usdToNano(1000));
    keys.push(key);
  }
  await store.close();

  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  let output = '';
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'src/main.ts')], {
    cwd: ROOT,
    env: { ...process.env, HOST: '127.0.0.1', PORT: String(port), DATA_DIR: dir, DATABASE_URL: `sqlite:${db}`, KEY_HASH_SECRET: secret,
      CATALOG_FILE: catalog, LOG_LEVEL: 'warn', RATE_LIMIT_RPM: '0', RATE_LIMIT_TPM: '0', RATE_LIMIT_CONCURRENT: '0' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (d) => { output = (output + d).slice(-20_000); });
  child.stderr!.on('data', (d) => { output = (output + d).slice(-20_000); });

  const samples: Sample[] = [];
  let requests = 0;
  let errors = 0;
  try {
    await waitHealthy(url, child, () => output);
    log(`gateway pid ${child.pid} on ${url}; load: ${opts.concurrency} workers for ${Math.round(opts.durationMs / 1000)} s`);
    const started = Date.now();
    const end = started + opts.durationMs;
    const sample = () => {
      const s = { tMs: Date.now() - started, ...procStats(child.pid!), requests, errors };
      samples.push(s);
      log(`t=${(s.tMs / 1000).toFixed(0).padStart(5)}s  rss=${s.rssMb.toFixed(1).padStart(7)} MB  fds=${String(s.fds).padStart(4)}  requests=${s.requests}  errors=${s.errors}`);
    };
    sample();
    const timer = setInterval(sample, opts.intervalMs);
    const worker = async (w: number) => {
      for (let i = 0; Date.now() < end; i++) {
        const key = keys[(w + i) % keys.length];
        try {
          if (!(await oneRequest(url, key, i % 10))) errors++;
        } catch {
          errors++;
        }
        requests++;
      }
    };
    await Promise.all(Array.from({ length: opts.concurrency }, (_, w) => worker(w)));
    clearInterval(timer);
    sample();
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => (child.exitCode !== null ? r(null) : child.once('exit', r)));
    await sim.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }

  const after = samples.filter((s) => s.tMs >= opts.durationMs * opts.warmup);
  const base = after.length >= 2 ? after : samples;
  const minutes = base.map((s) => s.tMs / 60_000);
  return {
    samples, requests, errors,
    rssSlopeMbPerMin: slope(minutes, base.map((s) => s.rssMb)),
    fdSlopePerMin: slope(minutes, base.map((s) => s.fds)),
    rssGrowthMb: base.at(-1)!.rssMb - base[0].rssMb,
    fdGrowth: base.at(-1)!.fds - base[0].fds,
    rssMaxMb: Math.max(...samples.map((s) => s.rssMb)),
    fdMax: Math.max(...samples.map((s) => s.fds)),
  };
}

/** One request of the mix; true when the answer is the one expected. */
async function oneRequest(url: string, key: string, kind: number): Promise<boolean> {
  const headers = { Authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  const chat = (model: string, stream: boolean, extra: object = {}) => ({
    method: 'POST', headers, body: JSON.stringify({ model, messages: [{ role: 'user', content: 'soak test message' }], stream, ...extra }),
  });
  switch (kind) {
    case 0: case 1: case 2: {
      const res = await fetch(`${url}/v1/chat/completions`, chat(kind === 2 ? 'soak/slow' : 'soak/echo', false));
      await res.arrayBuffer();
      return res.status === 200;
    }
    case 3: case 4: {
      const res = await fetch(`${url}/v1/chat/completions`, chat('soak/chunks', true, { stream_options: { include_usage: true } }));
      const text = await res.text();
      return res.status === 200 && text.includes('[DONE]');
    }
    case 5: {
      // a client that leaves after the first chunk: the gateway must abort upstream and release everything
      const ac = new AbortController();
      const res = await fetch(`${url}/v1/chat/completions`, { ...chat('soak/chunks', true), signal: ac.signal });
      const reader = res.body!.getReader();
      await reader.read();
      ac.abort();
      await reader.cancel().catch(() => undefined);
      return res.status === 200;
    }
    case 6: {
      const res = await fetch(`${url}/v1/chat/sessions`, { headers });
      await res.arrayBuffer();
      return res.status === 200;
    }
    case 7: {
      const res = await fetch(`${url}/v1/chat/completions`, chat('soak/unknown-model', false));
      await res.arrayBuffer();
      return res.status === 404;
    }
    case 8: {
      const res = await fetch(`${url}/v1/chat/completions`, { method: 'POST', headers, body: '{"model": 7}' });
      await res.arrayBuffer();
      return res.status === 422;
    }
    default: {
      const res = await fetch(`${url}/v1/messages`, { method: 'POST', headers, body: JSON.stringify({ model: 'soak/echo', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] }) });
      await res.arrayBuffer();
      return res.status === 200;
    }
  }
}

function duration(raw: string, what: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(raw.trim());
  if (!m) throw new Error(`${what} must be like 90s, 10m or 1h, got "${raw}"`);
  return Number(m[1]) * { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[(m[2] ?? 's') as 'ms'];
}

function parseArgs(argv: string[]) {
  const o = { durationMs: 600_000, concurrency: 8, intervalMs: 5_000, warmup: 0.2, json: false, maxRss: Infinity, maxFd: Infinity };
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = argv[i].split('=', 2);
    if (flag === '--json') { o.json = true; continue; }
    const v = inline ?? argv[++i];
    if (v === undefined) throw new Error(`${flag} needs a value`);
    if (flag === '--duration') o.durationMs = duration(v, '--duration');
    else if (flag === '--interval') o.intervalMs = duration(v, '--interval');
    else if (flag === '--concurrency' && /^\d+$/.test(v) && Number(v) >= 1) o.concurrency = Number(v);
    else if (flag === '--warmup' && /^\d{1,2}%$/.test(v)) o.warmup = Number(v.slice(0, -1)) / 100;
    else if (flag === '--max-rss-growth-mb' && Number.isFinite(Number(v))) o.maxRss = Number(v);
    else if (flag === '--max-fd-growth' && Number.isFinite(Number(v))) o.maxFd = Number(v);
    else throw new Error(`bad argument ${argv[i - (inline === undefined ? 1 : 0)]}`);
  }
  return o;
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const report = await soak({ ...o, log: o.json ? undefined : (l) => console.log(l) });
  if (o.json) {
    console.log(JSON.stringify(report, null, 2));
  } else {
    console.log(`\n${report.requests} requests (${(report.requests / (o.durationMs / 1000)).toFixed(0)}/s), ${report.errors} unexpected answers`);
    console.log(`RSS: trend ${report.rssSlopeMbPerMin.toFixed(2)} MB/min after warm-up, growth ${report.rssGrowthMb.toFixed(1)} MB, max ${report.rssMaxMb.toFixed(1)} MB`);
    console.log(`fds: trend ${report.fdSlopePerMin.toFixed(2)} /min after warm-up, growth ${report.fdGrowth}, max ${report.fdMax}`);
  }
  if (report.rssGrowthMb > o.maxRss || report.fdGrowth > o.maxFd || report.errors > 0) process.exitCode = 1;
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  main().catch((err) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(2);
  });
}
