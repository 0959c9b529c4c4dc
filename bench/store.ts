/**
 * npm run bench:store -- [--requests 4000] [--concurrency 1,16] [--rounds 3] [--postgres] [--settle-reads-hold] [--no-records]
 *
 * The database's share of a request, without HTTP: what the gateway writes for every chat request, through the real
 * store (src/store/), on a fresh database. Per request: the credit hold, its settle, one usage record and one health
 * observation; the records are written the way the recorder writes them (src/engine/recorder.ts), in flushes of
 * everything buffered, here every 20 requests. At concurrency c, c requests hold in the same tick and settle in the
 * same tick (the group commit takes each set as one transaction, as under load). The settle is told the hold, as the
 * chat engine tells it (src/store/credits.ts: on SQLite the hold's row is then not read back); --settle-reads-hold
 * settles by the hold's id alone, as the media and tools services do (and every settle did before session 41).
 * --no-records writes the holds and settles only (no usage record, no health observation): the credits' share of
 * the figures, and by difference the records' (session 42: at c=16 about two fifths of the whole on SQLite).
 *
 * It prints, per concurrency, the medians over `--rounds` of: the process's CPU µs per request, wall µs per
 * request, and from /proc/self/io the write system calls (`syscw`) and bytes written (`wchar`) per request: with
 * SQLite these are the WAL's frame writes and its checkpoints' copies, so they count pages and do not drift with
 * the machine's load the way times do on a shared VM. With --postgres the writes are the protocol's to the server,
 * and the server's CPU per request is added (every process of this machine named `postgres`, from /proc: the
 * server must run here). Writes bench/results/store.json.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openStore, type Store } from '../src/store/index.js';
import { newHoldId } from '../src/store/credits.js';
import type { UsageRecord } from '../src/store/usage.js';
import type { HealthObservation } from '../src/store/health.js';
import { ROOT, arg, cpuUs, formatTable, log, median, round } from './lib.js';

const REQUESTS = Number(arg('--requests') ?? 4000);
const CONCURRENCY = (arg('--concurrency') ?? '1,16').split(',').map(Number);
const ROUNDS = Number(arg('--rounds') ?? 3);
const POSTGRES = process.argv.includes('--postgres');
const PG_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const FLUSH_EVERY = 20;
const SETTLE_READS_HOLD = process.argv.includes('--settle-reads-hold');
const RECORDS = !process.argv.includes('--no-records');
const HOLD_NANO = 2_000_000;

/** CPU µs of this machine's PostgreSQL server processes so far (all of them: the benchmark's backends among them). */
function serverCpuUs(): number {
  let us = 0;
  for (const pid of fs.readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      if (fs.readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'postgres') us += cpuUs(Number(pid));
    } catch { /* ended meanwhile */ }
  }
  return us;
}

/** This process's write system calls and bytes written so far (/proc/self/io). */
function io(): { syscw: number; wchar: number } {
  const text = fs.readFileSync('/proc/self/io', 'utf8');
  const field = (name: string) => Number(new RegExp(`^${name}: (\\d+)`, 'm').exec(text)![1]);
  return { syscw: field('syscw'), wchar: field('wchar') };
}

async function open(label: string): Promise<{ store: Store; close: () => Promise<void> }> {
  if (!POSTGRES) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-store-'));
    const store = await openStore({ dialect: 'sqlite', file: path.join(dir, 'gateway.db') });
    return { store, close: async () => { await store.close(); fs.rmSync(dir, { recursive: true, force: true }); } };
  }
  const schema = `bench_store_${label}_${process.pid}`;
  const store = await openStore({ dialect: 'postgres', url: PG_URL, schema });
  return {
    store,
    close: async () => {
      const { sql } = await import('kysely');
      await sql`drop schema ${sql.id(schema)} cascade`.execute(store.db);
      await store.close();
    },
  };
}

/** `n` requests at concurrency `c` on a fresh store: each one's hold, settle and records. */
async function run(c: number, n: number, label: string) {
  const { store, close } = await open(label);
  try {
    const userId = await store.keys.createUser('bench');
    await store.credits.grant(userId, 1e15);
    let usage: UsageRecord[] = [];
    let health: HealthObservation[] = [];
    let sinceFlush = 0;
    const flush = async () => {
      const [u, h] = [usage, health];
      usage = [];
      health = [];
      sinceFlush = 0;
      if (u.length) await store.usage.insertMany(u);
      if (h.length) await store.health.record(h);
    };
    const request = async () => {
      const id = newHoldId();
      if (!(await store.credits.hold(userId, id, HOLD_NANO, 60_000))) throw new Error('hold refused');
      return id;
    };
    const one = (i: number): { u: UsageRecord; h: HealthObservation } => {
      const now = Date.now();
      return {
        u: { request_id: `req-${label}-${i}`, user_id: userId, key_id: 1, endpoint: 'chat', gateway: 'openai', provider: 'openai', model: 'openai/gpt-4o-mini',
          status: 'success', error_class: null, http_status: 200, prompt_tokens: 12, completion_tokens: 40, cached_tokens: 0,
          cost_nano: 1_200_000, latency_ms: 210, ttft_ms: 2, created_at: now },
        h: { gateway: 'openai', model: 'openai/gpt-4o-mini', provider: 'openai', ok: true, status: 'success', latencyMs: 210, error: null, ts: now, source: 'passive' },
      };
    };
    const settle = (id: string) => store.credits.settle(SETTLE_READS_HOLD ? id : { id, userId, amountNano: HOLD_NANO }, 1_200_000);
    // warm-up (prepared statements, the JIT), not counted
    for (let i = 0; i < 200; i += c) {
      const ids = await Promise.all(Array.from({ length: c }, (_, k) => request()));
      await Promise.all(ids.map(settle));
    }
    const cpu0 = process.cpuUsage();
    const server0 = POSTGRES ? serverCpuUs() : 0;
    const io0 = io();
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < n; i += c) {
      const ids = await Promise.all(Array.from({ length: c }, (_, k) => request()));
      await Promise.all(ids.map(settle));
      if (RECORDS) for (let k = 0; k < c; k++) {
        const r = one(i + k);
        usage.push(r.u);
        health.push(r.h);
      }
      sinceFlush += c;
      if (sinceFlush >= FLUSH_EVERY) await flush();
    }
    await flush();
    const wallUs = Number(process.hrtime.bigint() - t0) / 1e3;
    const cpu = process.cpuUsage(cpu0);
    const serverUs = POSTGRES ? (serverCpuUs() - server0) / n : 0;
    const io1 = io();
    const open = await store.credits.openHoldCount(userId);
    if (open !== 0) throw new Error(`${open} holds left open`);
    return { cpuUs: (cpu.user + cpu.system) / n, serverUs, wallUs: wallUs / n, syscw: (io1.syscw - io0.syscw) / n, wchar: (io1.wchar - io0.wchar) / n };
  } finally {
    await close();
  }
}

async function main() {
  const results: Record<string, Array<Awaited<ReturnType<typeof run>>>> = {};
  for (let r = 0; r < ROUNDS; r++) {
    for (const c of CONCURRENCY) {
      const res = await run(c, REQUESTS, `c${c}r${r}`);
      (results[`c${c}`] ??= []).push(res);
      log(`round ${r + 1}/${ROUNDS} c=${c}: ${round(res.cpuUs, 1)} µs CPU${POSTGRES ? ` (server ${round(res.serverUs, 1)})` : ''}, ${round(res.wallUs, 1)} µs wall, ${round(res.syscw, 2)} writes, ${round(res.wchar, 0)} bytes per request`);
    }
  }
  const rows = [['concurrency', 'CPU µs / request', ...(POSTGRES ? ['server CPU µs / request'] : []), 'wall µs / request', 'write syscalls / request', 'bytes written / request']];
  for (const c of CONCURRENCY) {
    const xs = results[`c${c}`];
    const m = (k: keyof (typeof xs)[number]) => median(xs.map((x) => x[k]));
    rows.push([String(c), String(round(m('cpuUs'), 1)), ...(POSTGRES ? [String(round(m('serverUs'), 1))] : []), String(round(m('wallUs'), 1)), String(round(m('syscw'), 2)), String(round(m('wchar'), 0))]);
  }
  process.stdout.write(`${formatTable(rows)}\n\n(${POSTGRES ? 'PostgreSQL' : 'SQLite'}; per request: hold, settle (${SETTLE_READS_HOLD ? 'reading the hold back' : 'told the hold'})${RECORDS ? ', a usage record and a health observation' : ', no records (--no-records)'}; medians of ${ROUNDS} round${ROUNDS === 1 ? '' : 's'} of ${REQUESTS} requests)\n`);
  fs.mkdirSync(path.join(ROOT, 'bench/results'), { recursive: true });
  fs.writeFileSync(path.join(ROOT, 'bench/results/store.json'), JSON.stringify({ postgres: POSTGRES, requests: REQUESTS, settleReadsHold: SETTLE_READS_HOLD, records: RECORDS, results }, null, 2));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
