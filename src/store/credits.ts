import { sql, type Kysely, type Transaction } from 'kysely';
import type { Database } from './schema.js';

/** 1 USD = 1e9 nano-USD. */
export const NANO = 1_000_000_000;
export const usdToNano = (usd: number): number => Math.round(usd * NANO);
export const nanoToUsd = (nano: number): number => nano / NANO;

const now = () => new Date().toISOString();

/**
 * Credit balances and their ledger. Invariant: for every user, the sum of ledger deltas equals the balance
 * (balances start at zero and only change together with a ledger row in one transaction). A request holds its
 * worst-case cost with a conditional decrement (`where balance >= amount`), so concurrent requests can never
 * spend below zero, then settles the real cost and gives back the rest.
 */
export class CreditRepo {
  private instanceId: string | null = null;

  /** `rowLocks`: PostgreSQL needs `select … for update`; SQLite serialises writers already. */
  constructor(private readonly db: Kysely<Database>, private readonly rowLocks: boolean) {}

  /**
   * Holds made from now on carry this process's instance id, so another process can release them at once if
   * this one dies (src/reliability/instances.ts). Set once at start-up.
   */
  bindInstance(instanceId: string): void {
    this.instanceId = instanceId;
  }

  async balance(userId: number): Promise<number> {
    const row = await this.db.selectFrom('credit_balances').select('balance_nano').where('user_id', '=', userId).executeTakeFirst();
    return row ? Number(row.balance_nano) : 0;
  }

  async ledgerSum(userId: number): Promise<number> {
    const row = await this.db.selectFrom('credit_ledger').select(sql<number>`coalesce(sum(delta_nano), 0)`.as('s'))
      .where('user_id', '=', userId).executeTakeFirstOrThrow();
    return Number(row.s);
  }

  async ledger(userId: number) {
    return (await this.db.selectFrom('credit_ledger').selectAll().where('user_id', '=', userId).orderBy('id').execute())
      .map((r) => ({ ...r, id: Number(r.id), delta_nano: Number(r.delta_nano) }));
  }

  /** Adds (or, negative, removes down to zero) credits; returns the new balance. */
  async grant(userId: number, amountNano: number, reference: string | null = null): Promise<number> {
    return this.db.transaction().execute(async (trx) => {
      await ensureRow(trx, userId);
      const current = await lockBalance(trx, userId, this.rowLocks);
      const delta = amountNano >= 0 ? amountNano : -Math.min(-amountNano, current);
      await applyDelta(trx, userId, delta, amountNano >= 0 ? 'grant' : 'adjust', reference);
      return current + delta;
    });
  }

  /** Holds `amountNano` for a request; false when the balance cannot cover it. */
  async hold(userId: number, holdId: string, amountNano: number, ttlMs: number): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      const res = await trx.updateTable('credit_balances')
        .set({ balance_nano: sql`balance_nano - ${amountNano}`, updated_at: now() })
        .where('user_id', '=', userId).where('balance_nano', '>=', amountNano).executeTakeFirst();
      if (Number(res.numUpdatedRows) === 0) return false;
      const t = Date.now();
      await trx.insertInto('credit_holds').values({ id: holdId, user_id: userId, amount_nano: amountNano, created_at: t, expires_at: t + ttlMs, settled_at: null, instance_id: this.instanceId }).execute();
      await trx.insertInto('credit_ledger').values({ user_id: userId, delta_nano: -amountNano, kind: 'hold', reference: holdId, created_at: now() }).execute();
      return true;
    });
  }

  /**
   * Settles a hold at the real cost: gives back `held - actual`, or takes the excess when the real cost
   * exceeded the hold (never below zero). Returns the amount actually charged; settling twice is a no-op (0).
   */
  async settle(holdId: string, actualNano: number): Promise<number> {
    return this.db.transaction().execute(async (trx) => {
      const hold = await trx.selectFrom('credit_holds').select(['user_id', 'amount_nano'])
        .where('id', '=', holdId).where('settled_at', 'is', null).executeTakeFirst();
      if (!hold) return 0;
      const claimed = await trx.updateTable('credit_holds').set({ settled_at: Date.now() })
        .where('id', '=', holdId).where('settled_at', 'is', null).executeTakeFirst();
      if (Number(claimed.numUpdatedRows) === 0) return 0;
      const userId = Number(hold.user_id);
      const held = Number(hold.amount_nano);
      let delta = held - actualNano;
      if (delta < 0) {
        const current = await lockBalance(trx, userId, this.rowLocks);
        delta = -Math.min(-delta, current);
      }
      if (delta !== 0) await applyDelta(trx, userId, delta, actualNano === 0 ? 'release' : 'settle', holdId);
      return held - delta;
    });
  }

  release(holdId: string): Promise<number> {
    return this.settle(holdId, 0);
  }

  /** Releases holds left open past their expiry (a crashed process); returns how many. */
  async releaseExpired(at = Date.now()): Promise<number> {
    const open = await this.db.selectFrom('credit_holds').select('id').where('settled_at', 'is', null)
      .where('expires_at', '<', at).execute();
    for (const h of open) await this.release(h.id);
    return open.length;
  }

  /** Instances (other than `except`) that have open holds. */
  async holdingInstances(except: string): Promise<string[]> {
    const rows = await this.db.selectFrom('credit_holds').select('instance_id').distinct()
      .where('settled_at', 'is', null).where('instance_id', 'is not', null).where('instance_id', '!=', except).execute();
    return rows.map((r) => r.instance_id as string);
  }

  /** Releases every open hold made by `instanceId` (a dead process, or this one at the end of a clean stop). */
  async releaseInstance(instanceId: string): Promise<number> {
    const open = await this.db.selectFrom('credit_holds').select('id').where('settled_at', 'is', null)
      .where('instance_id', '=', instanceId).execute();
    for (const h of open) await this.release(h.id);
    return open.length;
  }

  /** Open holds of every user (or of one), for reconciliation checks. */
  async openHoldCount(userId?: number): Promise<number> {
    let q = this.db.selectFrom('credit_holds').select(sql<number>`count(*)`.as('n')).where('settled_at', 'is', null);
    if (userId !== undefined) q = q.where('user_id', '=', userId);
    return Number((await q.executeTakeFirstOrThrow()).n);
  }

  async openHolds(userId: number): Promise<number> {
    const row = await this.db.selectFrom('credit_holds').select(sql<number>`count(*)`.as('n'))
      .where('user_id', '=', userId).where('settled_at', 'is', null).executeTakeFirstOrThrow();
    return Number(row.n);
  }
}

async function ensureRow(trx: Transaction<Database>, userId: number) {
  await trx.insertInto('credit_balances').values({ user_id: userId, balance_nano: 0, updated_at: now() })
    .onConflict((oc) => oc.column('user_id').doNothing()).execute();
}

async function lockBalance(trx: Transaction<Database>, userId: number, rowLocks: boolean): Promise<number> {
  let q = trx.selectFrom('credit_balances').select('balance_nano').where('user_id', '=', userId);
  if (rowLocks) q = q.forUpdate();
  const row = await q.executeTakeFirst();
  return row ? Number(row.balance_nano) : 0;
}

async function applyDelta(trx: Transaction<Database>, userId: number, delta: number, kind: string, reference: string | null) {
  await trx.updateTable('credit_balances').set({ balance_nano: sql`balance_nano + ${delta}`, updated_at: now() })
    .where('user_id', '=', userId).execute();
  await trx.insertInto('credit_ledger').values({ user_id: userId, delta_nano: delta, kind, reference, created_at: now() }).execute();
}
