/**
 * `npm run bench:timeline`'s parts: the marks preload (bench/timeline-marks.mjs) on a real proxy process, so a
 * diagnostics channel renamed by a Node or undici upgrade fails here rather than silently timing nothing, and the
 * pairing of marks into streams (bench/timeline.ts).
 */
import { expect } from 'chai';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import { startSimulator, type Simulator } from '../support/simulator.js';
import { quartiles, streamsOf, tracesOf, waveGroups, wavesOf, type ClientTimes, type Mark } from '../../bench/timeline.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

describe('bench:timeline', () => {
  describe('streamsOf', () => {
    it('pairs the steps of streams sent one at a time, and leaves out one whose steps are missing or out of order', () => {
      const marks: Mark[] = [
        ['arrived', 100], ['called', 150], ['sent', 160], ['answered', 400], ['wrote', 450],
        ['arrived', 1000], ['called', 1040], ['answered', 1300], ['wrote', 1350], // no `sent`
        ['arrived', 2000], ['called', 2030], ['sent', 2035], ['answered', 2200], ['wrote', 2260],
        ['arrived', 3000], ['called', 3040], ['sent', 3050], ['sent', 3051], ['answered', 3300], ['wrote', 3350], // a stray mark
        ['arrived', 4000], ['called', 4010], // the recording stopped here
      ];
      const { streams, dropped } = streamsOf(marks);
      expect(streams).to.deep.equal([
        { arrived: 100, called: 150, sent: 160, answered: 400, wrote: 450 },
        { arrived: 2000, called: 2030, sent: 2035, answered: 2200, wrote: 2260 },
      ]);
      expect(dropped).to.equal(3);
      // before the call: 50 and 30 µs; inside: 350 and 260 µs
      expect(quartiles(streams, 'arrived', 'called')).to.deep.equal({ p25: 30, p50: 50, p75: 50 });
      expect(quartiles(streams, 'arrived', 'wrote').p50).to.equal(350);
    });
  });

  describe('tracesOf (--together)', () => {
    it('pairs interleaved marks by sequence number with the client\'s times, and leaves out incomplete or disordered streams', () => {
      const marks: Mark[] = [
        ['arrived', 100, 7], ['arrived', 110, 8], ['called', 150, 7], ['called', 170, 8], ['arrived', 175, 9],
        ['sent', 200, 7], ['sent', 201, 8], ['upArrived', 300, 7], ['upArrived', 320, 8], ['upWrote', 350, 7], ['upWrote', 380, 8], // the simulator's
        ['answered', 500, 8], ['answered', 520, 7], ['wrote', 530, 8], ['wrote', 560, 7],
        ['called', 190, 9], ['sent', 210, 9], ['upArrived', 330, 9], ['upWrote', 390, 9], ['wrote', 600, 9], // 9: no `answered`
        ['arrived', 700, 10], ['called', 720, 10], ['sent', 730, 10], ['upArrived', 800, 10], ['upWrote', 850, 10], ['answered', 900, 10], ['wrote', 880, 10], // 10: wrote before answered
        ['called', 300, undefined], // an upstream request without a tag: not counted
      ];
      const client = new Map<number, ClientTimes>([[7, { sent: 40, first: 640 }], [8, { sent: 60, first: 580 }], [9, { sent: 90, first: 700 }], [10, { sent: 650, first: 950 }]]);
      const { streams, dropped } = tracesOf(marks, client);
      expect(streams).to.deep.equal([
        { arrived: 100, called: 150, sent: 200, upArrived: 300, upWrote: 350, answered: 520, wrote: 560, client: 40, first: 640 },
        { arrived: 110, called: 170, sent: 201, upArrived: 320, upWrote: 380, answered: 500, wrote: 530, client: 60, first: 580 },
      ]);
      expect(dropped).to.equal(2);
      // the client to the process: 60 and 50 µs
      expect(quartiles(streams, 'client', 'arrived').p50).to.equal(60);
      // a stream missing from the client's times (it failed there) is left out too
      expect(tracesOf(marks, new Map([[8, client.get(8)!]])).streams).to.have.length(1);
      // the simulator straight has only its arrival and first write
      const direct = tracesOf([['arrived', 100, 1], ['wrote', 140, 1]], new Map([[1, { sent: 50, first: 180 }]]), ['client', 'arrived', 'wrote', 'first']);
      expect(direct.streams).to.deep.equal([{ arrived: 100, wrote: 140, client: 50, first: 180 }]);
    });
  });

  describe('wavesOf and waveGroups (--together)', () => {
    it('splits a round into waves where 50 ms pass without a request, in order, and groups them by place in the round', () => {
      // three requests made at once, then two 210 ms later 3 ms apart, then one 210 ms after that; the map out of order
      const client = new Map<number, ClientTimes>([
        [4, { sent: 213_000, first: 215_500 }],
        [1, { sent: 0, first: 1_000 }],
        [6, { sent: 423_000, first: 424_200 }],
        [2, { sent: 100, first: 2_100 }],
        [3, { sent: 300, first: 3_300 }],
        [5, { sent: 210_000, first: 212_000 }],
      ]);
      const waves = wavesOf(client);
      expect(waves).to.deep.equal([
        { position: 0, span: 300, ttfb: [1_000, 2_000, 3_000] },
        { position: 1, span: 3_000, ttfb: [2_000, 2_500] },
        { position: 2, span: 0, ttfb: [1_200] },
      ]);
      // a gap of exactly the limit keeps the wave; one µs more ends it
      expect(wavesOf(new Map([[1, { sent: 0, first: 5 }], [2, { sent: 50_000, first: 50_005 }]]))).to.have.length(1);
      expect(wavesOf(new Map([[1, { sent: 0, first: 5 }], [2, { sent: 50_001, first: 50_006 }]]))).to.have.length(2);

      // two rounds' waves together, as the tool keeps them: positions restart with each round
      const later = Array.from({ length: 6 }, (_, i) => ({ position: i, span: 10_000 * (i + 1), ttfb: [1_000 * (i + 1)] }));
      expect(waveGroups([...waves, ...later])).to.deep.equal([
        { group: "a round's first wave", waves: 2, spanP50: 10_000, ttfbP50: 2_000 }, // spans 300 and 10,000; TTFBs 1, 1, 2 and 3 ms
        { group: 'its 2nd to 5th', waves: 6, spanP50: 30_000, ttfbP50: 2_500 }, // spans 0, 3,000, 20,000 to 50,000
        { group: 'its 6th on', waves: 1, spanP50: 60_000, ttfbP50: 6_000 },
      ]);
      const none = waveGroups(waves)[2];
      expect(none.waves).to.equal(0);
      expect(none.spanP50).to.be.NaN;
    });
  });

  describe('the marks preload on a real proxy', function () {
    this.timeout(60_000);
    let sim: Simulator;
    let proxy: ChildProcess | undefined;
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-timeline-test-'));
    const out = path.join(dir, 'marks.json');
    before(async () => { sim = await startSimulator(); });
    after(async () => {
      proxy?.kill('SIGTERM');
      await sim.close();
      fs.rmSync(dir, { recursive: true, force: true });
    });

    /** The bare proxy with the preload; its URL. */
    const startProxy = async (env: Record<string, string>) => {
      proxy?.kill('SIGTERM');
      fs.rmSync(out, { force: true });
      proxy = spawn(process.execPath, ['--import', 'tsx', '--import', path.join(ROOT, 'bench/timeline-marks.mjs'), path.join(ROOT, 'bench/bare-proxy.ts'), sim.url, '0'],
        { cwd: ROOT, env: { ...process.env, MARKS_OUT: out, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
      return new Promise<string>((resolve, reject) => {
        let text = '';
        proxy!.stdout!.on('data', (d) => { text += d; const m = /(http:\/\/127\.0\.0\.1:\d+)/.exec(text); if (m) resolve(m[1]); });
        proxy!.once('exit', (code) => reject(new Error(`the proxy exited ${code}`)));
      });
    };
    const stream = async (url: string, seq?: number) => {
      const res = await request(`${url}/v1/chat/completions`, {
        method: 'POST', headers: { 'content-type': 'application/json', ...(seq === undefined ? {} : { 'x-bench-seq': String(seq) }) },
        body: JSON.stringify({ model: 'sim/chunks-5', stream: true, messages: [{ role: 'user', content: seq === undefined ? 'hi' : `hi, bench #${seq}` }] }),
      });
      const text = await res.body.text();
      expect(res.statusCode).to.equal(200);
      expect(text).to.include('[DONE]');
    };
    /** `load` with the marks recorded; the marks. */
    const recorded = async (load: () => Promise<unknown>) => {
      proxy!.kill('SIGUSR2');
      await new Promise((r) => setTimeout(r, 100));
      await load();
      proxy!.kill('SIGUSR2');
      for (let i = 0; !fs.existsSync(out); i++) {
        if (i > 100) throw new Error('no marks written');
        await new Promise((r) => setTimeout(r, 50));
      }
      return JSON.parse(fs.readFileSync(out, 'utf8')) as Mark[];
    };

    it('records each step of every stream, in order, only between the two signals', async () => {
      const url = await startProxy({});
      await stream(url); // before the first signal: not recorded
      const marks = await recorded(async () => { for (let i = 0; i < 3; i++) await stream(url); });
      expect(marks.map((m) => m[0])).to.deep.equal(Array(3).fill(['arrived', 'called', 'sent', 'answered', 'wrote']).flat());
      const { streams, dropped } = streamsOf(marks);
      expect(streams).to.have.length(3);
      expect(dropped).to.equal(0);
      for (const s of streams) {
        expect(s.arrived).to.be.at.most(s.called);
        expect(s.called).to.be.at.most(s.sent);
        expect(s.sent).to.be.below(s.answered);
        expect(s.answered).to.be.at.most(s.wrote);
      }
    });

    it('tags each mark with its stream\'s sequence number when TIMELINE_TAGGED is set, streams in flight at once', async () => {
      const url = await startProxy({ TIMELINE_TAGGED: '1' });
      sim.reset();
      const marks = await recorded(() => Promise.all([41, 42, 43].map((seq) => stream(url, seq))));
      expect(marks).to.have.length(15);
      // each upstream request carries its stream's number (added by the preload), so a preloaded upstream tags its marks
      expect(sim.calls.map((c) => c.headers['x-bench-seq']).sort()).to.deep.equal(['41', '42', '43']);
      for (const seq of [41, 42, 43]) {
        expect(marks.filter((m) => m[2] === seq).map((m) => m[0])).to.deep.equal(['arrived', 'called', 'sent', 'answered', 'wrote']);
      }
      // on the client's clock (hrtime, µs): sent before the proxy's arrival, first byte after its first write
      const client = new Map([41, 42, 43].map((seq) => {
        const own = marks.filter((m) => m[2] === seq);
        return [seq, { sent: own[0][1] - 1, first: own[4][1] + 1 }];
      }));
      // (no simulator's marks here: the simulator is not preloaded)
      const { streams, dropped } = tracesOf(marks, client, ['client', 'arrived', 'called', 'sent', 'answered', 'wrote', 'first']);
      expect(streams).to.have.length(3);
      expect(dropped).to.equal(0);
      const now = Number(process.hrtime.bigint() / 1000n);
      for (const s of streams) expect(now - s.arrived).to.be.within(0, 60_000_000); // the same monotonic clock as this process
    });
  });
});
