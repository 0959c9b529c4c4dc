/**
 * npm run bench:timeline: where the time of one stream goes on its way to the first byte, in the gateway and in the
 * bare proxy, step by step. Both run with bench/timeline-marks.mjs preloaded (timestamps from Node's and undici's
 * diagnostics channels, nothing changed in the code measured); streams are sent one at a time (the burst model at
 * concurrency 1, as the benchmark's "one at a time" figure), in alternating rounds of the gateway and the bare
 * proxy on one simulator after a warm-up, and each step is given as quartiles over all the rounds' streams:
 *
 *   before the call   arrived -> called    the request's own work up to the upstream call (the bare proxy: its body)
 *   undici's turn     called -> sent       undici writes a reused socket's request from the check phase
 *   the upstream      sent -> answered     the simulator's answer (and whatever shares the cores meanwhile)
 *   after the answer  answered -> wrote    from the upstream's head to the response's first write to the client
 *   inside            arrived -> wrote     all of the above
 *
 * The client's own TTFB (the benchmark's figure) adds the hops between the processes. One process's marks are
 * steadier than latencies measured across three processes on two cores: a change of a few tens of µs to the path
 * shows here when `npm run bench:ab` cannot see it (docs/PERFORMANCE.md, sessions 20 and 21). With `--base <rev>`
 * (and `--head <rev>`, default the working tree) two builds are timed side by side, as bench:ab builds them, each a
 * fresh process per round. Flags: --n (streams per round, default 400), --rounds (default 3), --warmup (seconds of
 * streams at concurrency 16 on each process first, default 12), --postgres.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ROOT, STREAM_MODEL, benchGateway, build, children, formatTable, log, median, pct, round, startTs, streaming, type Build } from './lib.js';

const STEPS = ['arrived', 'called', 'sent', 'answered', 'wrote'] as const;
type Step = (typeof STEPS)[number];
export type Mark = [string, number];

/**
 * The streams of a recording sent one at a time: each `arrived` starts one, and it counts when the other steps
 * follow in order before the next arrival. Anything else (a mark of another request, a step missing) leaves that
 * stream out; `dropped` counts them.
 */
export function streamsOf(marks: Mark[]): { streams: Array<Record<Step, number>>; dropped: number } {
  const streams: Array<Record<Step, number>> = [];
  let dropped = 0;
  let cur: Partial<Record<Step, number>> | undefined;
  let want = 0;
  const close = () => {
    if (!cur) return;
    if (want === STEPS.length) streams.push(cur as Record<Step, number>);
    else dropped++;
  };
  for (const [name, t] of marks) {
    if (name === 'arrived') {
      close();
      cur = { arrived: t };
      want = 1;
    } else if (cur && want < STEPS.length && name === STEPS[want]) {
      cur[STEPS[want++]] = t;
    } else if (cur) {
      want = -Infinity; // out of order: this stream is not counted
    }
  }
  close();
  return { streams, dropped };
}

const PHASES: Array<[string, Step, Step]> = [
  ['before the call', 'arrived', 'called'],
  ["undici's turn", 'called', 'sent'],
  ['the upstream', 'sent', 'answered'],
  ['after the answer', 'answered', 'wrote'],
  ['inside (all of it)', 'arrived', 'wrote'],
];

/** Quartiles (µs) of one phase over the streams. */
export function quartiles(streams: Array<Record<Step, number>>, from: Step, to: Step): { p25: number; p50: number; p75: number } {
  const d = streams.map((s) => s[to] - s[from]).sort((a, b) => a - b);
  return { p25: pct(d, 25), p50: pct(d, 50), p75: pct(d, 75) };
}

const arg = (name: string) => { const i = process.argv.indexOf(name); return i > 0 ? process.argv[i + 1] : undefined; };

interface Target {
  label: string;
  /** A gateway build (started fresh each round), or undefined for the bare proxy (one process throughout). */
  build?: Build;
  streams: Array<Record<Step, number>>;
  ttfb: number[];
  dropped: number;
}

async function main() {
  const N = Number(arg('--n') ?? 400);
  const ROUNDS = Number(arg('--rounds') ?? 3);
  const WARMUP = Number(arg('--warmup') ?? 12);
  const env: Record<string, string> = process.argv.includes('--postgres') ? { DATABASE_URL: process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test' } : {};
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-timeline-'));
  const preload = path.join(ROOT, 'bench/timeline-marks.mjs');
  const builds: Build[] = [];
  try {
    const head = build(arg('--head'), 'timeline');
    builds.push(head);
    const base = arg('--base') === undefined ? undefined : build(arg('--base'), 'timeline');
    if (base) builds.unshift(base);
    const targets: Target[] = [
      ...builds.map((b) => ({ label: base ? b.label : 'gateway', build: b, streams: [], ttfb: [], dropped: 0 })),
      { label: 'bare proxy', streams: [], ttfb: [], dropped: 0 },
    ];

    const sim = await startTs('scripts/simulator.ts', ['--port', '0'], {}, /(http:\/\/127\.0\.0\.1:\d+)/);
    const simUrl = sim.match[1];
    const out = path.join(dir, 'marks.json');
    const bare = await startTs('bench/bare-proxy.ts', [simUrl, '0'], { NODE_OPTIONS: `--import ${preload}`, MARKS_OUT: out }, /(http:\/\/127\.0\.0\.1:\d+)/);
    const warm = async (url: string, key: string) => {
      const until = Date.now() + WARMUP * 1000;
      while (Date.now() < until) await streaming(url, key, 16, 400, STREAM_MODEL);
    };
    log(`warming up the bare proxy for ~${WARMUP} s`);
    await warm(bare.match[1], 'unused');

    for (let r = 1; r <= ROUNDS; r++) {
      // the gateways in alternating order, each a fresh process warmed up (as bench:ab: a process can run slow for life)
      const order = r % 2 || targets.length === 2 ? targets : [targets[1], targets[0], targets[2]];
      for (const t of order) {
        let url = bare.match[1];
        let key = 'unused';
        let pid = bare.child.pid!;
        let stop: (() => Promise<void>) | undefined;
        if (t.build) {
          const gw = await benchGateway(t.label, { ...env, MARKS_OUT: out }, simUrl, ['--import', preload], t.build.file, t.build.root);
          ({ url, key, pid } = gw);
          stop = () => new Promise<void>((resolve) => { gw.child.once('exit', () => resolve()); gw.stop(); });
          log(`warming up ${t.label} for ~${WARMUP} s`);
          await warm(url, key);
        }
        fs.rmSync(out, { force: true });
        process.kill(pid, 'SIGUSR2');
        const res = await streaming(url, key, 1, N, STREAM_MODEL);
        process.kill(pid, 'SIGUSR2');
        for (let i = 0; !fs.existsSync(out); i++) {
          if (i > 100) throw new Error(`${t.label} wrote no marks`);
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
        const { streams, dropped } = streamsOf(JSON.parse(fs.readFileSync(out, 'utf8')) as Mark[]);
        t.streams.push(...streams);
        t.dropped += dropped;
        t.ttfb.push(res.ttfbP50);
        log(`round ${r}/${ROUNDS} ${t.label}: TTFB p50 ${res.ttfbP50} ms, inside p50 ${quartiles(streams, 'arrived', 'wrote').p50} µs, errors ${res.errors}`);
        await stop?.();
      }
    }
    bare.child.kill('SIGTERM');
    sim.child.kill('SIGTERM');

    // the difference column: head − base with --base, else gateway − bare proxy
    const [a, b] = base ? [targets[1], targets[0]] : [targets[0], targets[1]];
    const cell = (q: { p25: number; p50: number; p75: number }) => `${q.p50} (${q.p25}–${q.p75})`;
    const rows = [['step (µs: p50 (p25–p75))', ...targets.map((t) => t.label), `${a.label} − ${b.label}, p50`]];
    for (const [name, from, to] of PHASES) {
      const qs = targets.map((t) => quartiles(t.streams, from, to));
      rows.push([name, ...qs.map(cell), String(qs[targets.indexOf(a)].p50 - qs[targets.indexOf(b)].p50)]);
    }
    rows.push(['client TTFB p50, median of rounds (ms)', ...targets.map((t) => String(round(median(t.ttfb), 3))), String(round(median(a.ttfb) - median(b.ttfb), 3))]);
    console.log(formatTable(rows));
    console.log(`\n(streams one at a time, ${N} per round, ${ROUNDS} rounds, alternating; counted: ${targets.map((t) => `${t.label} ${t.streams.length}`).join(', ')}; left out as incomplete: ${targets.map((t) => t.dropped).join(', ')})`);
  } finally {
    for (const b of builds) b.cleanup?.();
    fs.rmSync(dir, { recursive: true, force: true });
  }
  process.exit(0);
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(ROOT, 'bench/timeline.ts')) {
  main().catch((err) => {
    console.error(err);
    for (const c of children) c.kill('SIGTERM');
    process.exit(1);
  });
}
