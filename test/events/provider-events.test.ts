import { randomBytes, randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { elevatedPerson } from '../helpers/elevation.js';
import { createPerson, type Grant } from '../helpers/identities.js';
import { hostMappingFetch, startUpstream, type Upstream } from '../helpers/upstream.js';
import {
  appEnv,
  expectError,
  handoffOf,
  identityOf,
  redirectEntry,
  SECURITY_PAGE,
  SIGN_UP_PAGE,
  signInThrough,
  trip,
  upstreamClient,
} from '../providers/redirect-support.js';
import { admin } from './support.js';

/*
 * "Continue with …" (the redirect flow) and identity.created: Clerk's famous bug was user.created
 * missing for an OAuth sign-up. Here the first trip of a new subject emits identity.created
 * exactly once, with the address the provider vouched for; its later sign-ins do not; a trip the
 * linking rules refuse emits nothing; a link (from Security or by a verified email) is
 * identity.updated.
 */

let t: TestApp;
let up: Upstream;
const outbound = hostMappingFetch({});

beforeAll(async () => {
  up = await startUpstream({ ...upstreamClient('acme', 'linker') });
  t = await createTestApp({
    admin: true,
    upstreamFetch: outbound,
    env: appEnv([
      redirectEntry('acme', { issuer: up.issuer }),
      redirectEntry('linker', { issuer: up.issuer, autoLink: 'verified_email' }),
    ]),
  });
});

afterAll(async () => {
  await t?.close();
  await up?.close();
});

function account(claims: Record<string, unknown>): string {
  const sub = `sub-${randomUUID()}`;
  up.setAccount(sub, claims);
  up.login = sub;
  return sub;
}

const email = (label: string) => `${label}-${randomBytes(4).toString('hex')}@example.com`;

interface Ev {
  type: string;
  actor: string | null;
  identityId: string | null;
  data: Record<string, unknown>;
}

/** Every event of a type, through the pull API (one page is plenty for this file). */
async function pulled(type: string): Promise<Ev[]> {
  const res = await admin(t, 'GET', `/events?types=${type}&limit=100`);
  expect(res.statusCode, res.body).toBe(200);
  return res.json().data as Ev[];
}

async function totalEvents(): Promise<number> {
  const r = await sql<{ n: number }>`SELECT count(*)::int AS n FROM events`.execute(t.ctx.database.db);
  return r.rows[0].n;
}

describe('redirect sign-up: identity.created', () => {
  it('the first trip of a new subject emits it once, with the verified address; the next sign-in does not', async () => {
    const address = email('oauth');
    account({ email: address, email_verified: true, name: 'Ann' });
    const { trip: done, res } = await signInThrough(t, 'acme', { returnTo: SIGN_UP_PAGE });
    expect(res.statusCode, res.body).toBe(201);
    const grant = res.json().data as Grant;
    const identityId = await identityOf(t, grant.accessToken);

    const created = (await pulled('identity.created')).filter((e) => e.identityId === identityId);
    expect(created).toHaveLength(1);
    expect(created[0]).toMatchObject({ actor: identityId, identityId });
    const detail = (await admin(t, 'GET', `/identities/${identityId}`)).json().data;
    expect(created[0].data).toEqual({
      id: identityId,
      createdAt: detail.createdAt,
      identifiers: detail.identifiers,
      locale: 'en',
      // The provider's full name, the identity's display name from its creation (issue 46).
      givenName: null,
      familyName: null,
      displayName: 'Ann',
      name: 'Ann',
      disabledAt: null,
      erasedAt: null,
      via: 'provider',
    });
    expect(created[0].data.identifiers).toEqual([
      expect.objectContaining({ type: 'email', value: address, verifiedAt: expect.any(String) }),
    ]);
    expect((await pulled('session.created')).filter((e) => e.identityId === identityId)).toHaveLength(1);
    const json = JSON.stringify(created);
    for (const secret of [grant.refreshToken, grant.accessToken, handoffOf(done)]) {
      expect(json).not.toContain(secret);
    }

    // Signing in again through the same provider: a session, no second creation.
    const again = await signInThrough(t, 'acme');
    expect(again.res.statusCode, again.res.body).toBe(201);
    expect((await pulled('identity.created')).filter((e) => e.identityId === identityId)).toHaveLength(1);
    expect((await pulled('identity.updated')).filter((e) => e.identityId === identityId)).toHaveLength(0);
  });

  it('a subject without an email still emits it, with no identifier', async () => {
    account({});
    const { res } = await signInThrough(t, 'acme');
    expect(res.statusCode, res.body).toBe(201);
    const identityId = await identityOf(t, (res.json().data as Grant).accessToken);
    const created = (await pulled('identity.created')).filter((e) => e.identityId === identityId);
    expect(created).toHaveLength(1);
    expect(created[0].data.identifiers).toEqual([]);
  });

  it('a trip refused by the linking rules (account_exists) emits nothing', async () => {
    const person = await createPerson(t.ctx, email('owner'));
    account({ email: person.email, email_verified: true });
    const before = await totalEvents();
    const done = await trip(t, { provider: 'acme', returnTo: SIGN_UP_PAGE });
    expectError(done.callback, 'acme', 'account_exists', SIGN_UP_PAGE);
    expect(await totalEvents()).toBe(before);
  });
});

describe('redirect links: identity.updated', () => {
  it('autoLink by a verified email links the existing identity: updated once, no creation', async () => {
    const person = await createPerson(t.ctx, email('auto'));
    account({ email: person.email, email_verified: true });
    const { res } = await signInThrough(t, 'linker');
    expect(res.statusCode, res.body).toBe(201);
    const mine = async (type: string) =>
      (await pulled(type)).filter((e) => e.identityId === person.identityId);
    expect(await mine('identity.created')).toEqual([]);
    const updated = await mine('identity.updated');
    expect(updated).toHaveLength(1);
    expect(updated[0]).toMatchObject({ actor: person.identityId, data: { id: person.identityId } });
  });

  it('a link flow from Security emits updated once', async () => {
    const { person, headers } = await elevatedPerson(t);
    account({ email: email('linked'), email_verified: true });
    const done = await trip(t, { provider: 'acme', intent: 'link', returnTo: SECURITY_PAGE }, { headers });
    expect(Object.fromEntries(done.back.params)).toEqual({ provider: 'acme', result: 'linked' });
    const updated = (await pulled('identity.updated')).filter((e) => e.identityId === person.identityId);
    expect(updated).toHaveLength(1);
    expect(updated[0].data).toMatchObject({ id: person.identityId });
  });
});
