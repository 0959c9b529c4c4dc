/**
 * The upstream simulator, OpenAI format: wire shapes (checked against OpenAI's own spec), exact stream framing,
 * and every model-name behaviour. Anthropic and Gemini: simulator-formats.test.ts; media: simulator-media.test.ts.
 */
import { expect } from 'chai';
import { setTimeout as sleep } from 'node:timers/promises';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { startSimulator, type Simulator } from '../support/simulator.js';
import { assertOpenAI } from '../support/openai-schema.js';
import { jsonData, postJson, readEvents, readEventsUntilBreak } from '../support/sim-client.js';

const USER = [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'hello there' }];
// Hand-counted: "Be brief." 9 chars -> 3, "hello there" 11 chars -> 3; reply "Echo: hello there" = 3 words.
const PROMPT = 6;

describe('simulator: OpenAI format', () => {
  let sim: Simulator;
  before(async () => { sim = await startSimulator(); });
  after(async () => { await sim.close(); });
  beforeEach(() => sim.reset());
  const chat = (body: object, signal?: AbortSignal) => postJson(`${sim.url}/v1/chat/completions`, { messages: USER, ...body }, {}, signal);

  it('answers a chat completion with the echo, exact usage and OpenAI shape', async () => {
    const res = await chat({ model: 'sim/echo' });
    expect(res.status).to.equal(200);
    const body = await res.json();
    assertOpenAI('CreateChatCompletionResponse', body);
    expect(body).to.include({ id: 'chatcmpl-sim-1', object: 'chat.completion', model: 'sim/echo' });
    expect(body.choices).to.deep.equal([{ index: 0, message: { role: 'assistant', content: 'Echo: hello there', refusal: null, annotations: [] }, logprobs: null, finish_reason: 'stop' }]);
    expect(body.usage).to.deep.include({ prompt_tokens: PROMPT, completion_tokens: 3, total_tokens: PROMPT + 3 });
    expect(body.usage.prompt_tokens_details.cached_tokens).to.equal(0);
  });

  it('serves the same API without /v1 and records every call', async () => {
    const res = await postJson(`${sim.url}/chat/completions`, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: [{ type: 'text', text: 'a' }, { type: 'text', text: 'b' }] }] }, { 'x-trace': 't1' });
    expect((await res.json()).choices[0].message.content).to.equal('Echo: a\nb'); // unknown model: echo
    const list = await fetch(`${sim.url}/models`);
    const models = await list.json();
    assertOpenAI('ListModelsResponse', models);
    expect(models.data).to.deep.include({ id: 'sim/tool-call', object: 'model', created: 1_700_000_000, owned_by: 'simulator' });
    expect(sim.calls.map((c) => [c.method, c.path, c.model, c.format])).to.deep.equal([
      ['POST', '/chat/completions', 'gpt-4o-mini', 'openai'],
      ['GET', '/models', undefined, 'openai'],
    ]);
    expect(sim.calls[0].headers['x-trace']).to.equal('t1');
    expect(sim.calls[0].body.messages[0].content[1].text).to.equal('b');
    sim.reset();
    expect(sim.calls).to.have.length(0);
    expect((await (await chat({ model: 'sim/echo' })).json()).id).to.equal('chatcmpl-sim-1');
  });

  it('keeps only the most recent calls when told to, with ids still counting every call', async () => {
    const small = await startSimulator({ keepCalls: 2 });
    try {
      const ids: string[] = [];
      for (let i = 1; i <= 5; i++) {
        const res = await postJson(`${small.url}/v1/chat/completions`, { model: 'sim/echo', messages: [{ role: 'user', content: `n${i}` }] });
        ids.push((await res.json()).id);
      }
      expect(ids).to.deep.equal(['chatcmpl-sim-1', 'chatcmpl-sim-2', 'chatcmpl-sim-3', 'chatcmpl-sim-4', 'chatcmpl-sim-5']);
      // trimmed back to 2 when it reached 4; the fifth call was added since
      expect(small.calls.map((c) => c.body.messages[0].content)).to.deep.equal(['n3', 'n4', 'n5']);
      small.reset();
      expect((await (await postJson(`${small.url}/v1/chat/completions`, { model: 'sim/echo', messages: USER })).json()).id).to.equal('chatcmpl-sim-1');
    } finally {
      await small.close();
    }
  });

  it('streams data: chunks with the role first, a finish chunk, a usage chunk and [DONE]', async () => {
    const res = await chat({ model: 'sim/echo', stream: true, stream_options: { include_usage: true } });
    expect(res.headers.get('content-type')).to.match(/^text\/event-stream/);
    const { events, raw } = await readEvents(res);
    expect(raw.endsWith('\n\ndata: [DONE]\n\n')).to.equal(true);
    expect(raw.split('\n\n').filter(Boolean).every((block) => /^data: [^\n]+$/.test(block))).to.equal(true);
    expect(events.every((e) => e.event === undefined)).to.equal(true);
    expect(events[events.length - 1].data).to.equal('[DONE]');
    const chunks = jsonData(events);
    for (const c of chunks) assertOpenAI('CreateChatCompletionStreamResponse', c);
    expect(chunks[0].choices[0].delta).to.deep.equal({ role: 'assistant', content: '', refusal: null });
    expect(chunks.slice(1, 4).map((c) => c.choices[0].delta.content)).to.deep.equal(['Echo: ', 'hello ', 'there']);
    expect(chunks[4].choices).to.deep.equal([{ index: 0, delta: {}, logprobs: null, finish_reason: 'stop' }]);
    expect(chunks.slice(0, 5).every((c) => c.usage === null && c.id === 'chatcmpl-sim-1')).to.equal(true);
    expect(chunks[5].choices).to.deep.equal([]);
    expect(chunks[5].usage).to.deep.include({ prompt_tokens: PROMPT, completion_tokens: 3, total_tokens: PROMPT + 3 });
    expect(chunks).to.have.length(6);
  });

  it('without include_usage sends no usage field at all', async () => {
    const chunks = jsonData((await readEvents(await chat({ model: 'sim/echo', stream: true }))).events);
    expect(chunks).to.have.length(5);
    expect(chunks.some((c) => 'usage' in c)).to.equal(false);
  });

  it('sim/chunks-N streams w1 … wN and joins them when not streaming', async () => {
    const chunks = jsonData((await readEvents(await chat({ model: 'sim/chunks-4', stream: true }))).events);
    expect(chunks.slice(1, -1).map((c) => c.choices[0].delta.content)).to.deep.equal(['w1 ', 'w2 ', 'w3 ', 'w4 ']);
    const body = await (await chat({ model: 'sim/chunks-4' })).json();
    expect(body.choices[0].message.content).to.equal('w1 w2 w3 w4 ');
    expect(body.usage.completion_tokens).to.equal(4);
  });

  it('sim/chunks-N-every-Mms streams the same chunks M ms apart; not streaming, the joined text at once', async () => {
    const res = await chat({ model: 'sim/chunks-4-every-40ms', stream: true });
    const reader = res.body!.getReader();
    const arrivals: number[] = [];
    let raw = '';
    const t0 = performance.now();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      arrivals.push(performance.now() - t0);
      raw += new TextDecoder().decode(value);
    }
    const chunks = raw.split('\n\n').filter((b) => b.startsWith('data: {')).map((b) => JSON.parse(b.slice(6)));
    expect(chunks.slice(1, -1).map((c) => c.choices[0].delta.content)).to.deep.equal(['w1 ', 'w2 ', 'w3 ', 'w4 ']);
    // role, then 4 texts each 40 ms after the piece before; finish and [DONE] right after the last text
    const span = arrivals[arrivals.length - 1] - arrivals[0];
    expect(span).to.be.at.least(4 * 40 - 10);
    expect(span).to.be.below(5 * 40);
    expect(arrivals.length).to.be.at.least(5);
    const t1 = performance.now();
    const body = await (await chat({ model: 'sim/chunks-4-every-40ms' })).json();
    expect(body.choices[0].message.content).to.equal('w1 w2 w3 w4 ');
    expect(performance.now() - t1).to.be.below(200);
  });

  it('serialises each stream piece when it is written, not the whole answer before the first byte (as a server does)', async () => {
    // The benchmark's upstream: a first byte that waited for the later pieces' JSON counted their cost, 30–50 µs
    // more with include_usage (which the gateway always sends), as the gateway's (docs/PERFORMANCE.md, session 20).
    const stringify = JSON.stringify;
    let made = 0;
    JSON.stringify = ((...args: Parameters<typeof JSON.stringify>) => {
      const out = stringify(...args);
      if (typeof out === 'string' && out.includes('"chat.completion.chunk"')) made++;
      return out;
    }) as typeof JSON.stringify;
    try {
      const res = await chat({ model: 'sim/chunks-4-every-40ms', stream: true, stream_options: { include_usage: true } });
      const reader = res.body!.getReader();
      const first = new TextDecoder().decode((await reader.read()).value);
      expect(first).to.match(/^data: \{.*"role":"assistant"/);
      // the role piece only: the 4 texts (40 ms apart), the finish and the usage piece are not made yet
      expect(made).to.equal(1);
      let raw = first;
      for (let r = await reader.read(); !r.done; r = await reader.read()) raw += new TextDecoder().decode(r.value);
      expect(made).to.equal(7);
      const chunks = raw.split('\n\n').filter((b) => b.startsWith('data: {')).map((b) => JSON.parse(b.slice(6)));
      expect(chunks).to.have.length(7);
      expect(chunks[6]).to.deep.include({ choices: [] });
      expect(chunks[6].usage).to.include({ completion_tokens: 4 });
      expect(raw.endsWith('data: [DONE]\n\n')).to.equal(true);
    } finally {
      JSON.stringify = stringify;
    }
  });

  it('sim/error-<status> answers that status with an OpenAI error body; 429 carries Retry-After: 1', async () => {
    const res = await chat({ model: 'sim/error-429' });
    expect(res.status).to.equal(429);
    expect(res.headers.get('retry-after')).to.equal('1');
    expect((await res.json()).error).to.deep.equal({ message: 'simulated upstream error 429', type: 'requests', code: 'rate_limit_exceeded', param: null });
    const res503 = await chat({ model: 'sim/error-503', stream: true });
    expect(res503.status).to.equal(503);
    expect(res503.headers.get('retry-after')).to.equal(null);
    expect((await res503.json()).error.type).to.equal('server_error');
  });

  it('sim/flaky-K fails K times per model, then echoes; reset() starts over', async () => {
    const statuses = async (model: string, n: number) => {
      const out: number[] = [];
      for (let i = 0; i < n; i++) out.push((await chat({ model })).status);
      return out;
    };
    expect(await statuses('sim/flaky-2', 3)).to.deep.equal([500, 500, 200]);
    expect(await statuses('sim/flaky-1', 2)).to.deep.equal([500, 200]);
    expect(await statuses('sim/flaky-2', 1)).to.deep.equal([200]);
    sim.reset();
    expect(await statuses('sim/flaky-2', 1)).to.deep.equal([500]);
  });

  it('sim/slow-<N>ms answers after the delay; a client that gives up first gets nothing', async () => {
    expect((await (await chat({ model: 'sim/slow-20ms' })).json()).choices[0].message.content).to.equal('Echo: hello there');
    let error: Error | undefined;
    await chat({ model: 'sim/slow-60000ms', stream: true }, AbortSignal.timeout(150)).catch((e) => { error = e; });
    expect(error?.name).to.equal('TimeoutError');
  });

  it('sim/stream-break streams 3 chunks, then the connection dies without [DONE]', async () => {
    const res = await chat({ model: 'sim/stream-break', stream: true });
    expect(res.status).to.equal(200);
    const { events, error } = await readEventsUntilBreak(res);
    expect(error).to.be.instanceOf(Error);
    expect(jsonData(events).slice(1).map((c) => c.choices[0].delta.content)).to.deep.equal(['w1 ', 'w2 ', 'w3 ']);
    expect(events.some((e) => e.data === '[DONE]')).to.equal(false);
    const whole = await chat({ model: 'sim/stream-break' });
    let bodyError: Error | undefined;
    await whole.text().catch((e) => { bodyError = e; });
    expect(bodyError).to.be.instanceOf(Error);
  });

  describe('sim/tool-call', () => {
    const weather = { type: 'function', function: { name: 'search', parameters: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] } } };
    const city = { type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' }, days: { type: 'integer' } }, required: ['days', 'city'] } } };

    it('calls the first tool with {"query":"weather in Paris"}', async () => {
      const body = await (await chat({ model: 'sim/tool-call', tools: [weather, city] })).json();
      assertOpenAI('CreateChatCompletionResponse', body);
      expect(body.choices[0].finish_reason).to.equal('tool_calls');
      expect(body.choices[0].message.content).to.equal(null);
      expect(body.choices[0].message.tool_calls).to.deep.equal([{ id: 'call_sim_1', type: 'function', function: { name: 'search', arguments: '{"query":"weather in Paris"}' } }]);
    });

    it('sets the first required string property to "test" when the tool has no query', async () => {
      const chunks = jsonData((await readEvents(await chat({ model: 'sim/tool-call', tools: [city], stream: true }))).events);
      for (const c of chunks) assertOpenAI('CreateChatCompletionStreamResponse', c);
      expect(chunks[0].choices[0].delta.tool_calls[0]).to.deep.include({ index: 0, id: 'call_sim_1', type: 'function' });
      expect(chunks[0].choices[0].delta.tool_calls[0].function.name).to.equal('get_weather');
      const args = chunks.flatMap((c) => c.choices[0].delta.tool_calls ?? []).map((t: any) => t.function.arguments).join('');
      expect(JSON.parse(args)).to.deep.equal({ city: 'test' });
      expect(chunks[chunks.length - 1].choices[0].finish_reason).to.equal('tool_calls');
    });

    it('answers a tool result with "Tool said: <result>"', async () => {
      const messages = [
        { role: 'user', content: 'weather?' },
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'search', arguments: '{}' } }] },
        { role: 'tool', tool_call_id: 'call_1', content: '18C and sunny' },
      ];
      const body = await (await chat({ model: 'sim/tool-call', tools: [weather], messages })).json();
      expect(body.choices[0]).to.deep.include({ finish_reason: 'stop' });
      expect(body.choices[0].message.content).to.equal('Tool said: 18C and sunny');
      // prompt: "weather?" 2 + assistant "" 0 + "18C and sunny" 4
      expect(body.usage.prompt_tokens).to.equal(6);
    });
  });

  it('sim/keepalive interleaves ": PROCESSING" comments that SSE readers skip', async () => {
    const { events, raw } = await readEvents(await chat({ model: 'sim/keepalive', stream: true }));
    expect(raw.split(': PROCESSING\n\n')).to.have.length(6); // 6 events (role, 3 text, finish, [DONE]), 5 comments between
    expect(jsonData(events).slice(1, -1).map((c) => c.choices[0].delta.content)).to.deep.equal(['Echo: ', 'hello ', 'there']);
  });

  it('sim/usage-with-choices puts usage on the last content chunk, with no separate usage chunk', async () => {
    const chunks = jsonData((await readEvents(await chat({ model: 'sim/usage-with-choices', stream: true, stream_options: { include_usage: true } }))).events);
    const last = chunks[chunks.length - 1];
    assertOpenAI('CreateChatCompletionStreamResponse', last);
    expect(last.choices).to.deep.equal([{ index: 0, delta: { content: 'there' }, logprobs: null, finish_reason: 'stop' }]);
    expect(last.usage).to.deep.include({ prompt_tokens: PROMPT, completion_tokens: 3 });
    expect(chunks.filter((c) => c.usage)).to.have.length(1);
    expect(chunks.some((c) => c.choices.length === 0)).to.equal(false);
  });

  it('sim/cached reports half the prompt tokens as cached', async () => {
    const body = await (await chat({ model: 'sim/cached', messages: [{ role: 'user', content: 'x'.repeat(41) }] })).json();
    expect(body.usage.prompt_tokens).to.equal(11);
    expect(body.usage.prompt_tokens_details.cached_tokens).to.equal(5);
  });

  it('sim/json answers a JSON object carrying the last user text', async () => {
    const body = await (await chat({ model: 'sim/json', messages: [{ role: 'user', content: 'say "hi"' }] })).json();
    expect(JSON.parse(body.choices[0].message.content)).to.deep.equal({ ok: true, echo: 'say "hi"' });
  });

  it('sim/malformed answers 200 with invalid JSON, and a stream with an invalid data line', async () => {
    const res = await chat({ model: 'sim/malformed' });
    expect(res.status).to.equal(200);
    const text = await res.text();
    expect(() => JSON.parse(text)).to.throw(SyntaxError);
    const { events } = await readEvents(await chat({ model: 'sim/malformed', stream: true }));
    const unparseable = events.filter((e) => {
      try {
        JSON.parse(e.data);
        return false;
      } catch {
        return e.data !== '[DONE]';
      }
    });
    expect(unparseable).to.have.length(1);
    expect(events[events.length - 1].data).to.equal('[DONE]');
  });

  it('sim/stop-seq cuts "Hello STOP world" at the first stop sequence found', async () => {
    const content = async (stop?: unknown) => (await (await chat({ model: 'sim/stop-seq', ...(stop !== undefined ? { stop } : {}) })).json()).choices[0];
    expect(await content(['nope', 'STOP'])).to.deep.include({ finish_reason: 'stop', message: { role: 'assistant', content: 'Hello ', refusal: null, annotations: [] } });
    expect((await content('world')).message.content).to.equal('Hello STOP ');
    expect((await content()).message.content).to.equal('Hello STOP world');
  });

  it('sim/length cuts the echo to max_tokens words with finish_reason length', async () => {
    const body = await (await chat({ model: 'sim/length', max_completion_tokens: 2, messages: [{ role: 'user', content: 'one two three' }] })).json();
    expect(body.choices[0]).to.deep.include({ finish_reason: 'length' });
    expect(body.choices[0].message.content).to.equal('Echo: one');
    expect(body.usage.completion_tokens).to.equal(2);
  });

  it('sim/hang never answers; a client timeout ends it', async () => {
    let error: Error | undefined;
    await chat({ model: 'sim/hang' }, AbortSignal.timeout(150)).catch((e) => { error = e; });
    expect(error?.name).to.equal('TimeoutError');
    expect(sim.calls.map((c) => c.model)).to.deep.equal(['sim/hang']);
  });

  it('rejects a body without messages as a 400 OpenAI error', async () => {
    const res = await postJson(`${sim.url}/v1/chat/completions`, { model: 'sim/echo', messages: [] });
    expect(res.status).to.equal(400);
    expect((await res.json()).error).to.deep.include({ type: 'invalid_request_error', param: 'messages' });
    const bad = await fetch(`${sim.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"model":' });
    expect(bad.status).to.equal(400);
    expect((await fetch(`${sim.url}/v1/nothing`)).status).to.equal(404);
  });
});

describe('simulator: keys and shutdown', () => {
  it('checks the Bearer key when started with one', async () => {
    const sim = await startSimulator({ apiKey: 'sk-sim-secret-1234' });
    try {
      const body = { model: 'sim/echo', messages: USER };
      const none = await postJson(`${sim.url}/v1/chat/completions`, body);
      expect(none.status).to.equal(401);
      const wrong = await postJson(`${sim.url}/v1/chat/completions`, body, { authorization: 'Bearer sk-wrong-key-9999' });
      expect(wrong.status).to.equal(401);
      const err = (await wrong.json()).error;
      expect(err).to.deep.include({ type: 'invalid_request_error', code: 'invalid_api_key' });
      expect(err.message).not.to.include('sk-wrong-key-9999');
      const ok = await postJson(`${sim.url}/v1/chat/completions`, body, { authorization: 'Bearer sk-sim-secret-1234' });
      expect(ok.status).to.equal(200);
      expect(sim.calls).to.have.length(3); // refused calls are recorded too
    } finally {
      await sim.close();
    }
  });

  it('close() ends hanging requests and stops listening', async () => {
    const sim = await startSimulator();
    const pending = postJson(`${sim.url}/v1/chat/completions`, { model: 'sim/hang', messages: USER }).then(
      () => 'answered',
      () => 'failed',
    );
    while (!sim.calls.length) await sleep(5);
    await sim.close();
    expect(await pending).to.equal('failed');
    let refused = false;
    await fetch(`${sim.url}/v1/models`).catch(() => { refused = true; });
    expect(refused).to.equal(true);
  });
});

describe('simulator: npm run sim (the CLI)', () => {
  it('prints its URL, serves, and exits cleanly on SIGTERM', async () => {
    const root = fileURLToPath(new URL('../..', import.meta.url));
    const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/simulator.ts', '--port', '0', '--api-key', 'sk-cli'], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] });
    try {
      const url = await new Promise<string>((resolve, reject) => {
        let out = '';
        child.stdout.on('data', (d: Buffer) => {
          out += d.toString();
          const line = out.match(/^(http:\/\/127\.0\.0\.1:\d+)\n/);
          if (line) resolve(line[1]);
        });
        child.once('exit', (code) => reject(new Error(`simulator exited early (${code})`)));
      });
      const res = await fetch(`${url}/v1/models`, { headers: { authorization: 'Bearer sk-cli' } });
      expect((await res.json()).data[0].id).to.equal('sim/echo');
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      child.kill('SIGTERM');
      expect(await exited).to.equal(0);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });
});
