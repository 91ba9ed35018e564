import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { race } from '../helpers/identities.js';
import { TestIdp } from '../sso/idp.js';
import {
  adminCall,
  exchange,
  good,
  handoffOf,
  ORIGIN,
  postAcs,
  REFUSED,
  type SsoSetup,
  setUp,
  startFlow,
} from '../sso/support.js';
import { ROUNDS, scalar } from './support.js';

// Issue 47, item 2: a SAML response's single use, decided by the database under concurrent posts
// (the flow's compare-and-set; the assertion id's INSERT … ON CONFLICT DO NOTHING), a handoff spent
// once, and a person's first sign-in from two browsers at once making one identity.
let t: TestApp;
let idp: TestIdp;
let s: SsoSetup;
let unsolicited: SsoSetup;

beforeAll(async () => {
  // raceApp's configuration, with the operators' listener (a connection allowing IdP-initiated sign-in).
  t = await createTestApp({
    server: true,
    admin: true,
    env: {
      PUBLIC_ORIGIN: ORIGIN,
      ARGON2_MEMORY_KIB: '1024',
      RATE_LIMIT_SENDS_A_MESSAGE: '1000000/60',
      RATE_LIMIT_ANSWERS_A_CHALLENGE: '1000000/60',
      RATE_LIMIT_PROVES_A_PASSWORD: '1000000/60',
    },
  });
  idp = await TestIdp.create(t.clock.now());
  s = await setUp(t, idp);
  unsolicited = await setUp(t, idp);
  const allowed = await adminCall(
    t,
    'PATCH',
    `/organizations/${unsolicited.orgId}/connections/${unsolicited.connectionId}`,
    {
      saml: { allowIdpInitiated: true },
    },
  );
  expect(allowed.statusCode, allowed.body).toBe(200);
}, 60_000);
afterAll(async () => {
  await t?.close();
});

let n = 0;
const address = (setup: SsoSetup) => `race${++n}@${setup.domain}`;
const sessionsOf = (email: string) =>
  scalar(
    t,
    sql`SELECT count(*)::int AS n FROM sessions s JOIN identifiers i ON i.identity_id = s.identity_id WHERE i.value = ${email}`,
  );
const identitiesOf = (email: string) =>
  scalar(t, sql`SELECT count(*)::int AS n FROM identifiers WHERE value = ${email} AND removed_at IS NULL`);

describe('SAML races', () => {
  it(`an operator's test start URL opened twice at once: one browser is bound, the other told it is spent (${ROUNDS} rounds)`, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const started = await adminCall(
        t,
        'POST',
        `/organizations/${s.orgId}/connections/${s.connectionId}/tests`,
      );
      expect(started.statusCode, started.body).toBe(201);
      const path = new URL(started.json().data.startUrl as string).pathname;
      const answers = await race(2, () => t.app.inject({ method: 'GET', url: path }));
      const bound = answers.filter((a) => a.headers['set-cookie'] !== undefined);
      expect(bound, `round ${round}`).toHaveLength(1);
      expect(String(bound[0]?.headers.location).startsWith(idp.ssoUrl)).toBe(true);
      expect(
        answers.filter((a) => a.headers.location === `${ORIGIN}/account/#/sso-test-done?error=gone`),
      ).toHaveLength(1);
    }
  });

  it(`the same response posted twice at once: one handoff, one session (${ROUNDS} rounds)`, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const flow = await startFlow(t, s.connectionId);
      const email = address(s);
      const response = idp.response(good(s, flow, t, email));
      const answers = await race(2, () => postAcs(t, s.connectionId, response, flow.cookie));
      const codes = answers.map(handoffOf).filter((c): c is string => c !== null);
      expect(codes, `round ${round}`).toHaveLength(1);
      expect(answers.filter((a) => a.headers.location === REFUSED)).toHaveLength(1);
      const grants = await race(2, () => exchange(t, codes[0] as string, flow.cookie));
      expect(grants.map((g) => g.statusCode).sort()).toEqual([201, 401]);
      expect(await sessionsOf(email)).toBe(1);
    }
  });

  it(`an unsolicited response posted twice at once: the assertion id is spent once (${ROUNDS} rounds)`, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const email = address(unsolicited);
      const response = idp.response(good(unsolicited, null, t, email));
      const answers = await race(2, () => postAcs(t, unsolicited.connectionId, response));
      const codes = answers.map(handoffOf).filter((c): c is string => c !== null);
      expect(codes, `round ${round}`).toHaveLength(1);
      expect(answers.filter((a) => a.headers.location === REFUSED)).toHaveLength(1);
      expect((await exchange(t, codes[0] as string)).statusCode).toBe(201);
      expect(await sessionsOf(email)).toBe(1);
    }
  });

  it(`a new person's first sign-in from two browsers at once: one identity, both signed in to it (${ROUNDS} rounds)`, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const email = address(s);
      const flows = [await startFlow(t, s.connectionId), await startFlow(t, s.connectionId)];
      const answers = await race(2, (i) => {
        const flow = flows[i] as (typeof flows)[number];
        return postAcs(t, s.connectionId, idp.response(good(s, flow, t, email)), flow.cookie);
      });
      const codes = answers.map(handoffOf);
      expect(
        codes.every((c) => c !== null),
        `round ${round}: ${answers.map((a) => a.headers.location).join(' | ')}`,
      ).toBe(true);
      expect(await identitiesOf(email)).toBe(1);
      const members = await scalar(
        t,
        sql`SELECT count(*)::int AS n FROM organization_memberships m JOIN identifiers i ON i.identity_id = m.identity_id
            WHERE i.value = ${email} AND m.organization_id = ${s.orgId}`,
      );
      expect(members).toBe(1);
    }
  });
});
