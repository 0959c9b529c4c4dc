/**
 * `{ ...base, ...more }` for the request path, built by assignment. In this Node's V8 (11.3) an object spread followed
 * by a key the spread object lacks (`{ ...a, k }`, `{ ...a, ...b }`) makes a new hidden class on every call: ~0.4–2
 * µs each in a loop (against ~0.02–0.3 µs for the same object built by assignment), and every load from the object
 * afterwards misses its inline cache. A spread that only replaces keys the object has, or one after literal keys
 * (`{ type, ...data }`), follows cached transitions and is fine as it is (docs/PERFORMANCE.md, session 39).
 * Own enumerable string keys, in spread's order; a `__proto__` key (JSON.parse makes one) stays an own property, as a
 * spread keeps it (an assignment would set the prototype instead).
 */
export function spread<T extends object = Record<string, unknown>>(base: object | null | undefined, more?: object | null): T {
  const out: Record<string, unknown> = {};
  if (base) copy(out, base as Record<string, unknown>);
  if (more) copy(out, more as Record<string, unknown>);
  return out as T;
}

function copy(out: Record<string, unknown>, from: Record<string, unknown>): void {
  const keys = Object.keys(from);
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i];
    if (k === '__proto__') Object.defineProperty(out, k, { value: from[k], enumerable: true, writable: true, configurable: true });
    else out[k] = from[k];
  }
}
