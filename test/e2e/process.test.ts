import { expect } from 'chai';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { startGatewayProcess, runTs } from '../support/proc.js';

describe('e2e: the gateway process (npm start)', function () {
  this.timeout(60_000);

  it('starts on SQLite with no setup, logs JSON with request ids and no secrets, and drains on SIGTERM', async () => {
    const env = { DATA_DIR: fs.mkdtempSync(path.join(os.tmpdir(), 'gw-proc-')) };
    const created = await runTs('scripts/keys.ts', ['create', '--name', 'p', '--credits', '1'], { ...env, LOG_LEVEL: 'silent' });
    const key = created.stdout.trim();
    const gw = await startGatewayProcess(env);
    try {
      const health = await fetch(`${gw.url}/health`);
      expect(health.status).to.equal(200);
      expect(await health.json()).to.include({ status: 'ok', version: '2.0.3' });
      const res = await fetch(`${gw.url}/v1/chat/sessions`, { headers: { Authorization: `Bearer ${key}`, 'X-Request-Id': 'trace-42' } });
      expect(res.status).to.equal(200);
      expect(res.headers.get('x-request-id')).to.equal('trace-42');
      await fetch(`${gw.url}/v1/chat/sessions`, { method: 'POST', headers: { Authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ title: 'secret prompt words' }) });
    } finally {
      const code = await gw.stop('SIGTERM');
      expect(code).to.equal(0);
    }
    const lines = gw.logs().trim().split('\n').map((l) => JSON.parse(l));
    expect(lines.some((l) => l.requestId === 'trace-42' && l.status === 200 && l.path === '/v1/chat/sessions')).to.equal(true);
    expect(lines.some((l) => l.msg === 'stopped')).to.equal(true);
    expect(gw.logs()).to.not.contain(key).and.not.contain('secret prompt words');
  });

  it("with npm start's --no-memory-reducer, the gateway reduces V8's heap itself after start-up and after each quiet spell, monitoring probes aside", async () => {
    const env = { DATA_DIR: fs.mkdtempSync(path.join(os.tmpdir(), 'gw-proc-')), LOG_LEVEL: 'debug', MEMORY_TRIM_INTERVAL_MS: '100', MEMORY_REDUCE_AFTER_MS: '600' };
    const gw = await startGatewayProcess(env, ['--no-memory-reducer']);
    const reduced = () => gw.logs().split('\n').filter((l) => l.includes('"msg":"memory reduced"')).map((l) => JSON.parse(l) as { rssBefore: number; rssAfter: number; ms: number });
    const until = async (n: number) => {
      for (let i = 0; i < 100 && reduced().length < n; i++) await new Promise((r) => setTimeout(r, 50));
      return reduced();
    };
    try {
      const first = await until(1); // start-up's garbage, once nothing has been served for 0.6 s
      expect(first).to.have.length(1);
      expect(first[0].rssAfter).to.be.a('number').and.greaterThan(0);
      await new Promise((r) => setTimeout(r, 1_000));
      expect(reduced()).to.have.length(1); // quiet since: nothing more to do
      for (let i = 0; i < 20; i++) expect((await fetch(`${gw.url}/health`)).status).to.equal(200);
      expect((await fetch(`${gw.url}/metrics`)).status).to.equal(200);
      await new Promise((r) => setTimeout(r, 1_000));
      expect(reduced()).to.have.length(1); // probes are not traffic: still nothing new to give back
      for (let i = 0; i < 20; i++) expect((await fetch(`${gw.url}/v1/status/`)).status).to.equal(200);
      expect(await until(2)).to.have.length(2); // served, then quiet again
    } finally {
      expect(await gw.stop('SIGTERM')).to.equal(0);
    }
    expect(gw.logs()).to.not.contain("V8's memory reducer is off");
  });

  it('says so at start-up when V8\'s memory reducer is off and nothing gives the heap back in its place', async () => {
    const env = { DATA_DIR: fs.mkdtempSync(path.join(os.tmpdir(), 'gw-proc-')), MEMORY_REDUCE_AFTER_MS: '0' };
    const gw = await startGatewayProcess(env, ['--no-memory-reducer']);
    expect(await gw.stop('SIGTERM')).to.equal(0);
    const warning = gw.logs().split('\n').filter((l) => l.includes("V8's memory reducer is off")).map((l) => JSON.parse(l));
    expect(warning).to.have.length(1);
    expect(warning[0]).to.include({ level: 40, memoryReduceAfterMs: 0 }); // pino's warn
  });

  it('a bad setting stops start-up with a message naming the variable', async () => {
    const r = await runTs('src/main.ts', [], { PORT: 'eighty', DATA_DIR: fs.mkdtempSync(path.join(os.tmpdir(), 'gw-proc-')) });
    expect(r.code).to.equal(1);
    expect(r.stderr).to.contain('PORT: must be an integer');
  });

  it('a port in use stops start-up with a message naming it, not a stack', async () => {
    const taken = net.createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as net.AddressInfo).port;
    try {
      const r = await runTs('src/main.ts', [], { HOST: '127.0.0.1', PORT: String(port), DATA_DIR: fs.mkdtempSync(path.join(os.tmpdir(), 'gw-proc-')) });
      expect(r.code).to.equal(1);
      expect(r.stderr).to.contain(`Failed to start: cannot listen on 127.0.0.1:${port} (HOST, PORT): the port is in use (EADDRINUSE)`);
      expect(r.stderr).to.not.contain('Unhandled');
    } finally {
      taken.close();
    }
  });
});
