/**
 * The gateway as a real HTTP server in front of the upstream simulator, with a fixture catalog of image and
 * transcription models at round prices, for the media tests (the official OpenAI SDK is the client).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import { startTestGateway, type TestGateway } from './app.js';
import { startSimulator, type Simulator } from './simulator.js';
import { audioOffer, fixtureCatalog, gw, imageOffer, offer } from './catalog.js';
import type { TestDialect } from './db.js';

export interface MediaStack {
  sim: Simulator;
  gateway: TestGateway;
  /** `http://127.0.0.1:PORT` of the gateway (no /v1). */
  origin: string;
  client(apiKey: string): OpenAI;
  close(): Promise<void>;
}

export async function startMediaStack(opts: { env?: Record<string, string>; dialect?: TestDialect } = {}): Promise<MediaStack> {
  const sim = await startSimulator({ apiKey: 'sim-key' });
  const url = `${sim.url}/v1`;
  const catalog = fixtureCatalog({
    gateways: [
      { ...gw('openai'), url }, { ...gw('together'), url }, { ...gw('deepinfra'), url }, { ...gw('groq'), url },
      { ...gw('anthropic', 'anthropic'), url }, { ...gw('google', 'gemini'), url }, { ...gw('xai') /* no key: not configured */ },
    ],
    offers: [
      imageOffer('openai', 'dall-e-3', 'openai/dall-e-3', 0.04),
      imageOffer('openai', 'dall-e-2', 'openai/dall-e-2', 0.02),
      imageOffer('openai', 'gpt-image-1', 'openai/gpt-image-1', 0.04),
      // failover: together fails, deepinfra serves (both OpenAI-compatible, default image profile)
      imageOffer('together', 'sim/error-500', 'test/flux', 0.01),
      imageOffer('deepinfra', 'sim/echo', 'test/flux', 0.01),
      imageOffer('openai', 'sim/error-500', 'test/image-broken', 0.01),
      imageOffer('openai', 'sim/error-400', 'test/image-refused', 0.01),
      imageOffer('google', 'imagen-3.0-generate-002', 'google/imagen-3', 0.03),
      imageOffer('xai', 'grok-2-image', 'xai/grok-2-image', 0.07),
      imageOffer('anthropic', 'sim/echo', 'test/anthropic-image', 0.01),
      audioOffer('openai', 'whisper-1', 'openai/whisper-1', 0.006),
      audioOffer('groq', 'whisper-large-v3', 'openai/whisper-large-v3', 0.02),
      audioOffer('openai', 'sim/error-500', 'test/whisper-broken', 0.006),
      audioOffer('anthropic', 'sim/echo', 'test/anthropic-audio', 0.006),
      offer('openai', 'sim/echo', 'test/echo'),
    ],
  });
  const gateway = await startTestGateway({
    dialect: opts.dialect,
    services: { models: catalog },
    env: { GOOGLE_VERTEX_BASE_URL: sim.url, GOOGLE_VERTEX_ACCESS_TOKEN: 'sim-key', GOOGLE_VERTEX_LOCATION: 'us-central1', ...opts.env },
  });
  const server = gateway.app.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    sim, gateway, origin,
    client: (apiKey) => new OpenAI({ apiKey, baseURL: `${origin}/v1`, maxRetries: 0 }),
    async close() {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
      await gateway.close();
      await sim.close();
    },
  };
}
