import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import { race } from '../helpers/identities.js';
import { waitForCode } from '../helpers/outbox.js';
import { confirm, emailForm, identifierRow, signUp, uniqueEmail } from '../registration/helpers.js';
import { ROUNDS, raceApp, scalar } from './support.js';

// Sign-up by code (docs/api.md, "Sign up by code"): confirmations of one code racing each other, and
// a sign-up by code racing a password registration's confirmation of the same address.
let t: TestApp;

beforeAll(async () => {
  t = await raceApp({ SIGN_IN_CODES: 'email', SIGN_IN_CODES_SIGN_UP: 'on' });
});
afterAll(async () => {
  await t?.close();
});

const ANSWERS = 10;

describe('concurrent sign-ups by code for one new address', () => {
  it(`10 at once: all 201 alike, one identity, one identifier, no orphan identity (${ROUNDS} rounds)`, async () => {
    const identitiesBefore = await scalar(t, sql`SELECT count(*)::int AS n FROM identities`);
    for (let round = 0; round < ROUNDS; round++) {
      const address = uniqueEmail(`race-code-signup-${round}`);
      const answers = await race(ANSWERS, () => signUp(t.app, emailForm(address)));
      expect(
        answers.map((r) => r.statusCode),
        `round ${round}`,
      ).toEqual(Array(ANSWERS).fill(201));
      expect(new Set(answers.map((r) => r.body)).size).toBe(1);
      expect(await identifierRow(t.ctx.database.db, address)).toHaveLength(1);
    }
    expect(await scalar(t, sql`SELECT count(*)::int AS n FROM identities`)).toBe(identitiesBefore + ROUNDS);
  });
});

describe('concurrent confirmations of one sign-up code', () => {
  it(`10 at once: one 201 with a session, nine identical 422, one identity, one session (${ROUNDS} rounds)`, async () => {
    const db = t.ctx.database.db;
    for (let round = 0; round < ROUNDS; round++) {
      const address = uniqueEmail(`race-code-up-${round}`);
      const sent = await signUp(t.app, emailForm(address));
      expect(sent.statusCode, sent.body).toBe(201);
      const code = await waitForCode(t.config.dataDir, address, 1);

      const answers = await race(ANSWERS, () => confirm(t.app, { ...emailForm(address), code }));

      const won = answers.filter((r) => r.statusCode === 201);
      const lost = answers.filter((r) => r.statusCode !== 201);
      expect(won, `round ${round}`).toHaveLength(1);
      expect(won[0].json().data.kind).toBe('session');
      expect(lost.every((r) => r.statusCode === 422 && r.body === lost[0].body)).toBe(true);
      expect(lost[0].json().code).toBe('identity.verification_refused');

      const rows = await identifierRow(db, address);
      expect(rows).toHaveLength(1);
      expect(rows[0].verified_at).not.toBeNull();
      const { identity_id: identityId } = await db
        .selectFrom('identifiers')
        .select('identity_id')
        .where('value', '=', address)
        .executeTakeFirstOrThrow();
      expect(
        await scalar(t, sql`SELECT count(*)::int AS n FROM sessions WHERE identity_id = ${identityId}`),
      ).toBe(1);
      expect(
        await scalar(
          t,
          sql`SELECT count(*)::int AS n FROM events WHERE identity_id = ${identityId} AND type = 'identity.created'`,
        ),
      ).toBe(1);
    }
  });
});
