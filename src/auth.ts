/**
 * API keys: `gw_live_` + 43 url-safe characters (32 random bytes). Stored only as HMAC-SHA256 with the server
 * secret; looked up by that hash and compared in constant time. Lookups are cached briefly in memory so the
 * hot path does no I/O; revocation in this process drops the cache entry at once, and another process's
 * revocation is seen within the cache TTL. A key in use is looked up again in the background once its entry is half
 * the TTL old, so its requests do not wait for that lookup every TTL.
 */
import crypto from 'node:crypto';
import type { KeyRepo, KeyRecord } from './store/keys.js';
import { RefreshAheadCache } from './refresh-cache.js';

export const KEY_PREFIX = 'gw_live_';
/** 32 random bytes in base64url, unpadded. */
const KEY_BODY = 43;
const KEY_RE = new RegExp(`^${KEY_PREFIX}[A-Za-z0-9_-]{${KEY_BODY}}$`);
/** A key's length: the prefix and its base64url characters. */
const KEY_LENGTH = KEY_PREFIX.length + KEY_BODY;

export function generateKey(): string {
  return KEY_PREFIX + crypto.randomBytes(32).toString('base64url');
}

export function isWellFormedKey(key: string): boolean {
  return KEY_RE.test(key);
}

export interface Principal {
  keyId: number;
  userId: number;
  /** True for the ADMIN_API_KEY credential (no key row, no balance). */
  admin: boolean;
}

export class KeyService {
  /** Presented key -> its principal (null: unknown or revoked), for `cacheTtlMs`, looked up again ahead of it. */
  private readonly cache: RefreshAheadCache<string, Principal | null>;
  /** The admin credential's UTF-8 bytes, made once (the comparison on every request made them anew). */
  private readonly adminBytes: Buffer | undefined;
  /** The admin credential is ASCII: a presented string of another length can then not be it. */
  private readonly adminAscii: boolean;

  constructor(
    private readonly repo: KeyRepo,
    private readonly secret: string,
    adminKey: string | undefined,
    cacheTtlMs = 5_000,
  ) {
    this.cache = new RefreshAheadCache(cacheTtlMs, (presented) => this.principalOf(presented), () => Date.now());
    this.adminBytes = adminKey ? Buffer.from(adminKey) : undefined;
    this.adminAscii = this.adminBytes !== undefined && this.adminBytes.length === adminKey!.length;
  }

  hash(key: string): string {
    return crypto.createHmac('sha256', this.secret).update(key).digest('hex');
  }

  /** Creates a key for a user (a new user named after the key when none is given); returns the raw key once. */
  async create(name: string, userId?: number): Promise<{ key: string; record: KeyRecord }> {
    const owner = userId ?? (await this.repo.createUser(name));
    const key = generateKey();
    const record = await this.repo.insert(owner, name, this.hash(key), key.slice(0, KEY_PREFIX.length + 6));
    return { key, record };
  }

  async revoke(id: number): Promise<boolean> {
    const ok = await this.repo.revoke(id);
    this.cache.invalidate();
    return ok;
  }

  /**
   * The principal for a presented credential, or null (unknown, malformed or revoked). The cache is keyed by the
   * presented key itself, so a repeated key costs no HMAC (3 % of the CPU under load): the raw key stays in this
   * process's memory for the cache TTL, as it does in the request that carried it; only its HMAC is ever stored.
   * Answered at once (a plain value) from the cache or for a malformed key; a key not cached is a promise.
   */
  authenticate(presented: string | undefined): Principal | null | Promise<Principal | null> {
    if (!presented) return null;
    if (this.adminBytes && this.isAdmin(presented, this.adminBytes)) return { keyId: 0, userId: 0, admin: true };
    // Only well-formed keys are cached (below), so a cached key needs no check of its form: its regular expression
    // was ~1,700 instructions of every request (docs/PERFORMANCE.md, session 53). The length is checked first, so a
    // long header is not hashed for the lookup.
    if (presented.length !== KEY_LENGTH) return null;
    // Half the TTL old, an entry is looked up again in the background while it answers (src/refresh-cache.ts).
    const hit = this.cache.fresh(presented);
    if (hit) return hit.value && { ...hit.value };
    if (!isWellFormedKey(presented)) return null;
    return this.lookUp(presented);
  }

  /**
   * Whether `presented` is the admin credential, compared in constant time as `safeEqual` does. Most requests carry
   * an API key of another length, refused by lengths alone: UTF-8 takes at least a byte a UTF-16 unit, and an ASCII
   * credential's bytes are as many as its characters. (Unequal byte lengths were refused before the constant-time
   * compare already; only the allocations of both sides on every request are gone.)
   */
  private isAdmin(presented: string, admin: Buffer): boolean {
    if (this.adminAscii ? presented.length !== admin.length : presented.length > admin.length) return false;
    return safeEqual(presented, admin);
  }

  /** Looked up on the request's path (and cached); a copy, so that a caller changing it changes nobody else's. */
  private async lookUp(presented: string): Promise<Principal | null> {
    const principal = await this.cache.load(presented);
    return principal && { ...principal };
  }

  /** The principal a presented key stands for, from the database (its HMAC, then its row). */
  private async principalOf(presented: string): Promise<Principal | null> {
    const h = this.hash(presented);
    const rec = (await this.repo.findByHash(h)) ?? null;
    return rec && !rec.revoked_at && safeEqual(rec.key_hash, h) ? { keyId: rec.id, userId: rec.user_id, admin: false } : null;
  }
}

function safeEqual(a: string, b: string | Buffer): boolean {
  const ab = Buffer.from(a);
  const bb = typeof b === 'string' ? Buffer.from(b) : b;
  return ab.length === bb.length && crypto.timingSafeEqual(ab, bb);
}

/** The key from `Authorization: Bearer <key>` or `x-api-key: <key>`. */
export function presentedKey(headers: Record<string, string | string[] | undefined>): string | undefined {
  const auth = headers['authorization'];
  if (typeof auth === 'string') {
    const m = /^Bearer\s+(.+)$/i.exec(auth.trim());
    if (m) return m[1].trim();
  }
  const x = headers['x-api-key'];
  return typeof x === 'string' && x.trim() ? x.trim() : undefined;
}
