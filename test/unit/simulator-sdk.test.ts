/**
 * The official OpenAI and Anthropic SDKs as clients of the simulator: if its bodies, streams or errors drifted
 * from the real wire formats, these parsers (the ones our users run) would reject or mis-assemble them.
 */
import { expect } from 'chai';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { startSimulator, type Simulator } from '../support/simulator.js';

describe('simulator: official SDKs as clients', () => {
  let sim: Simulator;
  let openai: OpenAI;
  let anthropic: Anthropic;
  before(async () => {
    sim = await startSimulator({ apiKey: 'sk-sdk' });
    openai = new OpenAI({ apiKey: 'sk-sdk', baseURL: `${sim.url}/v1`, maxRetries: 0 });
    anthropic = new Anthropic({ apiKey: 'sk-sdk', baseURL: sim.url, maxRetries: 0 });
  });
  after(async () => { await sim.close(); });
  beforeEach(() => sim.reset());
  const user = [{ role: 'user' as const, content: 'hello there' }];
  const searchTool = { name: 'search', parameters: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] } };

  it('OpenAI SDK: completion, stream with usage, and an assembled streamed tool call', async () => {
    const done = await openai.chat.completions.create({ model: 'sim/echo', messages: user });
    expect(done.choices[0].message.content).to.equal('Echo: hello there');
    const parts: string[] = [];
    let usage: OpenAI.CompletionUsage | undefined | null;
    for await (const chunk of await openai.chat.completions.create({ model: 'sim/chunks-3', messages: user, stream: true, stream_options: { include_usage: true } })) {
      parts.push(chunk.choices[0]?.delta.content ?? '');
      if (chunk.usage) usage = chunk.usage;
    }
    expect(parts.join('')).to.equal('w1 w2 w3 ');
    expect(usage).to.deep.include({ prompt_tokens: 3, completion_tokens: 3 });
    const final = await openai.chat.completions
      .stream({ model: 'sim/tool-call', messages: user, tools: [{ type: 'function', function: searchTool }] })
      .finalChatCompletion();
    expect(final.choices[0].finish_reason).to.equal('tool_calls');
    const call = final.choices[0].message.tool_calls?.[0];
    expect(call?.type === 'function' && call.function).to.deep.equal({ name: 'search', arguments: '{"query":"weather in Paris"}' });
  });

  it('OpenAI SDK: errors surface as typed API errors', async () => {
    let err: unknown;
    await openai.chat.completions.create({ model: 'sim/error-429', messages: user }).catch((e) => { err = e; });
    expect(err).to.be.instanceOf(OpenAI.RateLimitError);
    expect((err as InstanceType<typeof OpenAI.RateLimitError>).headers.get('retry-after')).to.equal('1');
    const bad = new OpenAI({ apiKey: 'sk-wrong', baseURL: sim.url, maxRetries: 0 });
    err = undefined;
    await bad.models.list().catch((e) => { err = e; });
    expect(err).to.be.instanceOf(OpenAI.AuthenticationError);
  });

  it('Anthropic SDK: message, streamed thinking + text, and a streamed tool_use', async () => {
    const msg = await anthropic.messages.create({ model: 'sim/echo', max_tokens: 64, messages: user });
    expect(msg.content).to.deep.equal([{ type: 'text', text: 'Echo: hello there' }]);
    const thought = await anthropic.messages
      .stream({ model: 'sim/echo', max_tokens: 2048, thinking: { type: 'enabled', budget_tokens: 1024 }, messages: user })
      .finalMessage();
    expect(thought.content.map((b) => b.type)).to.deep.equal(['thinking', 'text']);
    expect(thought.content[0]).to.deep.include({ thinking: 'Thinking about: hello there', signature: 'sim-signature' });
    expect(thought.usage.output_tokens).to.equal(7);
    const tool = await anthropic.messages
      .stream({ model: 'sim/tool-call', max_tokens: 64, messages: user, tools: [{ name: 'search', input_schema: searchTool.parameters as Anthropic.Tool.InputSchema }] })
      .finalMessage();
    expect(tool.stop_reason).to.equal('tool_use');
    expect(tool.content[0]).to.deep.include({ type: 'tool_use', name: 'search', input: { query: 'weather in Paris' } });
  });

  it('Anthropic SDK: overloaded and broken streams are errors, not silent truncation', async () => {
    let err: unknown;
    await anthropic.messages.create({ model: 'sim/error-529', max_tokens: 64, messages: user }).catch((e) => { err = e; });
    expect(err).to.be.instanceOf(Anthropic.APIError);
    expect((err as InstanceType<typeof Anthropic.APIError>).status).to.equal(529);
    err = undefined;
    await anthropic.messages.stream({ model: 'sim/stream-break', max_tokens: 64, messages: user }).finalMessage().catch((e) => { err = e; });
    expect(err).to.be.instanceOf(Error);
    const models = await anthropic.models.list();
    expect(models.data[0]).to.deep.include({ id: 'sim/echo', type: 'model' });
  });
});
