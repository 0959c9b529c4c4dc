/**
 * Key management CLI (npm run keys -- …). Uses the same configuration (DATABASE_URL, KEY_HASH_SECRET, DATA_DIR)
 * as the gateway, so a key made here works there.
 *
 *   create --name NAME [--credits USD] [--user USER_ID]   prints the new key on a line of its own, once
 *   list                                                  every key (prefix only), owner and balance
 *   revoke KEY_ID
 *   credit KEY_ID AMOUNT                                  adds AMOUNT USD (negative removes) to the key's owner
 */
import { loadConfig, ConfigError } from '../src/config.js';
import { openStore, type Store } from '../src/store/index.js';
import { KeyService } from '../src/auth.js';
import { nanoToUsd, usdToNano } from '../src/store/credits.js';

const USAGE = `usage: npm run keys -- <command>
  create --name NAME [--credits USD] [--user USER_ID]
  list
  revoke KEY_ID
  credit KEY_ID AMOUNT_USD`;

class UsageError extends Error {}

function parseFlags(args: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (!a.startsWith('--')) throw new UsageError(`unexpected argument "${a}"`);
    const [k, inline] = a.slice(2).split('=', 2);
    const v = inline ?? args[++i];
    if (v === undefined) throw new UsageError(`--${k} needs a value`);
    out[k] = v;
  }
  return out;
}

function positiveId(raw: string | undefined, what: string): number {
  if (!raw || !/^\d+$/.test(raw)) throw new UsageError(`${what} must be a positive integer`);
  return Number(raw);
}

function amount(raw: string | undefined): number {
  const n = Number(raw);
  if (raw === undefined || raw.trim() === '' || !Number.isFinite(n)) throw new UsageError('AMOUNT must be a number of USD, e.g. 10 or 2.5');
  return n;
}

async function run(argv: string[], store: Store, keys: KeyService): Promise<void> {
  const [cmd, ...rest] = argv;
  switch (cmd) {
    case 'create': {
      const f = parseFlags(rest);
      for (const k of Object.keys(f)) if (!['name', 'credits', 'user'].includes(k)) throw new UsageError(`unknown option --${k}`);
      if (!f.name?.trim()) throw new UsageError('create needs --name NAME');
      const credits = f.credits === undefined ? 0 : amount(f.credits);
      if (credits < 0) throw new UsageError('--credits must not be negative');
      const userId = f.user === undefined ? undefined : positiveId(f.user, '--user');
      if (userId !== undefined && !(await store.keys.userExists(userId))) throw new UsageError(`user ${userId} does not exist`);
      process.stderr.write('creating key…\n');
      const { key, record } = await keys.create(f.name.trim(), userId);
      if (credits > 0) await store.credits.grant(record.user_id, usdToNano(credits), `cli:create:${record.id}`);
      process.stderr.write(`key ${record.id} for user ${record.user_id} ("${record.name}"), balance ${credits} USD. Store it now; it is not shown again:\n`);
      process.stdout.write(`${key}\n`);
      return;
    }
    case 'list': {
      if (rest.length) throw new UsageError('list takes no arguments');
      const all = await store.keys.list();
      if (!all.length) { console.log('no keys'); return; }
      console.log(['id', 'user', 'name', 'prefix', 'balance_usd', 'created_at', 'revoked_at'].join('\t'));
      for (const k of all) {
        const bal = nanoToUsd(await store.credits.balance(k.user_id));
        console.log([k.id, k.user_id, k.name, `${k.key_prefix}…`, bal.toFixed(6), k.created_at, k.revoked_at ?? '-'].join('\t'));
      }
      return;
    }
    case 'revoke': {
      if (rest.length !== 1) throw new UsageError('revoke needs KEY_ID');
      const id = positiveId(rest[0], 'KEY_ID');
      if (!(await keys.revoke(id))) {
        const rec = await store.keys.get(id);
        process.stderr.write(rec ? `key ${id} was already revoked\n` : `no key ${id}\n`);
        process.exitCode = 1;
        return;
      }
      console.log(`revoked key ${id}`);
      return;
    }
    case 'credit': {
      if (rest.length !== 2) throw new UsageError('credit needs KEY_ID AMOUNT');
      const id = positiveId(rest[0], 'KEY_ID');
      const usd = amount(rest[1]);
      const rec = await store.keys.get(id);
      if (!rec) { process.stderr.write(`no key ${id}\n`); process.exitCode = 1; return; }
      const balance = await store.credits.grant(rec.user_id, usdToNano(usd), `cli:credit:${id}`);
      console.log(`user ${rec.user_id} balance: ${nanoToUsd(balance).toFixed(6)} USD`);
      return;
    }
    default:
      throw new UsageError(cmd ? `unknown command "${cmd}"` : 'no command given');
  }
}

async function main() {
  const argv = process.argv.slice(2);
  if (!argv.length || argv[0] === '--help' || argv[0] === '-h') {
    process.stderr.write(USAGE + '\n');
    process.exit(argv.length ? 0 : 2);
  }
  let config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) { process.stderr.write(`Configuration error: ${err.message}\n`); process.exit(2); }
    throw err;
  }
  const store = await openStore(config.database);
  const keys = new KeyService(store.keys, config.keyHashSecret, config.adminApiKey);
  try {
    await run(argv, store, keys);
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`error: ${err.message}\n${USAGE}\n`);
      process.exitCode = 2;
    } else throw err;
  } finally {
    await store.close();
  }
}

await main();
