import { randomUUID } from 'node:crypto';
import { type TOTP, URI } from 'otpauth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { elevate } from '../helpers/elevation.js';
import { bearer, createPerson, signIn } from '../helpers/identities.js';
import { messagesTo, waitForCode } from '../helpers/outbox.js';
import {
  freshToken,
  idToken,
  issueNonce,
  nonceHash,
  ProviderSink,
  providerSignIn,
  providerStepUp,
  SIGN_IN_REFUSED,
  STEP_UP_REFUSED,
  shape,
} from '../providers/support.js';
import { sidOf } from '../sessions/support.js';

let t: TestApp;
let sink: ProviderSink;

beforeAll(async () => {
  sink = await ProviderSink.start();
  t = await createTestApp({ env: sink.env() });
});
afterAll(async () => {
  await t.close();
  await sink.close();
});

/** A provider-only identity, signed in. */
async function providerPerson() {
  const sub = `step-${randomUUID()}`;
  const res = await providerSignIn(t.app, await freshToken(t.app, sink, t.clock, { sub }));
  expect(res.statusCode).toBe(201);
  return { sub, grant: res.json().data as { accessToken: string } };
}

function removal(accessToken: string, elevationToken?: string) {
  return t.app.inject({
    method: 'POST',
    url: `/api/v1/sign-in-methods/${randomUUID()}/removals`,
    headers: elevationToken
      ? { ...bearer(accessToken), 'x-elevation-token': elevationToken }
      : bearer(accessToken),
  });
}

describe('POST /step-ups/providers', () => {
  it('mints an elevation bound to the calling session for a subject linked to the caller', async () => {
    const { sub, grant } = await providerPerson();
    const res = await providerStepUp(
      t.app,
      grant.accessToken,
      await freshToken(t.app, sink, t.clock, { sub }),
    );
    expect(res.statusCode).toBe(201);
    const { data } = res.json();
    expect(Object.keys(data).sort()).toEqual(['elevationExpiresAt', 'elevationToken']);
    expect(data.elevationExpiresAt).toBe(new Date(t.clock.now().getTime() + 300_000).toISOString());
    // Accepted by an elevated route (an unknown id is then the route's own 404, not a 403).
    expect((await removal(grant.accessToken, data.elevationToken)).statusCode).toBe(404);
    expect((await removal(grant.accessToken)).statusCode).toBe(403);
    // Another session of the same identity cannot use it.
    const other = (await providerSignIn(t.app, await freshToken(t.app, sink, t.clock, { sub }))).json().data;
    expect((await removal(other.accessToken, data.elevationToken)).json().code).toBe(
      'identity.elevation_required',
    );
  });

  it('refuses a nonce already spent by a sign-in with 403', async () => {
    const { sub, grant } = await providerPerson();
    const { nonce } = await issueNonce(t.app);
    const signInToken = await idToken(sink, t.clock, { sub, nonce: nonceHash(nonce) });
    expect((await providerSignIn(t.app, signInToken)).statusCode).toBe(201);
    const res = await providerStepUp(
      t.app,
      grant.accessToken,
      await idToken(sink, t.clock, { sub, nonce: nonceHash(nonce) }),
    );
    expect(res.statusCode).toBe(403);
    expect(res.json()).toEqual(STEP_UP_REFUSED);
    // And the reverse: a nonce spent by a step-up no longer signs in.
    const { nonce: n2 } = await issueNonce(t.app);
    expect(
      (
        await providerStepUp(
          t.app,
          grant.accessToken,
          await idToken(sink, t.clock, { sub, nonce: nonceHash(n2) }),
        )
      ).statusCode,
    ).toBe(201);
    expect(
      (await providerSignIn(t.app, await idToken(sink, t.clock, { sub, nonce: nonceHash(n2) }))).json(),
    ).toEqual(SIGN_IN_REFUSED);
  });

  it('answers every other failure with the identical 403', async () => {
    const { sub, grant } = await providerPerson();
    const stranger = await providerPerson();
    const baseline = await providerStepUp(t.app, grant.accessToken, 'not.a.token');
    expect(baseline.statusCode).toBe(403);
    expect(baseline.json()).toEqual(STEP_UP_REFUSED);

    const foreignToken = await freshToken(t.app, sink, t.clock, { sub: stranger.sub });
    const causes: Record<string, () => Promise<Awaited<ReturnType<typeof providerStepUp>>>> = {
      'unknown provider': async () =>
        providerStepUp(t.app, grant.accessToken, await freshToken(t.app, sink, t.clock, { sub }), 'nobody'),
      'a subject linked to another identity': async () =>
        providerStepUp(t.app, grant.accessToken, foreignToken),
      'an unlinked subject': async () =>
        providerStepUp(
          t.app,
          grant.accessToken,
          await freshToken(t.app, sink, t.clock, { sub: 'never-seen' }),
        ),
      'wrong audience': async () =>
        providerStepUp(t.app, grant.accessToken, await freshToken(t.app, sink, t.clock, { sub, aud: 'x' })),
      'unissued nonce': async () =>
        providerStepUp(
          t.app,
          grant.accessToken,
          await idToken(sink, t.clock, { sub, nonce: nonceHash('made-up') }),
        ),
      'missing nonce': async () =>
        providerStepUp(t.app, grant.accessToken, await idToken(sink, t.clock, { sub, nonce: null })),
      'forged signature': async () =>
        providerStepUp(
          t.app,
          grant.accessToken,
          await freshToken(t.app, sink, t.clock, {
            sub,
            key: await ProviderSink.foreignKey(sink.current.kid),
          }),
        ),
    };
    for (const [cause, run] of Object.entries(causes))
      expect(shape(await run()), cause).toEqual(shape(baseline));
    // The nonce of the foreign subject's token was burned by the refused step-up: its owner
    // cannot sign in with it either.
    expect((await providerSignIn(t.app, foreignToken)).json()).toEqual(SIGN_IN_REFUSED);

    const { nonce } = await issueNonce(t.app);
    t.clock.advance(601);
    const expired = await providerStepUp(
      t.app,
      grant.accessToken,
      await idToken(sink, t.clock, { sub, nonce: nonceHash(nonce) }),
    );
    // The session's access token has not expired yet (15 minutes), so this is the nonce's refusal.
    expect(shape(expired)).toEqual(shape(baseline));
  });

  it('a provider sign-in of an identity with a second factor answers a ticket, not a session', async () => {
    const { sub, grant } = await providerPerson();
    const up = await providerStepUp(
      t.app,
      grant.accessToken,
      await freshToken(t.app, sink, t.clock, { sub }),
    );
    const headers = { ...bearer(grant.accessToken), 'x-elevation-token': up.json().data.elevationToken };
    const enrol = await t.app.inject({ method: 'POST', url: '/api/v1/second-factors', headers, payload: {} });
    expect(enrol.statusCode).toBe(201);
    const totp = URI.parse(enrol.json().data.otpauthUri) as TOTP;
    const code = totp.generate({ timestamp: t.clock.now().getTime() });
    const confirmed = await t.app.inject({
      method: 'POST',
      url: '/api/v1/second-factors/confirmations',
      headers: bearer(grant.accessToken),
      payload: { code },
    });
    expect(confirmed.statusCode).toBe(204);

    const res = await providerSignIn(t.app, await freshToken(t.app, sink, t.clock, { sub }));
    expect(res.statusCode).toBe(201);
    const { data } = res.json();
    expect(data.kind).toBe('second_factor_required');
    expect(data).not.toHaveProperty('accessToken');
    expect(data).not.toHaveProperty('refreshToken');
  });

  it('refuses the provider channel once a second factor is verified: it cannot undo the factor', async () => {
    // The attack: a session and the upstream account (one factor) mint an elevation, then remove
    // the authenticator. The rule of every step-up is to prove the strongest factor held.
    const { sub, grant } = await providerPerson();
    const up = await providerStepUp(
      t.app,
      grant.accessToken,
      await freshToken(t.app, sink, t.clock, { sub }),
    );
    expect(up.statusCode).toBe(201);
    const headers = { ...bearer(grant.accessToken), 'x-elevation-token': up.json().data.elevationToken };
    const enrol = await t.app.inject({ method: 'POST', url: '/api/v1/second-factors', headers, payload: {} });
    expect(enrol.statusCode).toBe(201);
    const totp = URI.parse(enrol.json().data.otpauthUri) as TOTP;
    const confirmed = await t.app.inject({
      method: 'POST',
      url: '/api/v1/second-factors/confirmations',
      headers: bearer(grant.accessToken),
      payload: { code: totp.generate({ timestamp: t.clock.now().getTime() }) },
    });
    expect(confirmed.statusCode).toBe(204);

    const { nonce } = await issueNonce(t.app);
    const token = await idToken(sink, t.clock, { sub, nonce: nonceHash(nonce) });
    const refused = await providerStepUp(t.app, grant.accessToken, token);
    expect(refused.statusCode).toBe(422);
    expect(refused.json().code).toBe('identity.step_up_unavailable');
    expect(refused.json()).not.toHaveProperty('elevationToken');
    const elevations = await t.ctx.database.db
      .selectFrom('elevations')
      .select(({ fn }) => fn.countAll<string>().as('n'))
      .where('session_id', '=', sidOf(grant.accessToken))
      .executeTakeFirstOrThrow();
    expect(Number(elevations.n)).toBe(1);
    // The refusal spent the nonce: the same token cannot be replayed for a sign-in.
    expect((await providerSignIn(t.app, token)).json()).toEqual(SIGN_IN_REFUSED);

    // The authenticator still steps up.
    t.clock.advance(30);
    const start = await t.app.inject({
      method: 'POST',
      url: '/api/v1/step-ups',
      headers: bearer(grant.accessToken),
      payload: { channel: 'second_factor' },
    });
    expect(start.statusCode).toBe(201);
    const ok = await t.app.inject({
      method: 'POST',
      url: '/api/v1/step-ups/confirmations',
      headers: bearer(grant.accessToken),
      payload: {
        challengeId: start.json().data.challengeId,
        code: totp.generate({ timestamp: t.clock.now().getTime() }),
      },
    });
    expect(ok.statusCode).toBe(201);
  });

  it('refuses an identifier step-up started before a factor was verified and confirmed after', async () => {
    const person = await createPerson(t.ctx);
    const grant = await signIn(t.app, person);
    const before = messagesTo(t.config.dataDir, person.email).length;
    const start = await t.app.inject({
      method: 'POST',
      url: '/api/v1/step-ups',
      headers: bearer(grant.accessToken),
      payload: { channel: 'identifier' },
    });
    expect(start.statusCode).toBe(201);
    const code = await waitForCode(t.config.dataDir, person.email, before + 1);
    // Meanwhile the factor is enrolled and verified from another session (a new step-up of the
    // same session would retire the first challenge).
    const other = await signIn(t.app, person);
    const elevation = await elevate(t, other.accessToken, person.email);
    const headers = { ...bearer(other.accessToken), 'x-elevation-token': elevation };
    const enrol = await t.app.inject({ method: 'POST', url: '/api/v1/second-factors', headers, payload: {} });
    const totp = URI.parse(enrol.json().data.otpauthUri) as TOTP;
    const confirmed = await t.app.inject({
      method: 'POST',
      url: '/api/v1/second-factors/confirmations',
      headers: bearer(other.accessToken),
      payload: { code: totp.generate({ timestamp: t.clock.now().getTime() }) },
    });
    expect(confirmed.statusCode).toBe(204);
    const late = await t.app.inject({
      method: 'POST',
      url: '/api/v1/step-ups/confirmations',
      headers: bearer(grant.accessToken),
      payload: { challengeId: start.json().data.challengeId, code },
    });
    expect(late.statusCode).toBe(422);
    expect(late.json().code).toBe('identity.step_up_unavailable');
  });

  it('requires a session, and a password identity has no linked subject to prove', async () => {
    const anonymous = await t.app.inject({
      method: 'POST',
      url: '/api/v1/step-ups/providers',
      payload: { provider: 'acme', idToken: 'a.b.c' },
    });
    expect(anonymous.statusCode).toBe(401);
    const person = await createPerson(t.ctx);
    const grant = await signIn(t.app, person);
    const res = await providerStepUp(t.app, grant.accessToken, await freshToken(t.app, sink, t.clock));
    expect(res.json()).toEqual(STEP_UP_REFUSED);
    const extra = await t.app.inject({
      method: 'POST',
      url: '/api/v1/step-ups/providers',
      headers: bearer(grant.accessToken),
      payload: { provider: 'acme', idToken: 'a.b.c', nonce: 'x' },
    });
    expect(extra.statusCode).toBe(400);
  });
});
