import type { Kysely } from 'kysely';
import type { Database, GatewayInstancesTable } from './schema.js';

export type InstanceRow = GatewayInstancesTable;

/** Running gateway processes (one row per process start), for crash recovery of credit holds. */
export class InstanceRepo {
  constructor(private readonly db: Kysely<Database>) {}

  async register(row: Omit<InstanceRow, 'stopped_at'>): Promise<void> {
    await this.db.insertInto('gateway_instances').values({ ...row, stopped_at: null }).execute();
  }

  async heartbeat(id: string, at: number): Promise<void> {
    await this.db.updateTable('gateway_instances').set({ heartbeat_at: at }).where('id', '=', id).execute();
  }

  async markStopped(id: string, at: number): Promise<void> {
    await this.db.updateTable('gateway_instances').set({ stopped_at: at, heartbeat_at: at }).where('id', '=', id).execute();
  }

  async get(ids: string[]): Promise<InstanceRow[]> {
    if (!ids.length) return [];
    const rows = await this.db.selectFrom('gateway_instances').selectAll().where('id', 'in', ids).execute();
    return rows.map((r) => ({ ...r, pid: Number(r.pid), started_at: Number(r.started_at), heartbeat_at: Number(r.heartbeat_at),
      stopped_at: r.stopped_at === null ? null : Number(r.stopped_at) }));
  }

  /** Forgets instances that stopped or went silent before `before` (kept a while for diagnosis). */
  async prune(before: number): Promise<number> {
    const res = await this.db.deleteFrom('gateway_instances').where('heartbeat_at', '<', before).executeTakeFirst();
    return Number(res.numDeletedRows);
  }
}
