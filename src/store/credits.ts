import { sql, type Kysely, type RawBuilder, type Transaction } from 'kysely';
import type { Database } from './schema.js';
import type { SqliteWriteBatch } from './sqlite-batch.js';
import type { PgCredits } from './pg-credits.js';
import { isoTime } from './iso-time.js';
import { VARIANT, randomHex } from '../ids.js';

/** 1 USD = 1e9 nano-USD. */
export const NANO = 1_000_000_000;
export const usdToNano = (usd: number): number => Math.round(usd * NANO);
export const nanoToUsd = (nano: number): number => nano / NANO;

let lastMs = 0;
let seq = 0;
/** The id's first 15 characters (the 48-bit time and the version digit) for `headMs`, made once per millisecond. */
let head = '';
let headMs = -1;

/**
 * A new hold id: a UUIDv7 (RFC 9562: 48-bit Unix milliseconds, a counter within the millisecond, random bits).
 * Ids that grow with time are appended to the end of the credit_holds primary-key index; random UUIDs land on a
 * random page each, and hold + settle slowed down as the table grew (29 -> 64 us per request over 80,000 holds in
 * a measurement here; time-ordered ids stayed at ~31 us).
 */
export function newHoldId(): string {
  const ms = Date.now();
  if (ms > lastMs) {
    lastMs = ms;
    seq = 0;
  } else if (++seq > 0xfff) {
    lastMs += 1;
    seq = 0;
  }
  if (headMs !== lastMs) {
    headMs = lastMs;
    // two 24-bit halves: small integers format fast, a 48-bit number goes through V8's general radix conversion
    const t = hex6(Math.floor(lastMs / 0x1000000)) + hex6(lastMs % 0x1000000);
    head = `${t.slice(0, 8)}-${t.slice(8)}-7`;
  }
  // 62 random bits after the variant bits (10), as 16 hex digits from the pool of random digits (src/ids.ts)
  const h = randomHex(16);
  return `${head}${(0x1000 + seq).toString(16).slice(1)}-${VARIANT[h.charCodeAt(0)]}${h.slice(1, 4)}-${h.slice(4)}`;
}

const hex6 = (n: number): string => (0x1000000 + n).toString(16).slice(1);

/** A hold as the process that made it knows it: its id, whose it is and how much it holds (`CreditRepo.settle`). */
export interface HeldCredit {
  id: string;
  userId: number;
  amountNano: number;
}

/**
 * Credit balances, their holds and their ledger. A request holds its worst-case cost with a conditional decrement
 * (`where balance >= amount`) and a credit_holds row, so concurrent requests can never spend below zero, then
 * settles the real cost and gives back the rest. The ledger records money that moved for good: grants,
 * adjustments and one `charge` row per settled request (its real cost; none for a release). Invariant: for every
 * user, the sum of ledger deltas equals the balance plus the amounts of the user's open holds (every change to a
 * balance, a hold or the ledger commits together), so with no hold open the ledger sums to the balance.
 * (Until migration 0007 a hold also wrote a ledger row and its settle the difference: two rows and their index
 * pages per request instead of one. Ledgers written before it keep those rows.) A settle deletes its hold
 * (migration 0009): credit_holds holds the open holds only.
 *
 * Hold and settle are on every request's path, so they are hand-written per database rather than built with
 * Kysely (see docs/PERFORMANCE.md): on SQLite, prepared statements in the group commit (src/store/sqlite-batch.ts);
 * on PostgreSQL, a group commit whose batch is one statement, a server-side function that applies it under row locks
 * (src/store/pg-credits.ts). Both keep the rules above.
 */
export class CreditRepo {
  private instanceId: string | null = null;
  /** The hold's insert on SQLite, this process's instance id in its text (bindInstance). */
  private insertHold = insertHoldSql(null);
  private readonly rowLocks: boolean;
  /**
   * Per user: the balance this process's last hold, settle or grant left (NaN after a refused hold) and the
   * amounts it has asked to hold since, not yet committed. A hint for `likelyCovers`, never the authority: the
   * conditional debit of `hold` is. Other processes' writes show up at this process's next write for the user.
   */
  private readonly seen = new Map<number, { balance: number; pending: number }>();

  /** `batch` on SQLite, `pg` on PostgreSQL: the group commits of hold and settle. */
  constructor(private readonly db: Kysely<Database>, private readonly batch: SqliteWriteBatch | undefined, private readonly pg?: PgCredits) {
    // PostgreSQL needs `select … for update`; SQLite serialises writers already.
    this.rowLocks = !batch;
    if (pg) pg.onBalance = (userId, balance) => this.saw(userId, balance);
  }

  /**
   * Whether a hold of `amountNano` is all but sure to succeed: the balance this process last saw for the user,
   * less what it has asked to hold since, covers the amount twice over. False when it has seen nothing yet. The
   * chat engine then calls the upstream while the hold commits (src/engine/chat.ts).
   */
  likelyCovers(userId: number, amountNano: number): boolean {
    const s = this.seen.get(userId);
    return s !== undefined && s.balance - s.pending >= 2 * amountNano;
  }

  private saw(userId: number, balance: number): void {
    const s = this.seen.get(userId);
    if (s) s.balance = balance;
  }

  /** The user's entry, with `amountNano` more pending until the returned function is called. */
  private pending(userId: number, amountNano: number): () => void {
    let s = this.seen.get(userId);
    if (!s) {
      if (this.seen.size >= 100_000) this.seen.clear(); // a cache: bounded
      this.seen.set(userId, (s = { balance: NaN, pending: 0 }));
    }
    const entry = s;
    entry.pending += amountNano;
    return () => { entry.pending -= amountNano; };
  }

  /**
   * Holds made from now on carry this process's instance id, so another process can release them at once if
   * this one dies (src/reliability/instances.ts). Set once at start-up.
   */
  bindInstance(instanceId: string): void {
    this.instanceId = instanceId;
    this.insertHold = insertHoldSql(instanceId);
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
      this.saw(userId, current + delta);
      return current + delta;
    });
  }

  /** Holds `amountNano` for a request; false when the balance cannot cover it. */
  async hold(userId: number, holdId: string, amountNano: number, ttlMs: number): Promise<boolean> {
    const { batch, instanceId } = this;
    const done = this.pending(userId, amountNano);
    if (!batch) return this.pg!.hold(userId, holdId, amountNano, ttlMs, instanceId).finally(done);
    const t = Date.now();
    const at = isoTime(t);
    return batch.run(() => {
      // No RETURNING on SQLite's hot statements: SQLite gathers a RETURNING's rows in an ephemeral table, a B-tree
      // opened and closed per statement (~9,000 instructions, more than the point query that reads the row after).
      const debited = batch.statement('update credit_balances set balance_nano = balance_nano - ?, updated_at = ? where user_id = ? and balance_nano >= ?')
        .run(amountNano, at, userId, amountNano).changes > 0;
      this.saw(userId, debited ? Number(batch.value(BALANCE).get(userId)) : NaN);
      if (!debited) return false;
      batch.statement(this.insertHold).run(holdId, userId, amountNano, t, t + ttlMs);
      return true;
    }).finally(done);
  }

  /**
   * Settles a hold at the real cost: gives back `held - actual`, or takes the excess when the real cost
   * exceeded the hold (never below zero). Returns the amount actually charged; settling twice is a no-op (0).
   * A settle queued before its hold committed settles that hold: writes run in the order they were queued.
   * `hold`: its id, or the hold as the caller that made it knows it (this process's chat engine: its user and
   * amount), whose row on SQLite is then not read back. By id alone (another process's hold, an expired one) the row
   * says.
   */
  async settle(hold: string | HeldCredit, actualNano: number): Promise<number> {
    const { batch } = this;
    const known = typeof hold === 'string' ? undefined : hold;
    const holdId = typeof hold === 'string' ? hold : hold.id;
    if (!batch) return this.pg!.settle(holdId, actualNano);
    return batch.run(() => {
      const at = isoTime();
      let userId: number;
      let held: number;
      if (known) {
        // The row holds what this process inserted: deleting it is the check that the hold is still open (not
        // settled twice, not released by another process), and the row is not read back (one statement fewer).
        if (batch.statement('delete from credit_holds where id = ? and settled_at is null').run(holdId).changes === 0) return 0;
        userId = known.userId;
        held = known.amountNano;
      } else {
        const row = batch.statement('select user_id, amount_nano from credit_holds where id = ? and settled_at is null')
          .get(holdId) as { user_id: number; amount_nano: number } | undefined;
        if (!row) return 0;
        batch.statement('delete from credit_holds where id = ?').run(holdId);
        userId = Number(row.user_id);
        held = Number(row.amount_nano);
      }
      let delta = held - actualNano;
      if (delta < 0) {
        delta = -Math.min(-delta, Number(batch.value(BALANCE).get(userId) ?? 0));
      }
      if (delta !== 0) {
        const changed = batch.statement('update credit_balances set balance_nano = balance_nano + ?, updated_at = ? where user_id = ?')
          .run(delta, at, userId).changes > 0;
        if (changed) this.saw(userId, Number(batch.value(BALANCE).get(userId)));
      }
      const charged = held - delta;
      if (charged !== 0) batch.statement(INSERT_CHARGE).run(userId, -charged, holdId, at);
      return charged;
    });
  }

  release(hold: string | HeldCredit): Promise<number> {
    return this.settle(hold, 0);
  }

  /**
   * Releases holds left open past their expiry (a crashed process); returns how many. Also deletes holds an older
   * build marked settled instead of deleting them (one still running during an upgrade: migration 0009).
   */
  async releaseExpired(at = Date.now()): Promise<number> {
    const open = await this.db.selectFrom('credit_holds').select('id').where('settled_at', 'is', null)
      .where('expires_at', '<', at).execute();
    for (const h of open) await this.release(h.id);
    await this.db.deleteFrom('credit_holds').where('settled_at', 'is not', null).execute();
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
  openHoldCount(userId?: number): Promise<number> {
    return this.openHoldAggregate(sql<number>`count(*)`, userId);
  }

  /** The amount held by the open holds of one user (the ledger sums to the balance plus this), or of every user. */
  openHoldSum(userId?: number): Promise<number> {
    return this.openHoldAggregate(sql<number>`coalesce(sum(amount_nano), 0)`, userId);
  }

  private async openHoldAggregate(value: RawBuilder<number>, userId?: number): Promise<number> {
    let q = this.db.selectFrom('credit_holds').select(value.as('v')).where('settled_at', 'is', null);
    if (userId !== undefined) q = q.where('user_id', '=', userId);
    return Number((await q.executeTakeFirstOrThrow()).v);
  }
}

const BALANCE = 'select balance_nano from credit_balances where user_id = ?';
/**
 * A hold's insert with `instanceId` written into its text as a SQL string literal (quotes doubled), not bound: each
 * string bound is measured, encoded and copied by the driver (~640 instructions), and the id is the same for every
 * hold of the process. One prepared statement per process (the id is set once, at start-up).
 */
function insertHoldSql(instanceId: string | null): string {
  const id = instanceId === null ? 'null' : `'${instanceId.replaceAll("'", "''")}'`;
  return `insert into credit_holds (id, user_id, amount_nano, created_at, expires_at, settled_at, instance_id) values (?, ?, ?, ?, ?, null, ${id})`;
}
/** A settle's ledger row. Its kind is in the text: each string bound is encoded and copied by the driver (~640 instructions). */
const INSERT_CHARGE = "insert into credit_ledger (user_id, delta_nano, kind, reference, created_at) values (?, ?, 'charge', ?, ?)";

async function ensureRow(trx: Transaction<Database>, userId: number) {
  await trx.insertInto('credit_balances').values({ user_id: userId, balance_nano: 0, updated_at: isoTime() })
    .onConflict((oc) => oc.column('user_id').doNothing()).execute();
}

async function lockBalance(trx: Transaction<Database>, userId: number, rowLocks: boolean): Promise<number> {
  let q = trx.selectFrom('credit_balances').select('balance_nano').where('user_id', '=', userId);
  if (rowLocks) q = q.forUpdate();
  const row = await q.executeTakeFirst();
  return row ? Number(row.balance_nano) : 0;
}

async function applyDelta(trx: Transaction<Database>, userId: number, delta: number, kind: string, reference: string | null) {
  await trx.updateTable('credit_balances').set({ balance_nano: sql`balance_nano + ${delta}`, updated_at: isoTime() })
    .where('user_id', '=', userId).execute();
  await trx.insertInto('credit_ledger').values({ user_id: userId, delta_nano: delta, kind, reference, created_at: isoTime() }).execute();
}
