import { afterEach, describe, expect, it } from 'vitest';
import {
  type GrantStore,
  type IdentityError,
  memoryStore,
  type SessionEvent,
  SessionManager,
  type SessionManagerOptions,
} from '../../packages/client/src/index.js';
import { FakeService, problem } from './support.js';

const managers: SessionManager[] = [];
afterEach(() => {
  for (const m of managers.splice(0)) m.close();
});

function manager(service: FakeService, options: Partial<SessionManagerOptions> = {}) {
  const m = new SessionManager({
    client: { baseUrl: 'http://service.test', fetch: service.fetch },
    ...options,
  });
  managers.push(m);
  return m;
}

async function signedIn(service: FakeService, options: Partial<SessionManagerOptions> = {}) {
  const m = manager(service, options);
  await m.grantReceived(service.grant());
  return m;
}

const RENEWALS = '/api/v1/sign-ins/renewals';

/** Two views of one stored value; a write through one reaches the other `lagMs` later. */
function laggingViews(key: string, lagMs: number): [GrantStore, GrantStore] {
  const values: [string | null, string | null] = [null, null];
  const view = (self: 0 | 1): GrantStore => ({
    key,
    load: () => (values[self] === null ? null : JSON.parse(values[self] as string)),
    save: (value) => {
      const text = JSON.stringify(value);
      values[self] = text;
      setTimeout(() => {
        values[self === 0 ? 1 : 0] = text;
      }, lagMs);
    },
    clear: () => {
      values[self] = null;
      setTimeout(() => {
        values[self === 0 ? 1 : 0] = null;
      }, lagMs);
    },
  });
  return [view(0), view(1)];
}

describe('session manager', () => {
  it('single flight: N concurrent calls refused with an expired token share exactly one renewal', async () => {
    const service = new FakeService();
    const m = await signedIn(service);
    const events: SessionEvent[] = [];
    m.onChange((e) => events.push(e));
    service.expireAccess();
    const results = await Promise.all(Array.from({ length: 25 }, () => m.client.context()));
    expect(results.every((r) => r.identityId === 'i')).toBe(true);
    expect(service.count('POST', RENEWALS)).toBe(1);
    expect(service.count('GET', '/api/v1/session/context')).toBe(50);
    expect(service.replays).toBe(0);
    expect(events.map((e) => `${e.status}:${'reason' in e ? e.reason : ''}`)).toEqual(['signed-in:renewal']);
    expect((await m.grant())?.refreshToken).toBe('r2');
  });

  it('renews on a 401 once: a second refusal with the renewed token is thrown', async () => {
    const service = new FakeService();
    const m = await signedIn(service);
    service.overrides.set('GET /api/v1/session/context', () => problem(401, 'identity.session_required'));
    await expect(m.client.context()).rejects.toMatchObject({
      code: 'identity.session_required',
      status: 401,
    });
    expect(service.count('POST', RENEWALS)).toBe(1);
    expect(service.count('GET', '/api/v1/session/context')).toBe(2);
    expect(await m.isSignedIn()).toBe(true);
  });

  it('renews before the access token expires, on the local clock, whatever the service clock says', async () => {
    // The service's clock is in the year 2000; the device's is 2026: only exp - iat (60 s) is used.
    const service = new FakeService(60, 946_684_800);
    let now = Date.parse('2026-03-01T12:00:00Z');
    const m = await signedIn(service, { now: () => now });
    now += 40_000;
    await m.client.context();
    expect(service.count('POST', RENEWALS)).toBe(0);
    // Within the margin (a quarter of 60 s) before the local expiry: renewed before the call.
    now += 6_000;
    await m.client.context();
    expect(service.count('POST', RENEWALS)).toBe(1);
    expect(service.count('GET', '/api/v1/session/context')).toBe(2);
    // Proactive renewals are single-flight too.
    now += 50_000;
    await Promise.all([m.client.context(), m.client.context(), m.accessToken()]);
    expect(service.count('POST', RENEWALS)).toBe(2);
    expect(service.replays).toBe(0);
  });

  it('a refused renewal clears the grant and signals signed-out', async () => {
    const service = new FakeService();
    const m = await signedIn(service);
    const events: SessionEvent[] = [];
    m.onChange((e) => events.push(e));
    service.revoked = true;
    const error = (await m.client.context().catch((e: unknown) => e)) as IdentityError;
    expect(error.code).toBe('identity.session_required');
    expect(events).toEqual([{ status: 'signed-out', reason: 'renewal_refused' }]);
    expect(await m.grant()).toBeNull();
    await expect(m.client.context()).rejects.toMatchObject({ code: 'client.signed_out' });
    expect(service.count('POST', RENEWALS)).toBe(1);
  });

  it('sign-out forgets the grant and tells the listeners', async () => {
    const service = new FakeService();
    const m = await signedIn(service);
    const events: SessionEvent[] = [];
    m.onChange((e) => events.push(e));
    await m.client.signOut();
    expect(await m.isSignedIn()).toBe(false);
    expect(events).toEqual([{ status: 'signed-out', reason: 'signed_out' }]);
  });

  it('two managers on one store with the BroadcastChannel lock: one renews, the other adopts', async () => {
    const service = new FakeService();
    const store = memoryStore('two-managers');
    const a = await signedIn(service, { store, lockMode: 'broadcast-channel' });
    const b = manager(service, { store, lockMode: 'broadcast-channel' });
    for (let round = 0; round < 5; round++) {
      service.expireAccess();
      await Promise.all([a.client.context(), b.client.context(), a.client.context(), b.client.context()]);
    }
    expect(service.renewals).toBe(5);
    expect(service.replays).toBe(0);
  });

  it('a page whose copy of the store lags waits for the write instead of replaying the spent token', async () => {
    // Two views of one store where a write reaches the other view 120 ms later, as localStorage
    // writes reach another renderer process: the lock alone would hand over a spent token.
    const service = new FakeService();
    const [viewA, viewB] = laggingViews('lagging', 120);
    const a = await signedIn(service, { store: viewA, lockMode: 'broadcast-channel' });
    const b = manager(service, { store: viewB, lockMode: 'broadcast-channel' });
    await new Promise((r) => setTimeout(r, 150));
    for (let round = 0; round < 3; round++) {
      service.expireAccess();
      await Promise.all([a.client.context(), b.client.context()]);
    }
    expect(service.replays).toBe(0);
    expect(service.renewals).toBe(3);
  });

  it('without a shared lock the same race replays a refresh token (what the lock prevents)', async () => {
    const service = new FakeService();
    const store = memoryStore('no-shared-lock');
    const a = await signedIn(service, { store, lockMode: 'page' });
    const b = manager(service, { store, lockMode: 'page' });
    service.expireAccess();
    await Promise.allSettled([a.client.context(), b.client.context()]);
    expect(service.replays).toBe(1);
  });
});
