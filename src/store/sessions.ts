import type { Kysely } from 'kysely';
import type { Database } from './schema.js';

export interface ChatMessage {
  id: number;
  session_id: number;
  role: string;
  content: string;
  model: string;
  tokens: number;
  created_at: string;
}

export interface ChatSession {
  id: number;
  user_id: number;
  title: string;
  model: string;
  created_at: string;
  updated_at: string;
  is_active: boolean;
  messages?: ChatMessage[];
}

type Row = Database['chat_sessions'] extends infer T ? { [K in keyof T]: any } : never;

const toSession = (r: Row): ChatSession => ({
  id: Number(r.id), user_id: Number(r.user_id), title: r.title, model: r.model,
  created_at: r.created_at, updated_at: r.updated_at, is_active: Number(r.is_active) === 1,
});

/** Chat sessions; every read and write is scoped to the owning user, so another owner's id looks absent. */
export class SessionRepo {
  constructor(private readonly db: Kysely<Database>) {}

  async create(userId: number, title: string, model: string): Promise<ChatSession> {
    const t = new Date().toISOString();
    const row = await this.db.insertInto('chat_sessions')
      .values({ user_id: userId, title, model, created_at: t, updated_at: t, is_active: 1 })
      .returningAll().executeTakeFirstOrThrow();
    return { ...toSession(row), messages: [] };
  }

  async list(userId: number, limit: number, offset: number): Promise<{ items: ChatSession[]; total: number }> {
    const base = this.db.selectFrom('chat_sessions').where('user_id', '=', userId);
    const [rows, count] = await Promise.all([
      base.selectAll().orderBy('updated_at', 'desc').orderBy('id', 'desc').limit(limit).offset(offset).execute(),
      base.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow(),
    ]);
    return { items: rows.map(toSession), total: Number(count.n) };
  }

  async get(userId: number, id: number, withMessages = true): Promise<ChatSession | undefined> {
    const row = await this.db.selectFrom('chat_sessions').selectAll().where('id', '=', id).where('user_id', '=', userId).executeTakeFirst();
    if (!row) return undefined;
    const s = toSession(row);
    if (withMessages) s.messages = await this.messages(id);
    return s;
  }

  async messages(sessionId: number): Promise<ChatMessage[]> {
    const rows = await this.db.selectFrom('chat_messages').selectAll().where('session_id', '=', sessionId).orderBy('id').execute();
    return rows.map((m) => ({ ...m, id: Number(m.id), session_id: Number(m.session_id), tokens: Number(m.tokens) }));
  }

  async update(userId: number, id: number, patch: { title?: string; model?: string }): Promise<ChatSession | undefined> {
    const set: { title?: string; model?: string; updated_at: string } = { updated_at: new Date().toISOString() };
    if (patch.title !== undefined) set.title = patch.title;
    if (patch.model !== undefined) set.model = patch.model;
    const res = await this.db.updateTable('chat_sessions').set(set).where('id', '=', id).where('user_id', '=', userId).executeTakeFirst();
    if (Number(res.numUpdatedRows) === 0) return undefined;
    return this.get(userId, id);
  }

  async delete(userId: number, id: number): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      const owned = await trx.selectFrom('chat_sessions').select('id').where('id', '=', id).where('user_id', '=', userId).executeTakeFirst();
      if (!owned) return false;
      await trx.deleteFrom('chat_messages').where('session_id', '=', id).execute();
      await trx.deleteFrom('chat_sessions').where('id', '=', id).execute();
      return true;
    });
  }

  async addMessages(sessionId: number, msgs: Array<{ role: string; content: string; model: string; tokens: number }>): Promise<void> {
    if (!msgs.length) return;
    const t = new Date().toISOString();
    await this.db.transaction().execute(async (trx) => {
      await trx.insertInto('chat_messages').values(msgs.map((m) => ({ ...m, session_id: sessionId, created_at: t }))).execute();
      await trx.updateTable('chat_sessions').set({ updated_at: t }).where('id', '=', sessionId).execute();
    });
  }
}
