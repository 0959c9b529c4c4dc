/**
 * The status rules above model level, as the spec writes them (ProviderHealth, SystemHealth, StatusOverview).
 * Pure functions over counts, so every boundary is unit-tested without a database.
 */
import type { HealthStatus } from './records.js';

export type ProviderStatus = 'online' | 'degraded' | 'outage' | 'unknown';
export type SystemStatus = 'healthy' | 'degraded' | 'unhealthy' | 'unknown';
export type OverviewStatus = 'operational' | 'degraded' | 'partial_outage' | 'major_outage';

export interface StatusCounts {
  healthy: number;
  degraded: number;
  unhealthy: number;
  unknown: number;
}

export function countStatuses(statuses: HealthStatus[]): StatusCounts {
  const c: StatusCounts = { healthy: 0, degraded: 0, unhealthy: 0, unknown: 0 };
  for (const s of statuses) c[s] += 1;
  return c;
}

/**
 * Models with status `unknown` are ignored. `unknown` = none known; `outage` = every known one unhealthy;
 * `degraded` = at least one unhealthy, or more than 25 % of the known ones degraded; `online` otherwise.
 */
export function providerStatus(c: StatusCounts): ProviderStatus {
  const known = c.healthy + c.degraded + c.unhealthy;
  if (known === 0) return 'unknown';
  if (c.unhealthy === known) return 'outage';
  if (c.unhealthy > 0 || c.degraded * 4 > known) return 'degraded';
  return 'online';
}

/** Providers `unknown` are ignored: unknown if none known; unhealthy if all in outage; degraded if any degraded or in outage. */
export function systemStatus(providers: ProviderStatus[]): SystemStatus {
  const known = providers.filter((p) => p !== 'unknown');
  if (!known.length) return 'unknown';
  if (known.every((p) => p === 'outage')) return 'unhealthy';
  if (known.some((p) => p === 'degraded' || p === 'outage')) return 'degraded';
  return 'healthy';
}

/**
 * The public status page headline. Providers `unknown` are ignored: `operational` when none is degraded or in
 * outage (also with no data); `degraded` when some are degraded and none in outage; `partial_outage` when some
 * but no more than half are in outage; `major_outage` when more than half are.
 */
export function overviewStatus(providers: ProviderStatus[]): OverviewStatus {
  const known = providers.filter((p) => p !== 'unknown');
  const outage = known.filter((p) => p === 'outage').length;
  if (outage * 2 > known.length) return 'major_outage';
  if (outage > 0) return 'partial_outage';
  if (known.some((p) => p === 'degraded')) return 'degraded';
  return 'operational';
}

export const OVERVIEW_MESSAGES: Record<OverviewStatus, string> = {
  operational: 'All systems operational',
  degraded: 'Some models are degraded',
  partial_outage: 'Partial outage: some providers are down',
  major_outage: 'Major outage: most providers are down',
};

/** The status page's word for a provider status. */
export const publicProviderStatus = (s: ProviderStatus) => (s === 'online' ? 'operational' : s);
