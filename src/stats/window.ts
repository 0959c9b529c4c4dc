/**
 * Statistics windows. Every window ends now; `[start, end)` with `start = null` for `all`. A window is read as
 * whole rollup days and hours plus raw rows for the partial hours at its edges (see facts.ts), so the answer is
 * exact for any `now`, not rounded to hours.
 */
import { DAY_MS, HOUR_MS } from '../store/rollups.js';

export type TimeRange = '1h' | '24h' | '7d' | '30d' | 'all';

export const RANGE_MS: Record<Exclude<TimeRange, 'all'>, number> = {
  '1h': HOUR_MS,
  '24h': 24 * HOUR_MS,
  '7d': 7 * 24 * HOUR_MS,
  '30d': 30 * 24 * HOUR_MS,
};

export interface Window {
  /** Inclusive; null = from the first record. */
  start: number | null;
  /** Exclusive; null = no upper bound (a window ending now also takes records stamped in this millisecond). */
  end: number | null;
}

/** The window of `range` ending at `now` (inclusive of records stamped `now`). */
export function windowFor(range: TimeRange, now: number): Window {
  return { start: range === 'all' ? null : now - RANGE_MS[range], end: null };
}

/** The window of the same length just before `range`'s window (trending growth). */
export function previousWindow(range: Exclude<TimeRange, 'all'>, now: number): Window {
  return { start: now - 2 * RANGE_MS[range], end: now - RANGE_MS[range] };
}

/** A part of a window and where it is read from: a rollup grain over whole periods, or raw rows. */
export interface Segment {
  source: 'day' | 'hour' | 'raw';
  /** Inclusive; for rollups the first period start. */
  from: number | null;
  /** Exclusive; null = open (a window ending now). */
  to: number | null;
}

const floorTo = (t: number, span: number) => t - (((t % span) + span) % span);
const ceilTo = (t: number, span: number) => (floorTo(t, span) === t ? t : floorTo(t, span) + span);

/**
 * Splits a window into whole days (daily rollup), whole hours at the edges (hourly rollup) and partial hours
 * at the edges (raw rows). A window of 30 days thus reads ~30 daily rows per series, at most 46 hourly rows and
 * at most two hours of raw rows.
 */
export function segments(w: Window): Segment[] {
  const out: Segment[] = [];
  const add = (source: Segment['source'], from: number | null, to: number | null) => {
    if (from === null || to === null || from < to) out.push({ source, from, to });
  };
  if (w.start === null && w.end === null) return [{ source: 'day', from: null, to: null }];
  if (w.start === null) throw new Error('a window without a start must end now');
  const h0 = ceilTo(w.start, HOUR_MS);
  const d0 = ceilTo(w.start, DAY_MS);
  if (w.end === null) {
    // open end: nothing is newer than now, so the last hourly part may reach the next day boundary
    add('raw', w.start, h0);
    add('hour', h0, d0);
    add('day', d0, null);
    return out;
  }
  const h1 = floorTo(w.end, HOUR_MS);
  if (h0 >= h1) return w.start < w.end ? [{ source: 'raw', from: w.start, to: w.end }] : [];
  const d1 = floorTo(h1, DAY_MS);
  add('raw', w.start, h0);
  if (d0 >= d1) {
    add('hour', h0, h1);
  } else {
    add('hour', h0, d0);
    add('day', d0, d1);
    add('hour', d1, h1);
  }
  add('raw', h1, w.end);
  return out;
}
