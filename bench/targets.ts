/**
 * What `npm run bench` says about a run besides its figures (since session 63): issue 9's targets, met or missed, from
 * the run's derived figures, the bare proxy held to the same added-time limits (`bareSummary`), and how much of the
 * machine's CPU time the hypervisor took while the run measured.
 *
 * The targets (issue 9, on the embedded default): added latency at c=1 p50 ≤ 1 ms and p99 ≤ 5 ms; c=64 throughput
 * ≥ 60 % of the bare proxy's with no errors; added time to first byte p50 ≤ 1 ms, read here as in the README's table
 * for each streamed measure (the burst and the paced streams at c=16, spread and together, and one stream at a time);
 * memory ≤ 150 MB RSS idle (after the load, and after the 2 MB vision requests where the run has them) and ≤ 40 KB
 * per open stream.
 *
 * Stolen time: on a virtual machine `/proc/stat`'s `steal` column counts the time a virtual CPU was ready to run while
 * the hypervisor ran something else. Runs of this benchmark on this project's VM differ by 2–3 × in every process's
 * CPU time a request (docs/PERFORMANCE.md); the share stolen during each round says whether a slow stretch was the
 * host taking the CPUs (a kernel without steal accounting reports 0). On this VM it does not: session 64 read 0.1 %
 * stolen on a stretch where every process took ~2.7 × its CPU a stream (bench/run.ts prints the machine's speed from
 * the simulator's CPU a stream beside it). Once it did: session 72's GC had 31.7 % stolen, and since then a round with
 * STOLEN_DISTURBED_PCT or more is named under the verdicts (`stolenWarning`).
 */
import fs from 'node:fs';
import { round } from './lib.js';

/** The derived figures of one database's run (bench/run.ts `derived[label]`), and its c=64 error count. */
export interface DerivedFigures {
  added_p50_ms: number;
  added_p99_ms: number;
  bare_added_p50_ms: number;
  throughput_vs_bare: number;
  added_ttfb_p50_ms: number;
  bare_added_ttfb_p50_ms: number;
  added_ttfb_paced_p50_ms: number;
  bare_added_ttfb_paced_p50_ms: number;
  added_ttfb_paced_spread_p50_ms: number;
  bare_added_ttfb_paced_spread_p50_ms: number;
  added_ttfb_c1_p50_ms: number;
  bare_added_ttfb_c1_p50_ms: number;
  idle_rss_after_load_mb: number;
  idle_rss_after_images_mb?: number;
  rss_per_stream_kb: number;
}

export interface TargetVerdict {
  target: string;
  /** The run's figure, as printed (unit included). */
  value: string;
  met: boolean;
  /**
   * For an added time (since session 67): the bare proxy's own added time in the same rounds (ms), and whether it is
   * within the same limit. On this VM's slow stretches it is not for some of the streamed measures.
   */
  bare?: { ms: number; met: boolean };
}

/**
 * The added times of each round (the gateway's round minus the direct measure's of the same round), by the derived
 * figure they make: the verdict is the medians', these show how far the rounds scattered around it (since session 64:
 * on this VM two identical bare proxies' burst TTFB differed by up to 1.7 ms in one round, more than the limit).
 */
export type AddedRounds = Partial<Record<'added_p50_ms' | 'added_ttfb_p50_ms' | 'added_ttfb_paced_p50_ms' | 'added_ttfb_paced_spread_p50_ms' | 'added_ttfb_c1_p50_ms', number[]>>;

/** Where each added time comes from in a round's results (bench/run.ts `runs[who][measure][round]`): measure, field. */
const ADDED_FROM: Record<keyof AddedRounds, [string, string]> = {
  added_p50_ms: ['c1', 'p50'], added_ttfb_p50_ms: ['stream', 'ttfbP50'], added_ttfb_paced_p50_ms: ['paced', 'ttfbP50'],
  added_ttfb_paced_spread_p50_ms: ['pacedSpread', 'ttfbP50'], added_ttfb_c1_p50_ms: ['single', 'ttfbP50'],
};
const ADDED_ENTRIES = Object.entries(ADDED_FROM) as Array<[keyof AddedRounds, [string, string]]>;

/** Two levels of keys (target, then measure; or measure, then field), as bench/run.ts keeps a database's results. */
type Nested<T> = Record<string, Record<string, T>>;

/**
 * The run's added times (the gateway's medians minus the direct measure's) and the bare proxy's own (`bare_<key>`),
 * from a database's summaries by measure (bench/run.ts `results[label]`, its `direct` and its `bare`).
 */
export function addedFigures(gateway: Nested<number>, direct: Nested<number>, bare: Nested<number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [key, [measure, field]] of ADDED_ENTRIES) {
    out[key] = round(gateway[measure][field] - direct[measure][field], 3);
    out[`bare_${key}`] = round(bare[measure][field] - direct[measure][field], 3);
  }
  return out;
}

/**
 * Each round's added times for the gateway `who` from a database's rounds (`runs[who]` and `runs.direct`, each a list
 * of one result a round per measure); a measure missing from either side is left out.
 */
export function addedRounds(runs: Nested<Array<Record<string, number>>>, who: string): AddedRounds {
  const out: AddedRounds = {};
  for (const [key, [measure, field]] of ADDED_ENTRIES) {
    const g = runs[who]?.[measure];
    const direct = runs.direct?.[measure];
    if (!g?.length || g.length !== direct?.length) continue;
    out[key] = g.map((r, i) => round(r[field] - direct[i][field], 3));
  }
  return out;
}

const ms = (n: number) => `${n} ms`;
/** The limit of every added-time target (c=1 p50 and the four streamed ones), for the gateway and the bare proxy alike. */
const ADDED_LIMIT_MS = 1;

/** Issue 9's targets against one database's run: each one's figure and whether it was met. */
export function targetVerdicts(d: DerivedFigures, c64Errors: number, rounds: AddedRounds = {}): TargetVerdict[] {
  /** An added time against its 1 ms limit, the bare proxy's own (`bare_<key>`) beside it, and its rounds where known. */
  const added = (target: string, key: keyof AddedRounds): TargetVerdict => {
    const figure = d[key];
    const bare = d[`bare_${key}`];
    const each = rounds[key]?.length ? `; rounds ${rounds[key]!.join(', ')} ms` : '';
    return { target, value: `${ms(figure)} (the bare proxy ${ms(bare)}${each})`, met: figure <= ADDED_LIMIT_MS, bare: { ms: bare, met: bare <= ADDED_LIMIT_MS } };
  };
  const idle = [d.idle_rss_after_load_mb, ...(d.idle_rss_after_images_mb === undefined ? [] : [d.idle_rss_after_images_mb])];
  return [
    added('added p50 ≤ 1 ms (c=1)', 'added_p50_ms'),
    { target: 'added p99 ≤ 5 ms (c=1)', value: ms(d.added_p99_ms), met: d.added_p99_ms <= 5 },
    {
      target: 'throughput ≥ 60 % of the bare proxy, no errors (c=64)',
      value: `${round(d.throughput_vs_bare * 100, 1)} %, ${c64Errors} errors`,
      met: d.throughput_vs_bare >= 0.6 && c64Errors === 0,
    },
    added('added TTFB p50 ≤ 1 ms: burst (c=16)', 'added_ttfb_p50_ms'),
    added('added TTFB p50 ≤ 1 ms: paced, starts spread (c=16)', 'added_ttfb_paced_spread_p50_ms'),
    added('added TTFB p50 ≤ 1 ms: paced, 16 started together', 'added_ttfb_paced_p50_ms'),
    added('added TTFB p50 ≤ 1 ms: one stream at a time', 'added_ttfb_c1_p50_ms'),
    { target: 'idle RSS ≤ 150 MB', value: idle.map((mb) => `${mb} MB`).join(', after 2 MB images '), met: idle.every((mb) => mb <= 150) },
    { target: 'RSS per open stream ≤ 40 KB', value: `${d.rss_per_stream_kb} KB`, met: d.rss_per_stream_kb <= 40 },
  ];
}

/**
 * The bare proxy held to the added-time limits (since session 67), one line: which of them a bare pass-through proxy
 * on the same runtime (node:http and undici, bench/bare-proxy.ts) missed on its own in this run, where the gateway's
 * verdict on them says as much about the machine's stretch as about the gateway.
 */
export function bareSummary(verdicts: TargetVerdict[]): string {
  const held = verdicts.flatMap((v) => (v.bare ? [{ target: v.target, ...v.bare }] : []));
  const over = held.filter((v) => !v.met);
  const head = `The bare proxy on its own, held to the same limits: ${held.length - over.length} of ${held.length} added times within them`;
  if (!over.length) return `${head}.`;
  return `${head}; over them: ${over.map((v) => `${v.target.replace(/^added (TTFB p50 ≤ 1 ms: )?/, '')} (${ms(v.ms)})`).join(', ')}.`;
}

/** The machine's CPU time (clock ticks, all CPUs together) from `/proc/stat`'s first line: all of it, and stolen. */
export interface MachineTicks {
  total: number;
  steal: number;
}

/**
 * `/proc/stat`'s aggregate `cpu` line: user nice system idle iowait irq softirq steal (guest time is inside user's and
 * nice's, so it is not added again). Undefined when the text has no such line.
 */
export function parseProcStat(text: string): MachineTicks | undefined {
  const line = text.split('\n').find((l) => /^cpu\s/.test(l));
  if (!line) return undefined;
  const f = line.trim().split(/\s+/).slice(1, 9).map(Number);
  if (f.length < 4 || f.some((n) => !Number.isFinite(n))) return undefined;
  const [user, nice, system, idle, iowait = 0, irq = 0, softirq = 0, steal = 0] = f;
  return { total: user + nice + system + idle + iowait + irq + softirq + steal, steal };
}

/** The machine's CPU time now; undefined where there is no Linux `/proc/stat`. */
export function machineTicks(): MachineTicks | undefined {
  try {
    return parseProcStat(fs.readFileSync('/proc/stat', 'utf8'));
  } catch {
    return undefined;
  }
}

/** The share (%) of the CPU time between two readings that was stolen; undefined without both, or with no time between. */
export function stolenPct(a: MachineTicks | undefined, b: MachineTicks | undefined): number | undefined {
  if (!a || !b || b.total <= a.total) return undefined;
  return round(((b.steal - a.steal) / (b.total - a.total)) * 100, 1);
}

/**
 * The share stolen in a round from which a run's verdicts tell the host's doing more than the gateway's: session 72's
 * GC had 30.2–32.5 % stolen a round, and there the bare proxy alone was over four of the five added-time limits and
 * the gateway's extra over it swung from −0.13 to 10.4 ms by measure; no round of the runs before it (since session 63,
 * when this began to be read) had more than 5.6 %.
 */
export const STOLEN_DISTURBED_PCT = 10;

/** A warning that a database's run measured while the host took the cores, or undefined when no round did. */
export function stolenWarning(label: string, rounds: Array<number | undefined>): string | undefined {
  const over = rounds.filter((p): p is number => p !== undefined && p >= STOLEN_DISTURBED_PCT);
  if (!over.length) return undefined;
  return `${label}: ${over.length} of ${rounds.length} rounds had ${STOLEN_DISTURBED_PCT} % or more of the CPU time stolen ` +
    `(${over.join(', ')} %): the host took the cores while they measured, so this run's verdicts say more about the ` +
    'host than about the gateway; measure again';
}
