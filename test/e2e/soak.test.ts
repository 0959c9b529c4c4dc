/**
 * A short soak (20 s; SOAK_MS to change) of the real gateway process under steady mixed load, through
 * scripts/soak.ts: every answer is the expected one and neither memory nor file descriptors run away. The
 * bounds are generous on purpose — RSS saws up and down by ~100 MB with garbage collection — so only a real
 * leak (e.g. 10 KB per request over ~10,000 requests) or leaked sockets fail it. `npm run soak` is the long run.
 */
import { expect } from 'chai';
import { soak } from '../../scripts/soak.js';

describe('e2e: soak (short)', function () {
  const ms = Number(process.env.SOAK_MS ?? 20_000);
  this.timeout(ms + 60_000);

  it(`${ms / 1000} s of steady load: no unexpected answer, no runaway memory or file-descriptor growth`, async () => {
    const lines: string[] = [];
    const r = await soak({ durationMs: ms, concurrency: 6, intervalMs: 2_000, warmup: 0.3, log: (l) => lines.push(l) });
    console.log(`\n    soak: ${r.requests} requests, RSS ${r.samples[0].rssMb.toFixed(0)} -> ${r.samples.at(-1)!.rssMb.toFixed(0)} MB (max ${r.rssMaxMb.toFixed(0)}), `
      + `fds ${r.samples[0].fds} -> ${r.samples.at(-1)!.fds} (max ${r.fdMax}); after warm-up: RSS ${r.rssGrowthMb.toFixed(0)} MB, fds ${r.fdGrowth}`);
    expect(r.requests).to.be.greaterThan(200);
    expect(r.errors, lines.join('\n')).to.equal(0);
    expect(r.fdGrowth, lines.join('\n')).to.be.at.most(20);
    expect(r.fdMax, lines.join('\n')).to.be.below(200);
    expect(r.rssGrowthMb, lines.join('\n')).to.be.below(200);
    expect(r.rssMaxMb, lines.join('\n')).to.be.below(800);
  });
});
