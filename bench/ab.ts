/**
 * npm run bench:ab: two builds of the gateway side by side, the way a change is judged on a noisy machine.
 *
 *   npm run bench:ab -- --base <rev> [--head <rev>] [--rounds 6] [--modes c64,c1,burst] [--postgres]
 *
 * Whole runs of `npm run bench` move by 20–40 % within an hour on a shared VM (docs/PERFORMANCE.md), more than most
 * changes; two builds measured in alternating rounds against one simulator see the same drift. Each build (`--base`
 * and `--head`, a git revision, or the working tree when `--head` is left out) is bundled as `npm start` runs it,
 * from its own checkout (a temporary git worktree sharing this node_modules), so it reads its own spec and seeds
 * and migrates its own fresh database. Every round starts a fresh gateway of each build (in turn, the order
 * alternating), warms it, and measures the chosen modes, with the serving process's CPU from /proc:
 *   c64      non-streamed chat at concurrency 64 (autocannon): req/s, CPU µs per request, errors
 *   c1       non-streamed chat one at a time: p50 and p99 ms, CPU µs per request
 *   large    the same with a 100 KB conversation (bench/lib.ts conversationBody: tools, tool calls and results)
 *   image    the same with a 2 MB vision request (one image as a base64 data URL, bench/lib.ts imageBody)
 *   burst    20-chunk streams at concurrency 16, as fast as the simulator writes: TTFB p50 ms, CPU µs per stream
 *   spread   paced streams (10 ms apart) at concurrency 16, starts spread: TTFB p50 ms, CPU µs per stream
 *   together the same, the 16 started together
 *   single   20-chunk streams one at a time: TTFB p50 ms, CPU µs per stream
 * It prints each figure's median per build and in how many rounds the head did better, and writes
 * bench/results/ab.json. A difference that the head wins in most rounds is a change; one inside the spread of the
 * rounds is not (two processes of one build differed by ~10 % per burst stream in session 11). Flags: --head-flags
 * '<node flags>' (given to the head's gateway only, after npm start's: a V8 flag tried on one build), --n (streams
 * or c=1 requests per round, default 600), --seconds (c64, default 8), --warmup (seconds of c=16 load on each fresh
 * gateway before its first mode, default 12 since session 19, 2 before: the gateway's throughput climbs for ~10 s as
 * V8 compiles it, so a change to how code is compiled can show in the first modes and not later; session 19's frames
 * change came out even with 8 s and 8 rounds and 856 -> 752 us per burst stream with 12 s and 10 rounds, on another
 * stretch of the day, so the warm-up is one difference of two; since session 35 followed by burst streams when a
 * streamed mode is measured, 200 until session 46 and 3,000 since (WARM_STREAMS in bench/lib.ts: a fresh gateway's
 * stream path is compiled over its first ~2,800 streams)), --postgres (each gateway on a fresh
 * PostgreSQL database; BENCH_DATABASE_URL names the server, default postgres://postgres@127.0.0.1:5432/test),
 * --interleaved (since session 25, the modes c1, large, image and single only: both builds' gateways run at once and take
 * turns request by request, A B, B A, …, so the machine's drift falls on both alike instead of on one round or the
 * other; in session 25 it showed a 0.2 ms (7 %) change of the 100 KB p50 in every round, where alternating rounds did
 * not show it at all: docs/PERFORMANCE.md).
 * Loopback only; the builds' dependencies are this checkout's node_modules.
 */
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { MODEL, PACED_MODEL, PACED_STREAM_MS, ROOT, STREAM_MODEL, WARM_STREAMS, alternate, arg, benchGateway, build, chatBody, conversationBody, formatTable, imageBody, latencyC1, log, median, round, startTs, streaming, throughput, withCpu, type Build } from './lib.js';

const BASE = arg('--base');
const HEAD = arg('--head');
const ROUNDS = Number(arg('--rounds') ?? 6);
const MODES = (arg('--modes') ?? 'c64,c1,burst').split(',');
const N = Number(arg('--n') ?? 600);
const SECONDS = Number(arg('--seconds') ?? 8);
/** Seconds of c=16 load on each fresh gateway before its first mode (V8 is still compiling it for ~10 s). */
const WARMUP = Number(arg('--warmup') ?? 12);
const POSTGRES = process.argv.includes('--postgres');
/** Node flags for the head build's gateway only, after npm start's (e.g. a V8 flag tried without a code change). */
const HEAD_FLAGS = (arg('--head-flags') ?? '').split(/\s+/).filter(Boolean);
const PG_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const LARGE_BODY = conversationBody(MODEL, false, 100);
/** Both builds' gateways up at once, the one-at-a-time modes taking turns request by request (alternate()). */
const INTERLEAVED = process.argv.includes('--interleaved');
const IMAGE_BODY = imageBody(MODEL, false, 2000);
const ONE_AT_A_TIME: Record<string, string> = { c1: chatBody(MODEL, false), large: LARGE_BODY, image: IMAGE_BODY, single: chatBody(STREAM_MODEL, true) };
/** The warm-up: c=16 load, then WARM_STREAMS burst streams when a streamed mode is measured (their path compiled
 * before it is timed, not in the first streamed mode: docs/PERFORMANCE.md, sessions 35 and 46; 200 until session 46). */
async function warm(gw: { url: string; key: string }): Promise<void> {
  await throughput(gw.url, gw.key, 16, WARMUP);
  if (MODES.some((m) => ['burst', 'spread', 'together', 'single'].includes(m))) await streaming(gw.url, gw.key, 16, WARM_STREAMS);
}

/** What each mode reports, in order, and which way is better. */
const FIGURES: Record<string, Array<{ name: string; higherIsBetter?: boolean }>> = {
  c64: [{ name: 'req/s', higherIsBetter: true }, { name: 'CPU µs per request' }, { name: 'errors' }],
  c1: [{ name: 'p50 ms' }, { name: 'p99 ms' }, { name: 'CPU µs per request' }],
  large: [{ name: 'p50 ms' }, { name: 'p99 ms' }, { name: 'CPU µs per request' }],
  image: [{ name: 'p50 ms' }, { name: 'p99 ms' }, { name: 'CPU µs per request' }],
  burst: [{ name: 'TTFB p50 ms' }, { name: 'CPU µs per stream' }, { name: 'errors' }, { name: 'total p50 ms' }],
  spread: [{ name: 'TTFB p50 ms' }, { name: 'CPU µs per stream' }, { name: 'errors' }, { name: 'total p50 ms' }],
  together: [{ name: 'TTFB p50 ms' }, { name: 'CPU µs per stream' }, { name: 'errors' }, { name: 'total p50 ms' }],
  single: [{ name: 'TTFB p50 ms' }, { name: 'CPU µs per stream' }, { name: 'errors' }, { name: 'total p50 ms' }],
};

async function measure(mode: string, gw: { url: string; key: string; pid: number }): Promise<number[]> {
  const streams = (model: string | undefined, concurrency: number, total: number, spread = 0) =>
    withCpu(gw.pid, () => streaming(gw.url, gw.key, concurrency, total, model, spread), (r) => r.streams);
  switch (mode) {
    case 'c64': { const r = await withCpu(gw.pid, () => throughput(gw.url, gw.key, 64, SECONDS), (x) => x.requests); return [r.rps, r.cpuUs, r.errors]; }
    case 'c1': { const r = await withCpu(gw.pid, () => latencyC1(gw.url, gw.key, N), () => N + 50); return [r.p50, r.p99, r.cpuUs]; } // 50 warm-up requests first
    case 'large': { const r = await withCpu(gw.pid, () => latencyC1(gw.url, gw.key, N, LARGE_BODY), () => N + 50); return [r.p50, r.p99, r.cpuUs]; }
    case 'image': { const r = await withCpu(gw.pid, () => latencyC1(gw.url, gw.key, N, IMAGE_BODY), () => N + 50); return [r.p50, r.p99, r.cpuUs]; }
    case 'burst': { const r = await streams(undefined, 16, N); return [r.ttfbP50, r.cpuUs, r.errors, r.totalP50]; }
    case 'spread': { const r = await streams(PACED_MODEL, 16, Math.round(N / 2), PACED_STREAM_MS); return [r.ttfbP50, r.cpuUs, r.errors, r.totalP50]; }
    case 'together': { const r = await streams(PACED_MODEL, 16, Math.round(N / 2)); return [r.ttfbP50, r.cpuUs, r.errors, r.totalP50]; }
    case 'single': { const r = await streams(undefined, 1, N); return [r.ttfbP50, r.cpuUs, r.errors, r.totalP50]; }
    default: throw new Error(`unknown mode ${mode}: ${Object.keys(FIGURES).join(', ')}`);
  }
}


async function main() {
  if (!BASE) throw new Error('usage: npm run bench:ab -- --base <rev> [--head <rev>] [--rounds 6] [--modes c64,c1,burst] [--postgres]');
  for (const m of MODES) if (!FIGURES[m]) throw new Error(`unknown mode ${m}: ${Object.keys(FIGURES).join(', ')}`);
  if (INTERLEAVED && POSTGRES) throw new Error('--interleaved runs on SQLite only');
  if (INTERLEAVED) for (const m of MODES) if (!ONE_AT_A_TIME[m]) throw new Error(`--interleaved takes the one-at-a-time modes only (${Object.keys(ONE_AT_A_TIME).join(', ')}), not ${m}`);
  const builds: Build[] = [];
  const admin = POSTGRES ? new pg.Client({ connectionString: PG_URL }) : undefined;
  try {
    builds.push(build(BASE));
    builds.push(build(HEAD));
    if (HEAD_FLAGS.length) builds[1].label += ` ${HEAD_FLAGS.join(' ')}`;
    await admin?.connect();
    const sim = await startTs('scripts/simulator.ts', ['--port', '0'], {}, /(http:\/\/127\.0\.0\.1:\d+)/);
    const results: number[][][][] = builds.map(() => MODES.map(() => [])); // [build][mode][round] -> figures
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 ? [1, 0] : [0, 1];
      if (INTERLEAVED) {
        const gws: Array<Awaited<ReturnType<typeof benchGateway>>> = [];
        for (const b of order) gws[b] = await benchGateway(builds[b].label, {}, sim.match[1], b === 1 ? HEAD_FLAGS : [], builds[b].file, builds[b].root);
        for (const b of order) await warm(gws[b]);
        for (let m = 0; m < MODES.length; m++) {
          const [base, head] = await alternate(gws, N, ONE_AT_A_TIME[MODES[m]]);
          [base, head].forEach((r, b) => {
            const figures = MODES[m] === 'single' ? [r.ttfbP50, r.cpuUs, r.errors, r.p50] : [r.p50, r.p99, r.cpuUs];
            results[b][m].push(figures);
            log(`round ${round + 1}/${ROUNDS} ${builds[b].label} ${MODES[m]} (interleaved): ${figures.join(' / ')}`);
          });
        }
        for (const gw of gws) {
          const exited = new Promise((r) => gw.child.once('exit', r));
          gw.stop();
          await exited;
        }
        continue;
      }
      for (const b of order) {
        const env: Record<string, string> = {};
        let db: string | undefined;
        if (admin) {
          db = `gw_ab_${process.pid}_${round}_${b}`;
          await admin.query(`create database ${db}`);
          const u = new URL(PG_URL);
          u.pathname = `/${db}`;
          env.DATABASE_URL = u.toString();
        }
        const gw = await benchGateway(builds[b].label, env, sim.match[1], b === 1 ? HEAD_FLAGS : [], builds[b].file, builds[b].root);
        await warm(gw);
        for (let m = 0; m < MODES.length; m++) {
          const figures = await measure(MODES[m], gw);
          results[b][m].push(figures);
          log(`round ${round + 1}/${ROUNDS} ${builds[b].label} ${MODES[m]}: ${figures.join(' / ')}`);
        }
        const exited = new Promise((r) => gw.child.once('exit', r));
        gw.stop();
        await exited;
        if (admin && db) await admin.query(`drop database if exists ${db}`);
      }
    }
    sim.child.kill('SIGTERM');

    const rows: string[][] = [['mode', 'figure', builds[0].label, builds[1].label, 'head better in']];
    const json: Record<string, unknown> = { base: builds[0].label, head: builds[1].label, rounds: ROUNDS, postgres: POSTGRES, interleaved: INTERLEAVED, modes: {} };
    MODES.forEach((mode, m) => {
      (json.modes as Record<string, unknown>)[mode] = FIGURES[mode].map((f, i) => {
        const base = results[0][m].map((r) => r[i]);
        const head = results[1][m].map((r) => r[i]);
        const wins = head.filter((h, k) => (f.higherIsBetter ? h > base[k] : h < base[k])).length;
        rows.push([mode, f.name, String(round(median(base), 3)), String(round(median(head), 3)), f.name === 'errors' ? '' : `${wins} of ${ROUNDS} rounds`]);
        return { figure: f.name, base, head, baseMedian: median(base), headMedian: median(head), headBetterInRounds: wins };
      });
    });
    console.log(formatTable(rows));
    console.log(INTERLEAVED
      ? `\n(medians of ${ROUNDS} rounds on one simulator, both builds' gateways fresh in each round and taking turns request by request; CPU: each gateway process's own)`
      : `\n(medians of ${ROUNDS} alternating rounds on one simulator, a fresh gateway per build per round; CPU: the gateway process's own)`);
    fs.mkdirSync(path.join(ROOT, 'bench/results'), { recursive: true });
    fs.writeFileSync(path.join(ROOT, 'bench/results/ab.json'), JSON.stringify(json, null, 2));
    log('wrote bench/results/ab.json');
  } finally {
    await admin?.end();
    for (const b of builds) b.cleanup?.();
  }
  process.exit(0);
}

main().catch((err) => { console.error(err); process.exit(1); });
