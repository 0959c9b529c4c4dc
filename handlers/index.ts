/**
 * The handler map: one entry per operationId in spec/openapi.yaml (a test checks the keys are exactly the
 * spec's). Operations whose behaviour is not built yet are listed in NOT_IMPLEMENTED and answer 501 with the
 * spec's Error body — never a fake 200.
 */
import type { Handler } from '../src/app.js';
import { notImplemented } from '../src/errors.js';
import * as sessions from './sessions.js';
import * as health from './health.js';
import * as chat from './chat.js';
import * as messages from './messages.js';
import * as tools from './tools.js';
import * as hub from './hub.js';
import * as partner from './partner.js';
import * as admin from './admin.js';

export const NOT_IMPLEMENTED = [
  // chat and generation (issue 5)
  'createImage', 'createTranscription', 'createTranscriptionBase64',
  // catalog (issue 6)
  'listRouters', 'listGateways', 'getGatewaysStatus', 'listProviders',
  'listModels', 'listModelsByCategory', 'listLowLatencyModels', 'listUniqueModels', 'batchCompareModels',
  'compareModelAcrossGateways', 'getModel', 'listDeveloperModels', 'searchModels',
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
  ...chat,
  ...messages,
  ...tools,
  ...hub,
  ...partner,
  ...admin,
};
