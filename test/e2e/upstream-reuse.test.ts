/**
 * Upstream connections are kept across streams. An SSE stream is complete at its terminator (`data: [DONE]`,
 * `message_stop`), a few bytes before the HTTP body ends; the gateway stops reading there. Before
 * src/providers/http.ts read off the rest of a body its reader let go (bodyChunks(), now UpstreamBody's
 * `return()`), that early stop destroyed the body and undici closed the connection, so every streamed request
 * cost a new upstream TCP connection. The simulator records the client port of the
 * connection each call came in on (RecordedCall.remotePort): calls with the same port shared a connection.
 *
 * The simulator ends each stream's HTTP body END_DELAY_MS after its terminator (SimulatorOptions.streamEndDelayMs),
 * as an upstream across a network does: on loopback the end of the body otherwise arrives together with the
 * terminator, undici has finished the response before the gateway stops reading, and destroying the body costs
 * nothing — the test could not tell the two ways of reading apart. The client then waits a little longer than that
 * delay between requests (its think time), so a kept connection is back in undici's pool for the next request.
 *
 * The official `openai` SDK is the client, the gateway serves on a real port, the simulator is the upstream.
 */
import { expect } from 'chai';
import OpenAI from 'openai';
import { setTimeout as sleep } from 'node:timers/promises';
import { offer } from '../support/catalog.js';
import { startE2E, usageRows, SIM_KEY, type E2E } from '../support/e2e.js';
import { startSimulator, type Simulator } from '../support/simulator.js';

const END_DELAY_MS = 25;
const THINK_MS = 3 * END_DELAY_MS;

describe('e2e: streamed completions reuse upstream connections', function () {
  this.timeout(30_000);
  let sim: Simulator;
  let e: E2E;
  let key: string;
  let userId: number;

  before(async () => {
    sim = await startSimulator({ apiKey: SIM_KEY, streamEndDelayMs: END_DELAY_MS });
    e = await startE2E({
      sim,
      gateways: { openai: 'openai', anthropic: 'anthropic', google: 'gemini' },
      offers: [
        offer('openai', 'sim/chunks-5', 'test/chunks'),
        offer('anthropic', 'sim/chunks-5', 'claude/chunks'),
        offer('google', 'models/sim/chunks-5', 'gem/chunks'),
      ],
    });
    ({ key, userId } = await e.gateway.newKey(1));
  });
  after(async () => {
    await e?.close();
    await sim?.close();
  });
  beforeEach(() => e.sim.reset());

  const client = () => new OpenAI({ apiKey: key, baseURL: `${e.origin}/v1`, maxRetries: 0 });
  const FIVE = 'w1 w2 w3 w4 w5 ';

  /** `n` streamed completions one after the other; each one's text and finish reason. */
  async function streamSequentially(model: string, n: number) {
    const out: Array<{ text: string; finish: string | null | undefined; chunks: number }> = [];
    for (let i = 0; i < n; i++) {
      if (i > 0) await sleep(THINK_MS);
      const stream = await client().chat.completions.create({ model, messages: [{ role: 'user', content: `count ${i}` }], stream: true });
      let text = '';
      let finish: string | null | undefined;
      let chunks = 0;
      for await (const c of stream) {
        chunks++;
        text += c.choices[0]?.delta?.content ?? '';
        finish ??= c.choices[0]?.finish_reason;
      }
      out.push({ text, finish, chunks });
    }
    return out;
  }

  const upstreamPorts = (path: RegExp) => {
    const calls = e.sim.calls.filter((c) => c.method === 'POST' && path.test(c.path));
    expect(calls.every((c) => typeof c.remotePort === 'number' && c.remotePort > 0), 'every call has its client port').to.equal(true);
    return { calls: calls.length, ports: new Set(calls.map((c) => c.remotePort)) };
  };

  it('10 sequential OpenAI-upstream streams: all complete with the right text, over at most 2 upstream connections', async () => {
    const results = await streamSequentially('test/chunks', 10);
    expect(results.map((r) => r.text)).to.deep.equal(Array(10).fill(FIVE));
    expect(results.map((r) => r.finish)).to.deep.equal(Array(10).fill('stop'));
    // role chunk, 5 text chunks, the finish chunk
    expect(results.map((r) => r.chunks)).to.deep.equal(Array(10).fill(7));

    const { calls, ports } = upstreamPorts(/^\/v1\/chat\/completions$/);
    expect(calls).to.equal(10);
    expect(e.sim.calls.map((c) => c.body?.stream)).to.deep.equal(Array(10).fill(true));
    expect(ports.size, `upstream connections used: ${[...ports].join(', ')}`).to.be.at.most(2);

    // one usage record per stream, each a success with the five words counted
    const rows = (await usageRows(e.gateway, userId)).filter((r) => r.gateway === 'openai');
    expect(rows.map((r) => [r.status, r.completion_tokens])).to.deep.equal(Array(10).fill(['success', 5]));
  });

  it('the same for an Anthropic upstream (stream ends at message_stop), translated to the OpenAI format', async () => {
    const results = await streamSequentially('claude/chunks', 10);
    expect(results.map((r) => r.text)).to.deep.equal(Array(10).fill(FIVE));
    expect(results.map((r) => r.finish)).to.deep.equal(Array(10).fill('stop'));
    const { calls, ports } = upstreamPorts(/^\/v1\/messages$/);
    expect(calls).to.equal(10);
    expect(ports.size, `upstream connections used: ${[...ports].join(', ')}`).to.be.at.most(2);
  });

  it('a Gemini upstream (its stream has no terminator: the body is read to its end) keeps its connection too', async () => {
    const results = await streamSequentially('gem/chunks', 10);
    expect(results.map((r) => r.text)).to.deep.equal(Array(10).fill(FIVE));
    expect(results.map((r) => r.finish)).to.deep.equal(Array(10).fill('stop'));
    const { calls, ports } = upstreamPorts(/:streamGenerateContent$/);
    expect(calls).to.equal(10);
    expect(ports.size, `upstream connections used: ${[...ports].join(', ')}`).to.be.at.most(2);
  });
});
