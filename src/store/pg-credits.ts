/**
 * Credit holds and settles on PostgreSQL, in a group commit. Each one changes its caller's balance row, so under
 * load they queue on that row's lock and on one WAL flush per commit; and a transaction that updated the same
 * row once per write would walk a longer version chain with every update. So the writes queued while the
 * previous batch ran are applied together: one transaction locks the balances (in user order, so batches of two
 * instances cannot deadlock) and the open holds being settled, applies the writes in their queue order in memory
 * — the same rules as the one-statement forms below — and writes the outcome with a handful of set-based
 * statements. Each write resolves once its batch has committed. One batch runs at a time.
 *
 * A batch that fails (a lost connection, a conflict) is rolled back and each write runs on its own as one
 * statement, so one failing write rejects alone. Statements are named, so each connection plans them once.
 */
import type pg from 'pg';

interface HoldOp {
  kind: 'hold';
  userId: number;
  holdId: string;
  amount: number;
  createdAt: number;
  expiresAt: number;
  instanceId: string | null;
  resolve: (ok: boolean) => void;
  reject: (e: unknown) => void;
}

interface SettleOp {
  kind: 'settle';
  holdId: string;
  actual: number;
  resolve: (charged: number) => void;
  reject: (e: unknown) => void;
}

type Op = HoldOp | SettleOp;

/** At most this many writes in one transaction (the rest wait for the next). */
const MAX_BATCH = 512;

const now = () => new Date().toISOString();

/** The hold in one statement: the conditional debit and the hold row, all or nothing (no ledger row: CreditRepo). */
const HOLD_ONE = `with debit as (
    update credit_balances set balance_nano = balance_nano - $1::bigint, updated_at = $2
    where user_id = $3 and balance_nano >= $1::bigint returning user_id, balance_nano
  ), hold as (
    insert into credit_holds (id, user_id, amount_nano, created_at, expires_at, settled_at, instance_id)
    select $4, user_id, $1::bigint, $5, $6, null, $7 from debit
  )
  select count(*)::int as n, max(balance_nano) as balance from debit`;

/**
 * The settle in one statement: claim the open hold, lock the balance, give back (or take, never below zero) the
 * difference and write the charge's ledger row (none when nothing was charged). No row when the hold was already
 * settled.
 */
const SETTLE_ONE = `with claimed as (
    delete from credit_holds where id = $1 and settled_at is null returning user_id, amount_nano
  ), cur as (
    select b.user_id, b.balance_nano, c.amount_nano from credit_balances b join claimed c on c.user_id = b.user_id for update of b
  ), delta as (
    select user_id, amount_nano, balance_nano,
      case when amount_nano >= $2::bigint then amount_nano - $2::bigint else -least($2::bigint - amount_nano, balance_nano) end as d
    from cur
  ), applied as (
    update credit_balances b set balance_nano = b.balance_nano + delta.d, updated_at = $3
    from delta where b.user_id = delta.user_id and delta.d <> 0
  ), ledger as (
    insert into credit_ledger (user_id, delta_nano, kind, reference, created_at)
    select user_id, d - amount_nano, 'charge', $1, $3 from delta where amount_nano - d <> 0
  )
  select amount_nano - d as charged, user_id, balance_nano + d as balance from delta`;

export class PgCredits {
  private queue: Op[] = [];
  private running = false;

  /** Told each balance a committed write left (a hint for CreditRepo.likelyCovers). */
  onBalance: ((userId: number, balance: number) => void) | undefined;

  constructor(private readonly pool: pg.Pool) {}

  hold(userId: number, holdId: string, amount: number, ttlMs: number, instanceId: string | null): Promise<boolean> {
    const t = Date.now();
    return new Promise((resolve, reject) => this.enqueue({ kind: 'hold', userId, holdId, amount, createdAt: t, expiresAt: t + ttlMs, instanceId, resolve, reject }));
  }

  settle(holdId: string, actual: number): Promise<number> {
    return new Promise((resolve, reject) => this.enqueue({ kind: 'settle', holdId, actual, resolve, reject }));
  }

  private enqueue(op: Op): void {
    this.queue.push(op);
    if (this.running) return;
    this.running = true;
    setImmediate(() => void this.drain());
  }

  private async drain(): Promise<void> {
    try {
      while (this.queue.length) await this.commit(this.queue.splice(0, MAX_BATCH));
    } finally {
      this.running = false;
      if (this.queue.length) {
        this.running = true;
        setImmediate(() => void this.drain());
      }
    }
  }

  private async commit(ops: Op[]): Promise<void> {
    if (ops.length === 1) return this.alone(ops[0]);
    let results: Array<boolean | number>;
    try {
      results = await this.applyBatch(ops);
    } catch {
      for (const op of ops) await this.alone(op);
      return;
    }
    ops.forEach((op, i) => (op.resolve as (v: boolean | number) => void)(results[i]));
  }

  /** One write as its one-statement form. */
  private async alone(op: Op): Promise<void> {
    try {
      const at = now();
      if (op.kind === 'hold') {
        const { rows } = await this.pool.query({ name: 'gw_hold_one', text: HOLD_ONE,
          values: [op.amount, at, op.userId, op.holdId, op.createdAt, op.expiresAt, op.instanceId] });
        const held = Number(rows[0]?.n ?? 0) > 0;
        this.onBalance?.(op.userId, held ? Number(rows[0].balance) : NaN);
        op.resolve(held);
      } else {
        const { rows } = await this.pool.query({ name: 'gw_settle_one', text: SETTLE_ONE,
          values: [op.holdId, op.actual, at] });
        if (rows.length) this.onBalance?.(Number(rows[0].user_id), Number(rows[0].balance));
        op.resolve(rows.length ? Number(rows[0].charged) : 0);
      }
    } catch (err) {
      op.reject(err);
    }
  }

  private async applyBatch(ops: Op[]): Promise<Array<boolean | number>> {
    const client = await this.pool.connect();
    let broken = false;
    try {
      await client.query('begin');
      // The open holds being settled, locked: a concurrent settle of the same hold elsewhere waits, then finds it
      // gone (a settle deletes its hold).
      const settleIds = [...new Set(ops.filter((o): o is SettleOp => o.kind === 'settle').map((o) => o.holdId))];
      const open = new Map<string, { userId: number; amount: number }>();
      if (settleIds.length) {
        const { rows } = await client.query({ name: 'gw_batch_claim', values: [settleIds],
          text: 'select id, user_id, amount_nano from credit_holds where id = any($1::text[]) and settled_at is null for update' });
        for (const r of rows) open.set(r.id, { userId: Number(r.user_id), amount: Number(r.amount_nano) });
      }
      const users = new Set<number>();
      for (const o of ops) if (o.kind === 'hold') users.add(o.userId);
      for (const h of open.values()) users.add(h.userId);
      const balance = new Map<number, number>();
      if (users.size) {
        const { rows } = await client.query({ name: 'gw_batch_balances', values: [[...users].sort((a, b) => a - b)],
          text: 'select user_id, balance_nano from credit_balances where user_id = any($1::bigint[]) order by user_id for update' });
        for (const r of rows) balance.set(Number(r.user_id), Number(r.balance_nano));
      }

      // The writes in queue order, with the same rules as HOLD_ONE and SETTLE_ONE.
      const holds = { id: [] as string[], user: [] as number[], amount: [] as number[], created: [] as number[], expires: [] as number[], instance: [] as Array<string | null> };
      const ledger = { user: [] as number[], delta: [] as number[], ref: [] as string[] };
      const settled: string[] = [];
      const changed = new Set<number>();
      const results = ops.map((o): boolean | number => {
        if (o.kind === 'hold') {
          const b = balance.get(o.userId);
          if (b === undefined || b < o.amount) return false;
          balance.set(o.userId, b - o.amount);
          changed.add(o.userId);
          holds.id.push(o.holdId); holds.user.push(o.userId); holds.amount.push(o.amount);
          holds.created.push(o.createdAt); holds.expires.push(o.expiresAt); holds.instance.push(o.instanceId);
          return true;
        }
        const h = open.get(o.holdId);
        if (!h) return 0; // unknown or already settled: settling twice is a no-op
        open.delete(o.holdId);
        settled.push(o.holdId);
        let delta = h.amount - o.actual;
        if (delta < 0) delta = -Math.min(-delta, balance.get(h.userId) ?? 0);
        if (delta !== 0) {
          balance.set(h.userId, (balance.get(h.userId) ?? 0) + delta);
          changed.add(h.userId);
        }
        const charged = h.amount - delta;
        if (charged !== 0) { ledger.user.push(h.userId); ledger.delta.push(-charged); ledger.ref.push(o.holdId); }
        return charged;
      });

      const at = now();
      if (holds.id.length) {
        await client.query({ name: 'gw_batch_holds', values: [holds.id, holds.user, holds.amount, holds.created, holds.expires, holds.instance],
          text: `insert into credit_holds (id, user_id, amount_nano, created_at, expires_at, settled_at, instance_id)
            select id, user_id, amount, created, expires, null, instance
            from unnest($1::text[], $2::bigint[], $3::bigint[], $4::bigint[], $5::bigint[], $6::text[]) as h(id, user_id, amount, created, expires, instance)` });
      }
      if (settled.length) {
        await client.query({ name: 'gw_batch_settled', values: [settled], text: 'delete from credit_holds where id = any($1::text[])' });
      }
      if (ledger.user.length) {
        // in queue order: the ledger's ids follow the order the writes were made in
        await client.query({ name: 'gw_batch_charges', values: [ledger.user, ledger.delta, ledger.ref, at],
          text: `insert into credit_ledger (user_id, delta_nano, kind, reference, created_at)
            select user_id, delta, 'charge', ref, $4 from unnest($1::bigint[], $2::bigint[], $3::text[])
              with ordinality as l(user_id, delta, ref, n) order by n` });
      }
      if (changed.size) {
        const ids = [...changed].sort((a, b) => a - b);
        await client.query({ name: 'gw_batch_balance_set', values: [ids, ids.map((u) => balance.get(u)!), at],
          text: `update credit_balances b set balance_nano = v.balance, updated_at = $3
            from unnest($1::bigint[], $2::bigint[]) as v(user_id, balance) where b.user_id = v.user_id` });
      }
      await client.query('commit');
      if (this.onBalance) for (const [userId, b] of balance) this.onBalance(userId, b);
      return results;
    } catch (err) {
      await client.query('rollback').catch(() => { broken = true; });
      throw err;
    } finally {
      client.release(broken);
    }
  }
}
