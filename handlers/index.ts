/**
 * The handler map: one entry per operationId in spec/openapi.yaml (a test checks the keys are exactly the
 * spec's). Operations whose behaviour is not built yet are listed in NOT_IMPLEMENTED and answer 501 with the
 * spec's Error body — never a fake 200.
 */
import type { Handler } from '../src/app.js';
import { notImplemented } from '../src/errors.js';
import * as sessions from './sessions.js';
import * as health from './health.js';
import * as stats from './stats.js';
import * as modelHealth from './modelHealth.js';
import * as status from './status.js';

export const NOT_IMPLEMENTED = [
  // chat and generation (issues 3, 4, 5)
  'createChatCompletion', 'createMessage', 'createImage', 'createTranscription', 'createTranscriptionBase64',
  // tools, hub and partner facades (issue 8)
  'listTools', 'getToolDefinitions', 'getTool', 'executeTool', 'searchAugment',
  'listPartnerModels', 'listPartnerIds', 'checkPartnerModel',
  'hubDiscovery', 'hubSearch', 'getHubModelDetails', 'getHubModelCard', 'listHubAuthorModels', 'listHubModelFiles',
  // catalog (issue 6)
  'listRouters', 'listGateways', 'getGatewaysStatus', 'listProviders',
  'listModels', 'listModelsByCategory', 'listLowLatencyModels', 'listUniqueModels', 'batchCompareModels',
  'compareModelAcrossGateways', 'getModel', 'listDeveloperModels', 'searchModels',
] as const;

const notBuilt: Record<string, Handler> = Object.fromEntries(
  NOT_IMPLEMENTED.map((id) => [id, () => { throw notImplemented(id); }]),
);

export const handlers: Record<string, Handler> = {
  ...notBuilt,
  ...sessions,
  ...health,
  ...stats,
  ...modelHealth,
  ...status,
};
