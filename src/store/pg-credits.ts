/**
 * Credit holds and settles on PostgreSQL, in a group commit. Each one changes its caller's balance row, so under
 * load they queue on that row's lock and on one WAL flush per commit; and a transaction that updated the same
 * row once per write would walk a longer version chain with every update. So the writes queued while the
 * previous batch ran are applied together, in one statement: the server-side function gw_credit_batch (migration
 * 0011) locks the balances (in user order, so batches of two instances cannot deadlock) and the open holds being
 * settled, applies the writes in their queue order in memory — the same rules as the one-statement forms below —
 * and writes the outcome with a handful of set-based statements. One round trip per batch: until session 14 the
 * same steps were eight (begin, two locking reads, four writes, commit), each a wait for the server while the
 * next batch queued, and a query's work in this process (docs/PERFORMANCE.md). Each write resolves once its
 * batch has committed. One batch runs at a time.
 *
 * A batch that fails (a lost connection, a conflict) is rolled back and each write runs on its own as one
 * statement, so one failing write rejects alone. Statements are named, so each connection plans them once.
 */
import type pg from 'pg';
import { isoTime } from './iso-time.js';

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

const CREDIT_BATCH = `select results, users, balances from gw_credit_batch($1::text[], $2::text[], $3::bigint[], $4::bigint[],
  $5::bigint[], $6::bigint[], $7::text[], $8::text)`;

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
      while (this.queue.length) await this.commit(this.take());
    } finally {
      this.running = false;
      if (this.queue.length) {
        this.running = true;
        setImmediate(() => void this.drain());
      }
    }
  }

  /**
   * The next batch: at most MAX_BATCH writes, ending before a settle whose hold is in the same batch. The batch
   * function settles only holds already in the table, so such a settle goes in the next batch, after its hold
   * committed (on SQLite the statements simply run in order).
   */
  private take(): Op[] {
    const holds = new Set<string>();
    let n = 0;
    for (; n < this.queue.length && n < MAX_BATCH; n++) {
      const op = this.queue[n];
      if (op.kind === 'hold') holds.add(op.holdId);
      else if (holds.has(op.holdId)) break;
    }
    return this.queue.splice(0, n);
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
      const at = isoTime();
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

  /** The batch as one statement: gw_credit_batch (migration 0011) applies the writes in their queue order. */
  private async applyBatch(ops: Op[]): Promise<Array<boolean | number>> {
    const n = ops.length;
    const kind: string[] = new Array(n), hold: string[] = new Array(n), user: Array<number | null> = new Array(n), amount: number[] = new Array(n);
    const created: Array<number | null> = new Array(n), expires: Array<number | null> = new Array(n), instance: Array<string | null> = new Array(n);
    for (let i = 0; i < n; i++) {
      const o = ops[i];
      hold[i] = o.holdId;
      if (o.kind === 'hold') {
        kind[i] = 'h'; user[i] = o.userId; amount[i] = o.amount; created[i] = o.createdAt; expires[i] = o.expiresAt; instance[i] = o.instanceId;
      } else {
        kind[i] = 's'; user[i] = null; amount[i] = o.actual; created[i] = null; expires[i] = null; instance[i] = null;
      }
    }
    const { rows } = await this.pool.query({ name: 'gw_credit_batch', text: CREDIT_BATCH, values: [kind, hold, user, amount, created, expires, instance, isoTime()] });
    const { results, users, balances } = rows[0] as { results: string[]; users: string[]; balances: string[] };
    if (this.onBalance) for (let i = 0; i < users.length; i++) this.onBalance(Number(users[i]), Number(balances[i]));
    return ops.map((o, i) => (o.kind === 'hold' ? Number(results[i]) === 1 : Number(results[i])));
  }
}
