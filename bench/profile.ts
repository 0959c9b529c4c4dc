/**
 * npm run bench:profile: where the gateway's CPU goes under load. Starts the simulator and the gateway (embedded
 * SQLite, or PostgreSQL with --postgres) with V8's sampling profiler preloaded (bench/profile-window.mjs), warms the
 * gateway with the same load, then profiles the measured load only (non-streaming chat at concurrency 64;
 * --stream: streaming chat at concurrency 16; --paced: the same with chunks 10 ms apart, as a model writes, the 16
 * streams started together; --spread: paced, with their starts spread over one stream's length; since session 25
 * --body large|image: non-streamed requests one at a time with a 100 KB agent conversation or a 2 MB vision
 * request, where the costs that grow with a body show), and prints self
 * time by package/file and by function, as shares and as µs per request or stream. Since session 20 the start-up
 * and the warm-up are left out (before, `node --cpu-prof` profiled the whole process: module loading and the spec's
 * parse showed as a few per cent). The profile lands in bench/results/profile/ (open it in Chrome DevTools for the
 * call tree). Flags: --seconds N (default 10), --concurrency N (default 16 streaming, 64 otherwise; paced streams'
 * count scales with it), --warmup N (seconds, default 12: V8 compiles the gateway for ~10 s), --interval N (the
 * sampling interval in µs, default 100).
 */
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { request } from 'undici';
import { MODEL, PACED_MODEL, PACED_STREAM_MS, ROOT, STREAM_MODEL, arg, benchGateway, conversationBody, dispatcher, imageBody, log, startTs, streaming, throughput } from './lib.js';

const SECONDS = Number(arg('--seconds') ?? 10);
const SPREAD = process.argv.includes('--spread');
const PACED = SPREAD || process.argv.includes('--paced');
const STREAM = PACED || process.argv.includes('--stream');
const CONCURRENCY = arg('--concurrency') === undefined ? undefined : Number(arg('--concurrency'));
const WARMUP = Number(arg('--warmup') ?? 12);
const INTERVAL = Number(arg('--interval') ?? 100);
const PG_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
/** --body large|image: non-streamed requests one at a time with a 100 KB agent conversation or a 2 MB vision request. */
const BODY = arg('--body');
const BODIES: Record<string, () => string> = { large: () => conversationBody(MODEL, false, 100), image: () => imageBody(MODEL, false, 2000) };
if (BODY !== undefined && !BODIES[BODY]) throw new Error(`--body takes ${Object.keys(BODIES).join(' or ')}`);

/** Requests one at a time with `body` for about `seconds`: how many were served. */
async function oneAtATime(url: string, key: string, body: string, seconds: number) {
  const end = Date.now() + seconds * 1000;
  let units = 0;
  let errors = 0;
  while (Date.now() < end) {
    const res = await request(`${url}/v1/chat/completions`, { method: 'POST', dispatcher, headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` }, body });
    await res.body.dump();
    if (res.statusCode !== 200) errors++;
    units++;
  }
  return { units, errors };
}

interface ProfileNode { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] }
interface Profile { nodes: ProfileNode[]; samples: number[]; timeDeltas: number[] }

/**
 * Self time per function and per file (node_modules folded to their package), as shares of all samples and, given
 * how many requests or streams the window served (`units`), as µs of each per unit. `busy` leaves out `(idle)`.
 * Time is V8's: each sample weighs the time since the one before. On this VM the sampler's ticks come late and
 * unevenly (~210 µs apart on average at a 50 µs interval, session 25), and a sample taken right after the process
 * was preempted carries the whole gap: the step that woke another process (`writev`) or that resumed after a wait
 * weighs more than the CPU it used. So each row also gives its share of the samples counted one each (`count`),
 * the better guide to CPU when the two differ.
 */
export function summarise(profile: Profile, rows = 40, units = 0, unit = 'unit'): string {
  const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
  // The profiler's own stop (the profile serialised inside the signal handler of bench/profile-window.mjs) is
  // sampled too: those samples are left out.
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const own = new Map<number, boolean>();
  const isOwn = (id: number): boolean => {
    let v = own.get(id);
    if (v === undefined) {
      const p = parent.get(id);
      v = nodes.get(id)!.callFrame.url.endsWith('profile-window.mjs') || (p !== undefined && isOwn(p));
      own.set(id, v);
    }
    return v;
  };
  const byFn = new Map<string, number>();
  const byFile = new Map<string, number>();
  const count = new Map<string, number>();
  let total = 0;
  let samples = 0;
  profile.samples.forEach((id, i) => {
    if (isOwn(id)) return;
    const dt = profile.timeDeltas[i] ?? 0;
    total += dt;
    const { functionName, url, lineNumber } = nodes.get(id)!.callFrame;
    const file = url.replace(/^file:\/\//, '').replace(ROOT + '/', '').replace(/^.*node_modules\/((@[^/]+\/)?[^/]+).*$/, '$1') || `(${functionName || 'native'})`;
    byFile.set(file, (byFile.get(file) ?? 0) + dt);
    const fn = `${functionName || '(anonymous)'}  ${file}:${lineNumber + 1}`;
    byFn.set(fn, (byFn.get(fn) ?? 0) + dt);
    samples++;
    count.set(file, (count.get(file) ?? 0) + 1);
    count.set(fn, (count.get(fn) ?? 0) + 1);
  });
  const per = (t: number) => (units > 0 ? `${(t / units).toFixed(1).padStart(8)} µs  ` : '');
  const top = (m: Map<string, number>) => [...m].sort((a, b) => b[1] - a[1]).slice(0, rows)
    .map(([k, t]) => `${((100 * t) / total).toFixed(1).padStart(5)} %  ${`(count ${((100 * (count.get(k) ?? 0)) / samples).toFixed(1)} %)`.padStart(16)}  ${per(t)}${k}`).join('\n');
  const busy = total - (byFile.get('((idle))') ?? 0);
  const perUnit = units > 0 ? `; ${units} ${unit}s, ${(busy / units).toFixed(1)} µs busy per ${unit}` : '';
  return `sampled ${(total / 1e6).toFixed(1)} s, busy ${(busy / 1e6).toFixed(2)} s${perUnit}\n\nself time by package or file:\n${top(byFile)}\n\nself time by function:\n${top(byFn)}`;
}

async function main() {
  execFileSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'inherit' });
  const dir = path.join(ROOT, 'bench/results/profile');
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  const sim = await startTs('scripts/simulator.ts', ['--port', '0'], {}, /(http:\/\/127\.0\.0\.1:\d+)/);
  const env: Record<string, string> = process.argv.includes('--postgres') ? { DATABASE_URL: PG_URL } : {};
  const file = `${BODY ? `${BODY}-c1` : `${STREAM ? (SPREAD ? 'spread' : PACED ? 'paced' : 'stream') : 'c'}${CONCURRENCY ?? (STREAM ? 16 : 64)}`}${env.DATABASE_URL ? '-postgres' : ''}.cpuprofile`;
  const body = BODY ? BODIES[BODY]() : '';
  const out = path.join(dir, file);
  const gw = await benchGateway('profile', { ...env, PROFILE_OUT: out, PROFILE_INTERVAL_US: String(INTERVAL) }, sim.match[1],
    ['--import', path.join(ROOT, 'bench/profile-window.mjs')]);
  const load = (seconds: number) => (STREAM
    ? streaming(gw.url, gw.key, CONCURRENCY ?? 16, Math.ceil(seconds * (PACED ? (70 * (CONCURRENCY ?? 16)) / 16 : 300)), PACED ? PACED_MODEL : STREAM_MODEL, SPREAD ? PACED_STREAM_MS : 0)
      .then((r) => ({ ...r, units: r.streams }))
    : BODY ? oneAtATime(gw.url, gw.key, body, seconds)
      : throughput(gw.url, gw.key, CONCURRENCY ?? 64, seconds).then((r) => ({ ...r, units: r.requests })));
  if (WARMUP > 0) {
    log(`warming up for ~${WARMUP} s (not profiled)`);
    await load(WARMUP);
  }
  log(STREAM ? `${SPREAD ? 'paced (starts spread) ' : PACED ? 'paced ' : ''}streaming at concurrency ${CONCURRENCY ?? 16} for ~${SECONDS} s` : BODY ? `${BODY} bodies one at a time for ${SECONDS} s` : `concurrency ${CONCURRENCY ?? 64} for ${SECONDS} s`);
  process.kill(gw.pid, 'SIGUSR2'); // the profiler starts
  const r = await load(SECONDS);
  process.kill(gw.pid, 'SIGUSR2'); // and stops, writing the profile
  log(`load: ${JSON.stringify(r)}`);
  for (let i = 0; !fs.existsSync(out); i++) {
    if (i > 300) throw new Error('the gateway wrote no profile');
    await new Promise((res) => setTimeout(res, 100));
  }
  const exited = new Promise((resolve) => gw.child.once('exit', resolve));
  gw.stop();
  await exited;
  sim.child.kill('SIGTERM');
  console.log(summarise(JSON.parse(fs.readFileSync(out, 'utf8')) as Profile, 40, r.units, STREAM ? 'stream' : 'request'));
  log(`profile: bench/results/profile/${file}`);
  process.exit(0);
}

main().catch((err) => { console.error(err); process.exit(1); });
