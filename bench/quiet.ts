/**
 * What the gateway's quiet-spell collection costs the traffic that comes back after it, and how often it comes:
 *
 *   npm run bench:quiet -- [--pairs 2] [--quiet-s 8] [--reduce-after-ms 5000] [--rounds 5] [--streams 400]
 *                          [--versus never|fixed] [--pauses 1] [--probe-ms 0]
 *
 * After its quiet spell (`MEMORY_REDUCE_AFTER_MS` without a request, longer where the traffic keeps coming back soon
 * after a collection, up to `MEMORY_REDUCE_MAX_MS`) the gateway asks V8 for a memory-reducing collection
 * (src/memory.ts), which gives the idle memory back and throws away optimised code whose objects no live object
 * holds: the request path's, compiled again once traffic returns (docs/PERFORMANCE.md, sessions 38, 57 and 58). The
 * benchmark never meets it (no target is idle that long between its measures), a gateway in service does after a
 * pause. This starts the simulator and `--pairs` pairs of gateways (SQLite, `npm start`'s flags) that differ in one
 * setting: the first collects after `--reduce-after-ms` without a request (checked every 0.5 s) with its spell free to
 * grow (the default `MEMORY_REDUCE_MAX_MS`); the second never collects (`--versus never`: `MEMORY_REDUCE_AFTER_MS=0`) or
 * collects after every pause of the spell (`--versus fixed`: `MEMORY_REDUCE_MAX_MS` equal to it, as every gateway did
 * before session 58). Each is warmed as `npm run bench` warms it (c=64, the large bodies, burst, paced and single
 * streams); then, `--pauses` times, nothing but monitoring probes is sent for `--quiet-s` (`GET /health` to each gateway
 * every `--probe-ms`, as a load balancer polls; 0: none), and `--rounds` rounds of `--streams` burst streams (c=16) go
 * to each gateway in turn: the serving process's CPU a stream (all threads, and the main thread's) and the TTFB p50, by
 * round. Its RSS and its count of collections (`gateway_memory_reductions_total`) are read before and after each
 * quiet spell, and its spell (`gateway_memory_quiet_spell_seconds`) before it. A table per pause, and JSON in bench/results/quiet.json.
 *
 * The gateways warmed first were idle while the others warmed (~20 s each), long enough for their upstream connections
 * to close (a "never" gateway's first round shows it) and for a first collection before the first quiet spell. A
 * collecting gateway collects at most once a pause as long as the other gateways' rounds (~1 s each with the
 * defaults) take less than `--reduce-after-ms`; a growing spell can still run out in a later pause, as the other
 * gateways' rounds lengthen it by a few seconds.
 * Loopback only, bounded by its counts.
 */
import fs from 'node:fs';
import path from 'node:path';
import { request } from 'undici';
import { ROOT, arg, benchGateway, children, dispatcher, formatTable, log, median, rssOf, startTs, streaming, warmTarget, withCpu } from './lib.js';

const PAIRS = Number(arg('--pairs') ?? 2);
const QUIET_S = Number(arg('--quiet-s') ?? 8);
const REDUCE_AFTER_MS = Number(arg('--reduce-after-ms') ?? 5000);
const ROUNDS = Number(arg('--rounds') ?? 5);
const STREAMS = Number(arg('--streams') ?? 400);
const PAUSES = Number(arg('--pauses') ?? 1);
const PROBE_MS = Number(arg('--probe-ms') ?? 0);
const VERSUS = arg('--versus') ?? 'never';
const TRIM_INTERVAL_MS = 500;
for (const [name, v] of [['--pairs', PAIRS], ['--quiet-s', QUIET_S], ['--reduce-after-ms', REDUCE_AFTER_MS], ['--rounds', ROUNDS], ['--streams', STREAMS], ['--pauses', PAUSES]] as const) {
  if (!Number.isInteger(v) || v < 1) throw new Error(`${name} takes a positive integer`);
}
if (!Number.isInteger(PROBE_MS) || PROBE_MS < 0) throw new Error('--probe-ms takes 0 or a positive integer');
if (VERSUS !== 'never' && VERSUS !== 'fixed') throw new Error('--versus takes never or fixed');
if (QUIET_S * 1000 < REDUCE_AFTER_MS + 2 * TRIM_INTERVAL_MS) throw new Error('--quiet-s must outlast --reduce-after-ms by a second or more');

/** The gateway's count of quiet-spell collections and its spell now, from its /metrics (a probe: not traffic to it). */
async function memoryMetrics(url: string): Promise<{ collections: number; spellS: number }> {
  const r = await request(`${url}/metrics`, { dispatcher });
  const text = await r.body.text();
  const read = (name: string) => Number(new RegExp(`^${name} ([\\d.]+)`, 'm').exec(text)?.[1] ?? NaN);
  return { collections: read('gateway_memory_reductions_total'), spellS: read('gateway_memory_quiet_spell_seconds') };
}

/** `ms` of quiet, with `GET /health` to every gateway each `PROBE_MS` when that is set. */
async function quietSpell(urls: string[], ms: number): Promise<void> {
  if (PROBE_MS === 0) return new Promise((r) => setTimeout(r, ms));
  const until = Date.now() + ms;
  while (Date.now() < until) {
    await Promise.all(urls.map((u) => request(`${u}/health`, { dispatcher }).then((r) => r.body.text())));
    await new Promise((r) => setTimeout(r, Math.min(PROBE_MS, Math.max(0, until - Date.now()))));
  }
}

async function main() {
  try {
    const sim = await startTs('scripts/simulator.ts', ['--port', '0'], {}, /(http:\/\/127\.0\.0\.1:\d+)/);
    const simUrl = sim.match[1];
    const gateways: Array<Awaited<ReturnType<typeof benchGateway>> & { label: string; collects: boolean }> = [];
    const collecting = { MEMORY_REDUCE_AFTER_MS: String(REDUCE_AFTER_MS), MEMORY_TRIM_INTERVAL_MS: String(TRIM_INTERVAL_MS) };
    for (let i = 0; i < PAIRS * 2; i++) {
      const collects = i % 2 === 0;
      const label = `${collects ? 'spell grows' : VERSUS === 'never' ? 'never' : 'spell fixed'} ${Math.floor(i / 2) + 1}`;
      const env: Record<string, string> = collects ? collecting
        : VERSUS === 'never' ? { MEMORY_REDUCE_AFTER_MS: '0' } : { ...collecting, MEMORY_REDUCE_MAX_MS: String(REDUCE_AFTER_MS) };
      gateways.push({ label, collects, ...(await benchGateway(label, env, simUrl)) });
    }
    for (const g of gateways) {
      log(`${g.label}: warming up as npm run bench does`);
      await warmTarget(g.url, g.key, false);
    }
    const mb = (b: number) => (b / 2 ** 20).toFixed(1);
    const pauses = [];
    for (let p = 0; p < PAUSES; p++) {
      const before = gateways.map((g) => rssOf(g.pid));
      const metricsBefore = await Promise.all(gateways.map((g) => memoryMetrics(g.url)));
      log(`pause ${p + 1}/${PAUSES}: ${QUIET_S} s without traffic${PROBE_MS ? `, GET /health every ${PROBE_MS} ms` : ''}`);
      await quietSpell(gateways.map((g) => g.url), QUIET_S * 1000);
      const after = gateways.map((g) => rssOf(g.pid));
      const metricsAfter = await Promise.all(gateways.map((g) => memoryMetrics(g.url)));
      const rounds = gateways.map(() => [] as Array<{ cpuUs: number; cpuMainUs: number; ttfbP50: number }>);
      for (let r = 0; r < ROUNDS; r++) {
        for (const [i, g] of gateways.entries()) {
          const m = await withCpu(g.pid, () => streaming(g.url, g.key, 16, STREAMS), (x) => x.streams);
          rounds[i].push({ cpuUs: m.cpuUs, cpuMainUs: m.cpuMainUs, ttfbP50: m.ttfbP50 });
          log(`pause ${p + 1}, round ${r + 1}/${ROUNDS} ${g.label}: ${m.cpuUs} µs CPU a stream`);
        }
      }
      const rows: string[][] = [['gateway', 'RSS before / after the quiet spell', 'quiet spell before it', 'collections in the quiet spell (so far)', 'CPU µs a burst stream, by round (main thread)', 'TTFB p50 ms, by round']];
      for (const [i, g] of gateways.entries()) {
        rows.push([g.label, `${mb(before[i])} / ${mb(after[i])} MB`, `${metricsBefore[i].spellS} s`, `${metricsAfter[i].collections - metricsBefore[i].collections} (${metricsAfter[i].collections})`, rounds[i].map((x) => `${x.cpuUs} (${x.cpuMainUs})`).join(' '), rounds[i].map((x) => x.ttfbP50).join(' ')]);
      }
      console.log(`\npause ${p + 1} of ${PAUSES}`);
      console.log(formatTable(rows));
      const extra = (pick: (i: number) => boolean, r: number) => median(gateways.map((_, i) => i).filter(pick).map((i) => rounds[i][r].cpuUs));
      const diff = Array.from({ length: ROUNDS }, (_, r) => Math.round(extra((i) => gateways[i].collects, r) - extra((i) => !gateways[i].collects, r)));
      const cpuS = diff.reduce((a, d) => a + d, 0) * STREAMS / 1e6;
      console.log(`spell grows minus ${VERSUS === 'never' ? 'never' : 'spell fixed'}, median CPU µs a stream by round: ${diff.join(' ')} (~${cpuS.toFixed(2)} s of CPU over ${ROUNDS * STREAMS} streams)`);
      pauses.push({
        extraCpuUsByRound: diff, extraCpuS: cpuS,
        gateways: gateways.map((g, i) => ({ label: g.label, rssBeforeMb: Number(mb(before[i])), rssAfterMb: Number(mb(after[i])), spellBeforeS: metricsBefore[i].spellS, collectionsBefore: metricsBefore[i].collections, collections: metricsAfter[i].collections, rounds: rounds[i] })),
      });
    }
    console.log(`\n(${STREAMS} burst streams at c=16 per round and gateway, the gateways in turn; a collection after ${REDUCE_AFTER_MS} ms without a request, ${QUIET_S} s quiet${PROBE_MS ? ` with GET /health every ${PROBE_MS} ms` : ''})`);
    const json = {
      date: new Date().toISOString(), pairs: PAIRS, versus: VERSUS, quietS: QUIET_S, reduceAfterMs: REDUCE_AFTER_MS, probeMs: PROBE_MS, rounds: ROUNDS, streams: STREAMS,
      gateways: gateways.map((g) => ({ label: g.label, collects: g.collects })), pauses,
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
