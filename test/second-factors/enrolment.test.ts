import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { Secret, TOTP, URI } from 'otpauth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/platform/clock.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { auditCount } from '../helpers/audit.js';
import { createTestDatabase } from '../helpers/database.js';
import { elevate } from '../helpers/elevation.js';
import { createPerson, signIn } from '../helpers/identities.js';
import {
  completeSignIn,
  DEFAULT_POLICY,
  enrolVerified,
  expectIdentical,
  type Factor,
  get,
  isLocked,
  personWithFactor,
  post,
  ticketFor,
  totp,
  WIDE_ENV,
  WIDE_POLICY,
  wrongCode,
} from './helpers.js';

let t: TestApp;

beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => {
  await t.close();
});

async function setUp() {
  const person = await createPerson(t.ctx);
  const grant = await signIn(t.app, person);
  const elevation = await elevate(t, grant.accessToken, person.email);
  const enrol = async (payload: unknown = {}) => {
    const res = await post(t.app, '/second-factors', { token: grant.accessToken, elevation, payload });
    expect(res.statusCode, res.body).toBe(201);
    return res.json().data as Factor;
  };
  const confirm = (code: string) =>
    post(t.app, '/second-factors/confirmations', { token: grant.accessToken, payload: { code } });
  return { person, grant, elevation, enrol, confirm };
}

describe('POST /second-factors (enrolment)', () => {
  it('returns the secret once with an otpauth URI carrying the default policy', async () => {
    const { person, enrol } = await setUp();
    const factor = await enrol({ label: 'Work phone' });
    expect(Object.keys(factor).sort()).toEqual(['id', 'otpauthUri', 'secret']);
    expect(factor.secret).toMatch(/^[A-Z2-7]{32}$/); // 20 bytes in base32
    const uri = new URL(factor.otpauthUri);
    expect(uri.protocol).toBe('otpauth:');
    expect(uri.host).toBe('totp');
    expect(uri.searchParams.get('secret')).toBe(factor.secret);
    expect(uri.searchParams.get('algorithm')).toBe('SHA1');
    expect(uri.searchParams.get('digits')).toBe('6');
    expect(uri.searchParams.get('period')).toBe('30');
    expect(uri.searchParams.get('issuer')).toBe('Identity Service');
    // The account label is the masked identifier, never the address itself.
    expect(decodeURIComponent(uri.pathname)).toBe(`/Identity Service:${person.email[0]}***@example.com`);
    expect(factor.otpauthUri).not.toContain(person.email);
    // The authenticator app, parsing the URI, produces the codes the service expects.
    const app = URI.parse(factor.otpauthUri) as TOTP;
    expect(app.generate({ timestamp: t.clock.now().getTime() })).toBe(
      totp(factor.secret, DEFAULT_POLICY, t.clock.now()),
    );
    // The secret is stored sealed, never in clear.
    const row = await sql<{ sealed_secret: string }>`
      SELECT sealed_secret FROM second_factors WHERE id = ${factor.id}`.execute(t.ctx.database.db);
    expect(row.rows[0].sealed_secret).not.toContain(factor.secret);
  });

  it('refuses a label outside 1..120 characters and unknown properties', async () => {
    const { enrol, grant, elevation } = await setUp();
    await enrol({ label: 'x'.repeat(120) });
    for (const payload of [{ label: '' }, { label: 'x'.repeat(121) }, { label: 3 }, { other: 'x' }]) {
      const res = await post(t.app, '/second-factors', { token: grant.accessToken, elevation, payload });
      expect(res.statusCode).toBe(400);
      expect(res.json().code).toBe('validation.failed');
    }
  });

  it('revokes an earlier pending enrolment so only the newest secret confirms', async () => {
    const { enrol, confirm, grant } = await setUp();
    const first = await enrol();
    const second = await enrol();
    expect(second.secret).not.toBe(first.secret);
    const stale = await confirm(totp(first.secret, DEFAULT_POLICY, t.clock.now()));
    expect(stale.statusCode).toBe(403);
    expect((await confirm(totp(second.secret, DEFAULT_POLICY, t.clock.now()))).statusCode).toBe(204);
    const list = await get(t.app, '/second-factors', grant.accessToken);
    expect(list.json().data.map((f: { id: string }) => f.id)).toEqual([second.id]);
  });
});

describe('POST /second-factors/confirmations', () => {
  it('verifies the pending factor with its current code; a pending factor is never listed', async () => {
    const { enrol, confirm, grant } = await setUp();
    const factor = await enrol({ label: 'Phone' });
    expect((await get(t.app, '/second-factors', grant.accessToken)).json().data).toEqual([]);
    const ok = await confirm(totp(factor.secret, DEFAULT_POLICY, t.clock.now()));
    expect(ok.statusCode, ok.body).toBe(204);
    expect(ok.body).toBe('');
    const list = await get(t.app, '/second-factors', grant.accessToken);
    expect(list.statusCode).toBe(200);
    expect(list.json()).toEqual({
      data: [{ id: factor.id, label: 'Phone', verifiedAt: t.clock.now().toISOString(), lastUsedAt: null }],
      meta: { pageInfo: { hasNextPage: false, nextCursor: null } },
    });
    const context = await get(t.app, '/session/context', grant.accessToken);
    expect(context.json().data.methods).toContain('second_factor');
  });

  it('accepts the previous and the next time step, not two steps away', async () => {
    const { enrol, confirm } = await setUp();
    const factor = await enrol();
    const now = t.clock.now();
    expect((await confirm(totp(factor.secret, DEFAULT_POLICY, now, -2))).statusCode).toBe(403);
    expect((await confirm(totp(factor.secret, DEFAULT_POLICY, now, 2))).statusCode).toBe(403);
    expect((await confirm(totp(factor.secret, DEFAULT_POLICY, now, -1))).statusCode).toBe(204);

    const other = await setUp();
    const next = await other.enrol();
    expect((await other.confirm(totp(next.secret, DEFAULT_POLICY, t.clock.now(), 1))).statusCode).toBe(204);
  });

  it('answers the identical 403 for a wrong code, no pending enrolment and an already verified one; a wrong code does not consume it', async () => {
    const { enrol, confirm } = await setUp();
    const nothingPending = await confirm('123456');
    const factor = await enrol();
    const wrong = await confirm(wrongCode(factor.secret, DEFAULT_POLICY, t.clock.now()));
    expect((await confirm(totp(factor.secret, DEFAULT_POLICY, t.clock.now()))).statusCode).toBe(204);
    t.clock.advance(30);
    const alreadyVerified = await confirm(totp(factor.secret, DEFAULT_POLICY, t.clock.now()));
    expectIdentical(
      [nothingPending, wrong, alreadyVerified],
      403,
      'identity.second_factor_confirmation_refused',
    );
  });

  it('answers 423 from the fifth consecutive failure on; a correct code still verifies and leaves the lock alone', async () => {
    const { person, enrol, confirm } = await setUp();
    const factor = await enrol();
    const wrong = wrongCode(factor.secret, DEFAULT_POLICY, t.clock.now());
    const statuses = [];
    for (let i = 0; i < 6; i++) statuses.push((await confirm(wrong)).statusCode);
    expect(statuses).toEqual([403, 403, 403, 403, 423, 423]);
    const locked = await confirm(wrong);
    expect(locked.json().code).toBe('identity.second_factor_locked');
    expect(await auditCount(t, 'identity.account.locked', { actor: person.identityId })).toBe(1);
    const ok = await confirm(totp(factor.secret, DEFAULT_POLICY, t.clock.now()));
    expect(ok.statusCode, ok.body).toBe(204);
    expect(await isLocked(t, person.identityId)).toBe(true);
  });

  it('refuses codes that are not 6 to 8 digits with 400', async () => {
    const { confirm } = await setUp();
    for (const code of ['12345', '123456789', '12345a', ' 123456', '']) {
      const res = await confirm(code);
      expect(res.statusCode, code).toBe(400);
      expect(res.json().code).toBe('validation.failed');
    }
  });
});

describe('GET /second-factors', () => {
  it('pages newest first with signed cursors and exactly the four fields', async () => {
    const person = await createPerson(t.ctx);
    const grant = await signIn(t.app, person);
    const factors: Factor[] = [];
    for (let i = 0; i < 3; i++) {
      const held = factors.length > 0 ? { factor: factors[0], policy: DEFAULT_POLICY } : undefined;
      factors.push(await enrolVerified(t, person, grant, DEFAULT_POLICY, `f${i}`, held));
    }
    const ids = factors.map((f) => f.id);
    const first = await get(t.app, '/second-factors?limit=2', grant.accessToken);
    expect(first.statusCode).toBe(200);
    const body = first.json();
    expect(body.data.map((f: { id: string }) => f.id)).toEqual([ids[2], ids[1]]);
    for (const item of body.data)
      expect(Object.keys(item).sort()).toEqual(['id', 'label', 'lastUsedAt', 'verifiedAt']);
    expect(body.meta.pageInfo.hasNextPage).toBe(true);
    const cursor = body.meta.pageInfo.nextCursor as string;
    expect(cursor.split('.')).toHaveLength(4);
    const second = await get(
      t.app,
      `/second-factors?limit=2&after=${encodeURIComponent(cursor)}`,
      grant.accessToken,
    );
    expect(second.json()).toEqual({
      data: [expect.objectContaining({ id: ids[0], label: 'f0' })],
      meta: { pageInfo: { hasNextPage: false, nextCursor: null } },
    });
    // A cursor is bound to its caller and route.
    const stranger = await signIn(t.app, await createPerson(t.ctx));
    const foreign = await get(
      t.app,
      `/second-factors?after=${encodeURIComponent(cursor)}`,
      stranger.accessToken,
    );
    expect(foreign.statusCode).toBe(400);
    expect(foreign.json().code).toBe('collection.cursor_invalid');
    const sortParam = await get(t.app, '/second-factors?sort=label', grant.accessToken);
    expect(sortParam.statusCode).toBe(400);
    const anonymous = await t.app.inject({ method: 'GET', url: '/api/v1/second-factors' });
    expect(anonymous.statusCode).toBe(401);
  });

  it('shows lastUsedAt once a factor has answered a sign-in', async () => {
    const { person, factor } = await personWithFactor(t);
    const ticket = await ticketFor(t.app, person);
    const done = await completeSignIn(t.app, {
      secondFactorTicket: ticket,
      code: totp(factor.secret, DEFAULT_POLICY, t.clock.now()),
    });
    expect(done.statusCode, done.body).toBe(201);
    const list = await get(t.app, '/second-factors', done.json().data.accessToken);
    expect(list.json().data[0].lastUsedAt).toBe(t.clock.now().toISOString());
  });
});

describe('POST /second-factors/{id}/removals', () => {
  it('removes a verified factor (audited), down to zero; unknown, foreign, pending and removed ids are the identical 404', async () => {
    const { person, grant, factor } = await personWithFactor(t);
    const elevation = await elevate(t, grant.accessToken, person.email, {
      secret: factor.secret,
      policy: DEFAULT_POLICY,
    });
    const remove = (id: string) =>
      post(t.app, `/second-factors/${id}/removals`, { token: grant.accessToken, elevation });

    const pending = await post(t.app, '/second-factors', {
      token: grant.accessToken,
      elevation,
      payload: {},
    });
    const stranger = await personWithFactor(t);

    const refusals = [await remove(pending.json().data.id), await remove(stranger.factor.id)];
    refusals.push(await remove('00000000-0000-4000-8000-000000000000'));
    const ok = await remove(factor.id);
    expect(ok.statusCode, ok.body).toBe(204);
    refusals.push(await remove(factor.id));
    expectIdentical(refusals, 404, 'identity.second_factor_not_found');
    expect(await auditCount(t, 'identity.second_factor.removed', { actor: person.identityId })).toBe(1);
    expect((await get(t.app, '/second-factors', grant.accessToken)).json().data).toEqual([]);
    // The stranger's factor is untouched, and sign-in no longer asks this person for a second step.
    expect((await get(t.app, '/second-factors', stranger.grant.accessToken)).json().data).toHaveLength(1);
    const again = await signIn(t.app, person);
    expect(again.kind).toBe('session');
  });

  it('takes an id in upper case as the same id, and refuses a urn:uuid or braced form with 400', async () => {
    const { person, grant, factor } = await personWithFactor(t);
    const elevation = await elevate(t, grant.accessToken, person.email, {
      secret: factor.secret,
      policy: DEFAULT_POLICY,
    });
    const remove = (id: string) =>
      post(t.app, `/second-factors/${encodeURIComponent(id)}/removals`, {
        token: grant.accessToken,
        elevation,
      });
    for (const bad of [`urn:uuid:${factor.id}`, `{${factor.id}}`, factor.id.replaceAll('-', '')]) {
      const res = await remove(bad);
      expect({ bad, status: res.statusCode, code: res.json().code }).toEqual({
        bad,
        status: 400,
        code: 'validation.failed',
      });
    }
    const ok = await remove(factor.id.toUpperCase());
    expect(ok.statusCode, ok.body).toBe(204);
    expect((await get(t.app, '/second-factors', grant.accessToken)).json().data).toEqual([]);
  });

  it('refuses a non-UUID id with 400 and requires a session and an elevation', async () => {
    const { person, grant, factor } = await personWithFactor(t);
    const elevation = await elevate(t, grant.accessToken, person.email, {
      secret: factor.secret,
      policy: DEFAULT_POLICY,
    });
    const bad = await post(t.app, '/second-factors/not-a-uuid/removals', {
      token: grant.accessToken,
      elevation,
    });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().code).toBe('validation.failed');
    const id = '00000000-0000-4000-8000-000000000000';
    expect((await post(t.app, `/second-factors/${id}/removals`, { elevation })).statusCode).toBe(401);
    expect(
      (await post(t.app, `/second-factors/${id}/removals`, { token: grant.accessToken })).statusCode,
    ).toBe(403);
  });
});

describe('TOTP policy', () => {
  it('enrols under SHA256, 8 digits, 60 seconds and signs in with such codes', async () => {
    const wide = await createTestApp({ env: WIDE_ENV });
    try {
      const person = await createPerson(wide.ctx);
      const grant = await signIn(wide.app, person);
      const elevation = await elevate(wide, grant.accessToken, person.email);
      const res = await post(wide.app, '/second-factors', {
        token: grant.accessToken,
        elevation,
        payload: {},
      });
      const factor = res.json().data as Factor;
      const uri = new URL(factor.otpauthUri);
      expect(uri.searchParams.get('algorithm')).toBe('SHA256');
      expect(uri.searchParams.get('digits')).toBe('8');
      expect(uri.searchParams.get('period')).toBe('60');
      const code = totp(factor.secret, WIDE_POLICY, wide.clock.now());
      expect(code).toMatch(/^\d{8}$/);
      // A default-policy code of the same secret is not accepted.
      const sha1 = new TOTP({ secret: Secret.fromBase32(factor.secret) }).generate({
        timestamp: wide.clock.now().getTime(),
      });
      const refused = await post(wide.app, '/second-factors/confirmations', {
        token: grant.accessToken,
        payload: { code: sha1 },
      });
      expect(refused.statusCode).toBe(403);
      const ok = await post(wide.app, '/second-factors/confirmations', {
        token: grant.accessToken,
        payload: { code },
      });
      expect(ok.statusCode, ok.body).toBe(204);
      // 30 seconds later the 60-second step has not moved: the same code is a replay.
      wide.clock.advance(30);
      const ticket = await ticketFor(wide.app, person);
      const replay = await completeSignIn(wide.app, { secondFactorTicket: ticket, code });
      expect(replay.statusCode).toBe(401);
      wide.clock.advance(60);
      const done = await completeSignIn(wide.app, {
        secondFactorTicket: ticket,
        code: totp(factor.secret, WIDE_POLICY, wide.clock.now()),
      });
      expect(done.statusCode, done.body).toBe(201);
    } finally {
      await wide.close();
    }
  });

  it('keeps a factor working after the app is rebuilt with another policy on the same database', async () => {
    const db = await createTestDatabase();
    const clock = new ManualClock('2026-04-01T08:00:00.000Z');
    const key = randomBytes(32).toString('base64');
    try {
      const first = await createTestApp({ db, clock, env: { SECRETS_KEY: key } });
      const person = await createPerson(first.ctx);
      const grant = await signIn(first.app, person);
      const factor = await enrolVerified(first, person, grant, DEFAULT_POLICY);
      await first.close();

      const second = await createTestApp({ db, clock, env: { SECRETS_KEY: key, ...WIDE_ENV } });
      try {
        const ticket = await ticketFor(second.app, person);
        // Under the new policy's parameters the code is refused; under the enrolment's it works.
        const wideCode = totp(factor.secret, WIDE_POLICY, clock.now());
        expect(
          (await completeSignIn(second.app, { secondFactorTicket: ticket, code: wideCode })).statusCode,
        ).toBe(401);
        const ok = await completeSignIn(second.app, {
          secondFactorTicket: ticket,
          code: totp(factor.secret, DEFAULT_POLICY, clock.now()),
        });
        expect(ok.statusCode, ok.body).toBe(201);
        // A factor enrolled now carries the new policy; both coexist.
        const session = ok.json().data.accessToken as string;
        // The step-up below proves the factor with a code of a step not yet used.
        clock.advance(DEFAULT_POLICY.period);
        const newer = await enrolVerified(
          second,
          person,
          { ...grant, accessToken: session },
          WIDE_POLICY,
          undefined,
          { factor, policy: DEFAULT_POLICY },
        );
        expect(new URL(newer.otpauthUri).searchParams.get('digits')).toBe('8');
        const list = await get(second.app, '/second-factors', session);
        expect(list.json().data).toHaveLength(2);
      } finally {
        await second.close();
      }
    } finally {
      await db.drop();
    }
  });
});
