/**
 * Migration 0002_stats: what statistics and model health read.
 *
 * - usage_rollup (hourly and daily) and usage_user_seen: long windows read rollup rows, not every request (see rollups.ts).
 * - usage_records indexes for the parts still read raw: the partial hour at a window's start, the latency sample
 *   behind the percentiles (scope, status, created_at, latency_ms — covering), and distinct users per model in
 *   a trending growth window (model, [gateway,] created_at, user_id — covering; replaces 0001's (model, created_at)).
 * - model_health_buckets (5-minute health rollup) and health_incidents.
 * - model_health_history (gateway, model, ts, id): "the last N calls" is a backward index scan with a stable
 *   tie-break on both databases; it supersedes 0001's (gateway, model, ts).
 * Existing rows are rolled up here, so an upgraded database answers the same as a fresh one.
 * (Migration 0008, in migrations.ts, replaced these usage_records indexes with fewer that serve the same reads.)
 */
import { sql, type Kysely, type Migration } from 'kysely';
import type { Dialect } from './migrations.js';
import { rebuildHealthBuckets, rebuildUsageRollups } from './rollups.js';

export function statsMigration(dialect: Dialect): Migration {
  return {
    async up(db: Kysely<any>) {
      const big = 'bigint';
      await db.schema.createTable('usage_rollup')
        .addColumn('grain', 'text', (c) => c.notNull())
        .addColumn('period', big, (c) => c.notNull())
        .addColumn('gateway', 'text', (c) => c.notNull())
        .addColumn('provider', 'text', (c) => c.notNull())
        .addColumn('model', 'text', (c) => c.notNull())
        .addColumn('requests', big, (c) => c.notNull().defaultTo(0))
        .addColumn('successes', big, (c) => c.notNull().defaultTo(0))
        .addColumn('failures', big, (c) => c.notNull().defaultTo(0))
        .addColumn('prompt_tokens', big, (c) => c.notNull().defaultTo(0))
        .addColumn('completion_tokens', big, (c) => c.notNull().defaultTo(0))
        .addColumn('cost_nano', big, (c) => c.notNull().defaultTo(0))
        .addColumn('latency_sum', big, (c) => c.notNull().defaultTo(0))
        .addColumn('ttft_sum', big, (c) => c.notNull().defaultTo(0))
        .addColumn('ttft_n', big, (c) => c.notNull().defaultTo(0))
        .addColumn('tps_sum', 'double precision', (c) => c.notNull().defaultTo(0))
        .addColumn('tps_n', big, (c) => c.notNull().defaultTo(0))
        .addPrimaryKeyConstraint('usage_rollup_pk', ['grain', 'period', 'gateway', 'provider', 'model'])
        .execute();
      await db.schema.createIndex('usage_rollup_gateway').on('usage_rollup').columns(['grain', 'gateway', 'period']).execute();
      await db.schema.createIndex('usage_rollup_provider').on('usage_rollup').columns(['grain', 'provider', 'period']).execute();

      await db.schema.createTable('usage_user_seen')
        .addColumn('scope_gateway', 'text', (c) => c.notNull())
        .addColumn('scope_model', 'text', (c) => c.notNull())
        .addColumn('user_id', big, (c) => c.notNull())
        .addColumn('last_at', big, (c) => c.notNull())
        .addPrimaryKeyConstraint('usage_user_seen_pk', ['scope_gateway', 'scope_model', 'user_id'])
        .execute();
      await db.schema.createIndex('usage_user_seen_scope_last').on('usage_user_seen').columns(['scope_gateway', 'scope_model', 'last_at']).execute();

      for (const [name, cols] of [
        ['usage_records_provider_status_created_latency', ['provider', 'status', 'created_at', 'latency_ms']],
        ['usage_records_gateway_status_created_latency', ['gateway', 'status', 'created_at', 'latency_ms']],
        ['usage_records_model_created_user', ['model', 'created_at', 'user_id']],
        ['usage_records_model_gateway_created_user', ['model', 'gateway', 'created_at', 'user_id']],
      ] as Array<[string, string[]]>) {
        await db.schema.createIndex(name).on('usage_records').columns(cols).execute();
      }
      // superseded by (model, created_at, user_id), which serves the same ranges
      await db.schema.dropIndex('usage_records_model_created_at').execute();

      await db.schema.createTable('model_health_buckets')
        .addColumn('gateway', 'text', (c) => c.notNull())
        .addColumn('model', 'text', (c) => c.notNull())
        .addColumn('bucket', big, (c) => c.notNull())
        .addColumn('calls', big, (c) => c.notNull().defaultTo(0))
        .addColumn('successes', big, (c) => c.notNull().defaultTo(0))
        .addColumn('latency_sum', big, (c) => c.notNull().defaultTo(0))
        .addColumn('latency_n', big, (c) => c.notNull().defaultTo(0))
        .addPrimaryKeyConstraint('model_health_buckets_pk', ['gateway', 'model', 'bucket'])
        .execute();
      await db.schema.createIndex('model_health_buckets_bucket').on('model_health_buckets').columns(['bucket']).execute();

      await db.schema.dropIndex('model_health_history_gm_ts').execute();
      await db.schema.createIndex('model_health_history_gm_ts_id').on('model_health_history').columns(['gateway', 'model', 'ts', 'id']).execute();

      const incidents = db.schema.createTable('health_incidents');
      await (dialect === 'postgres'
        ? incidents.addColumn('id', 'bigserial', (c) => c.primaryKey())
        : incidents.addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement()))
        .addColumn('gateway', 'text', (c) => c.notNull())
        .addColumn('model', 'text', (c) => c.notNull())
        .addColumn('provider', 'text', (c) => c.notNull())
        .addColumn('started_at', big, (c) => c.notNull())
        .addColumn('resolved_at', big)
        .addColumn('error_message', 'text')
        .execute();
      // At most one open incident per (gateway, model), even with several instances writing (partial unique index).
      await sql`create unique index health_incidents_open on health_incidents (gateway, model) where resolved_at is null`.execute(db);
      await db.schema.createIndex('health_incidents_gm_started').on('health_incidents').columns(['gateway', 'model', 'started_at']).execute();

      await rebuildUsageRollups(db);
      await rebuildHealthBuckets(db);
    },
    async down(db: Kysely<any>) {
      for (const t of ['health_incidents', 'model_health_buckets', 'usage_user_seen', 'usage_rollup']) {
        await sql`drop table if exists ${sql.table(t)}`.execute(db);
      }
      for (const i of ['usage_records_provider_status_created_latency', 'usage_records_gateway_status_created_latency',
        'usage_records_model_created_user', 'usage_records_model_gateway_created_user', 'model_health_history_gm_ts_id']) {
        await sql`drop index if exists ${sql.raw(i)}`.execute(db);
      }
      await db.schema.createIndex('usage_records_model_created_at').on('usage_records').columns(['model', 'created_at']).execute();
      await db.schema.createIndex('model_health_history_gm_ts').on('model_health_history').columns(['gateway', 'model', 'ts']).execute();
    },
  };
}
