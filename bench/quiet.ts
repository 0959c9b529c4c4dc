/**
 * What the gateway's quiet-spell collection costs the traffic that comes back after it:
 *
 *   npm run bench:quiet -- [--pairs 2] [--quiet-s 8] [--reduce-after-ms 5000] [--rounds 5] [--streams 400]
 *
 * After `MEMORY_REDUCE_AFTER_MS` without a request the gateway asks V8 for a memory-reducing collection
 * (src/memory.ts), which gives the idle memory back and throws away optimised code whose objects no live object
 * holds: the request path's, compiled again once traffic returns (docs/PERFORMANCE.md, sessions 38 and 57). The
 * benchmark never meets it (no target is idle that long between its measures), a gateway in service does after every
 * pause. This starts the simulator and `--pairs` pairs of gateways (SQLite, `npm start`'s flags) that differ in one
 * setting: one collects after `--reduce-after-ms` without a request (checked every 0.5 s), the other never
 * (`MEMORY_REDUCE_AFTER_MS=0`). Each is warmed as `npm run bench` warms it (c=64, the large bodies, burst, paced and
 * single streams); then nothing is sent for `--quiet-s`, and `--rounds` rounds of `--streams` burst streams (c=16) go to
 * each gateway in turn: the serving process's CPU a stream (all threads, and the main thread's) and the TTFB p50, by
 * round. Its RSS is read before and after the quiet spell. A table, and JSON in bench/results/quiet.json.
 *
 * The gateways warmed first were idle while the others warmed (~20 s each), long enough for their upstream connections
 * to close (a "never" gateway's first round shows it). A collecting gateway collects once, in the quiet spell or
 * before it, as long as the other gateways' rounds (~1 s each with the defaults) take less than `--reduce-after-ms`.
 * Loopback only, bounded by its counts.
 */
import fs from 'node:fs';
import path from 'node:path';
import { ROOT, arg, benchGateway, children, formatTable, log, median, rssOf, startTs, streaming, warmTarget, withCpu } from './lib.js';

const PAIRS = Number(arg('--pairs') ?? 2);
const QUIET_S = Number(arg('--quiet-s') ?? 8);
const REDUCE_AFTER_MS = Number(arg('--reduce-after-ms') ?? 5000);
const ROUNDS = Number(arg('--rounds') ?? 5);
const STREAMS = Number(arg('--streams') ?? 400);
const TRIM_INTERVAL_MS = 500;
for (const [name, v] of [['--pairs', PAIRS], ['--quiet-s', QUIET_S], ['--reduce-after-ms', REDUCE_AFTER_MS], ['--rounds', ROUNDS], ['--streams', STREAMS]] as const) {
  if (!Number.isInteger(v) || v < 1) throw new Error(`${name} takes a positive integer`);
}
if (QUIET_S * 1000 < REDUCE_AFTER_MS + 2 * TRIM_INTERVAL_MS) throw new Error('--quiet-s must outlast --reduce-after-ms by a second or more');

async function main() {
  try {
    const sim = await startTs('scripts/simulator.ts', ['--port', '0'], {}, /(http:\/\/127\.0\.0\.1:\d+)/);
    const simUrl = sim.match[1];
    const gateways: Array<Awaited<ReturnType<typeof benchGateway>> & { label: string; collects: boolean }> = [];
    for (let i = 0; i < PAIRS * 2; i++) {
      const collects = i % 2 === 0;
      const label = `${collects ? 'collects' : 'never'} ${Math.floor(i / 2) + 1}`;
      const env: Record<string, string> = collects
        ? { MEMORY_REDUCE_AFTER_MS: String(REDUCE_AFTER_MS), MEMORY_TRIM_INTERVAL_MS: String(TRIM_INTERVAL_MS) }
        : { MEMORY_REDUCE_AFTER_MS: '0' };
      gateways.push({ label, collects, ...(await benchGateway(label, env, simUrl)) });
    }
    for (const g of gateways) {
      log(`${g.label}: warming up as npm run bench does`);
      await warmTarget(g.url, g.key, false);
    }
    const before = gateways.map((g) => rssOf(g.pid));
    log(`${QUIET_S} s without traffic`);
    await new Promise((r) => setTimeout(r, QUIET_S * 1000));
    const after = gateways.map((g) => rssOf(g.pid));
    const rounds = gateways.map(() => [] as Array<{ cpuUs: number; cpuMainUs: number; ttfbP50: number }>);
    for (let r = 0; r < ROUNDS; r++) {
      for (const [i, g] of gateways.entries()) {
        const m = await withCpu(g.pid, () => streaming(g.url, g.key, 16, STREAMS), (x) => x.streams);
        rounds[i].push({ cpuUs: m.cpuUs, cpuMainUs: m.cpuMainUs, ttfbP50: m.ttfbP50 });
        log(`round ${r + 1}/${ROUNDS} ${g.label}: ${m.cpuUs} µs CPU a stream`);
      }
    }
    const mb = (b: number) => (b / 2 ** 20).toFixed(1);
    const rows: string[][] = [['gateway', 'RSS before / after the quiet spell', 'CPU µs a burst stream, by round (main thread)', 'TTFB p50 ms, by round']];
    for (const [i, g] of gateways.entries()) {
      rows.push([g.label, `${mb(before[i])} / ${mb(after[i])} MB`, rounds[i].map((x) => `${x.cpuUs} (${x.cpuMainUs})`).join(' '), rounds[i].map((x) => x.ttfbP50).join(' ')]);
    }
    console.log(formatTable(rows));
    const extra = (pick: (i: number) => boolean, r: number) => median(gateways.map((_, i) => i).filter(pick).map((i) => rounds[i][r].cpuUs));
    const diff = Array.from({ length: ROUNDS }, (_, r) => Math.round(extra((i) => gateways[i].collects, r) - extra((i) => !gateways[i].collects, r)));
    const cpuS = diff.reduce((a, d) => a + d, 0) * STREAMS / 1e6;
    console.log(`\ncollecting minus never, median CPU µs a stream by round: ${diff.join(' ')} (~${cpuS.toFixed(2)} s of CPU over ${ROUNDS * STREAMS} streams)`);
    console.log(`(${STREAMS} burst streams at c=16 per round and gateway, the gateways in turn; a collection after ${REDUCE_AFTER_MS} ms without a request, ${QUIET_S} s quiet)`);
    const json = {
      date: new Date().toISOString(), pairs: PAIRS, quietS: QUIET_S, reduceAfterMs: REDUCE_AFTER_MS, rounds: ROUNDS, streams: STREAMS, extraCpuUsByRound: diff, extraCpuS: cpuS,
      gateways: gateways.map((g, i) => ({ label: g.label, collects: g.collects, rssBeforeMb: Number(mb(before[i])), rssAfterMb: Number(mb(after[i])), rounds: rounds[i] })),
    };
    fs.mkdirSync(path.join(ROOT, 'bench/results'), { recursive: true });
    fs.writeFileSync(path.join(ROOT, 'bench/results/quiet.json'), `${JSON.stringify(json, null, 2)}\n`);
    log('wrote bench/results/quiet.json');
  } finally {
    for (const c of children) c.kill('SIGTERM');
  }
}

main().then(() => process.exit(0), (err) => {
  console.error(err);
  process.exit(1);
});
