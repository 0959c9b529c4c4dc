/** Chat sessions, scoped to the calling key's owner: another owner's id answers 404 like a missing one. */
import type { Handler, HandlerCtx } from '../src/app.js';
import { ApiError, notFound } from '../src/errors.js';
import type { ChatSession } from '../src/store/sessions.js';

function owner(ctx: HandlerCtx): number {
  if (!ctx.principal || ctx.principal.admin) {
    throw new ApiError(403, 'permission_error', 'Chat sessions belong to API keys; the admin credential has none.', 'forbidden');
  }
  return ctx.principal.userId;
}

const missing = (id: number) => notFound(`Chat session ${id} not found.`);

/** The wire shape drops the owner-internal nothing; kept as one function so every answer agrees. */
const view = (s: ChatSession) => ({ ...s, messages: s.messages ?? [] });

export const createChatSession: Handler = async (ctx) => {
  const body = ctx.body ?? {};
  const s = await ctx.deps.store.sessions.create(owner(ctx), body.title ?? 'New chat', body.model ?? '');
  return { status: 201, body: { success: true, data: view(s), message: 'Chat session created.' } };
};

export const listChatSessions: Handler = async (ctx) => {
  const limit = ctx.query.limit ?? 20;
  const offset = ctx.query.offset ?? 0;
  const { items, total } = await ctx.deps.store.sessions.list(owner(ctx), limit, offset);
  return { body: { success: true, data: items, total, limit, offset } };
};

export const getChatSession: Handler = async (ctx) => {
  const id = Number(ctx.params.session_id);
  const s = await ctx.deps.store.sessions.get(owner(ctx), id);
  if (!s) throw missing(id);
  return { body: { success: true, data: view(s), message: 'Chat session retrieved.' } };
};

export const updateChatSession: Handler = async (ctx) => {
  const id = Number(ctx.params.session_id);
  const s = await ctx.deps.store.sessions.update(owner(ctx), id, { title: ctx.body.title, model: ctx.body.model });
  if (!s) throw missing(id);
  return { body: { success: true, data: view(s), message: 'Chat session updated.' } };
};

export const deleteChatSession: Handler = async (ctx) => {
  const id = Number(ctx.params.session_id);
  if (!(await ctx.deps.store.sessions.delete(owner(ctx), id))) throw missing(id);
  return { body: { success: true, message: `Chat session ${id} deleted.` } };
};
