/**
 * Run in a fresh process by test/unit/spec-strings.test.ts. V8 interns a name once, the first time it becomes a
 * property name, and every later use of it gets that string, so what the spec's loading interns shows only in a
 * process where nothing interned those names before: here, as in src/main.ts, the gateway's modules are loaded
 * and the spec is the first thing read. Prints what it found as JSON.
 */
import '../../src/app.js';
import { loadSpec } from '../../src/spec.js';
import { BEYOND_LATIN1, stored, strings } from './v8-strings.js';

const all = strings(loadSpec().doc);
const twoByte = all.filter((s) => stored(s) === 'two-byte');
// names the spec and the code share, as the stream writer and the completion serialise them
const chunk = JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null, logprobs: null }] });
const usage = JSON.stringify({ usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3, prompt_tokens_details: { cached_tokens: 0 }, completion_tokens_details: { reasoning_tokens: 0 } }, gateway_usage: { cost: 0 } });
console.log(JSON.stringify({
  strings: all.length,
  twoByteFitting: twoByte.filter((s) => !BEYOND_LATIN1.test(s)).slice(0, 20),
  chunk: stored(chunk),
  usage: stored(usage),
}));
