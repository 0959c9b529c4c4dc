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
 *   after the answer  answered -> wrote    from the upstream's head to the response's first bytes leaving for the client
 *   inside            arrived -> wrote     all of the above
 *
 * The client's own TTFB (the benchmark's figure) adds the hops between the processes. One process's marks are
 * steadier than latencies measured across three processes on two cores: a change of a few tens of µs to the path
 * shows here when `npm run bench:ab` cannot see it (docs/PERFORMANCE.md, sessions 20 and 21). With `--base <rev>`
 * (and `--head <rev>`, default the working tree) two builds are timed side by side, as bench:ab builds them, each a
 * fresh process per round. Each measure is led in by an uncounted quarter of its streams, as `npm run bench`'s are.
 * Flags: --n (streams per round, default 400), --rounds (default 3), --warmup (seconds of streams at concurrency 16
 * on each process first, default 12), --postgres.
 *
 * `--together`: the benchmark's "16 paced streams started together" instead (320 per round unless --n), each stream
 * tagged with a sequence number (a header, and in its message, which the body sent upstream carries) so that the
 * marks of streams in flight at once are told apart, and timed from the client's side as well, on the same
 * monotonic clock: the steps above, plus the client to the process (sent by the client -> arrived: the wait before
 * the process parses the request, e.g. behind other work in its turn), the process to the client (the first write
 * -> the client's first byte), and the client's TTFB. Rounds straight to the simulator give the direct TTFB, so
 * the table shows what each adds, as the benchmark does. The simulator is preloaded too, and each upstream request
 * carries its stream's number in a header, so the upstream step splits into the way to the simulator, the
 * simulator's own work and the way back. A second table gives the waves (requests of a round made less than 50 ms
 * apart, wavesOf): a round's first, whose 16 requests leave at once, its 2nd to 5th and the later ones, with how far
 * apart each wave's requests were made and their streams' TTFB, for each target: the streams drift apart from wave to
 * wave (session 50). `--dump <file>`: every stream's marks as JSON, for a closer look.
 * `--spread`: the same for the benchmark's paced streams with their starts spread over one stream's length (worker i
 * starts i/16 of 200 ms late; each worker's next request follows its last, as in the benchmark).
 * `--burst`: the same for the benchmark's burst streams (the simulator writing its 20 chunks at once, 16 at a time,
 * 400 per round unless --n): the steps of the streams that keep the machine's two cores busy.
 * `--pause-ms <ms>` (one at a time only): the client waits that long (a timer) before each request instead of sending
 * it as the last stream ends, as a client that is not a load generator does: each step is then taken after a quiet
 * spell (session 68: 1 ms pauses put the gateway 0.12 ms behind the bare proxy's TTFB, back to back 0.11).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { request } from 'undici';
import { PACED_MODEL, PACED_STREAM_MS, ROOT, STREAM_MODEL, arg, benchGateway, build, children, dispatcher, formatTable, isEntryPoint, log, median, pct, round, spreadStart, startBareProxy, startTs, streaming, type Build } from './lib.js';

const STEPS = ['arrived', 'called', 'sent', 'answered', 'wrote'] as const;
type Step = (typeof STEPS)[number];
export type Mark = [string, number] | [string, number, number | undefined];

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

/** A tagged stream from the client's side: when its request was made and its first byte came (hrtime µs). */
export interface ClientTimes { sent: number; first: number }
/** `upArrived`, `upWrote`: the simulator's own marks of the upstream request (its arrival, its first write). */
const TRACE = ['client', 'arrived', 'called', 'sent', 'upArrived', 'upWrote', 'answered', 'wrote', 'first'] as const;
type TraceStep = (typeof TRACE)[number];

/**
 * The streams of a tagged recording (`--together`): each sequence number's marks, with the client's times, in
 * order. A stream counts when it has every step once, in order; `dropped` counts the others (e.g. a request that
 * was in flight when the recording started or stopped).
 */
export function tracesOf(marks: Mark[], client: Map<number, ClientTimes>, steps: readonly TraceStep[] = TRACE): { streams: Array<Record<TraceStep, number>>; dropped: number } {
  const bySeq = new Map<number, Partial<Record<TraceStep, number>> & { bad?: boolean }>();
  for (const [name, t, seq] of marks) {
    if (seq === undefined || !Number.isFinite(seq)) continue;
    let s = bySeq.get(seq);
    if (!s) bySeq.set(seq, (s = {}));
    const step = name as TraceStep;
    if (s[step] !== undefined) s.bad = true;
    s[step] = t;
  }
  const streams: Array<Record<TraceStep, number>> = [];
  let dropped = 0;
  for (const [seq, s] of bySeq) {
    const c = client.get(seq);
    if (c) {
      s.client = c.sent;
      s.first = c.first;
    }
    const ok = !s.bad && steps.every((k, i) => s[k] !== undefined && (i === 0 || s[k]! >= s[steps[i - 1]]!));
    if (ok) streams.push(s as Record<TraceStep, number>);
    else dropped++;
  }
  return { streams, dropped };
}

/**
 * A wave of the paced streams (`--together`): requests of one round made one after another with less than `gapUs`
 * between two of them. `position`: its place in the round (0: the round's first, whose 16 requests are made at
 * once); `span`: from its first request to its last (µs); `ttfb`: its streams' client TTFBs (µs).
 */
export interface Wave { position: number; span: number; ttfb: number[] }

/** A paced stream lasts ~210 ms, so a worker's next request comes ~210 ms after its last: a gap this long ends a wave. */
export const WAVE_GAP_US = 50_000;

/**
 * One round's waves, from the client's times: its requests in the order they were made, a new wave wherever
 * `gapUs` passed without one. The benchmark starts the 16 workers together and each worker's next request follows its
 * last stream, so the waves are "16 started together" only while the streams' lengths agree: each stream ends when its
 * last chunk has come, and the starts drift apart by those differences, wave after wave (docs/PERFORMANCE.md,
 * session 50).
 */
export function wavesOf(client: Map<number, ClientTimes>, gapUs = WAVE_GAP_US): Wave[] {
  const times = [...client.values()].sort((a, b) => a.sent - b.sent);
  const waves: Wave[] = [];
  let cur: ClientTimes[] = [];
  const close = () => {
    if (cur.length) waves.push({ position: waves.length, span: cur[cur.length - 1].sent - cur[0].sent, ttfb: cur.map((c) => c.first - c.sent) });
    cur = [];
  };
  for (const c of times) {
    if (cur.length && c.sent - cur[cur.length - 1].sent > gapUs) close();
    cur.push(c);
  }
  close();
  return waves;
}

/** The waves grouped by their place in the round: how many, their spans' median and their streams' TTFB median (µs). */
export function waveGroups(waves: Wave[]): Array<{ group: string; waves: number; spanP50: number; ttfbP50: number }> {
  const groups: Array<[string, (p: number) => boolean]> = [
    ["a round's first wave", (p) => p === 0],
    ['its 2nd to 5th', (p) => p >= 1 && p <= 4],
    ['its 6th on', (p) => p >= 5],
  ];
  return groups.map(([group, has]) => {
    const ws = waves.filter((w) => has(w.position));
    const spans = ws.map((w) => w.span).sort((a, b) => a - b);
    const ttfb = ws.flatMap((w) => w.ttfb).sort((a, b) => a - b);
    return { group, waves: ws.length, spanP50: ws.length ? pct(spans, 50) : NaN, ttfbP50: ws.length ? pct(ttfb, 50) : NaN };
  });
}

const TOGETHER_PHASES: Array<[string, TraceStep, TraceStep]> = [
  ['the client to the process', 'client', 'arrived'],
  ['before the call', 'arrived', 'called'],
  ["undici's turn", 'called', 'sent'],
  ['the upstream, in all', 'sent', 'answered'],
  ['  to the simulator', 'sent', 'upArrived'],
  ['  the simulator', 'upArrived', 'upWrote'],
  ['  back from it', 'upWrote', 'answered'],
  ['after the answer', 'answered', 'wrote'],
  ['the process to the client', 'wrote', 'first'],
  ['inside the process (arrived → wrote)', 'arrived', 'wrote'],
  ['the client TTFB', 'client', 'first'],
];
/** The simulator's marks of a proxy's upstream requests, named as steps of the proxy's trace. */
const asUpstream = (marks: Mark[]): Mark[] =>
  marks.map(([name, t, seq]) => [name === 'arrived' ? 'upArrived' : name === 'wrote' ? 'upWrote' : `sim ${name}`, t, seq]);

/**
 * The benchmark's paced streams started together (`streaming(url, key, 16, n, PACED_MODEL)`; with `model`
 * STREAM_MODEL, its burst streams), each request tagged
 * with its sequence number (header `x-bench-seq`, and `bench #<seq>` in its message), timed by the client on
 * hrtime's clock (µs): when the request was made and when its first body byte came.
 */
async function taggedStreaming(url: string, key: string, concurrency: number, total: number, firstSeq: number, model = PACED_MODEL, spreadMs = 0) {
  const client = new Map<number, ClientTimes>();
  const ttfb: number[] = [];
  let errors = 0;
  let next = 0;
  const us = () => Number(process.hrtime.bigint() / 1000n);
  async function worker(i: number) {
    await spreadStart(i, concurrency, spreadMs); // `--spread`: as the benchmark's spread measure
    while (next < total) {
      const seq = firstSeq + next++;
      const body = JSON.stringify({ model, stream: true, max_tokens: 64, messages: [{ role: 'user', content: `Say hello to bench #${seq}.` }] });
      const sent = us();
      const res = await request(`${url}/v1/chat/completions`, { method: 'POST', dispatcher, headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, 'x-bench-seq': String(seq) }, body });
      let first = 0;
      let text = '';
      for await (const chunk of res.body) {
        if (!first) first = us();
        text += chunk;
      }
      if (res.statusCode !== 200 || !text.includes('[DONE]')) errors++;
      else {
        client.set(seq, { sent, first });
        ttfb.push((first - sent) / 1000);
      }
    }
  }
  await Promise.all(Array.from({ length: concurrency }, (_, i) => worker(i)));
  ttfb.sort((a, b) => a - b);
  return { client, ttfbP50: round(pct(ttfb, 50), 3), errors };
}

const PHASES: Array<[string, Step, Step]> = [
  ['before the call', 'arrived', 'called'],
  ["undici's turn", 'called', 'sent'],
  ['the upstream', 'sent', 'answered'],
  ['after the answer', 'answered', 'wrote'],
  ['inside (all of it)', 'arrived', 'wrote'],
];

/** Quartiles (µs) of one phase over the streams. */
export function quartiles<K extends string>(streams: Array<Record<K, number>>, from: K, to: K): { p25: number; p50: number; p75: number } {
  const d = streams.map((s) => s[to] - s[from]).sort((a, b) => a - b);
  return { p25: pct(d, 25), p50: pct(d, 50), p75: pct(d, 75) };
}


interface Target {
  label: string;
  /** A gateway build (started fresh each round), or undefined for the bare proxy (one process throughout). */
  build?: Build;
  streams: Array<Record<Step, number>>;
  /** `--together`: the tagged streams. */
  traces: Array<Record<TraceStep, number>>;
  ttfb: number[];
  dropped: number;
  /** `--together`: each round's waves (wavesOf). */
  waves: Wave[];
}

async function main() {
  const BURST = process.argv.includes('--burst');
  const SPREAD = process.argv.includes('--spread');
  const TOGETHER = BURST || SPREAD || process.argv.includes('--together');
  const SPREAD_MS = SPREAD ? PACED_STREAM_MS : 0;
  const MODEL = BURST ? STREAM_MODEL : PACED_MODEL;
  const N = Number(arg('--n') ?? (TOGETHER && !BURST ? 320 : 400));
  const ROUNDS = Number(arg('--rounds') ?? 3);
  const WARMUP = Number(arg('--warmup') ?? 12);
  const PAUSE_MS = Number(arg('--pause-ms') ?? 0);
  if (!(PAUSE_MS >= 0)) throw new Error(`--pause-ms wants a number of ms, not ${arg('--pause-ms')}`);
  if (PAUSE_MS > 0 && TOGETHER) throw new Error('--pause-ms is for streams one at a time');
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
      ...builds.map((b) => ({ label: base ? b.label : 'gateway', build: b, streams: [], traces: [], ttfb: [], dropped: 0, waves: [] })),
      { label: 'bare proxy', streams: [], traces: [], ttfb: [], dropped: 0, waves: [] },
    ];
    /** `--together`: the simulator straight, its own marks (preloaded) and the client's. */
    const direct: Target = { label: 'direct', streams: [], traces: [], ttfb: [], dropped: 0, waves: [] };
    let seq = 0;

    const out = path.join(dir, 'marks.json');
    const simOut = path.join(dir, 'sim-marks.json');
    const sim = await startTs('scripts/simulator.ts', ['--port', '0'],
      TOGETHER ? { NODE_OPTIONS: `--import ${preload}`, MARKS_OUT: simOut, TIMELINE_TAGGED: '1' } : {}, /(http:\/\/127\.0\.0\.1:\d+)/);
    const simUrl = sim.match[1];
    /** Runs `load` with the processes `[pid, marks file]` recording marks; their marks, in that order. */
    const recorded = async <T>(procs: Array<[number, string]>, label: string, load: () => Promise<T>): Promise<{ res: T; marks: Mark[][] }> => {
      for (const [pid, file] of procs) {
        fs.rmSync(file, { force: true });
        process.kill(pid, 'SIGUSR2');
      }
      const res = await load();
      for (const [pid] of procs) process.kill(pid, 'SIGUSR2');
      const marks: Mark[][] = [];
      for (const [, file] of procs) {
        for (let i = 0; !fs.existsSync(file); i++) {
          if (i > 100) throw new Error(`${label} wrote no marks`);
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
        marks.push(JSON.parse(fs.readFileSync(file, 'utf8')) as Mark[]);
      }
      return { res, marks };
    };
    const tag: Record<string, string> = TOGETHER ? { TIMELINE_TAGGED: '1' } : {};
    const bare = await startBareProxy(simUrl, { NODE_OPTIONS: `--import ${preload}`, MARKS_OUT: out, ...tag });
    const warm = async (url: string, key: string) => {
      const until = Date.now() + WARMUP * 1000;
      while (Date.now() < until) await streaming(url, key, 16, 400, STREAM_MODEL);
    };
    log(`warming up the bare proxy for ~${WARMUP} s`);
    await warm(bare.match[1], 'unused');

    for (let r = 1; r <= ROUNDS; r++) {
      // the gateways in alternating order, each a fresh process warmed up (as bench:ab: a process can run slow for life)
      const order = r % 2 || targets.length === 2 ? targets : [targets[1], targets[0], targets[2]];
      if (TOGETHER) {
        // the simulator straight (the benchmark's "direct"), what the proxies' TTFB adds to: at the round's start, not
        // between a gateway's warm-up and its measurement (placed there, the gateway measured after it was the slower
        // one in every round of two runs: docs/PERFORMANCE.md, session 22)
        const from = (seq += N) - N;
        const { res, marks } = await recorded([[sim.child.pid!, simOut]], 'the simulator', () => taggedStreaming(simUrl, 'sim-key', 16, N, from, MODEL, SPREAD_MS));
        const { streams, dropped } = tracesOf(marks[0], res.client, ['client', 'arrived', 'wrote', 'first']);
        direct.traces.push(...streams);
        direct.dropped += dropped;
        direct.ttfb.push(res.ttfbP50);
        direct.waves.push(...wavesOf(res.client));
        log(`round ${r}/${ROUNDS} direct: TTFB p50 ${res.ttfbP50} ms, inside p50 ${quartiles(streams, 'arrived', 'wrote').p50} µs, errors ${res.errors}`);
      }
      for (const t of order) {
        let url = bare.match[1];
        let key = 'unused';
        let pid = bare.child.pid!;
        let stop: (() => Promise<void>) | undefined;
        if (t.build) {
          const gw = await benchGateway(t.label, { ...env, MARKS_OUT: out, ...tag }, simUrl, ['--import', preload], t.build.file, t.build.root);
          ({ url, key, pid } = gw);
          stop = () => new Promise<void>((resolve) => { gw.child.once('exit', () => resolve()); gw.stop(); });
          log(`warming up ${t.label} for ~${WARMUP} s`);
          await warm(url, key);
        }
        // led in, uncounted, as bench/run.ts leads each measure in: the bare proxy sat idle while a gateway was started
        // and warmed (~15 s), long enough for V8's memory reducer, and until session 67 it was timed straight after
        const oneAtATime = (n: number) => streaming(url, key, 1, n, STREAM_MODEL, 0, undefined, PAUSE_MS);
        await (TOGETHER ? streaming(url, key, 16, Math.round(N / 4), MODEL, SPREAD_MS) : oneAtATime(Math.round(N / 4)));
        const from = (seq += N) - N;
        const { res, marks } = await recorded<{ ttfbP50: number; errors: number; client?: Map<number, ClientTimes> }>(
          TOGETHER ? [[pid, out], [sim.child.pid!, simOut]] : [[pid, out]], t.label,
          () => (TOGETHER ? taggedStreaming(url, key, 16, N, from, MODEL, SPREAD_MS) : oneAtATime(N)));
        let inside: number;
        if (res.client) {
          const { streams, dropped } = tracesOf([...marks[0], ...asUpstream(marks[1])], res.client);
          t.traces.push(...streams);
          t.dropped += dropped;
          t.waves.push(...wavesOf(res.client));
          inside = quartiles(streams, 'arrived', 'wrote').p50;
        } else {
          const { streams, dropped } = streamsOf(marks[0]);
          t.streams.push(...streams);
          t.dropped += dropped;
          inside = quartiles(streams, 'arrived', 'wrote').p50;
        }
        t.ttfb.push(res.ttfbP50);
        log(`round ${r}/${ROUNDS} ${t.label}: TTFB p50 ${res.ttfbP50} ms, inside p50 ${inside} µs, errors ${res.errors}`);
        await stop?.();
      }
    }
    bare.child.kill('SIGTERM');
    sim.child.kill('SIGTERM');

    // the difference column: head − base with --base, else gateway − bare proxy
    const [a, b] = base ? [targets[1], targets[0]] : [targets[0], targets[1]];
    const cell = (q: { p25: number; p50: number; p75: number }) => `${q.p50} (${q.p25}–${q.p75})`;
    const shown = TOGETHER ? [...targets, direct] : targets;
    const rows = [['step (µs: p50 (p25–p75))', ...shown.map((t) => t.label), `${a.label} − ${b.label}, p50`]];
    const phases = TOGETHER ? TOGETHER_PHASES : PHASES;
    for (const [name, from, to] of phases) {
      const qs = shown.map((t) => (TOGETHER ? quartiles(t.traces, from, to) : quartiles(t.streams, from as Step, to as Step)));
      // the simulator straight has no upstream call: its steps are the client's, its arrival and its first write
      rows.push([name, ...qs.map((q) => (Number.isNaN(q.p50) ? '–' : cell(q))), String(qs[shown.indexOf(a)].p50 - qs[shown.indexOf(b)].p50)]);
    }
    rows.push(['client TTFB p50, median of rounds (ms)', ...shown.map((t) => String(round(median(t.ttfb), 3))), String(round(median(a.ttfb) - median(b.ttfb), 3))]);
    if (TOGETHER) {
      const d = median(direct.ttfb);
      rows.push(['added TTFB over direct, medians (ms)', ...targets.map((t) => String(round(median(t.ttfb) - d, 3))), '–', '']);
    }
    console.log(formatTable(rows));
    if (TOGETHER && !BURST && !SPREAD) {
      // How together the 16 were: the round's first wave is; the later ones drift apart (wavesOf).
      const groups = shown.map((t) => waveGroups(t.waves));
      const wrows = [['waves (requests < 50 ms apart): count, span p50 ms, client TTFB p50 ms', ...shown.map((t) => t.label)]];
      for (let g = 0; g < groups[0].length; g++) {
        wrows.push([groups[0][g].group, ...groups.map((gs) => (gs[g].waves ? `${gs[g].waves}, ${round(gs[g].spanP50 / 1000, 1)}, ${round(gs[g].ttfbP50 / 1000, 3)}` : '0'))]);
      }
      console.log(`\n${formatTable(wrows)}`);
    }
    const dump = arg('--dump');
    // keyed by column, numbered: `--base HEAD --head HEAD` gives two columns one label
    if (dump) fs.writeFileSync(dump, JSON.stringify(Object.fromEntries(shown.map((t, i) => [`${i + 1} ${t.label}`, TOGETHER ? t.traces : t.streams]))));
    const counted = targets.map((t) => `${t.label} ${TOGETHER ? t.traces.length : t.streams.length}`).join(', ');
    const mode = BURST ? 'burst streams at concurrency 16, tagged' : SPREAD ? '16 paced streams with their starts spread, tagged' : TOGETHER ? '16 paced streams started together, tagged'
      : PAUSE_MS > 0 ? `streams one at a time, each after a ${PAUSE_MS} ms pause` : 'streams one at a time';
    console.log(`\n(${mode}, ${N} per round, ${ROUNDS} rounds, alternating; counted: ${counted}; left out as incomplete: ${targets.map((t) => t.dropped).join(', ')})`);
  } finally {
    for (const b of builds) b.cleanup?.();
    fs.rmSync(dir, { recursive: true, force: true });
  }
  process.exit(0);
}

if (isEntryPoint(import.meta.url)) {
  main().catch((err) => {
    console.error(err);
    for (const c of children) c.kill('SIGTERM');
    process.exit(1);
  });
}
