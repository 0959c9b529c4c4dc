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
import * as catalog from './catalog.js';
import * as models from './models.js';
import * as media from './media.js';
import * as docs from './docs.js';

import * as stats from './stats.js';
import * as modelHealth from './modelHealth.js';
import * as status from './status.js';
import * as admin from './admin.js';

export const NOT_IMPLEMENTED = [
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
  ...catalog,
  ...models,
  ...media,
  ...stats,
  ...modelHealth,
  ...status,
  ...docs,
  ...admin,
};
