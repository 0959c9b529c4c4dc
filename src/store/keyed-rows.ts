/**
 * Rows found by the parts of a composite key (a rollup's grain, period, gateway, provider and model; a pair's
 * gateway and model), one Map per part. A flush folds every record into a few rows; with one key string per record
 * (`${a}\u0000${b}…`) each lookup built a fresh string, then flattened, hashed and compared it in V8's runtime (six
 * lookups per usage record: ~2.0 µs a record in a micro-benchmark, ~0.5 µs this way; docs/PERFORMANCE.md, session
 * 31). The parts are numbers and the records' own strings, shared by every record of a model (their hash is computed
 * once), so a lookup builds no string.
 *
 * `sorted()` gives the rows in the order of their joined key (`parts.join('\u0000')`, made once per row): the same
 * order as sorting the key strings, which the writers rely on (concurrent PostgreSQL writers lock rows in one order).
 */
export type KeyPart = string | number;

export class KeyedRows<T> {
  private readonly root = new Map<KeyPart, unknown>();
  private readonly rows: Array<{ key: string; row: T }> = [];

  /** The row of these parts (always as many parts, in the same order), or undefined. */
  get(parts: readonly KeyPart[]): T | undefined {
    let map = this.root;
    const last = parts.length - 1;
    for (let i = 0; i < last; i++) {
      const next = map.get(parts[i]) as Map<KeyPart, unknown> | undefined;
      if (!next) return undefined;
      map = next;
    }
    return map.get(parts[last]) as T | undefined;
  }

  /** Adds the row of these parts (which has none yet). */
  add(parts: readonly KeyPart[], row: T): T {
    let map = this.root;
    const last = parts.length - 1;
    for (let i = 0; i < last; i++) {
      let next = map.get(parts[i]) as Map<KeyPart, unknown> | undefined;
      if (!next) map.set(parts[i], (next = new Map()));
      map = next;
    }
    map.set(parts[last], row);
    this.rows.push({ key: parts.join('\u0000'), row });
    return row;
  }

  get size(): number {
    return this.rows.length;
  }

  /** Every row, in the order of the joined key strings. */
  sorted(): T[] {
    return this.rows.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)).map((r) => r.row);
  }
}
