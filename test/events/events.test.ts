import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { createPerson, signIn } from '../helpers/identities.js';
import { messagesTo } from '../helpers/outbox.js';
import { call, createOrganization, member, ORGS, remove, setRole } from '../organizations/support.js';
import { admin, eventCount, worker } from './support.js';

// Events are written with their change: a rolled-back change leaves none, a committed one exactly
// one; the pull API reads them in seq order after a durable cursor.
let t: TestApp;

beforeAll(async () => {
  t = await createTestApp({ admin: true });
});
afterAll(async () => {
  await t?.close();
});

async function pull(query = '') {
  const res = await admin(t, 'GET', `/events${query}`);
  expect(res.statusCode, res.body).toBe(200);
  return res.json() as {
    data: Array<{
      id: string;
      seq: number;
      type: string;
      identityId: string | null;
      sessionId: string | null;
      data: Record<string, unknown>;
    }>;
    meta: { pageInfo: { hasNextPage: boolean; nextCursor: string | null } };
  };
}

describe('events, written with their change', () => {
  it('a rolled-back transaction emits nothing; a committed one exactly one', async () => {
    const before = await eventCount(t);
    await expect(
      t.ctx.database.db.transaction().execute(async (trx) => {
        await t.ctx.events.append(trx, { type: 'identity.updated', actor: null, data: { n: 1 } });
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    expect(await eventCount(t)).toBe(before);
    await t.ctx.database.db.transaction().execute(async (trx) => {
      await t.ctx.events.append(trx, { type: 'identity.updated', actor: null, data: { n: 2 } });
    });
    expect(await eventCount(t)).toBe(before + 1);
  });

  it('an operator disablement emits identity.disabled and one session.ended per live session; a repeat emits none', async () => {
    const p = await createPerson(t.ctx);
    await signIn(t.app, p);
    await signIn(t.app, p);
    const res = await admin(t, 'POST', `/identities/${p.identityId}/disablements`);
    expect(res.statusCode).toBe(204);
    const { data } = await pull();
    const mine = data.filter((e) => e.identityId === p.identityId);
    expect(mine.map((e) => e.type).sort()).toEqual([
      'identity.disabled',
      'session.created',
      'session.created',
      'session.ended',
      'session.ended',
    ]);
    // Each session ended is one the sign-ins announced.
    const created = mine.filter((e) => e.type === 'session.created').map((e) => e.sessionId);
    const ended = mine.filter((e) => e.type === 'session.ended').map((e) => e.sessionId);
    expect(ended.sort()).toEqual(created.sort());
    const disabled = mine.find((e) => e.type === 'identity.disabled');
    expect(disabled?.data).toMatchObject({ id: p.identityId, erasedAt: null });
    expect(disabled?.data.disabledAt).toEqual(expect.any(String));
    expect((disabled?.data.identifiers as Array<{ value: string }>)[0].value).toBe(p.email);
    // Already disabled: nothing changed, no event.
    expect((await admin(t, 'POST', `/identities/${p.identityId}/disablements`)).statusCode).toBe(204);
    expect((await pull()).data.filter((e) => e.identityId === p.identityId)).toHaveLength(5);
    expect((await admin(t, 'POST', `/identities/${p.identityId}/enablements`)).statusCode).toBe(204);
    expect((await pull('?types=identity.enabled')).data.map((e) => e.identityId)).toContain(p.identityId);
  });

  it('a refused operator write emits nothing', async () => {
    const before = await eventCount(t);
    const res = await admin(t, 'POST', `/identities/${randomUUID()}/erasures`);
    expect(res.statusCode).toBe(404);
    expect(await eventCount(t)).toBe(before);
  });

  it('an erasure emits identity.erased without the identifiers', async () => {
    const p = await createPerson(t.ctx);
    expect((await admin(t, 'POST', `/identities/${p.identityId}/erasures`)).statusCode).toBe(204);
    const erased = (await pull('?types=identity.erased')).data.find((e) => e.identityId === p.identityId);
    expect(erased?.data).toMatchObject({ id: p.identityId, identifiers: [] });
    expect(JSON.stringify(erased)).not.toContain(p.email);
  });

  it('organizations: created with its owner membership, updated, deleted, as the admin API shows them', async () => {
    const a = await member(t);
    const { id } = await createOrganization(t, a.token);
    const created = (await pull('?types=organization.created,organization.membership.created')).data.filter(
      (e) => (e.data as { id?: string; organizationId?: string }).id === id || e.data.organizationId === id,
    );
    expect(created.map((e) => e.type)).toEqual(['organization.created', 'organization.membership.created']);
    expect(created[0].data).toMatchObject({ id, memberCount: 1, ownerCount: 1, disabledAt: null });
    expect(created[1].data).toEqual({ organizationId: id, identityId: a.person.identityId, role: 'owner' });
    expect((await admin(t, 'POST', `/organizations/${id}/disablements`)).statusCode).toBe(204);
    expect((await admin(t, 'DELETE', `/organizations/${id}`)).statusCode).toBe(204);
    const later = (await pull('?types=organization.updated,organization.deleted')).data.filter(
      (e) => e.data.id === id,
    );
    expect(later.map((e) => e.type)).toEqual(['organization.updated', 'organization.deleted']);
    expect(later[0].data.disabledAt).toEqual(expect.any(String));
  });
});

describe('memberships and invitations', () => {
  /** The token in the newest invitation message to `to`. */
  function tokenFor(to: string): string {
    const mine = messagesTo(t.config.dataDir, to);
    const m = /\/account\/#\/invitations\/([A-Za-z0-9_-]{43})/.exec(mine[mine.length - 1].text);
    return m?.[1] ?? '';
  }

  it('invitation created, replaced (revoked), accepted; membership created, updated, deleted', async () => {
    const owner = await member(t);
    const { id } = await createOrganization(t, owner.token);
    const to = `inv-${randomUUID().slice(0, 8)}@example.com`;
    const send = (role: string) =>
      call(t.app, 'POST', `${ORGS}/${id}/invitations`, owner.token, {
        identifierType: 'email',
        identifier: to,
        role,
      });
    const first = await send('member');
    expect(first.statusCode, first.body).toBe(201);
    const second = await send('admin');
    expect(second.statusCode, second.body).toBe(201);
    const invitee = await createPerson(t.ctx, to);
    const grant = await signIn(t.app, invitee);
    const accepted = await call(
      t.app,
      'POST',
      '/api/v1/organization-invitations/acceptances',
      grant.accessToken,
      {
        token: tokenFor(to),
      },
    );
    expect(accepted.statusCode, accepted.body).toBe(201);
    expect((await setRole(t.app, owner.token, id, invitee.identityId, 'member')).statusCode).toBe(200);
    expect((await remove(t.app, owner.token, id, invitee.identityId)).statusCode).toBe(204);

    const mine = (
      await pull(
        '?limit=100&types=' +
          [
            'organization.invitation.created',
            'organization.invitation.revoked',
            'organization.invitation.accepted',
            'organization.membership.created',
            'organization.membership.updated',
            'organization.membership.deleted',
          ].join(','),
      )
    ).data.filter((e) => e.data.organizationId === id);
    expect(mine.map((e) => e.type)).toEqual([
      'organization.membership.created',
      'organization.invitation.created',
      'organization.invitation.revoked',
      'organization.invitation.created',
      'organization.invitation.accepted',
      'organization.membership.created',
      'organization.membership.updated',
      'organization.membership.deleted',
    ]);
    const revoked = mine[2].data;
    expect(revoked).toMatchObject({ id: first.json().data.id, identifier: to, role: 'member' });
    expect(revoked.revokedAt).toEqual(expect.any(String));
    expect(mine[4].data).toMatchObject({
      id: second.json().data.id,
      role: 'admin',
      acceptedBy: invitee.identityId,
    });
    expect(mine[4].identityId).toBe(invitee.identityId);
    expect(mine[5].data).toEqual({ organizationId: id, identityId: invitee.identityId, role: 'admin' });
    expect(mine[7].data).toEqual({ organizationId: id, identityId: invitee.identityId, role: 'member' });
    // No token, nor its hash, in any event.
    for (const e of mine) expect(JSON.stringify(e)).not.toMatch(/token/i);
  });
});

describe('the pull API', () => {
  it('pages in seq order after a cursor that keeps working, with a type filter', async () => {
    for (let i = 0; i < 5; i++) {
      await t.ctx.database.db
        .transaction()
        .execute((trx) =>
          t.ctx.events.append(trx, { type: 'signing_key.rotated', actor: null, data: { i } }),
        );
    }
    const all = await pull('?types=signing_key.rotated&limit=100');
    expect(all.data).toHaveLength(5);
    const seqs = all.data.map((e) => e.seq);
    expect(seqs).toEqual([...seqs].sort((x, y) => x - y));
    const first = await pull('?types=signing_key.rotated&limit=2');
    expect(first.data.map((e) => e.data.i)).toEqual([0, 1]);
    expect(first.meta.pageInfo.hasNextPage).toBe(true);
    const second = await pull(`?types=signing_key.rotated&limit=2&after=${first.meta.pageInfo.nextCursor}`);
    expect(second.data.map((e) => e.data.i)).toEqual([2, 3]);
    const third = await pull(`?types=signing_key.rotated&limit=2&after=${second.meta.pageInfo.nextCursor}`);
    expect(third.data.map((e) => e.data.i)).toEqual([4]);
    expect(third.meta.pageInfo.hasNextPage).toBe(false);
    // At the end, the cursor stays where it was: a later event appears after it.
    const end = third.meta.pageInfo.nextCursor as string;
    expect((await pull(`?types=signing_key.rotated&after=${end}`)).meta.pageInfo.nextCursor).toBe(end);
    await t.ctx.database.db
      .transaction()
      .execute((trx) =>
        t.ctx.events.append(trx, { type: 'signing_key.rotated', actor: null, data: { i: 5 } }),
      );
    expect((await pull(`?types=signing_key.rotated&after=${end}`)).data.map((e) => e.data.i)).toEqual([5]);
  });

  it('every seq from 1 up, no gap, whatever the stamping rounds', async () => {
    const { data } = await pull('?limit=100');
    expect(data.map((e) => e.seq)).toEqual(data.map((_e, i) => i + 1));
  });

  it('streams the same events as NDJSON, bounded by limit, read across batches; the last line’s seq is the next cursor', async () => {
    const type = 'identity.locked';
    await t.ctx.database.db.transaction().execute(async (trx) => {
      for (let i = 0; i < 600; i++) await t.ctx.events.append(trx, { type, actor: null, data: { i } });
    });
    const stream = async (query: string) => {
      const res = await admin(t, 'GET', `/events/stream${query}`);
      expect(res.statusCode, res.body).toBe(200);
      expect(res.headers['content-type']).toContain('application/x-ndjson');
      return res.body === ''
        ? []
        : res.body
            .trimEnd()
            .split('\n')
            .map((l) => JSON.parse(l));
    };
    // 550 lines: one batch of 500 and one of 50, in seq order, exactly what the JSON pages show.
    const first = await stream(`?types=${type}&limit=550`);
    expect(first.map((e) => e.data.i)).toEqual([...Array(550).keys()]);
    const page = await pull(`?types=${type}&limit=100`);
    expect(first.slice(0, 100)).toEqual(page.data);
    const rest = await stream(`?types=${type}&after=${first.at(-1).seq}`);
    expect(rest.map((e) => e.data.i)).toEqual([...Array(50).keys()].map((i) => i + 550));
    // Caught up: nothing after the last seq (the cursor stays).
    expect(await stream(`?types=${type}&after=${rest.at(-1).seq}`)).toEqual([]);
    expect((await admin(t, 'GET', '/events/stream?limit=0')).statusCode).toBe(400);
    expect((await t.admin!.inject({ method: 'GET', url: '/admin/v1/events/stream' })).statusCode).toBe(401);
  });

  it('refuses a cursor that is not a seq, without the key 401', async () => {
    expect((await admin(t, 'GET', '/events?after=abc')).statusCode).toBe(400);
    expect((await t.admin!.inject({ method: 'GET', url: '/admin/v1/events' })).statusCode).toBe(401);
  });
});

describe('retention', () => {
  it('events past EVENT_RETENTION_DAYS are pruned by the worker; newer ones stay, and so do the seqs', async () => {
    const append = (i: number) =>
      t.ctx.database.db
        .transaction()
        .execute((trx) => t.ctx.events.append(trx, { type: 'oidc.grant.revoked', actor: null, data: { i } }));
    await append(1);
    t.clock.advance(10 * 86400);
    await append(2);
    t.clock.advance(21 * 86400);
    await worker(t).runOnce();
    const left = (await pull('?types=oidc.grant.revoked')).data;
    expect(left.map((e) => e.data.i)).toEqual([2]);
    const seqs = (await pull('?limit=100')).data.map((e) => e.seq);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
  });
});
