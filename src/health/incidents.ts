/**
 * Incidents: periods during which a model was `unhealthy` on a gateway. Status is derived from the calls, so
 * incidents are opened and resolved by re-evaluating it: right after each batch of calls is written (for the
 * pairs with a failed call in the batch, and every pair with an open incident: only a failure can open one,
 * src/health/service.ts) and once a minute for the pairs with an open incident (a status also changes when old
 * calls leave the 24 h window). A partial unique index keeps one open incident per pair across instances.
 */
import type { Kysely } from 'kysely';
import type { Database } from '../store/schema.js';
import { queryRecords } from './records.js';

export interface Pair {
  gateway: string;
  model: string;
}

export interface IncidentView {
  id: string;
  started_at: string;
  resolved_at: string | null;
  status: 'ongoing' | 'resolved';
  error_message: string | null;
}

/** A pair's key in maps of pairs. */
export const pairKey = (p: Pair) => `${p.gateway}\u0000${p.model}`;

export class IncidentTracker {
  constructor(private readonly db: Kysely<Database>, private readonly clock: () => number) {}

  /**
   * Re-evaluates `pairs` (plus every pair with an open incident). `afterCalls`: the evaluation follows newly
   * written calls, so a change of status happened at the pair's last call; otherwise (a sweep) it is dated now.
   */
  async reconcile(pairs: Pair[] = [], afterCalls = false): Promise<void> {
    const now = this.clock();
    const open = await this.db.selectFrom('health_incidents').select(['id', 'gateway', 'model', 'started_at', 'error_message'])
      .where('resolved_at', 'is', null).execute();
    const wanted = new Map<string, Pair>();
    for (const p of [...pairs, ...open]) wanted.set(pairKey(p), { gateway: p.gateway, model: p.model });
    if (!wanted.size) return;
    const openBy = new Map(open.map((o) => [pairKey(o), o]));
    const { rows } = await queryRecords(this.db, now, { models: [...new Set([...wanted.values()].map((p) => p.model))] });
    for (const r of rows) {
      if (!wanted.has(pairKey(r))) continue;
      const inc = openBy.get(pairKey(r));
      if (r.status === 'unhealthy' && !inc) {
        await this.db.insertInto('health_incidents').values({
          gateway: r.gateway, model: r.model, provider: r.provider, started_at: afterCalls ? r.last_checked : now,
          resolved_at: null, error_message: r.last_error,
        }).onConflict((oc) => oc.columns(['gateway', 'model']).where('resolved_at', 'is', null).doNothing()).execute();
      } else if (r.status === 'unhealthy' && inc && inc.error_message !== r.last_error) {
        await this.db.updateTable('health_incidents').set({ error_message: r.last_error }).where('id', '=', inc.id).execute();
      } else if (r.status !== 'unhealthy' && inc) {
        const at = afterCalls && r.last_checked > Number(inc.started_at) ? r.last_checked : now;
        await this.db.updateTable('health_incidents').set({ resolved_at: at })
          .where('id', '=', inc.id).where('resolved_at', 'is', null).execute();
      }
    }
  }

  /** Incidents of a pair that were open at some time since `since`, newest first. */
  async list(pair: Pair, since: number, limit: number): Promise<IncidentView[]> {
    const rows = await this.db.selectFrom('health_incidents').selectAll()
      .where('gateway', '=', pair.gateway).where('model', '=', pair.model)
      .where((eb) => eb.or([eb('resolved_at', 'is', null), eb('resolved_at', '>=', since)]))
      .orderBy('started_at', 'desc').orderBy('id', 'desc').limit(limit).execute();
    const iso = (t: unknown) => new Date(Number(t)).toISOString();
    return rows.map((r) => ({
      id: String(r.id), started_at: iso(r.started_at), resolved_at: r.resolved_at === null ? null : iso(r.resolved_at),
      status: r.resolved_at === null ? 'ongoing' : 'resolved', error_message: r.error_message,
    }));
  }
}
