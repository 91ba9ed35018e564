import { setTimeout as delay } from 'node:timers/promises';

/** An unsigned JWT with the times the session manager reads (the client never verifies). */
export function fakeJwt(iat: number, exp: number, jti: string): string {
  const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
  return `${part({ alg: 'EdDSA', typ: 'JWT' })}.${part({ iat, exp, jti })}.c2ln`;
}

export function problem(
  status: number,
  code: string,
  retryable = false,
  headers: Record<string, string> = {},
) {
  return new Response(
    JSON.stringify({
      type: `/problems/${code}`,
      title: code,
      status,
      detail: `detail of ${code}`,
      code,
      retryable,
    }),
    { status, headers: { 'content-type': 'application/problem+json', 'x-request-id': 'req-1', ...headers } },
  );
}

export function json(status: number, body: unknown): Response {
  return new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });
}

/**
 * The service's renewal rules in miniature: one session whose refresh token rotates, a replayed
 * refresh token revokes it, and only the newest access token is accepted (so every older one is
 * "expired"). Every answer comes after a few milliseconds, so concurrent calls really overlap.
 */
export class FakeService {
  generation = 1;
  renewals = 0;
  replays = 0;
  revoked = false;
  readonly requests: { method: string; path: string; at: number }[] = [];
  /** Answers overriding the rules, by "METHOD path". */
  readonly overrides = new Map<string, (req: Request) => Response | Promise<Response>>();
  private readonly spent = new Set<string>();
  private readonly expired = new Set<string>();
  /** Token lifetime in seconds and the service's clock, far from the test machine's on purpose. */
  constructor(
    readonly ttl = 60,
    public serverTime = 946_684_800,
  ) {}

  accessToken(gen = this.generation): string {
    return fakeJwt(this.serverTime, this.serverTime + this.ttl, `a${gen}`);
  }

  refreshToken(gen = this.generation): string {
    return `r${gen}`;
  }

  grant() {
    return {
      kind: 'session' as const,
      accessToken: this.accessToken(),
      accessTokenExpiresAt: new Date((this.serverTime + this.ttl) * 1000).toISOString(),
      refreshToken: this.refreshToken(),
      sessionExpiresAt: '2000-02-01T00:00:00.000Z',
    };
  }

  /** The current access token stops being accepted (its lifetime passed at the service). */
  expireAccess(): void {
    this.expired.add(this.accessToken());
  }

  count(method: string, path: string): number {
    return this.requests.filter((r) => r.method === method && r.path === path).length;
  }

  readonly fetch = async (req: Request): Promise<Response> => {
    const path = new URL(req.url).pathname;
    this.requests.push({ method: req.method, path, at: Date.now() });
    await delay(5);
    const override = this.overrides.get(`${req.method} ${path}`);
    if (override) return override(req);
    if (req.method === 'POST' && path === '/api/v1/sign-ins/renewals') {
      const { refreshToken } = (await req.json()) as { refreshToken: string };
      if (this.revoked) return problem(401, 'identity.renewal_refused');
      if (refreshToken !== this.refreshToken()) {
        if (this.spent.has(refreshToken)) {
          this.replays++;
          this.revoked = true;
        }
        return problem(401, 'identity.renewal_refused');
      }
      this.spent.add(refreshToken);
      this.generation++;
      this.renewals++;
      return json(201, { data: this.grant() });
    }
    const token = this.accessToken();
    const authorised =
      req.headers.get('authorization') === `Bearer ${token}` && !this.expired.has(token) && !this.revoked;
    if (!authorised) return problem(401, 'identity.session_required');
    if (req.method === 'GET' && path === '/api/v1/session/context') {
      return json(200, {
        data: { identityId: 'i', sessionId: 's', identifiers: [], methods: [], organizations: [] },
      });
    }
    if (req.method === 'POST' && path === '/api/v1/sign-outs') {
      this.revoked = true;
      return new Response(null, { status: 204 });
    }
    return problem(404, 'route.not_found');
  };
}
