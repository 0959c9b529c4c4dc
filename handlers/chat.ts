/** POST /v1/chat/completions: OpenAI wire in, the engine, OpenAI wire out (JSON or SSE). */
import type { Handler, HandlerCtx } from '../src/app.js';
import { ApiError, forbidden, notFound } from '../src/errors.js';
import { parseChatRequest } from '../src/wire/openai-chat.js';
import { completionJson, toCompletion, OpenAIChunkWriter } from '../src/wire/openai-stream.js';
import { gatewayUsage, clientError, type Served } from '../src/engine/chat.js';
import { UpstreamError, type ChatRequest, type Message } from '../src/engine/types.js';
import { FrameSink, clientGone, endSse, startSse, writeFrame } from '../src/engine/respond.js';
import type { ChatSession } from '../src/store/sessions.js';
import { uuid4 } from '../src/ids.js';

const servedHeaders = (s: { offer: { gateway: string; upstreamModel: string } }) => ({
  'X-Gateway-Provider': s.offer.gateway,
  'X-Gateway-Model': s.offer.upstreamModel,
});

/** The session's saved messages go before the request's; the session must be the caller's own. */
async function withSession(ctx: HandlerCtx, req: ChatRequest): Promise<ChatSession | undefined> {
  const id = ctx.query.session_id;
  if (id === undefined || id === null) return undefined;
  if (!ctx.principal || ctx.principal.admin) throw forbidden('Chat sessions belong to API keys.');
  const session = await ctx.deps.store.sessions.get(ctx.principal.userId, Number(id));
  if (!session) throw notFound(`Chat session ${id} not found.`);
  const history: Message[] = (session.messages ?? []).map((m) => ({ role: m.role as Message['role'], content: m.content }));
  req.messages = [...history, ...req.messages];
  return session;
}

const textOf = (c: Message['content']) => (typeof c === 'string' ? c : (c ?? []).map((p) => (p.type === 'text' ? p.text : '')).join(''));

/** The last user message's text as the client sent it (before any augmentation). */
function lastUserText(req: ChatRequest): string | undefined {
  const m = [...req.messages].reverse().find((x) => x.role === 'user');
  return m ? textOf(m.content) : undefined;
}

async function saveTurn(ctx: HandlerCtx, session: ChatSession | undefined, userText: string | undefined, reply: string, served: Served) {
  if (!session) return;
  const model = served.offer.modelId;
  await ctx.deps.store.sessions.addMessages(session.id, [
    ...(userText !== undefined ? [{ role: 'user', content: userText, model, tokens: served.usage.promptTokens }] : []),
    { role: 'assistant', content: reply, model, tokens: served.usage.completionTokens },
  ]);
  // The spec: the session's `model` becomes the request's `model` (as the client named it).
  if (typeof ctx.body?.model === 'string') await ctx.deps.store.sessions.update(session.user_id, session.id, { model: ctx.body.model });
}

/**
 * `auto_web_search`: for models without tool calling, a web search on the last user message is put before
 * that message's text (the search-augment context). A failed search leaves the message as it was.
 */
async function augment(ctx: HandlerCtx, req: ChatRequest, signal: AbortSignal): Promise<void> {
  if (ctx.body.auto_web_search !== true) return;
  const last = [...req.messages].reverse().find((m) => m.role === 'user');
  if (!last) return;
  const text = typeof last.content === 'string' ? last.content : (last.content ?? []).map((p) => (p.type === 'text' ? p.text : '')).join(' ');
  if (!text.trim()) return;
  const { context } = await ctx.deps.services.search.buildAugmentContext(text.slice(0, 400), { signal });
  if (!context) return;
  last.content = typeof last.content === 'string' || last.content === null
    ? `${context}\n\n${last.content ?? ''}`
    : [{ type: 'text', text: `${context}\n\n` }, ...last.content];
}

export const createChatCompletion: Handler = async (ctx) => {
  const { engine } = ctx.deps.services;
  const req = parseChatRequest(ctx.body);
  // Awaited only when asked for: each await of an answer already known is a microtask step on the way upstream.
  const session = ctx.query.session_id === undefined || ctx.query.session_id === null ? undefined : await withSession(ctx, req);
  // The user's turn as sent (before augmentation), kept only for a session's history.
  const userText = session ? lastUserText(req) : undefined;
  const abort = clientGone(ctx.res);
  if (ctx.body.auto_web_search === true) await augment(ctx, req, abort.signal);
  const call = { principal: ctx.principal!, requestId: ctx.requestId, endpoint: 'chat.completions', pinGateway: ctx.body.provider, signal: abort.signal };

  if (!req.stream) {
    const { result, served } = await engine.complete(req, call);
    if (session) await saveTurn(ctx, session, userText, result.choices[0]?.content ?? '', served);
    const body = toCompletion(result, served.offer.modelId, gatewayUsage(served));
    return { body, text: completionJson(body), headers: servedHeaders(served) };
  }

  const stream = await engine.stream(req, call);
  const writer = new OpenAIChunkWriter(`chatcmpl-${uuid4()}`, stream.offer.modelId, Math.floor(Date.now() / 1000), req.includeUsage);
  const out = startSse(ctx.res, servedHeaders(stream)); // X-Request-Id: set by the prelude (src/app.ts) for every answer
  const sink = new FrameSink(out, writer, abort.signal, !!session);
  try {
    // As `for await` over the events, without its promises per event (EngineEvents.consume), into the sink's method.
    await stream.events.consume(FrameSink.prototype.event, sink);
    const served = stream.served();
    if (served) {
      // awaited only when there is something to wait for: an await of `undefined` is a microtask step and a resumption
      const full = writeFrame(out, writer.end(gatewayUsage(served)), writer.ascii);
      if (full) await full;
      if (session) await saveTurn(ctx, session, userText, sink.reply, served);
    }
  } catch (err) {
    if (!abort.signal.aborted) {
      const e = err instanceof UpstreamError ? clientError(err) : err instanceof ApiError ? err : new ApiError(502, 'upstream_error', 'Upstream failure.', 'upstream_error');
      ctx.log.warn({ requestId: ctx.requestId, err: (err as Error).message }, 'stream failed after the first byte');
      await writeFrame(out, OpenAIChunkWriter.error(`The upstream stream failed: ${e.message}`, e.type, e.code, ctx.requestId));
    }
  } finally {
    endSse(out);
  }
};
