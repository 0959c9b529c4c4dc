/**
 * A Vertex AI prediction endpoint for image models: `POST /v1/projects/{p}/locations/{l}/endpoints/{e}:predict`
 * (a deployed endpoint: the model name is `sim/<e>`, so endpoint `error-500` behaves as `sim/error-500`) and
 * `…/publishers/google/models/{m}:predict` (model `m`). Auth is `Authorization: Bearer` (an OAuth access token
 * upstream); errors are Google's `{error:{code, message, status}}`. The answer has `parameters.sampleCount`
 * (default 1) predictions `{bytesBase64Encoded, mimeType}`; a prompt containing `BLOCKED` gets none (Imagen's
 * safety filter drops blocked images).
 */
import { behaviourOf } from './behaviour.js';
import { gate, sendJson, sendMalformed, type SimRequest } from './io.js';
import { geminiError } from './gemini.js';
import { PNG_1X1 } from './openai-media.js';

export const VERTEX_PREDICT = /^\/v1\/projects\/([^/]+)\/locations\/([^/]+)\/(?:endpoints\/([^/:]+)|publishers\/google\/models\/([^/:]+)):predict$/;

export function vertexModel(path: string): string | undefined {
  const m = VERTEX_PREDICT.exec(path);
  if (!m) return undefined;
  return m[3] !== undefined ? `sim/${decodeURIComponent(m[3])}` : decodeURIComponent(m[4]);
}

export function vertexAuthorized(sr: SimRequest): boolean {
  const want = sr.state.apiKey;
  if (!want || sr.req.headers.authorization === `Bearer ${want}`) return true;
  geminiError(sr, 401, 'Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.');
  return false;
}

export async function vertexPredict(sr: SimRequest): Promise<void> {
  const model = vertexModel(sr.url.pathname);
  const body = sr.call.body;
  if (!Array.isArray(body?.instances) || typeof body.instances[0]?.prompt !== 'string') {
    return geminiError(sr, 400, 'instances[0].prompt is required.');
  }
  if (!(await gate(sr, model, (s, m, h) => geminiError(sr, s, m, h)))) return;
  if (behaviourOf(model).kind === 'malformed') return sendMalformed(sr.res);
  const n = body.parameters?.sampleCount ?? 1;
  const blocked = body.instances[0].prompt.includes('BLOCKED');
  const predictions = blocked ? [] : Array.from({ length: n }, () => ({ bytesBase64Encoded: PNG_1X1.toString('base64'), mimeType: 'image/png' }));
  sendJson(sr.res, 200, { predictions, deployedModelId: 'sim-deployed', model: model ?? '' });
}
