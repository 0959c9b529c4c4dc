import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import fs from 'node:fs';
import { loadSpec, operationIds } from '../../src/spec.js';
import { handlers } from '../../handlers/index.js';
import { generate, GENERATED_FILE } from '../../scripts/gen.js';

const run = promisify(execFile);

/** The 50 operations the interface shows, as `METHOD path`. */
const INTERFACE_OPERATIONS = [
  'POST /v1/chat/completions', 'POST /v1/messages', 'POST /v1/images/generations', 'POST /v1/audio/transcriptions',
  'POST /v1/audio/transcriptions/base64', 'PUT /v1/chat/sessions/{session_id}',
  'GET /v1/tools', 'GET /v1/tools/definitions', 'GET /v1/tools/{tool_name}', 'POST /v1/tools/execute', 'POST /v1/tools/search/augment',
  'GET /v1/routers', 'GET /v1/gateways', 'GET /v1/gateways/status', 'GET /v1/provider',
  'GET /v1/provider/{provider_name}/stats', 'GET /v1/gateway/{gateway}/stats', 'GET /v1/gateways/summary',
  'GET /v1/provider/{provider_name}/top-models', 'GET /v1/models/trending',
  'GET /v1/models', 'GET /v1/models/by-category/{category}', 'GET /v1/models/low-latency', 'GET /v1/models/unique',
  'POST /v1/models/batch-compare', 'GET /v1/models/{provider_name}/{model_name}/compare',
  'GET /v1/models/{provider_name}/{model_name}', 'GET /v1/models/{developer_name}', 'GET /v1/models/search',
  'GET /v1/partner/models', 'GET /v1/partner/ids', 'GET /v1/partner/check/{model_id}',
  'GET /v1/hub/discovery', 'GET /v1/hub/search', 'GET /v1/hub/models/{model_id}/details', 'GET /v1/hub/models/{model_id}/card',
  'GET /v1/hub/author/{author}/models', 'GET /v1/hub/models/{model_id}/files',
  'GET /v1/model-health', 'GET /v1/model-health/{provider}/{model}', 'GET /v1/model-health/unhealthy', 'GET /v1/model-health/stats',
  'GET /v1/model-health/provider/{provider}/summary', 'GET /v1/model-health/providers',
  'GET /v1/status/', 'GET /v1/status/providers', 'GET /v1/status/models', 'GET /v1/status/models/{provider}/{model_id}',
  'GET /v1/status/detailed', 'GET /health/summary',
];

describe('contract: spec/openapi.yaml', () => {
  const { doc } = loadSpec();

  it('is OpenAPI 3.1 at interface version 2.0.3', () => {
    expect(doc.openapi).to.match(/^3\.1\./);
    expect(doc.info.version).to.equal('2.0.3');
  });

  it('has every operation of the interface, at its exact path and method', () => {
    const present = new Set<string>();
    for (const [p, item] of Object.entries(doc.paths)) for (const m of Object.keys(item)) present.add(`${m.toUpperCase()} ${p}`);
    expect(INTERFACE_OPERATIONS).to.have.length(50);
    expect(INTERFACE_OPERATIONS.filter((o) => !present.has(o))).to.deep.equal([]);
  });

  it('gives every operation a unique operationId, one tag, and a default error response', () => {
    const ids = operationIds(doc);
    expect(new Set(ids).size).to.equal(ids.length);
    for (const item of Object.values(doc.paths)) {
      for (const op of Object.values(item) as any[]) {
        if (!op?.operationId) continue;
        expect(op.tags, op.operationId).to.be.an('array').with.length(1);
        expect(op.responses, op.operationId).to.have.property('default');
      }
    }
  });

  it('handler map keys are exactly the spec operationIds', () => {
    expect(Object.keys(handlers).sort()).to.deep.equal(operationIds(doc).sort());
  });


  it('generated/api.ts is current (npm run gen)', async () => {
    const fresh = await generate();
    expect(fs.readFileSync(GENERATED_FILE, 'utf8') === fresh, 'generated/api.ts is stale: run `npm run gen`').to.equal(true);
  });

  it('passes redocly lint with no errors', async function () {
    this.timeout(60_000);
    const { stdout, stderr } = await run('npx', ['redocly', 'lint', 'spec/openapi.yaml', '--format', 'stylish'], { env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' } })
      .catch((e) => { throw new Error(`redocly lint failed:\n${e.stdout}\n${e.stderr}`); });
    expect(`${stdout}${stderr}`).to.not.match(/\berror\b.*\d/i);
  });
});
