/**
 * One migration set for both dialects. Only the auto-increment id differs (SQLite `integer primary key
 * autoincrement`, PostgreSQL `bigserial`); everything else is portable column types.
 */
import { sql, type Kysely, type Migration, type MigrationProvider, type CreateTableBuilder } from 'kysely';
import { statsMigration } from './migration-0003-stats.js';

export type Dialect = 'sqlite' | 'postgres';

function withId<T extends string>(dialect: Dialect, t: CreateTableBuilder<T, never>): CreateTableBuilder<T, 'id'> {
  return dialect === 'postgres'
    ? t.addColumn('id', 'bigserial', (c) => c.primaryKey())
    : t.addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement());
}

function initial(dialect: Dialect): Migration {
  return {
    async up(db: Kysely<any>) {
      await withId(dialect, db.schema.createTable('users'))
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .execute();
      await withId(dialect, db.schema.createTable('api_keys'))
        .addColumn('user_id', 'bigint', (c) => c.notNull().references('users.id'))
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('key_hash', 'text', (c) => c.notNull().unique())
        .addColumn('key_prefix', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('revoked_at', 'text')
        .addColumn('last_used_at', 'text')
        .execute();
      await db.schema.createTable('credit_balances')
        .addColumn('user_id', 'bigint', (c) => c.primaryKey().references('users.id'))
        .addColumn('balance_nano', 'bigint', (c) => c.notNull().defaultTo(0))
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .execute();
      await withId(dialect, db.schema.createTable('credit_ledger'))
        .addColumn('user_id', 'bigint', (c) => c.notNull())
        .addColumn('delta_nano', 'bigint', (c) => c.notNull())
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('reference', 'text')
        .addColumn('created_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('credit_ledger_user').on('credit_ledger').columns(['user_id', 'id']).execute();
      await db.schema.createTable('credit_holds')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('user_id', 'bigint', (c) => c.notNull())
        .addColumn('amount_nano', 'bigint', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('expires_at', 'bigint', (c) => c.notNull())
        .addColumn('settled_at', 'bigint')
        .execute();
      await db.schema.createIndex('credit_holds_open').on('credit_holds').columns(['settled_at', 'expires_at']).execute();
      await withId(dialect, db.schema.createTable('chat_sessions'))
        .addColumn('user_id', 'bigint', (c) => c.notNull())
        .addColumn('title', 'text', (c) => c.notNull())
        .addColumn('model', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .addColumn('is_active', 'integer', (c) => c.notNull().defaultTo(1))
        .execute();
      await db.schema.createIndex('chat_sessions_user').on('chat_sessions').columns(['user_id', 'id']).execute();
      await withId(dialect, db.schema.createTable('chat_messages'))
        .addColumn('session_id', 'bigint', (c) => c.notNull().references('chat_sessions.id').onDelete('cascade'))
        .addColumn('role', 'text', (c) => c.notNull())
        .addColumn('content', 'text', (c) => c.notNull())
        .addColumn('model', 'text', (c) => c.notNull())
        .addColumn('tokens', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('created_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('chat_messages_session').on('chat_messages').columns(['session_id', 'id']).execute();
      await withId(dialect, db.schema.createTable('usage_records'))
        .addColumn('request_id', 'text', (c) => c.notNull())
        .addColumn('user_id', 'bigint')
        .addColumn('key_id', 'bigint')
        .addColumn('endpoint', 'text', (c) => c.notNull())
        .addColumn('gateway', 'text', (c) => c.notNull())
        .addColumn('provider', 'text', (c) => c.notNull())
        .addColumn('model', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('error_class', 'text')
        .addColumn('http_status', 'integer', (c) => c.notNull())
        .addColumn('prompt_tokens', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('completion_tokens', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('cached_tokens', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('cost_nano', 'bigint', (c) => c.notNull().defaultTo(0))
        .addColumn('latency_ms', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('ttft_ms', 'integer')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute();
      for (const cols of [['created_at'], ['gateway', 'created_at'], ['provider', 'created_at'], ['model', 'created_at'], ['user_id', 'created_at']]) {
        await db.schema.createIndex(`usage_records_${cols.join('_')}`).on('usage_records').columns(cols).execute();
      }
      await db.schema.createTable('model_health')
        .addColumn('gateway', 'text', (c) => c.notNull())
        .addColumn('model', 'text', (c) => c.notNull())
        .addColumn('provider', 'text', (c) => c.notNull())
        .addColumn('calls', 'bigint', (c) => c.notNull().defaultTo(0))
        .addColumn('successes', 'bigint', (c) => c.notNull().defaultTo(0))
        .addColumn('errors', 'bigint', (c) => c.notNull().defaultTo(0))
        .addColumn('total_latency_ms', 'bigint', (c) => c.notNull().defaultTo(0))
        .addColumn('consecutive_failures', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('last_status', 'text')
        .addColumn('last_error', 'text')
        .addColumn('last_latency_ms', 'integer')
        .addColumn('last_checked', 'bigint')
        .addColumn('last_success', 'bigint')
        .addColumn('last_failure', 'bigint')
        .addPrimaryKeyConstraint('model_health_pk', ['gateway', 'model'])
        .execute();
      await withId(dialect, db.schema.createTable('model_health_history'))
        .addColumn('gateway', 'text', (c) => c.notNull())
        .addColumn('model', 'text', (c) => c.notNull())
        .addColumn('ts', 'bigint', (c) => c.notNull())
        .addColumn('ok', 'integer', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('latency_ms', 'integer')
        .addColumn('source', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('model_health_history_gm_ts').on('model_health_history').columns(['gateway', 'model', 'ts']).execute();
      await db.schema.createIndex('model_health_history_ts').on('model_health_history').columns(['ts']).execute();
    },
    async down(db: Kysely<any>) {
      for (const t of ['model_health_history', 'model_health', 'usage_records', 'chat_messages', 'chat_sessions',
        'credit_holds', 'credit_ledger', 'credit_balances', 'api_keys', 'users']) {
        await sql`drop table if exists ${sql.table(t)}`.execute(db);
      }
    },
  };
}

/**
 * The catalog's discovered model lists (one row per model an upstream listed at its last successful sync) and
 * per-gateway sync state, so a restart serves the last known lists at once, even offline. Prices are
 * decimal text exactly as the upstream published them (per token).
 */
function catalog(): Migration {
  return {
    async up(db: Kysely<any>) {
      await db.schema.createTable('catalog_offers')
        .addColumn('gateway', 'text', (c) => c.notNull())
        .addColumn('upstream_model', 'text', (c) => c.notNull())
        .addColumn('name', 'text')
        .addColumn('description', 'text')
        .addColumn('context_length', 'integer')
        .addColumn('max_output_tokens', 'integer')
        .addColumn('prompt_price', 'text')
        .addColumn('completion_price', 'text')
        .addColumn('extra', 'text')
        .addColumn('synced_at', 'bigint', (c) => c.notNull())
        .addPrimaryKeyConstraint('catalog_offers_pk', ['gateway', 'upstream_model'])
        .execute();
      await db.schema.createTable('catalog_sync')
        .addColumn('gateway', 'text', (c) => c.primaryKey())
        .addColumn('last_sync', 'bigint')
        .addColumn('last_attempt', 'bigint')
        .addColumn('model_count', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();
    },
    async down(db: Kysely<any>) {
      for (const t of ['catalog_sync', 'catalog_offers']) await sql`drop table if exists ${sql.table(t)}`.execute(db);
    },
  };
}

/** Per-key rate limits that override the configured defaults (null column = the default). */
function limits(): Migration {
  return {
    async up(db: Kysely<any>) {
      await db.schema.createTable('api_key_limits')
        .addColumn('key_id', 'bigint', (c) => c.primaryKey().references('api_keys.id').onDelete('cascade'))
        .addColumn('requests_per_minute', 'integer')
        .addColumn('tokens_per_minute', 'bigint')
        .addColumn('concurrent_requests', 'integer')
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .execute();
    },
    async down(db: Kysely<any>) {
      await sql`drop table if exists api_key_limits`.execute(db);
    },
  };
}

/**
 * Running gateway processes, and which process holds each credit hold, so a restarted (or surviving) instance
 * can release the holds of a dead one at once instead of waiting for them to expire (docs/RELIABILITY.md).
 */
function instances(): Migration {
  return {
    async up(db: Kysely<any>) {
      await db.schema.createTable('gateway_instances')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('hostname', 'text', (c) => c.notNull())
        .addColumn('pid', 'integer', (c) => c.notNull())
        .addColumn('started_at', 'bigint', (c) => c.notNull())
        .addColumn('heartbeat_at', 'bigint', (c) => c.notNull())
        .addColumn('stopped_at', 'bigint')
        .execute();
      await db.schema.alterTable('credit_holds').addColumn('instance_id', 'text').execute();
    },
    async down(db: Kysely<any>) {
      await db.schema.alterTable('credit_holds').dropColumn('instance_id').execute();
      await sql`drop table if exists gateway_instances`.execute(db);
    },
  };
}

/**
 * Open holds are found through a partial index of the open ones only. The full (settled_at, expires_at) index
 * moved every hold's entry when it was settled, one more index page per settle in each group commit (hold and
 * settle 17 -> 15 us per request in a measurement here); the partial one drops the entry, and stays as small
 * as the number of requests in flight.
 */
function openHoldsIndex(): Migration {
  return {
    async up(db: Kysely<any>) {
      await sql`drop index if exists credit_holds_open`.execute(db);
      await sql`create index credit_holds_open on credit_holds (expires_at) where settled_at is null`.execute(db);
    },
    async down(db: Kysely<any>) {
      await sql`drop index if exists credit_holds_open`.execute(db);
      await db.schema.createIndex('credit_holds_open').on('credit_holds').columns(['settled_at', 'expires_at']).execute();
    },
  };
}

/**
 * One ledger row per request instead of two: a hold no longer writes a ledger row (its debit lives in its
 * credit_holds row while it is open) and its settle writes the real cost as one `charge` row (a release writes
 * none). The invariant becomes "ledger = balance + open holds" (src/store/credits.ts). Holds still open here were
 * made under the old rule and their debit is in the ledger already: a `hold_reversal` row per such hold takes it
 * out, so their settles, under the new rule, leave every ledger consistent. (One insert and its index pages less on
 * every request's path: ~20 % fewer page writes per request on SQLite, docs/PERFORMANCE.md.)
 */
function ledgerCharges(): Migration {
  /** A ledger row of `delta` for every open hold. */
  const carry = async (db: Kysely<any>, delta: 'amount_nano' | '-amount_nano', kind: string) => {
    await sql`insert into credit_ledger (user_id, delta_nano, kind, reference, created_at)
      select user_id, ${sql.raw(delta)}, ${kind}, id, ${new Date().toISOString()} from credit_holds
      where settled_at is null order by created_at, id`.execute(db);
  };
  return {
    up: (db: Kysely<any>) => carry(db, 'amount_nano', 'hold_reversal'),
    // back to a ledger row per open hold, as the old rule wrote them
    down: (db: Kysely<any>) => carry(db, '-amount_nano', 'hold'),
  };
}

export function migrationProvider(dialect: Dialect): MigrationProvider {
  return {
    async getMigrations() {
      return {
        '0001_initial': initial(dialect), '0002_catalog': catalog(), '0003_stats': statsMigration(dialect),
        '0004_limits': limits(), '0005_instances': instances(), '0006_open_holds_index': openHoldsIndex(),
        '0007_ledger_charges': ledgerCharges(), '0008_fewer_indexes': fewerIndexes(),
        '0009_settled_holds_deleted': settledHoldsDeleted(), '0010_ledger_rowid': ledgerRowid(dialect),
        '0011_pg_credit_batch': pgCreditBatch(dialect),
        '0012_holds_without_rowid': holdsWithoutRowid(dialect),
      };
    },
  };
}

/** usage_records' secondary indexes before 0008, by name; created again by its `down`. */
const USAGE_INDEXES_0007: Array<[string, string[]]> = [
  ['usage_records_gateway_created_at', ['gateway', 'created_at']],
  ['usage_records_provider_created_at', ['provider', 'created_at']],
  ['usage_records_user_id_created_at', ['user_id', 'created_at']],
  ['usage_records_provider_status_created_latency', ['provider', 'status', 'created_at', 'latency_ms']],
  ['usage_records_gateway_status_created_latency', ['gateway', 'status', 'created_at', 'latency_ms']],
  ['usage_records_model_created_user', ['model', 'created_at', 'user_id']],
  ['usage_records_model_gateway_created_user', ['model', 'gateway', 'created_at', 'user_id']],
];

/**
 * usage_records keeps 4 secondary indexes instead of 8: every request writes a row, and each index is one more
 * B-tree to change in its commit (9 -> 5 per row; measured with SQLite: WAL pages per row 2.63 -> 1.11 in commits of
 * 20 rows, 11.8 -> 6.95 alone; docs/PERFORMANCE.md, session 11). Each read keeps an index that serves it:
 * - (gateway | provider, created_at, status, latency_ms): a window's raw edge rows of one scope (the
 *   (scope, created_at) prefix), and the latency sample (scope, status 'success', latest first), covered. They
 *   replace (scope, created_at) and (scope, status, created_at, latency_ms);
 * - (model, created_at, gateway, user_id): distinct users of listed models in a window, with or without a gateway,
 *   covered. It replaces (model, created_at, user_id) and (model, gateway, created_at, user_id);
 * - (created_at): unscoped windows, as before.
 * (user_id, created_at) is dropped: no statistic reads usage by user (the per-user "last seen" is usage_user_seen).
 * model_health_history, also written on every request, loses its (ts) index: every read of it names the
 * (gateway, model) and goes through (gateway, model, ts, id).
 */
function fewerIndexes(): Migration {
  const NEW: Array<[string, string[]]> = [
    ['usage_records_gateway_created_status_latency', ['gateway', 'created_at', 'status', 'latency_ms']],
    ['usage_records_provider_created_status_latency', ['provider', 'created_at', 'status', 'latency_ms']],
    ['usage_records_model_created_gateway_user', ['model', 'created_at', 'gateway', 'user_id']],
  ];
  const swap = async (db: Kysely<any>, create: Array<[string, string[]]>, drop: Array<[string, string[]]>) => {
    for (const [name, cols] of create) await db.schema.createIndex(name).on('usage_records').columns(cols).execute();
    for (const [name] of drop) await db.schema.dropIndex(name).execute();
  };
  const HISTORY_TS = 'model_health_history_ts';
  return {
    async up(db: Kysely<any>) {
      await swap(db, NEW, USAGE_INDEXES_0007);
      await db.schema.dropIndex(HISTORY_TS).execute();
    },
    async down(db: Kysely<any>) {
      await swap(db, USAGE_INDEXES_0007, NEW);
      await db.schema.createIndex(HISTORY_TS).on('model_health_history').columns(['ts']).execute();
    },
  };
}

/**
 * A settle deletes its hold instead of marking it settled, so credit_holds holds only the open holds: as many rows
 * as requests in flight, where it used to keep a row per request ever made. The settle's charge is in the ledger
 * (its `reference` is the hold's id) and the request in usage_records, so nothing that was read is lost. The
 * partial index of the open holds goes with the settled rows: the sweeps (expired holds, a dead instance's holds)
 * read a table that small in full. Per request on SQLite one B-tree page fewer to write: the hold inserts into the
 * table and its primary key (no index entry), the settle deletes from both (instead of updating the row and
 * deleting the index entry); measured with npm run bench:store (docs/PERFORMANCE.md, session 12).
 * The queries keep `settled_at is null`: a process of an older build still running during an upgrade marks its
 * holds settled, and the expiry sweep deletes such rows (src/store/credits.ts). `down` builds the index again; the
 * settled rows deleted do not come back (their charges are in the ledger).
 */
function settledHoldsDeleted(): Migration {
  return {
    async up(db: Kysely<any>) {
      await sql`delete from credit_holds where settled_at is not null`.execute(db);
      await sql`drop index if exists credit_holds_open`.execute(db);
    },
    async down(db: Kysely<any>) {
      await sql`create index credit_holds_open on credit_holds (expires_at) where settled_at is null`.execute(db);
    },
  };
}

/**
 * On SQLite the ledger's id becomes a plain `integer primary key` (the rowid) instead of `autoincrement`. With the
 * keyword, every commit that inserts a ledger row (a settle's charge) also rewrites the `sqlite_sequence` row that
 * remembers the largest id ever used: one more page in the commit, 9.11 -> 8.11 WAL frames per hold + settle in a
 * micro-benchmark (docs/PERFORMANCE.md, session 12). Without it a new id is the largest present + 1; ledger rows are
 * never deleted, so no id is ever used twice either way. SQLite cannot drop the keyword in place: the table is rebuilt
 * (copied in id order, its index made again) inside the migration's transaction, so on a large ledger the upgrade
 * takes a while. PostgreSQL's `bigserial` has no such cost: nothing to do there.
 */
function ledgerRowid(dialect: Dialect): Migration {
  const rebuild = async (db: Kysely<any>, id: string) => {
    await sql.raw(`create table credit_ledger_rebuilt (id ${id}, user_id bigint not null, delta_nano bigint not null, kind text not null,
      reference text, created_at text not null)`).execute(db);
    await sql`insert into credit_ledger_rebuilt (id, user_id, delta_nano, kind, reference, created_at)
      select id, user_id, delta_nano, kind, reference, created_at from credit_ledger order by id`.execute(db);
    await sql`drop table credit_ledger`.execute(db);
    await sql`alter table credit_ledger_rebuilt rename to credit_ledger`.execute(db);
    await db.schema.createIndex('credit_ledger_user').on('credit_ledger').columns(['user_id', 'id']).execute();
  };
  return {
    async up(db: Kysely<any>) {
      if (dialect === 'sqlite') await rebuild(db, 'integer primary key');
    },
    // back to autoincrement; SQLite's sequence takes the largest id copied
    async down(db: Kysely<any>) {
      if (dialect === 'sqlite') await rebuild(db, 'integer primary key autoincrement');
    },
  };
}

/**
 * On SQLite credit_holds becomes a `WITHOUT ROWID` table: its rows live in the primary key's B-tree. As a rowid table
 * with a text primary key it was two B-trees (the rows, by rowid, and the key's index), so a hold's insert and its
 * settle's delete each wrote two pages where one now does. Since migration 0009 the table holds only the open holds
 * (as many rows as requests in flight) and has no other index, so its whole key fits a page or two. Rebuilt inside
 * the migration's transaction (the open holds are copied); `down` rebuilds the rowid table. PostgreSQL: nothing to do.
 */
function holdsWithoutRowid(dialect: Dialect): Migration {
  const rebuild = async (db: Kysely<any>, options: string) => {
    await sql.raw(`create table credit_holds_rebuilt (id text primary key, user_id bigint not null, amount_nano bigint not null,
      created_at bigint not null, expires_at bigint not null, settled_at bigint, instance_id text)${options}`).execute(db);
    await sql`insert into credit_holds_rebuilt (id, user_id, amount_nano, created_at, expires_at, settled_at, instance_id)
      select id, user_id, amount_nano, created_at, expires_at, settled_at, instance_id from credit_holds`.execute(db);
    await sql`drop table credit_holds`.execute(db);
    await sql`alter table credit_holds_rebuilt rename to credit_holds`.execute(db);
  };
  return {
    async up(db: Kysely<any>) {
      if (dialect === 'sqlite') await rebuild(db, ' without rowid');
    },
    async down(db: Kysely<any>) {
      if (dialect === 'sqlite') await rebuild(db, '');
    },
  };
}

/**
 * PostgreSQL only: the credit group commit's batch as one server-side function, so a batch of holds and settles is
 * one statement and one round trip (src/store/pg-credits.ts), where it was eight (begin, two locking reads, four
 * set-based writes, commit), each a wait for the server and a query's work in the client. The rules are those of
 * the one-statement forms there and of the SQLite batch: the open holds being settled are locked, then every
 * balance involved in user order (two instances' batches cannot deadlock); the writes are applied in their queue
 * order to those balances in memory (a hold debits only a balance that covers it; a settle gives back the unused
 * part of its hold or takes what it cost beyond it, never below zero, and writes one `charge` ledger row unless
 * nothing was charged; a hold already settled or unknown settles for 0); then the holds are inserted, the settled
 * ones deleted, the charges inserted in queue order and the changed balances written. Run as one statement, it is
 * all or nothing: a failing write (a duplicate hold id) fails the batch, which the caller then runs write by write.
 * Returns per write 1 or 0 (a hold) or the amount charged (a settle), and every locked balance as it was left.
 * SQLite has no server round trip to save: nothing to do there.
 */
const CREDIT_BATCH_FUNCTION = `create or replace function gw_credit_batch(
  p_kind text[], p_hold text[], p_user bigint[], p_amount bigint[], p_created bigint[], p_expires bigint[], p_instance text[],
  p_at text, out results bigint[], out users bigint[], out balances bigint[])
language plpgsql as $fn$
declare
  n int := coalesce(array_length(p_kind, 1), 0);
  o_ids text[]; o_users bigint[]; o_amounts bigint[]; o_done boolean[]; changed boolean[];
  h_id text[] := '{}'; h_user bigint[] := '{}'; h_amount bigint[] := '{}';
  h_created bigint[] := '{}'; h_expires bigint[] := '{}'; h_instance text[] := '{}';
  l_user bigint[] := '{}'; l_delta bigint[] := '{}'; l_ref text[] := '{}';
  settled text[] := '{}';
  i int; k int; j int; d bigint; charged bigint;
begin
  results := array_fill(0::bigint, array[n]);
  select coalesce(array_agg(c.id), '{}'), coalesce(array_agg(c.user_id), '{}'), coalesce(array_agg(c.amount_nano), '{}')
    into o_ids, o_users, o_amounts
    from (select id, user_id, amount_nano from credit_holds
      where id = any(array(select p_hold[x] from generate_subscripts(p_kind, 1) x where p_kind[x] = 's')) and settled_at is null
      for update) c;
  o_done := array_fill(false, array[coalesce(array_length(o_ids, 1), 0)]);
  select coalesce(array_agg(b.user_id order by b.user_id), '{}'), coalesce(array_agg(b.balance_nano order by b.user_id), '{}')
    into users, balances
    from (select user_id, balance_nano from credit_balances
      where user_id = any(o_users || array(select p_user[x] from generate_subscripts(p_kind, 1) x where p_kind[x] = 'h'))
      order by user_id for update) b;
  changed := array_fill(false, array[coalesce(array_length(users, 1), 0)]);
  for i in 1..n loop
    if p_kind[i] = 'h' then
      k := array_position(users, p_user[i]);
      if k is not null and balances[k] >= p_amount[i] then
        balances[k] := balances[k] - p_amount[i];
        changed[k] := true;
        h_id := h_id || p_hold[i]; h_user := h_user || p_user[i]; h_amount := h_amount || p_amount[i];
        h_created := h_created || p_created[i]; h_expires := h_expires || p_expires[i]; h_instance := h_instance || p_instance[i];
        results[i] := 1;
      end if;
    else
      k := array_position(o_ids, p_hold[i]);
      if k is not null and not o_done[k] then
        o_done[k] := true;
        settled := settled || p_hold[i];
        j := array_position(users, o_users[k]);
        d := o_amounts[k] - p_amount[i];
        if d < 0 then d := -least(-d, coalesce(balances[j], 0)); end if;
        if d <> 0 and j is not null then
          balances[j] := balances[j] + d;
          changed[j] := true;
        end if;
        charged := o_amounts[k] - d;
        if charged <> 0 then
          l_user := l_user || o_users[k]; l_delta := l_delta || -charged; l_ref := l_ref || p_hold[i];
        end if;
        results[i] := charged;
      end if;
    end if;
  end loop;
  if cardinality(h_id) > 0 then
    insert into credit_holds (id, user_id, amount_nano, created_at, expires_at, settled_at, instance_id)
      select h.id, h.user_id, h.amount, h.created, h.expires, null, h.instance
      from unnest(h_id, h_user, h_amount, h_created, h_expires, h_instance) as h(id, user_id, amount, created, expires, instance);
  end if;
  if cardinality(settled) > 0 then
    delete from credit_holds where id = any(settled);
  end if;
  if cardinality(l_user) > 0 then
    insert into credit_ledger (user_id, delta_nano, kind, reference, created_at)
      select l.user_id, l.delta, 'charge', l.ref, p_at from unnest(l_user, l_delta, l_ref) with ordinality as l(user_id, delta, ref, n) order by l.n;
  end if;
  update credit_balances b set balance_nano = v.balance, updated_at = p_at
    from unnest(users, balances, changed) as v(user_id, balance, ch) where v.ch and b.user_id = v.user_id;
end
$fn$`;

function pgCreditBatch(dialect: Dialect): Migration {
  return {
    async up(db: Kysely<any>) {
      if (dialect === 'postgres') await sql.raw(CREDIT_BATCH_FUNCTION).execute(db);
    },
    async down(db: Kysely<any>) {
      if (dialect === 'postgres') await sql`drop function if exists gw_credit_batch`.execute(db);
    },
  };
}
