/** The upstream simulator speaking Gemini's generateContent format: bodies, CRLF SSE framing, keys, errors. */
import { expect } from 'chai';
import { startSimulator, type Simulator } from '../support/simulator.js';
import { jsonData, postJson, readEvents, readEventsUntilBreak, readTimedEvents } from '../support/sim-client.js';

// Hand-counted: "Be brief." 9 chars -> 3 tokens, "hello there" 11 chars -> 3 tokens.
const BASE = { systemInstruction: { parts: [{ text: 'Be brief.' }] }, contents: [{ role: 'user', parts: [{ text: 'hello there' }] }] };
const LOOKUP = { functionDeclarations: [{ name: 'lookup', parameters: { type: 'OBJECT', properties: { term: { type: 'STRING' } }, required: ['term'] } }] };

describe('simulator: Gemini format', () => {
  let sim: Simulator;
  before(async () => { sim = await startSimulator(); });
  after(async () => { await sim.close(); });
  beforeEach(() => sim.reset());
  const generate = (model: string, body: object = {}, query = '') => postJson(`${sim.url}/v1beta/models/${model}:generateContent${query}`, { ...BASE, ...body });
  const stream = (model: string, body: object = {}) => postJson(`${sim.url}/v1beta/models/${model}:streamGenerateContent?alt=sse`, { ...BASE, ...body });

  it('answers generateContent with candidates, finishReason and usageMetadata', async () => {
    const res = await generate('sim/echo');
    expect(res.status).to.equal(200);
    expect(await res.json()).to.deep.equal({
      candidates: [{ content: { parts: [{ text: 'Echo: hello there' }], role: 'model' }, finishReason: 'STOP', index: 0 }],
      usageMetadata: { promptTokenCount: 6, candidatesTokenCount: 3, totalTokenCount: 9, promptTokensDetails: [{ modality: 'TEXT', tokenCount: 6 }] },
      modelVersion: 'sim/echo',
      responseId: 'sim-1',
    });
    expect(sim.calls[0]).to.deep.include({ format: 'gemini', path: '/v1beta/models/sim/echo:generateContent', model: 'sim/echo' });
  });

  it('streams CRLF-framed data: lines, the last with finishReason and full usage', async () => {
    const res = await stream('sim/echo');
    expect(res.headers.get('content-type')).to.equal('text/event-stream');
    const { events, raw } = await readEvents(res);
    expect(raw.split('\r\n\r\n')).to.have.length(4); // 3 events and the empty tail
    expect(raw.split('\r\n\r\n').slice(0, 3).every((b) => /^data: \{[^\r\n]+\}$/.test(b))).to.equal(true);
    const chunks = jsonData(events);
    expect(chunks.map((c) => c.candidates[0].content.parts[0].text)).to.deep.equal(['Echo: ', 'hello ', 'there']);
    expect(chunks.slice(0, 2).some((c) => 'finishReason' in c.candidates[0])).to.equal(false);
    expect(chunks[0].usageMetadata).to.deep.equal({ promptTokenCount: 6, totalTokenCount: 6, promptTokensDetails: [{ modality: 'TEXT', tokenCount: 6 }] });
    expect(chunks[2].candidates[0].finishReason).to.equal('STOP');
    expect(chunks[2].usageMetadata).to.deep.include({ promptTokenCount: 6, candidatesTokenCount: 3, totalTokenCount: 9 });
  });

  it('sim/chunks-N-every-Mms streams each text part M ms after the one before; the first at once', async () => {
    const t0 = performance.now();
    const events = await readTimedEvents(await stream('sim/chunks-4-every-40ms'), t0);
    const chunks = jsonData(events);
    expect(chunks.map((c) => c.candidates[0].content.parts[0].text)).to.deep.equal(['w1 ', 'w2 ', 'w3 ', 'w4 ']);
    expect(chunks[3].candidates[0].finishReason).to.equal('STOP');
    const gaps = events.slice(1).map((e, i) => e.at - events[i].at);
    for (const gap of gaps) expect(gap).to.be.within(30, 120);
  });

  it('streams a JSON array without alt=sse', async () => {
    const res = await postJson(`${sim.url}/v1beta/models/sim/chunks-2:streamGenerateContent`, BASE);
    const list = JSON.parse(await res.text());
    expect(list.map((c: any) => c.candidates[0].content.parts[0].text)).to.deep.equal(['w1 ', 'w2 ']);
  });

  it('strips a leading models/ and decodes an encoded model name', async () => {
    expect((await (await generate('models/sim/chunks-2')).json()).candidates[0].content.parts[0].text).to.equal('w1 w2 ');
    expect((await (await generate('sim%2Fjson')).json()).candidates[0].content.parts[0].text).to.equal('{"ok":true,"echo":"hello there"}');
    expect(sim.calls.map((c) => c.model)).to.deep.equal(['sim/chunks-2', 'sim/json']);
  });

  it('takes the key from x-goog-api-key or ?key= when started with one', async () => {
    const keyed = await startSimulator({ apiKey: 'g-key-1' });
    try {
      const url = `${keyed.url}/v1beta/models/sim/echo:generateContent`;
      expect((await postJson(url, BASE, { 'x-goog-api-key': 'g-key-1' })).status).to.equal(200);
      expect((await postJson(`${url}?key=g-key-1`, BASE)).status).to.equal(200);
      const wrong = await postJson(url, BASE, { 'x-goog-api-key': 'nope' });
      expect(wrong.status).to.equal(400);
      const err = (await wrong.json()).error;
      expect(err).to.deep.include({ code: 400, status: 'INVALID_ARGUMENT', message: 'API key not valid. Please pass a valid API key.' });
      expect(err.details[0].reason).to.equal('API_KEY_INVALID');
      const none = await postJson(url, BASE);
      expect(none.status).to.equal(403);
      expect((await none.json()).error.status).to.equal('PERMISSION_DENIED');
    } finally {
      await keyed.close();
    }
  });

  it('errors come in Google shape; 429 is RESOURCE_EXHAUSTED with Retry-After: 1', async () => {
    const res = await stream('sim/error-429');
    expect(res.status).to.equal(429);
    expect(res.headers.get('retry-after')).to.equal('1');
    expect(await res.json()).to.deep.equal({ error: { code: 429, message: 'simulated upstream error 429', status: 'RESOURCE_EXHAUSTED' } });
    expect((await (await generate('sim/error-503')).json()).error.status).to.equal('UNAVAILABLE');
    const bad = await postJson(`${sim.url}/v1beta/models/sim/echo:generateContent`, { contents: [] });
    expect(bad.status).to.equal(400);
    expect((await bad.json()).error.status).to.equal('INVALID_ARGUMENT');
  });

  it('lists models with models/ names, limits and methods', async () => {
    const body = await (await fetch(`${sim.url}/v1beta/models`)).json();
    expect(body.models[0]).to.deep.include({
      name: 'models/sim/echo', displayName: 'Simulator echo', inputTokenLimit: 1_048_576, outputTokenLimit: 65_536,
      supportedGenerationMethods: ['generateContent', 'countTokens'],
    });
  });

  it('sim/tool-call answers a functionCall part, and a functionResponse with "Tool said"', async () => {
    const body = await (await generate('sim/tool-call', { tools: [LOOKUP] })).json();
    expect(body.candidates[0].content.parts).to.deep.equal([{ functionCall: { name: 'lookup', args: { term: 'test' } } }]);
    expect(body.candidates[0].finishReason).to.equal('STOP');
    const contents = [
      ...BASE.contents,
      { role: 'model', parts: [{ functionCall: { name: 'lookup', args: { term: 'x' } } }] },
      { role: 'user', parts: [{ functionResponse: { name: 'lookup', response: { result: '18C' } } }] },
    ];
    const answer = await (await generate('sim/tool-call', { tools: [LOOKUP], contents })).json();
    expect(answer.candidates[0].content.parts).to.deep.equal([{ text: 'Tool said: 18C' }]);
    expect(answer.usageMetadata.promptTokenCount).to.equal(3 + 3 + 0 + 1);
  });

  it('sim/length and sim/stop-seq', async () => {
    const cut = await (await generate('sim/length', { generationConfig: { maxOutputTokens: 2 } })).json();
    expect(cut.candidates[0]).to.deep.include({ finishReason: 'MAX_TOKENS', content: { parts: [{ text: 'Echo: hello' }], role: 'model' } });
    const stopped = await (await generate('sim/stop-seq', { generationConfig: { stopSequences: ['STOP'] } })).json();
    expect(stopped.candidates[0]).to.deep.include({ finishReason: 'STOP', content: { parts: [{ text: 'Hello ' }], role: 'model' } });
  });

  it('sim/cached reports cachedContentTokenCount inside promptTokenCount', async () => {
    const body = await (await generate('sim/cached')).json();
    expect(body.usageMetadata).to.deep.include({ promptTokenCount: 6, cachedContentTokenCount: 3, totalTokenCount: 9 });
  });

  it('includeThoughts adds a thought part and thoughtsTokenCount', async () => {
    const body = await (await generate('sim/echo', { generationConfig: { thinkingConfig: { includeThoughts: true } } })).json();
    expect(body.candidates[0].content.parts).to.deep.equal([{ text: 'Thinking about: hello there', thought: true }, { text: 'Echo: hello there' }]);
    expect(body.usageMetadata).to.deep.include({ candidatesTokenCount: 3, thoughtsTokenCount: 4, totalTokenCount: 13 });
  });

  it('sim/stream-break, sim/keepalive and sim/malformed streams', async () => {
    const broken = await readEventsUntilBreak(await stream('sim/stream-break'));
    expect(broken.error).to.be.instanceOf(Error);
    expect(jsonData(broken.events).map((c) => c.candidates[0].content.parts[0].text)).to.deep.equal(['w1 ', 'w2 ', 'w3 ']);
    const kept = await readEvents(await stream('sim/keepalive'));
    expect(kept.raw.split(': PROCESSING\r\n\r\n')).to.have.length(3);
    expect(jsonData(kept.events)).to.have.length(3);
    const bad = await readEvents(await stream('sim/malformed'));
    expect(() => JSON.parse(bad.events[0].data)).to.throw(SyntaxError);
    expect(jsonData(bad.events.slice(1)).pop().candidates[0].finishReason).to.equal('STOP');
  });
});
