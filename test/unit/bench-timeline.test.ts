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
import { quartiles, streamsOf, type Mark } from '../../bench/timeline.js';

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

    it('records each step of every stream, in order, only between the two signals', async () => {
      proxy = spawn(process.execPath, ['--import', 'tsx', '--import', path.join(ROOT, 'bench/timeline-marks.mjs'), path.join(ROOT, 'bench/bare-proxy.ts'), sim.url, '0'],
        { cwd: ROOT, env: { ...process.env, MARKS_OUT: out }, stdio: ['ignore', 'pipe', 'inherit'] });
      const url = await new Promise<string>((resolve, reject) => {
        let text = '';
        proxy!.stdout!.on('data', (d) => { text += d; const m = /(http:\/\/127\.0\.0\.1:\d+)/.exec(text); if (m) resolve(m[1]); });
        proxy!.once('exit', (code) => reject(new Error(`the proxy exited ${code}`)));
      });
      const stream = async () => {
        const res = await request(`${url}/v1/chat/completions`, {
          method: 'POST', headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'sim/chunks-5', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
        });
        const text = await res.body.text();
        expect(res.statusCode).to.equal(200);
        expect(text).to.include('[DONE]');
      };
      await stream(); // before the first signal: not recorded
      proxy.kill('SIGUSR2');
      await new Promise((r) => setTimeout(r, 100));
      for (let i = 0; i < 3; i++) await stream();
      proxy.kill('SIGUSR2');
      for (let i = 0; !fs.existsSync(out); i++) {
        if (i > 100) throw new Error('no marks written');
        await new Promise((r) => setTimeout(r, 50));
      }
      const marks = JSON.parse(fs.readFileSync(out, 'utf8')) as Mark[];
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
  });
});
