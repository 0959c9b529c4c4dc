/**
 * The handler map: one entry per operationId in spec/openapi.yaml (a test checks the keys are exactly the
 * spec's). Operations whose behaviour is not built yet are listed in NOT_IMPLEMENTED and answer 501 with the
 * spec's Error body — never a fake 200.
 */
import type { Handler } from '../src/app.js';
import { notImplemented } from '../src/errors.js';
import * as sessions from './sessions.js';
import * as health from './health.js';
import * as catalog from './catalog.js';
import * as models from './models.js';

export const NOT_IMPLEMENTED = [
  // chat and generation (issues 3, 4, 5)
  'createChatCompletion', 'createMessage', 'createImage', 'createTranscription', 'createTranscriptionBase64',
  // tools, hub and partner facades (issue 8)
  'listTools', 'getToolDefinitions', 'getTool', 'executeTool', 'searchAugment',
  'listPartnerModels', 'listPartnerIds', 'checkPartnerModel',
  'hubDiscovery', 'hubSearch', 'getHubModelDetails', 'getHubModelCard', 'listHubAuthorModels', 'listHubModelFiles',
  // statistics, model health, status (issue 7)
  'getProviderStats', 'getGatewayStats', 'getGatewaysSummary', 'getProviderTopModels', 'getTrendingModels',
  'listModelHealth', 'getModelHealth', 'listUnhealthyModels', 'getModelHealthStats', 'getProviderHealthSummary',
  'listHealthProviders', 'getStatus', 'getStatusProviders', 'getStatusModels', 'getStatusModel', 'getStatusDetailed',
  'getHealthSummary',
] as const;

const notBuilt: Record<string, Handler> = Object.fromEntries(
  NOT_IMPLEMENTED.map((id) => [id, () => { throw notImplemented(id); }]),
);

export const handlers: Record<string, Handler> = {
  ...notBuilt,
  ...sessions,
  ...health,
  ...catalog,
  ...models,
};
