import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import { race } from '../helpers/identities.js';
import { createUser, newUser, PATCH_SCHEMA, scim, tenant } from '../scim/support.js';
import { ROUNDS, raceApp, statuses } from './support.js';

// SCIM under concurrency, on the PostgreSQL server (docs/scim.md): two PATCHes of one user with the
// same If-Match, and two creations of one userName. The organization row lock and the version's
// compare-and-set decide the first; the unique index on (organization, lower(userName)) the second.
let t: TestApp;
beforeAll(async () => {
  t = await raceApp({ RATE_LIMIT_OIDC_CLIENTS: '1000000/60' });
});
afterAll(async () => {
  await t?.close();
});

describe('SCIM at once', () => {
  it(`two PATCHes of one user with the same If-Match: one 200, one 412, the version moved once (${ROUNDS} rounds)`, async () => {
    const tn = await tenant(t, { verified: false });
    for (let round = 0; round < ROUNDS; round++) {
      const u = await createUser(t, tn);
      const answers = await race(2, (i) =>
        scim(
          t.app,
          'PATCH',
          `/Users/${u.id}`,
          tn.token,
          { schemas: [PATCH_SCHEMA], Operations: [{ op: 'replace', path: 'title', value: `writer ${i}` }] },
          { 'if-match': 'W/"1"' },
        ),
      );
      expect(statuses(answers), `round ${round}: ${answers.map((r) => r.body).join(' ')}`).toEqual([
        200, 412,
      ]);
      const loser = answers.find((r) => r.statusCode === 412);
      expect(loser?.json().schemas).toEqual(['urn:ietf:params:scim:api:messages:2.0:Error']);
      const now = await scim(t.app, 'GET', `/Users/${u.id}`, tn.token);
      expect(now.json().meta.version).toBe('W/"2"');
      const winner = answers.find((r) => r.statusCode === 200);
      expect(now.json().title).toBe(winner?.json().title);
    }
  });

  it(`two creations of one userName: one 201, one 409 uniqueness, one user (${ROUNDS} rounds)`, async () => {
    const tn = await tenant(t, { verified: false });
    for (let round = 0; round < ROUNDS; round++) {
      const body = newUser(tn.domain);
      const answers = await race(2, (i) =>
        scim(t.app, 'POST', '/Users', tn.token, { ...body, externalId: `${body.externalId}-${i}` }),
      );
      expect(statuses(answers), `round ${round}: ${answers.map((r) => r.body).join(' ')}`).toEqual([
        201, 409,
      ]);
      expect(answers.find((r) => r.statusCode === 409)?.json().scimType).toBe('uniqueness');
      const found = await scim(
        t.app,
        'GET',
        `/Users?filter=${encodeURIComponent(`userName eq "${body.userName}"`)}`,
        tn.token,
      );
      expect(found.json().totalResults).toBe(1);
    }
  });
});
