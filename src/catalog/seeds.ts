/**
 * Seed data (seeds/*.json): gateways, model developers, routers and the catalog snapshot of model offers.
 * The gateway answers catalog queries from these alone, offline; discovery merges live model lists on top.
 */
import fs from 'node:fs';
import path from 'node:path';
import { ROOT } from '../paths.js';
import type { GatewayInfo, Offer } from './types.js';

export const DEFAULT_SEEDS_DIR = path.join(ROOT, 'seeds');

/** A catalog offer: the engine's Offer plus what the catalog operations show. */
export interface CatalogOffer extends Offer {
  /** Model family key (e.g. `claude-sonnet`), for low-latency alternatives; null if none. */
  family: string | null;
  description: string | null;
  openWeights: boolean;
  /** Reachable only through this operator (local server, fine-tune, private deployment). */
  isPrivate: boolean;
  /** False when deprecated upstream or disabled by the operator. */
  isActive: boolean;
  /** `YYYY-MM-DD`, null if unknown. */
  releaseDate: string | null;
  /** 0..100 from a public benchmark; null when none is known (never invented). */
  qualityScore: number | null;
}

/** A model developer (the `provider` of the provider list). */
export interface DeveloperInfo {
  slug: string;
  name: string;
  siteUrl: string | null;
  logoUrl: string | null;
  /** Its first-party API filters content before the model (shown as `moderated`). */
  moderated: boolean;
}

export type RouterMode = 'cheapest' | 'fastest' | 'balanced' | 'reliable';

/** An intelligent router: a mode of ordering candidate offers, selected by `router:<id>` or an alias. */
export interface RouterInfo {
  id: string;
  name: string;
  description: string;
  mode: RouterMode;
  /** Other words after `router:` that select this router (`router:cheap`). */
  aliases: string[];
  useCases: string[];
}

export interface Seeds {
  gateways: GatewayInfo[];
  developers: DeveloperInfo[];
  routers: RouterInfo[];
  offers: CatalogOffer[];
}

const MODES: RouterMode[] = ['cheapest', 'fastest', 'balanced', 'reliable'];

function readJson<T>(dir: string, file: string): T {
  // A custom seeds directory (tests, operators) may hold only some files; the rest come from the defaults.
  const own = path.join(dir, file);
  const src = fs.existsSync(own) ? own : path.join(DEFAULT_SEEDS_DIR, file);
  return JSON.parse(fs.readFileSync(src, 'utf8')) as T;
}

/** Loads and checks the seeds; a broken seed file stops start-up with a message naming it. */
export function loadSeeds(dir = DEFAULT_SEEDS_DIR): Seeds {
  const seeds: Seeds = {
    gateways: readJson<GatewayInfo[]>(dir, 'gateways.json'),
    developers: readJson<DeveloperInfo[]>(dir, 'providers.json'),
    routers: readJson<RouterInfo[]>(dir, 'routers.json'),
    offers: readJson<CatalogOffer[]>(dir, 'models.json'),
  };
  checkSeeds(seeds);
  return seeds;
}

export function checkSeeds(seeds: Seeds): void {
  const ids = new Set<string>();
  for (const g of seeds.gateways) {
    for (const name of [g.id, ...g.aliases]) {
      if (ids.has(name)) throw new Error(`seeds/gateways.json: gateway id or alias "${name}" is used twice`);
      ids.add(name);
    }
  }
  for (const r of seeds.routers) {
    if (!MODES.includes(r.mode)) throw new Error(`seeds/routers.json: router ${r.id} has unknown mode ${r.mode}`);
  }
  const keys = new Set<string>();
  for (const o of seeds.offers) {
    if (!seeds.gateways.some((g) => g.id === o.gateway)) throw new Error(`seeds/models.json: offer ${o.upstreamModel} names unknown gateway ${o.gateway}`);
    if (!/^[^/]+\/[^/]+$/.test(o.modelId)) throw new Error(`seeds/models.json: model id ${o.modelId} is not developer/model`);
    const k = `${o.gateway}\u0000${o.upstreamModel}`;
    if (keys.has(k)) throw new Error(`seeds/models.json: ${o.gateway} ${o.upstreamModel} appears twice`);
    keys.add(k);
  }
}
