import { expect } from 'chai';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runTs } from '../support/proc.js';
import { loadConfig } from '../../src/config.js';
import { openStore } from '../../src/store/index.js';
import { KeyService } from '../../src/auth.js';

describe('e2e: keys CLI (npm run keys)', function () {
  this.timeout(60_000);
  const env = { DATA_DIR: fs.mkdtempSync(path.join(os.tmpdir(), 'gw-cli-')), LOG_LEVEL: 'silent' };
  const keys = (...args: string[]) => runTs('scripts/keys.ts', args, env);

  it('create prints the key once on a line of its own; list, credit and revoke do what they say', async () => {
    const created = await keys('create', '--name', 'ci-bot', '--credits', '10');
    expect(created.code, created.stderr).to.equal(0);
    const lines = created.stdout.trim().split('\n');
    expect(lines).to.have.length(1);
    const key = lines[0];
    expect(key).to.match(/^gw_live_[A-Za-z0-9_-]{43}$/);

    const list = await keys('list');
    expect(list.code).to.equal(0);
    expect(list.stdout).to.contain('ci-bot').and.contain('10.000000').and.not.contain(key);
    const id = list.stdout.trim().split('\n')[1].split('\t')[0];

    const credit = await keys('credit', id, '2.5');
    expect(credit.stdout).to.contain('balance: 12.500000 USD');

    // the key the CLI printed authenticates against the same store and secret the server uses
    const config = loadConfig(env);
    const store = await openStore(config.database);
    try {
      const svc = new KeyService(store.keys, config.keyHashSecret, undefined);
      const principal = await svc.authenticate(key);
      expect(principal?.keyId).to.equal(Number(id));
      expect(await store.credits.balance(principal!.userId)).to.equal(12.5e9);
      expect(await store.credits.ledgerSum(principal!.userId)).to.equal(12.5e9);

      expect((await keys('revoke', id)).stdout).to.contain(`revoked key ${id}`);
      const again = await keys('revoke', id);
      expect(again.code).to.equal(1);
      expect(again.stderr).to.contain('already revoked');
      expect(await new KeyService(store.keys, config.keyHashSecret, undefined).authenticate(key)).to.equal(null);
    } finally {
      await store.close();
    }
  });

  for (const args of [[], ['bogus'], ['create'], ['create', '--name'], ['create', '--name', 'x', '--credits', 'lots'], ['revoke'], ['revoke', 'abc'], ['credit', '1'], ['credit', '1', 'x'], ['list', 'extra']]) {
    it(`bad arguments (${args.join(' ') || 'none'}) print usage and exit 2`, async () => {
      const r = await keys(...args);
      expect(r.code).to.equal(2);
      expect(r.stderr).to.contain('usage: npm run keys');
    });
  }
});
