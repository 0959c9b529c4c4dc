/**
 * An end-to-end rig: the upstream simulator, a gateway over a fixture catalog whose gateways point at it, served
 * on a real port (127.0.0.1, port 0) so official SDKs can be the clients.
 */
import type { AddressInfo } from 'node:net';
import { startTestGateway, type TestGateway } from './app.js';
import { startSimulator, type Simulator } from './simulator.js';
import { fixtureCatalog, gw } from './catalog.js';
import type { Offer, WireFormat } from '../../src/catalog/types.js';
import type { Services } from '../../src/services.js';
import type { TestDialect } from './db.js';

export const SIM_KEY = 'sim-key';

export interface E2E {
  sim: Simulator;
  gateway: TestGateway;
  /** `http://127.0.0.1:PORT` (no `/v1`). */
  origin: string;
  close(): Promise<void>;
}

/**
 * `gateways` maps a real gateway id to its wire format. OpenAI-compatible ones get the simulator's `/v1` root,
 * Anthropic and Gemini its bare origin — each as that provider's SDK takes its base URL.
 */
export async function startE2E(opts: {
  gateways: Record<string, WireFormat>;
  offers: Offer[];
  env?: Record<string, string>;
  services?: Partial<Services>;
  sim?: Simulator;
  dialect?: TestDialect;
}): Promise<E2E> {
  const sim = opts.sim ?? (await startSimulator({ apiKey: SIM_KEY }));
  const catalog = fixtureCatalog({
    gateways: Object.entries(opts.gateways).map(([id, format]) => ({ ...gw(id, format), url: format === 'openai' ? `${sim.url}/v1` : sim.url, key: SIM_KEY })),
    offers: opts.offers,
  });
  const gateway = await startTestGateway({ dialect: opts.dialect, env: opts.env, services: { models: catalog, ...opts.services } });
  const server = gateway.app.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    sim, gateway, origin,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
      await gateway.close();
      if (!opts.sim) await sim.close();
    },
  };
}

export async function usageRows(gateway: TestGateway, userId: number) {
  await gateway.services.recorder.flush();
  return gateway.store.usage.forUser(userId);
}

/** A raw POST /v1/messages as a non-SDK Anthropic client sends it (to the gateway, or to the simulator directly). */
export function postMessages(origin: string, body: unknown, headers: Record<string, string>): Promise<Response> {
  return fetch(`${origin}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', ...headers }, body: JSON.stringify(body) });
}
