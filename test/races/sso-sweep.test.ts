import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { elevate, elevated } from '../helpers/elevation.js';
import { createPerson, type Grant, type Person, race, signIn } from '../helpers/identities.js';
import { messagesTo, waitForCode } from '../helpers/outbox.js';
import { call, ORGS } from '../organizations/support.js';
import { context, signInRaw } from '../sessions/support.js';
import { addMethod, confirmMethod } from '../sign-in-methods/support.js';
import { TestIdp } from '../sso/idp.js';
import { adminCall, ORIGIN, type SsoSetup, setUp } from '../sso/support.js';
import { ROUNDS } from './support.js';

// Someone coming under "require SSO" while it is on (docs/sso.md, "Require SSO"; docs/decisions.md,
// "Require SSO: sessions swept on a new domain or address"), at the same moment as what it races:
// - a domain verified while the domain's people are signing in by password: the sign-in reads the
//   epoch before its proof and the requirement after it, the verification moves the epoch;
// - an address of the domain confirmed while the requirement is turned on, or while the domain is
//   verified: both take the domain's lock before reading the other's write, so the second sees the
//   first's commit. Whatever the interleaving, no session of the person survives.
let t: TestApp;
let s: SsoSetup;

beforeAll(async () => {
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
  s = await setUp(t, await TestIdp.create(t.clock.now()));
}, 60_000);
afterAll(async () => {
  await t?.close();
});

const SIGN_INS = 6;

const requirement = async (requireSso: boolean) => {
  const res = await call(t.app, 'PUT', `${ORGS}/${s.orgId}/sso-requirement`, s.ownerToken, { requireSso });
  expect(res.statusCode, res.body).toBe(200);
  return res;
};

async function claim(domain: string): Promise<string> {
  const res = await call(t.app, 'POST', `${ORGS}/${s.orgId}/domains`, s.ownerToken, { domain });
  expect(res.statusCode, res.body).toBe(201);
  return res.json().data.id as string;
}

const verifyByOperator = (domainId: string) =>
  adminCall(t, 'POST', `/organizations/${s.orgId}/domains/${domainId}/verifications`);

const newDomain = (round: number) => `r${round}-${randomUUID().slice(0, 8)}.example`;

async function expectDead(tokens: string[]) {
  for (const token of tokens) {
    const seen = await context(t.app, token);
    expect(seen.statusCode, seen.body).toBe(401);
  }
}

/** A person (address outside every domain) signed in twice, with an address of `domain` awaiting its code. */
async function adding(
  domain: string,
): Promise<{ person: Person; tokens: string[]; headers: Record<string, string>; code: string }> {
  const person = await createPerson(t.ctx);
  const tokens = [(await signIn(t.app, person)).accessToken, (await signIn(t.app, person)).accessToken];
  const headers = elevated(tokens[0], await elevate(t, tokens[0], person.email));
  const address = `a-${randomUUID().slice(0, 8)}@${domain}`;
  const before = messagesTo(t.config.dataDir, address).length;
  const asked = await addMethod(t.app, headers, { identifierType: 'email', identifier: address });
  expect(asked.statusCode, asked.body).toBe(201);
  return { person, tokens, headers, code: await waitForCode(t.config.dataDir, address, before + 1) };
}

describe('require SSO on: a domain verified while its people sign in', () => {
  it(`no password session of the new domain is live once it is verified (${ROUNDS} rounds)`, async () => {
    await requirement(true);
    let granted = 0;
    let refused = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const domain = newDomain(round);
      const person = await createPerson(t.ctx, `p@${domain}`);
      const earlier = (await signIn(t.app, person)).accessToken;
      const domainId = await claim(domain);
      const answers = await race(SIGN_INS + 1, (i) =>
        i < SIGN_INS ? signInRaw(t.app, person.email, person.password) : verifyByOperator(domainId),
      );
      const verified = answers[SIGN_INS];
      expect(verified.statusCode, verified.body).toBe(200);
      for (const r of answers.slice(0, SIGN_INS)) {
        if (r.statusCode === 403 || r.statusCode === 401) {
          expect(r.json().code).toBe(
            r.statusCode === 403 ? 'identity.sso_required' : 'identity.sign_in_refused',
          );
          refused++;
          continue;
        }
        expect(r.statusCode, r.body).toBe(201);
        granted++;
        await expectDead([(r.json().data as Grant).accessToken]);
      }
      await expectDead([earlier]);
    }
    expect(granted + refused).toBe(ROUNDS * SIGN_INS);
    console.info(`domain verified: ${granted} sessions dead on arrival, ${refused} refused`);
  });
});

describe('an address of the domain confirmed at the same moment', () => {
  it(`as the requirement is turned on: the person's sessions end either way (${ROUNDS} rounds)`, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      await requirement(false);
      const p = await adding(s.domain);
      const [confirmed, turnedOn] = await race(2, (i) =>
        i === 0
          ? confirmMethod(t.app, p.headers, p.code)
          : call(t.app, 'PUT', `${ORGS}/${s.orgId}/sso-requirement`, s.ownerToken, { requireSso: true }),
      );
      expect(confirmed.statusCode, confirmed.body).toBe(204);
      expect(turnedOn.statusCode, turnedOn.body).toBe(200);
      await expectDead(p.tokens);
    }
  });

  it(`as its domain is verified, the requirement on: the person's sessions end either way (${ROUNDS} rounds)`, async () => {
    await requirement(true);
    for (let round = 0; round < ROUNDS; round++) {
      const domain = newDomain(round);
      const domainId = await claim(domain);
      const p = await adding(domain);
      const [confirmed, verified] = await race(2, (i) =>
        i === 0 ? confirmMethod(t.app, p.headers, p.code) : verifyByOperator(domainId),
      );
      expect(confirmed.statusCode, confirmed.body).toBe(204);
      expect(verified.statusCode, verified.body).toBe(200);
      await expectDead(p.tokens);
    }
  });
});
