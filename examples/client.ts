/**
 * The typed client (model-gateway/client) in a few calls. With `npm run demo` running in another shell:
 *
 *   GATEWAY_URL=http://127.0.0.1:8000 GATEWAY_KEY=gw_live_… node --import tsx examples/client.ts
 *
 * (the demo prints both values). GATEWAY_MODEL picks the chat model; the default is the demo's simulated echo
 * model through the openai gateway. Every path, body and field below is checked by `tsc` against the spec.
 */
import { createGatewayClient, unwrap, GatewayError, type Schemas } from 'model-gateway/client';

const baseUrl = process.env.GATEWAY_URL ?? 'http://localhost:8000';
const apiKey = process.env.GATEWAY_KEY;
const model = process.env.GATEWAY_MODEL ?? 'openai/sim/echo';
if (!apiKey) {
  console.error('GATEWAY_KEY is not set: make a key with `npm run keys -- create --name me --credits 1`, or run `npm run demo`');
  process.exit(2);
}
const gw = createGatewayClient({ baseUrl, apiKey });

// Public: liveness and the gateways the catalog knows.
const health = unwrap(await gw.GET('/health'));
console.log(`health: ${health.status}, interface ${health.version}`);
const { gateways } = unwrap(await gw.GET('/v1/gateways'));
console.log(`gateways: ${gateways.filter((g) => g.configured).map((g) => g.id).join(', ') || 'none configured'}`);

// A chat session, and a completion saved to it (session_id is a typed query parameter).
const session = unwrap(await gw.POST('/v1/chat/sessions', { body: { title: 'Typed client example' } })).data;
const completion: Schemas['ChatCompletion'] = unwrap(await gw.POST('/v1/chat/completions', {
  params: { query: { session_id: session.id } },
  body: { model, messages: [{ role: 'user', content: 'Hello from the typed client' }], max_tokens: 50 },
}));
console.log(`reply: ${completion.choices[0].message.content}`);
console.log(`served by: ${completion.gateway_usage?.gateway}, cost ${completion.gateway_usage?.cost_usd} USD`);
const saved = unwrap(await gw.GET('/v1/chat/sessions/{session_id}', { params: { path: { session_id: session.id } } })).data;
console.log(`session ${saved.id} "${saved.title}": ${(saved.messages ?? []).map((m) => m.role).join(', ')}`);

// Error answers keep their status and the spec's error body.
try {
  unwrap(await gw.POST('/v1/chat/completions', { body: { model, messages: [] } }));
} catch (err) {
  if (!(err instanceof GatewayError)) throw err;
  console.log(`rejected: ${err.status} ${err.message}`);
}
