import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import { createPerson, race } from '../helpers/identities.js';
import { codeIn, messagesTo, waitForCode } from '../helpers/outbox.js';
import { expectRefusals, ROUNDS, raceApp, statuses, times } from './support.js';

// Issue 45: sign-in codes under concurrency. A code is spent once, by its code or its link (one use
// between them); sends for one identity (from two of its addresses) leave one live code at most.
let t: TestApp;

beforeAll(async () => {
  // The hosted pages on: a code's message carries its link (SIGN_IN_LINKS, on by default).
  t = await raceApp({ SIGN_IN_CODES: 'email', ACCOUNT_UI: 'on' });
});
afterAll(async () => {
  await t?.close();
});

const ANSWERS = 10;
const SENDS = 10;

const email = (identifier: string) => ({ identifierType: 'email', identifier });

async function liveCodes(identityId: string): Promise<number> {
  const rows = await t.ctx.database.db
    .selectFrom('challenges')
    .select('id')
    .where('identity_id', '=', identityId)
    .where('purpose', '=', 'sign_in')
    .where('spent_at', 'is', null)
    .where('revoked_at', 'is', null)
    .execute();
  return rows.length;
}

describe('concurrent sign-in codes', () => {
  it(`${ANSWERS} answers with one correct code: exactly one session (${ROUNDS} rounds)`, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const p = await createPerson(t.ctx);
      const sent = await t.app.inject({
        method: 'POST',
        url: '/api/v1/sign-ins/codes',
        payload: email(p.email),
      });
      expect(sent.statusCode, sent.body).toBe(201);
      const code = await waitForCode(t.config.dataDir, p.email, 1);
      const url = `/api/v1/sign-ins/codes/${sent.json().data.signInCodeId}`;
      const answers = await race(ANSWERS, () =>
        t.app.inject({ method: 'POST', url, payload: { ...email(p.email), code } }),
      );
      expect(statuses(answers)).toEqual([201, ...times(ANSWERS - 1, 401)]);
      expectRefusals(
        answers.filter((r) => r.statusCode !== 201),
        401,
        'identity.sign_in_refused',
      );
      const sessions = await t.ctx.database.db
        .selectFrom('sessions')
        .select('id')
        .where('identity_id', '=', p.identityId)
        .execute();
      expect(sessions).toHaveLength(1);
    }
  });

  it(`${ANSWERS} answers by the code and by the link at once: exactly one session (${ROUNDS} rounds)`, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const p = await createPerson(t.ctx);
      const sent = await t.app.inject({
        method: 'POST',
        url: '/api/v1/sign-ins/codes',
        payload: email(p.email),
      });
      const id = sent.json().data.signInCodeId;
      const code = await waitForCode(t.config.dataDir, p.email, 1);
      const token = messagesTo(t.config.dataDir, p.email)[0].text.match(/#\/sign-in\/link\/\S+\/(\S+)/)?.[1];
      const answers = await race(ANSWERS, (i) =>
        i % 2
          ? t.app.inject({
              method: 'POST',
              url: '/api/v1/sign-ins/links',
              payload: { signInCodeId: id, token },
            })
          : t.app.inject({
              method: 'POST',
              url: `/api/v1/sign-ins/codes/${id}`,
              payload: { ...email(p.email), code },
            }),
      );
      expect(statuses(answers)).toEqual([201, ...times(ANSWERS - 1, 401)]);
      expectRefusals(
        answers.filter((r) => r.statusCode !== 201),
        401,
        'identity.sign_in_refused',
      );
      const sessions = await t.ctx.database.db
        .selectFrom('sessions')
        .select('id')
        .where('identity_id', '=', p.identityId)
        .execute();
      expect(sessions).toHaveLength(1);
    }
  });

  it(`${SENDS} sends from two addresses of one identity: one live code, and it signs in (${ROUNDS} rounds)`, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const p = await createPerson(t.ctx);
      const second = `second-${randomUUID().slice(0, 8)}@example.com`;
      const now = t.clock.now();
      await t.ctx.database.db
        .insertInto('identifiers')
        .values({
          id: randomUUID(),
          identity_id: p.identityId,
          type: 'email',
          value: second,
          created_at: now,
          verified_at: now,
        })
        .execute();
      const sends = await race(SENDS, (i) =>
        t.app.inject({
          method: 'POST',
          url: '/api/v1/sign-ins/codes',
          payload: email(i % 2 ? second : p.email),
          // Each from a client address of its own: no per-client window orders them.
          remoteAddress: `10.77.${round}.${i + 1}`,
        }),
      );
      expect(statuses(sends)).toEqual(times(SENDS, 201));
      expect(await liveCodes(p.identityId)).toBe(1);
      await waitForCode(t.config.dataDir, p.email, SENDS / 2);
      await waitForCode(t.config.dataDir, second, SENDS / 2);
      expect(messagesTo(t.config.dataDir, p.email).length + messagesTo(t.config.dataDir, second).length).toBe(
        SENDS,
      );
      // The live code is one that was sent, and it signs in.
      const live = await t.ctx.database.db
        .selectFrom('challenges')
        .select(['id', 'code_hash', 'identifier_id'])
        .where('identity_id', '=', p.identityId)
        .where('purpose', '=', 'sign_in')
        .where('revoked_at', 'is', null)
        .executeTakeFirstOrThrow();
      const sentCodes = [p.email, second].flatMap((address) =>
        messagesTo(t.config.dataDir, address).map((m) => ({ address, code: codeIn(m.text) })),
      );
      const match = sentCodes.find((c) => t.ctx.codes.hash(c.code) === live.code_hash);
      expect(match).toBeDefined();
      expect(sends.map((r) => r.json().data.signInCodeId)).toContain(live.id);
      const res = await t.app.inject({
        method: 'POST',
        url: `/api/v1/sign-ins/codes/${live.id}`,
        payload: { ...email(match?.address ?? ''), code: match?.code },
      });
      expect(res.statusCode, res.body).toBe(201);
    }
  });
});
