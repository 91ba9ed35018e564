import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { OutboundFetch } from '../../src/features/providers/upstream.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { type Grant, race } from '../helpers/identities.js';
import { type CallbackArrival, startUpstream, type Upstream } from '../helpers/upstream.js';
import {
  appEnv,
  atUpstream,
  Browser,
  deliver,
  exchange,
  handoffOf,
  identityOf,
  redirectEntry,
  returned,
  startFlow,
  trip,
  upstreamClient,
} from '../providers/redirect-support.js';
import { SIGN_IN_REFUSED } from '../providers/support.js';
import { ROUNDS, scalar } from './support.js';

// Issue 26, "Continue with …": the flow's and the handoff's single use, and a new subject's first
// sign-in, decided by the database under concurrent requests (a real oidc-provider upstream).
let t: TestApp;
let up: Upstream;

/**
 * When set, each token response the service receives waits for the other one: the two callbacks
 * of a round then reach the linking rules together, rather than one after the other.
 */
let pair: { arrive(): Promise<void> } | undefined;

function pairUp(): { arrive(): Promise<void> } {
  let waiting = 0;
  let release!: () => void;
  const both = new Promise<void>((resolve) => {
    release = resolve;
  });
  // Never a deadlock: a lone response goes on after a second.
  const timeout = new Promise<void>((resolve) => setTimeout(resolve, 1000).unref());
  return {
    arrive() {
      waiting++;
      if (waiting === 2) release();
      return Promise.race([both, timeout]);
    },
  };
}

const outbound: OutboundFetch = async (url, options) => {
  const res = await fetch(url, options as RequestInit);
  if (pair && options.method === 'POST' && new URL(url).pathname === '/token') await pair.arrive();
  return res;
};

beforeAll(async () => {
  up = await startUpstream({ ...upstreamClient('acme') });
  // raceApp's configuration, with the outbound fetch above.
  t = await createTestApp({
    server: true,
    upstreamFetch: outbound,
    env: {
      ARGON2_MEMORY_KIB: '1024',
      RATE_LIMIT_SENDS_A_MESSAGE: '1000000/60',
      RATE_LIMIT_ANSWERS_A_CHALLENGE: '1000000/60',
      RATE_LIMIT_PROVES_A_PASSWORD: '1000000/60',
      ...appEnv([redirectEntry('acme', { issuer: up.issuer })]),
    },
  });
});
afterAll(async () => {
  await t?.close();
  await up?.close();
});

function account(): string {
  const sub = `race-${randomUUID()}`;
  up.setAccount(sub, { email: `${sub}@example.com`, email_verified: true });
  up.login = sub;
  return sub;
}

const handoffsOf = (identityId: string) =>
  scalar(t, sql`SELECT count(*)::int AS n FROM provider_handoffs WHERE identity_id = ${identityId}`);
const linksOf = (sub: string) =>
  sql<{
    identity_id: string;
  }>`SELECT identity_id FROM provider_links WHERE subject = ${sub} AND removed_at IS NULL`
    .execute(t.ctx.database.db)
    .then((r) => r.rows.map((row) => row.identity_id));

describe('redirect sign-in races', () => {
  it(`one callback delivered twice at once makes exactly one handoff (${ROUNDS} rounds)`, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const sub = account();
      const browser = new Browser();
      const arrival = await atUpstream(await startFlow(t, browser, { provider: 'acme' }), 'acme');
      const cookie = browser.header() as string;
      const answers = await race(2, () => deliver(t, arrival, cookie));
      const backs = answers.map((r) => returned(r).params);
      const won = backs.filter((p) => p.has('handoff'));
      const lost = backs.filter((p) => p.get('error') === 'refused');
      expect([won.length, lost.length], `round ${round}: ${backs.join(' | ')}`).toEqual([1, 1]);
      const [identityId] = await linksOf(sub);
      expect(await linksOf(sub)).toEqual([identityId]);
      expect(await handoffsOf(identityId)).toBe(1);
      const res = await exchange(t, won[0].get('handoff') as string, cookie);
      expect(res.statusCode, res.body).toBe(201);
      expect(await identityOf(t, (res.json().data as Grant).accessToken)).toBe(identityId);
    }
  });

  it(`one handoff code exchanged twice at once opens exactly one session (${ROUNDS} rounds)`, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const sub = account();
      const done = await trip(t, { provider: 'acme' });
      const code = handoffOf(done);
      const cookie = done.browser.header() as string;
      const [identityId] = await linksOf(sub);
      const answers = await race(2, () => exchange(t, code, cookie));
      expect(answers.map((r) => r.statusCode).sort(), `round ${round}`).toEqual([201, 401]);
      const refused = answers.find((r) => r.statusCode === 401);
      expect(refused?.json()).toEqual(SIGN_IN_REFUSED);
      expect(
        await scalar(t, sql`SELECT count(*)::int AS n FROM sessions WHERE identity_id = ${identityId}`),
      ).toBe(1);
    }
  });

  it(`two first sign-ins of one new subject at once make exactly one identity (${ROUNDS} rounds)`, async () => {
    const notSignedIn: string[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const sub = account();
      const identities = await scalar(t, sql`SELECT count(*)::int AS n FROM identities`);
      // Two flows (two tabs, or two browsers) reach the callback with codes for the same account.
      const browsers = [new Browser(), new Browser()];
      const arrivals: CallbackArrival[] = [];
      for (const browser of browsers) {
        arrivals.push(await atUpstream(await startFlow(t, browser, { provider: 'acme' }), 'acme'));
      }
      pair = pairUp();
      const answers = await race(2, (i) => deliver(t, arrivals[i], browsers[i])).finally(() => {
        pair = undefined;
      });
      const codes = answers.map((r) => returned(r).params.get('handoff'));
      // Exactly one identity, one link, one address, whatever the order.
      expect(await scalar(t, sql`SELECT count(*)::int AS n FROM identities`), `round ${round}`).toBe(
        identities + 1,
      );
      const linked = await linksOf(sub);
      expect(linked).toHaveLength(1);
      expect(
        await scalar(
          t,
          sql`SELECT count(*)::int AS n FROM identifiers WHERE value = ${`${sub}@example.com`} AND removed_at IS NULL`,
        ),
      ).toBe(1);
      // Each browser that got a handoff is signed in to that one identity.
      for (const [i, code] of codes.entries()) {
        if (code === null) {
          notSignedIn.push(`round ${round}: ${answers[i].headers.location}`);
          continue;
        }
        const res = await exchange(t, code, browsers[i]);
        expect(res.statusCode, res.body).toBe(201);
        expect(await identityOf(t, (res.json().data as Grant).accessToken)).toBe(linked[0]);
      }
    }
    // Both tabs are the same person with the same upstream account: neither is told an account
    // exists (the other tab's sign-up) or refused.
    expect(notSignedIn).toEqual([]);
    // The rounds did race: a loser made its identity, met the winner's link and dropped it (the only
    // deletion from identities here). Statistics reach pg_stat a moment after the commit.
    const deleted = () =>
      scalar(
        t,
        sql`SELECT coalesce(sum(n_tup_del), 0)::int AS n FROM pg_stat_user_tables
            WHERE relname = 'identities' AND schemaname = current_schema()`,
      );
    const until = Date.now() + 15_000;
    while ((await deleted()) === 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 250));
    expect(await deleted()).toBeGreaterThan(0);
  });
});
