/**
 * The handler map: one entry per operationId in spec/openapi.yaml (a test checks the keys are exactly the
 * spec's). Every operation is built; a new one gets its handler module here in the same change as its spec entry.
 */
import type { Handler } from '../src/app.js';
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

export const handlers: Record<string, Handler> = {
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
