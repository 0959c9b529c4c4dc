/**
 * Upstream faults, each against the simulator (or a closed port) over real HTTP: the client gets a failover or a
 * clear 502/503/504/429 — never a hang (every upstream timeout here is short, and each test's own timeout is far
 * above them) — the usage record says what happened, and no credit stays held: the ledger equals the balance
 * and the user has no open hold after every request.
 */
import { expect } from 'chai';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startTestGateway, type TestGateway } from '../support/app.js';
import { startSimulator, type Simulator } from '../support/simulator.js';
import { fixtureCatalog, gw, offer } from '../support/catalog.js';
import { freePort } from '../support/proc.js';
import { readSse } from '../../src/stream/sse.js';

describe('e2e: upstream faults survived', function () {
  this.timeout(20_000);
  let sim: Simulator;
  let gateway: TestGateway;
  let server: http.Server;
  let url: string;
  let key: string;
  let userId: number;
  let n = 0;

  before(async () => {
    sim = await startSimulator({ apiKey: 'sim-key' });
    const closed = `http://127.0.0.1:${await freePort()}/v1`; // nothing listens: connection refused
    const up = `${sim.url}/v1`;
    const catalog = fixtureCatalog({
      gateways: [{ ...gw('openai'), url: up }, { ...gw('groq'), url: up }, { ...gw('together'), url: closed },
        { ...gw('anthropic', 'anthropic'), url: sim.url }, { ...gw('google', 'gemini'), url: sim.url }],
      offers: [
        offer('openai', 'sim/hang', 'f/hang'),
        offer('together', 'sim/echo', 'f/refused'),
        offer('together', 'sim/echo', 'f/refused-failover'), offer('openai', 'sim/echo', 'f/refused-failover'),
        offer('openai', 'sim/reset', 'f/reset'),
        offer('groq', 'sim/reset', 'f/reset-failover'), offer('openai', 'sim/echo', 'f/reset-failover'),
        offer('openai', 'sim/stream-break', 'f/break'),
        offer('openai', 'sim/malformed', 'f/malformed'),
        offer('openai', 'sim/truncated', 'f/truncated'),
        offer('groq', 'sim/error-429', 'f/storm'),
        offer('groq', 'sim/error-429', 'f/429-failover'), offer('openai', 'sim/echo', 'f/429-failover'),
        offer('openai', 'sim/error-500', 'f/500'),
        offer('groq', 'sim/error-503', 'f/500-failover'), offer('openai', 'sim/flaky-1', 'f/500-failover'),
        offer('openai', 'sim/dribble-40ms', 'f/loris'),
        offer('openai', 'sim/drip-2500ms', 'f/stall'),
        offer('anthropic', 'sim/drip-2500ms', 'f/stall-anthropic'),
        offer('google', 'models/sim/drip-2500ms', 'f/stall-gemini'),
      ],
    });
    gateway = await startTestGateway({
      services: { models: catalog },
      env: {
        UPSTREAM_CONNECT_TIMEOUT_MS: '1000', UPSTREAM_FIRST_BYTE_TIMEOUT_MS: '700', UPSTREAM_TOTAL_TIMEOUT_MS: '2000',
        BREAKER_FAILURE_THRESHOLD: '5', BREAKER_COOLDOWN_MS: '60000', RATE_LIMIT_RPM: '0', RATE_LIMIT_CONCURRENT: '0',
      },
    });
    server = gateway.app.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    ({ key, userId } = await gateway.newKey(5));
  });
  after(async () => {
    server?.close();
    await gateway?.close();
    await sim?.close();
  });

  /** One chat request with its own request id; the answer, its body (JSON or SSE events) and its usage row. */
  async function chat(model: string, stream = false) {
    const requestId = `fault-${++n}`;
    const res = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${key}`, 'content-type': 'application/json', 'X-Request-Id': requestId },
      body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hello' }], stream }),
    });
    let body: any;
    const events: string[] = [];
    if ((res.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
      for await (const ev of readSse(res.body as unknown as AsyncIterable<Uint8Array>)) events.push(ev.data);
    } else body = await res.json();
    await gateway.services.recorder.flush();
    const rows = await gateway.store.usage.byRequestId(requestId);
    return { res, body, events, rows, requestId };
  }

  /** Nothing is held and the ledger equals the balance. */
  async function settled() {
    expect(await gateway.store.credits.openHoldCount(userId)).to.equal(0);
    expect(await gateway.store.credits.ledgerSum(userId)).to.equal(await gateway.store.credits.balance(userId));
  }

  const failedRow = (rows: any[], status: string, errorClass: string, http: number) => {
    expect(rows).to.have.length(1);
    expect(rows[0]).to.include({ status, error_class: errorClass, http_status: http });
    expect(Number(rows[0].cost_nano)).to.equal(0);
  };

  it('upstream timeout (no answer): 504 upstream_timeout, JSON and stream alike', async () => {
    for (const stream of [false, true]) {
      const { res, body, rows, requestId } = await chat('f/hang', stream);
      expect(res.status).to.equal(504);
      expect(body.error).to.deep.include({ type: 'upstream_error', code: 'upstream_timeout', request_id: requestId });
      failedRow(rows, 'timeout', 'timeout', 504);
    }
    await settled();
  });

  it('connection refused: 502 upstream_connection; with a second candidate, failover to it', async () => {
    const { res, body, rows } = await chat('f/refused');
    expect(res.status).to.equal(502);
    expect(body.error.code).to.equal('upstream_connection');
    failedRow(rows, 'error', 'connection', 502);
    const ok = await chat('f/refused-failover');
    expect(ok.res.status).to.equal(200);
    expect(ok.body.gateway_usage).to.include({ gateway: 'openai', attempts: 2 });
    expect(ok.rows[0]).to.include({ status: 'success', gateway: 'openai', http_status: 200 });
    await settled();
  });

  it('connection reset before the answer: 502, JSON and stream; failover when another candidate serves', async () => {
    for (const stream of [false, true]) {
      const { res, body, rows } = await chat('f/reset', stream);
      expect(res.status).to.equal(502);
      expect(body.error.code).to.equal('upstream_connection');
      failedRow(rows, 'error', 'connection', 502);
    }
    const ok = await chat('f/reset-failover', true);
    expect(ok.res.status).to.equal(200);
    expect(ok.events.at(-1)).to.equal('[DONE]');
    expect(ok.res.headers.get('x-gateway-provider')).to.equal('openai');
    await settled();
  });

  it('connection reset during a stream: the text so far, then an error event and no [DONE]; nothing charged', async () => {
    const before = await gateway.store.credits.balance(userId);
    const { res, events, rows } = await chat('f/break', true);
    expect(res.status).to.equal(200);
    const data = events.map((e) => JSON.parse(e));
    expect(data.flatMap((d) => d.choices?.map((c: any) => c.delta?.content ?? '') ?? []).join('')).to.equal('w1 w2 w3 ');
    expect(data.at(-1).error).to.include({ type: 'upstream_error', code: 'upstream_stream_broken' });
    expect(events).to.not.include('[DONE]');
    failedRow(rows, 'error', 'stream_broken', 502);
    expect(await gateway.store.credits.balance(userId)).to.equal(before);
    await settled();
  });

  it('malformed JSON: 502 upstream_invalid_response; in a stream, an error event (the stream broke)', async () => {
    const { res, body, rows } = await chat('f/malformed');
    expect(res.status).to.equal(502);
    expect(body.error.code).to.equal('upstream_invalid_response');
    failedRow(rows, 'error', 'invalid_response', 502);
    const s = await chat('f/malformed', true);
    expect(s.res.status).to.equal(200);
    const err = JSON.parse(s.events.at(-1)!).error;
    expect(err.code).to.equal('upstream_stream_broken');
    expect(err.message).to.contain('malformed JSON');
    failedRow(s.rows, 'error', 'stream_broken', 502);
    await settled();
  });

  it('truncated SSE (a clean end without the terminator): an error event, not a silent 200; truncated JSON is 502', async () => {
    const s = await chat('f/truncated', true);
    expect(s.res.status).to.equal(200);
    expect(JSON.parse(s.events.at(-1)!).error.code).to.equal('upstream_stream_broken');
    expect(s.events).to.not.include('[DONE]');
    failedRow(s.rows, 'error', 'stream_broken', 502);
    const j = await chat('f/truncated');
    expect(j.res.status).to.equal(502);
    expect(j.body.error.code).to.equal('upstream_invalid_response');
    await settled();
  });

  it('a 429 storm: every client gets 429 with Retry-After, or 503 circuit_open with Retry-After once the breaker opens', async () => {
    const all = await Promise.all(Array.from({ length: 12 }, () => chat('f/storm')));
    for (const { res, body, rows } of all) {
      expect([429, 503]).to.include(res.status);
      expect(Number(res.headers.get('retry-after'))).to.be.at.least(1);
      expect(body.error.code).to.equal(res.status === 429 ? 'upstream_rate_limited' : 'circuit_open');
      failedRow(rows, res.status === 429 ? 'rate_limited' : 'error', res.status === 429 ? 'rate_limited' : 'circuit_open', res.status);
    }
    // five failures open the breaker: from then on the gateway stops calling the upstream
    const later = await chat('f/storm');
    expect(later.res.status).to.equal(503);
    expect(Number(later.res.headers.get('retry-after'))).to.be.within(1, 60);
    const before = sim.calls.length;
    await chat('f/storm');
    expect(sim.calls.length).to.equal(before);
    // a 429 on the first candidate fails over to the next
    const ok = await chat('f/429-failover');
    expect(ok.res.status).to.equal(200);
    expect(ok.body.gateway_usage.attempts).to.equal(2);
    await settled();
  });

  it('500s: 502 upstream_server_error; a flaky last candidate gets its retry', async () => {
    const { res, body, rows } = await chat('f/500');
    expect(res.status).to.equal(502);
    expect(body.error.code).to.equal('upstream_server_error');
    expect(body.error.message).to.contain('upstream HTTP 500');
    failedRow(rows, 'error', 'server_error', 502);
    sim.reset();
    const ok = await chat('f/500-failover'); // groq 503, openai 500 once, then openai echoes
    expect(ok.res.status).to.equal(200);
    expect(ok.body.gateway_usage).to.include({ gateway: 'openai', attempts: 3 });
    await settled();
  });

  it('slow loris (one byte every 40 ms): cut at the total timeout (JSON) or the event idle timeout (stream): 504', async () => {
    for (const stream of [false, true]) {
      const { res, body, rows } = await chat('f/loris', stream);
      expect(res.status).to.equal(504);
      expect(body.error.code).to.equal('upstream_timeout');
      failedRow(rows, 'timeout', 'timeout', 504);
    }
    await settled();
  });

  it('a stream that stalls after its first events: an error event at the idle timeout, usage says timeout (OpenAI, Anthropic and Gemini upstreams)', async () => {
    for (const model of ['f/stall', 'f/stall-anthropic', 'f/stall-gemini']) {
      const t0 = Date.now();
      const { res, events, rows } = await chat(model, true);
      expect(res.status, model).to.equal(200);
      const last = JSON.parse(events.at(-1)!);
      expect(last.error, model).to.include({ code: 'upstream_timeout' });
      expect(last.error.message).to.contain('no stream event for 700 ms');
      expect(Date.now() - t0, model).to.be.below(2000); // cut at the idle limit, not at the simulator's next piece
      failedRow(rows, 'timeout', 'timeout', 504);
    }
    await settled();
  });

  it('/metrics counts every upstream attempt by outcome, and the breaker a run of failures opened shows in /metrics and /v1/status/detailed', async () => {
    const scrape = async () => {
      const text = await (await fetch(`${url}/metrics`)).text();
      return (line: string) => {
        const hit = text.split('\n').find((l) => l.startsWith(line + ' '));
        return hit === undefined ? undefined : Number(hit.slice(line.length + 1));
      };
    };
    const attempts = (gateway: string, outcome: string) => `gateway_upstream_requests_total{gateway="${gateway}",outcome="${outcome}"}`;
    const errors = (gateway: string, kind: string) => `gateway_upstream_errors_total{gateway="${gateway}",kind="${kind}"}`;
    const seconds = (gateway: string, outcome: string) => `gateway_upstream_request_duration_seconds_count{gateway="${gateway}",outcome="${outcome}"}`;
    const before = await scrape();
    const failedBefore = gateway.services.breakers.snapshot().find((b) => b.gateway === 'together')?.failures ?? 0; // earlier tests'
    sim.reset();
    expect((await chat('f/500-failover')).res.status).to.equal(200); // groq 503, openai 500 once, then openai echoes
    expect((await chat('f/break', true)).events.at(-1)).to.contain('upstream_stream_broken');
    // refused (a try and its retry per request) until five failures in a row open together's breaker: then no attempt
    let refused = 0;
    for (let r = await chat('f/refused'); r.res.status !== 503; r = await chat('f/refused')) {
      expect(r.res.status).to.equal(502);
      expect(++refused).to.be.at.most(5);
    }
    expect(refused).to.be.at.least(1);
    const after = await scrape();
    const delta = (line: string) => (after(line) ?? 0) - (before(line) ?? 0);
    expect(delta(attempts('groq', 'server_error'))).to.equal(1);
    expect(delta(attempts('openai', 'server_error'))).to.equal(1);
    expect(delta(attempts('openai', 'success'))).to.equal(1);
    expect(delta(attempts('openai', 'stream_broken'))).to.equal(1);
    expect(delta(attempts('together', 'connection'))).to.equal(5 - failedBefore);
    expect(delta(errors('groq', 'server_error'))).to.equal(1);
    expect(delta(errors('together', 'connection'))).to.equal(5 - failedBefore);
    expect(delta(seconds('openai', 'success'))).to.equal(1);
    expect(delta(seconds('together', 'connection'))).to.equal(5 - failedBefore);
    expect(after('gateway_circuit_breaker_state{gateway="together"}')).to.equal(2);
    expect(after('gateway_circuit_breaker_state{gateway="openai"}')).to.equal(0); // failed before, closed again by its successes
    const detailed = await (await fetch(`${url}/v1/status/detailed`, { headers: { Authorization: `Bearer ${key}` } })).json() as any;
    const state = (id: string) => detailed.gateways.find((g: any) => g.id === id)?.breaker_state;
    expect(state('together')).to.equal('open');
    expect(state('openai')).to.equal('closed');
    await settled();
  });
});
