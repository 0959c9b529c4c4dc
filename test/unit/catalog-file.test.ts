import { expect } from 'chai';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadCatalogFile } from '../../src/catalog/file.js';
import { loadConfig } from '../../src/config.js';

describe('CATALOG_FILE: a gateway\'s upstream', () => {
  it('gives its base URL without trailing slashes, as the seeded catalog does (the engine appends paths to it)', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-catalog-file-'));
    const file = path.join(dir, 'catalog.json');
    fs.writeFileSync(file, JSON.stringify({
      gateways: [{ id: 'sim', url: 'http://127.0.0.1:9/v1//', key: 'k' }, { id: 'plain', url: 'http://127.0.0.1:9/v1', key: 'k2' }, { id: 'keyless', url: 'http://127.0.0.1:9/' }],
      offers: [{ gateway: 'sim', upstreamModel: 'm', modelId: 'sim/m' }],
    }));
    const catalog = loadCatalogFile(file, loadConfig({ DATA_DIR: dir }));
    expect(catalog.upstream('sim')).to.deep.equal({ baseUrl: 'http://127.0.0.1:9/v1', apiKey: 'k' });
    expect(catalog.upstream('plain')).to.deep.equal({ baseUrl: 'http://127.0.0.1:9/v1', apiKey: 'k2' });
    expect(catalog.upstream('keyless')).to.equal(undefined);
    fs.rmSync(dir, { recursive: true, force: true });
  });
});
