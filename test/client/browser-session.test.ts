import { setTimeout as delay } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import {
  type BrowserSessionEvent,
  BrowserSessionManager,
  type BrowserSessionManagerOptions,
} from '../../packages/client/src/index.js';
import { fakeJwt, json, problem } from './support.js';

/**
 * The browser-session routes in miniature, with the browser's cookie jar: the cookie rotates on
 * every renewal, a spent cookie value revokes the session, and only the newest access token of the
 * session is accepted. Every answer comes after a few milliseconds, so concurrent calls overlap.
 */
class FakeCookieService {
  generation = 0;
  revoked = false;
  replays = 0;
  /** The browser's cookie (the refresh token), as the jar holds it. */
  cookie: string | null = null;
  readonly bodies: unknown[] = [];
  readonly requests: { method: string; path: string; credentials: string }[] = [];
  private readonly spent = new Set<string>();
  private readonly expired = new Set<string>();
  serverTime = 946_684_800;

  accessToken(): string {
    return fakeJwt(this.serverTime, this.serverTime + 60, `a${this.generation}`);
  }

  /** A sign-in's grant (refresh token r0): what POST /sign-ins would answer. */
  signInGrant() {
    this.generation = 0;
    this.revoked = false;
    return {
      kind: 'session' as const,
      accessToken: 'unused',
      accessTokenExpiresAt: '2000-01-01T00:01:00.000Z',
      refreshToken: 'r0',
      sessionExpiresAt: '2000-02-01T00:00:00.000Z',
    };
  }

  expireAccess(): void {
    this.expired.add(this.accessToken());
  }

  count(path: string): number {
    return this.requests.filter((r) => r.path === path).length;
  }

  private rotate(presented: string | null): Response {
    if (this.revoked || presented !== `r${this.generation}`) {
      if (presented && this.spent.has(presented)) {
        this.replays++;
        this.revoked = true;
      }
      this.cookie = null;
      return problem(401, 'identity.renewal_refused');
    }
    this.spent.add(presented);
    this.generation++;
    this.cookie = `r${this.generation}`;
    return json(201, {
      data: {
        kind: 'session',
        accessToken: this.accessToken(),
        accessTokenExpiresAt: '2000-01-01T00:01:00.000Z',
        sessionExpiresAt: '2000-02-01T00:00:00.000Z',
      },
    });
  }

  readonly fetch = async (req: Request): Promise<Response> => {
    const path = new URL(req.url).pathname;
    this.requests.push({ method: req.method, path, credentials: req.credentials });
    // The cookie the request carries is the one in the jar when it leaves.
    const sent = this.cookie;
    await delay(5);
    if (path === '/api/v1/browser-session') {
      const body = (await req.json()) as { refreshToken: string };
      this.bodies.push(body);
      return this.rotate(body.refreshToken);
    }
    if (path === '/api/v1/browser-session/renewals') return this.rotate(sent);
    if (path === '/api/v1/browser-session/sign-outs') {
      if (sent) this.revoked = true;
      this.cookie = null;
      return new Response(null, { status: 204 });
    }
    const token = this.accessToken();
    const ok = req.headers.get('authorization') === `Bearer ${token}` && !this.expired.has(token);
    if (!ok || this.revoked) return problem(401, 'identity.session_required');
    if (path === '/api/v1/session/context') {
      return json(200, {
        data: { identityId: 'i', sessionId: 's', identifiers: [], methods: [], organizations: [] },
      });
    }
    return problem(404, 'route.not_found');
  };
}

const managers: BrowserSessionManager[] = [];
afterEach(() => {
  for (const m of managers.splice(0)) m.close();
});

function manager(service: FakeCookieService, options: Partial<BrowserSessionManagerOptions> = {}) {
  const m = new BrowserSessionManager({
    client: { baseUrl: 'http://service.test', fetch: service.fetch },
    key: `test-${Math.random()}`,
    ...options,
  });
  managers.push(m);
  return m;
}

describe('browser session manager (the hosted pages’ cookie)', () => {
  it('hands a sign-in over to the cookie and keeps only the access token', async () => {
    const service = new FakeCookieService();
    const m = manager(service);
    const events: BrowserSessionEvent[] = [];
    m.onChange((e) => events.push(e));
    await m.grantReceived(service.signInGrant());
    expect(service.bodies).toEqual([{ refreshToken: 'r0' }]);
    expect(service.cookie).toBe('r1');
    expect(await m.isSignedIn()).toBe(true);
    expect((await m.client.context()).identityId).toBe('i');
    expect(events).toEqual([{ status: 'signed-in', reason: 'sign-in' }]);
    // What the manager keeps is the access token alone.
    const kept = JSON.stringify((m as unknown as { held: unknown }).held);
    expect(kept).toContain(service.accessToken());
    expect(kept).not.toMatch(/"r\d"/);
    const browserRoutes = service.requests.filter((r) => r.path.startsWith('/api/v1/browser-session'));
    expect(browserRoutes.map((r) => r.credentials)).toEqual(browserRoutes.map(() => 'same-origin'));
  });

  it('on load, asks the service by renewing with the cookie', async () => {
    const service = new FakeCookieService();
    service.signInGrant();
    service.cookie = 'r0';
    const m = manager(service);
    expect(await m.isSignedIn()).toBe(true);
    expect(service.count('/api/v1/browser-session/renewals')).toBe(1);
    // Known now: no second renewal.
    expect(await m.isSignedIn()).toBe(true);
    expect(service.count('/api/v1/browser-session/renewals')).toBe(1);

    const none = new FakeCookieService();
    const signedOut = manager(none);
    const events: BrowserSessionEvent[] = [];
    signedOut.onChange((e) => events.push(e));
    expect(await signedOut.isSignedIn()).toBe(false);
    expect(await signedOut.isSignedIn()).toBe(false);
    expect(none.count('/api/v1/browser-session/renewals')).toBe(1);
    // A page that was never signed in tells nobody.
    expect(events).toEqual([]);
    await expect(signedOut.client.context()).rejects.toMatchObject({ code: 'client.signed_out' });
  });

  it('single flight: concurrent calls refused with an expired token share one cookie renewal', async () => {
    const service = new FakeCookieService();
    const m = manager(service);
    await m.grantReceived(service.signInGrant());
    service.expireAccess();
    const results = await Promise.all(Array.from({ length: 20 }, () => m.client.context()));
    expect(results.every((r) => r.identityId === 'i')).toBe(true);
    expect(service.count('/api/v1/browser-session/renewals')).toBe(1);
    expect(service.replays).toBe(0);
    expect(service.cookie).toBe('r2');
  });

  it('a refused renewal signs out here and in the other pages', async () => {
    const service = new FakeCookieService();
    const a = manager(service, { key: 'shared-refusal' });
    const b = manager(service, { key: 'shared-refusal' });
    await a.grantReceived(service.signInGrant());
    expect(await b.isSignedIn()).toBe(true);
    const heard: BrowserSessionEvent[] = [];
    b.onChange((e) => heard.push(e));
    service.revoked = true;
    service.expireAccess();
    const events: BrowserSessionEvent[] = [];
    a.onChange((e) => events.push(e));
    await expect(a.client.context()).rejects.toMatchObject({ code: 'identity.session_required' });
    expect(events).toEqual([{ status: 'signed-out', reason: 'renewal_refused' }]);
    await expect.poll(() => heard).toEqual([{ status: 'signed-out', reason: 'elsewhere' }]);
    expect(await b.isSignedIn()).toBe(false);
  });

  it('sign-out ends the cookie session, and another page hears it', async () => {
    const service = new FakeCookieService();
    const a = manager(service, { key: 'shared-sign-out' });
    const b = manager(service, { key: 'shared-sign-out' });
    await a.grantReceived(service.signInGrant());
    expect(await b.isSignedIn()).toBe(true);
    const heard: BrowserSessionEvent[] = [];
    b.onChange((e) => heard.push(e));
    await a.signOut();
    expect(service.cookie).toBeNull();
    expect(service.revoked).toBe(true);
    expect(await a.isSignedIn()).toBe(false);
    await expect.poll(() => heard).toEqual([{ status: 'signed-out', reason: 'elsewhere' }]);
    expect(await b.isSignedIn()).toBe(false);
  });

  it('another page’s sign-in is adopted through the cookie at the next call', async () => {
    const service = new FakeCookieService();
    const a = manager(service, { key: 'shared-sign-in' });
    const b = manager(service, { key: 'shared-sign-in' });
    expect(await b.isSignedIn()).toBe(false);
    const heard: BrowserSessionEvent[] = [];
    b.onChange((e) => heard.push(e));
    await a.grantReceived(service.signInGrant());
    await expect.poll(() => heard).toEqual([{ status: 'signed-in', reason: 'elsewhere' }]);
    expect(await b.isSignedIn()).toBe(true);
    expect((await b.client.context()).identityId).toBe('i');
    expect(service.replays).toBe(0);
  });
});
