import { expect } from 'chai';
import request from 'supertest';
import { startTestGateway, ADMIN_KEY, type TestGateway } from '../support/app.js';
import { DIALECTS, postgresAvailable } from '../support/db.js';

for (const dialect of DIALECTS) {
  describe(`contract: chat sessions (${dialect})`, function () {
    let gw: TestGateway;
    let alice: string;
    let bob: string;
    before(async function () {
      if (dialect === 'postgres' && !(await postgresAvailable())) return this.skip();
      gw = await startTestGateway({ dialect });
      alice = (await gw.newKey(0, 'alice')).key;
      bob = (await gw.newKey(0, 'bob')).key;
    });
    after(async () => { await gw?.close(); });

    const as = (key: string) => ({ Authorization: `Bearer ${key}` });

    it('create → get → update → list → delete, scoped to the owner', async () => {
      const created = await request(gw.app).post('/v1/chat/sessions').set(as(alice)).send({ title: 'Trip plans', model: 'openai/gpt-4o-mini' });
      expect(created.status).to.equal(201);
      const s = created.body.data;
      expect(s).to.include({ title: 'Trip plans', model: 'openai/gpt-4o-mini', is_active: true });
      expect(s.messages).to.deep.equal([]);

      const got = await request(gw.app).get(`/v1/chat/sessions/${s.id}`).set(as(alice));
      expect(got.status).to.equal(200);
      expect(got.body.data.id).to.equal(s.id);

      const upd = await request(gw.app).put(`/v1/chat/sessions/${s.id}`).set(as(alice)).send({ title: 'Paris trip' });
      expect(upd.status).to.equal(200);
      expect(upd.body).to.include({ success: true });
      expect(upd.body.data).to.include({ id: s.id, title: 'Paris trip', model: 'openai/gpt-4o-mini' });
      expect(Date.parse(upd.body.data.updated_at)).to.be.at.least(Date.parse(s.updated_at));

      const list = await request(gw.app).get('/v1/chat/sessions?limit=10').set(as(alice));
      expect(list.body.total).to.equal(1);
      expect(list.body.data.map((x: any) => x.title)).to.deep.equal(['Paris trip']);

      // another owner sees nothing, and cannot tell the session exists
      for (const res of [
        await request(gw.app).get(`/v1/chat/sessions/${s.id}`).set(as(bob)),
        await request(gw.app).put(`/v1/chat/sessions/${s.id}`).set(as(bob)).send({ title: 'mine now' }),
        await request(gw.app).delete(`/v1/chat/sessions/${s.id}`).set(as(bob)),
      ]) {
        expect(res.status).to.equal(404);
        expect(res.body.error.message).to.equal(`Chat session ${s.id} not found.`);
      }
      expect((await request(gw.app).get('/v1/chat/sessions').set(as(bob))).body.total).to.equal(0);
      expect((await gw.store.sessions.get((await gw.store.keys.list()).find((k) => k.name === 'alice')!.user_id, s.id))?.title).to.equal('Paris trip');

      const del = await request(gw.app).delete(`/v1/chat/sessions/${s.id}`).set(as(alice));
      expect(del.status).to.equal(200);
      expect((await request(gw.app).get(`/v1/chat/sessions/${s.id}`).set(as(alice))).status).to.equal(404);
    });

    it('an unknown id is 404; an empty title, an empty body or an unknown field is 422', async () => {
      expect((await request(gw.app).put('/v1/chat/sessions/999999').set(as(alice)).send({ title: 'x' })).status).to.equal(404);
      const s = (await request(gw.app).post('/v1/chat/sessions').set(as(alice)).send({ title: 'keep' })).body.data;
      const empty = await request(gw.app).put(`/v1/chat/sessions/${s.id}`).set(as(alice)).send({ title: '' });
      expect(empty.status).to.equal(422);
      expect(empty.body.detail[0].loc).to.deep.equal(['body', 'title']);
      expect((await request(gw.app).put(`/v1/chat/sessions/${s.id}`).set(as(alice)).send({})).status).to.equal(422);
      expect((await request(gw.app).put(`/v1/chat/sessions/${s.id}`).set(as(alice)).send({ colour: 'red' })).status).to.equal(422);
      expect((await request(gw.app).put('/v1/chat/sessions/abc').set(as(alice)).send({ title: 'x' })).body.detail[0].loc).to.deep.equal(['path', 'session_id']);
      // nothing changed
      expect((await request(gw.app).get(`/v1/chat/sessions/${s.id}`).set(as(alice))).body.data.title).to.equal('keep');
    });

    it('the admin credential owns no sessions (403), and no key is 401', async () => {
      expect((await request(gw.app).get('/v1/chat/sessions').set(as(ADMIN_KEY))).status).to.equal(403);
      expect((await request(gw.app).put('/v1/chat/sessions/1').send({ title: 'x' })).status).to.equal(401);
    });
  });
}
