import { describe, expect, it } from 'vitest';
import { IdentityClient, IdentityError, parseRetryAfter } from '../../packages/client/src/index.js';
import { FakeService, json, problem } from './support.js';

/** A client over a fake service whose answers the test scripts, in order. */
function scripted(...answers: (() => Response | Promise<Response>)[]) {
  const calls: { method: string; path: string; at: number; headers: Headers }[] = [];
  const client = new IdentityClient({
    baseUrl: 'http://service.test/',
    fetch: async (req) => {
      calls.push({
        method: req.method,
        path: new URL(req.url).pathname,
        at: Date.now(),
        headers: req.headers,
      });
      const next = answers[Math.min(calls.length - 1, answers.length - 1)];
      return next();
    },
    retry: { baseDelayMs: 1 },
  });
  return { client, calls };
}

const CONTEXT = { identityId: 'i', sessionId: 's', identifiers: [], methods: [], organizations: [] };
const signUpBody = {
  identifierType: 'email' as const,
  identifier: 'ada@example.com',
  password: 'correct horse battery',
};

describe('errors', () => {
  it('a refusal is one IdentityError carrying the Problem Details, Retry-After and the request id', async () => {
    const body = {
      type: '/problems/validation.failed',
      title: 'Validation failed',
      status: 400,
      detail: 'The request is not valid.',
      code: 'validation.failed',
      retryable: false,
      errors: [{ location: 'body', field: 'password', code: 'too_short', message: 'too short' }],
    };
    const { client } = scripted(
      () =>
        new Response(JSON.stringify(body), {
          status: 400,
          headers: { 'content-type': 'application/problem+json', 'x-request-id': 'abc', 'retry-after': '7' },
        }),
    );
    const error = await client.signUp(signUpBody).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(IdentityError);
    expect(error).toMatchObject({
      name: 'IdentityError',
      code: 'validation.failed',
      status: 400,
      title: 'Validation failed',
      detail: 'The request is not valid.',
      retryable: false,
      errors: body.errors,
      retryAfter: 7,
      requestId: 'abc',
    });
    expect((error as IdentityError).toProblem()).toEqual(body);
  });

  it('an answer without Problem Details and a failed connection are IdentityErrors too', async () => {
    const gateway = scripted(() => new Response('<html>bad gateway</html>', { status: 502 }));
    const signUp = await gateway.client.signUp(signUpBody).catch((e: unknown) => e);
    expect(signUp).toMatchObject({ code: 'client.unexpected_response', status: 502, retryable: true });

    const down = scripted(() => Promise.reject(new TypeError('fetch failed')));
    const error = await down.client.signUp(signUpBody).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(IdentityError);
    expect(error).toMatchObject({ code: 'client.network_error', status: 0, retryable: true });
    expect((error as Error).cause).toBeInstanceOf(TypeError);
  });

  it('an authenticated method with no session and no token fails before any request', async () => {
    const { client, calls } = scripted(() => json(200, { data: CONTEXT }));
    await expect(client.context()).rejects.toMatchObject({ code: 'client.signed_out' });
    expect(calls).toHaveLength(0);
  });

  it('parses Retry-After as seconds or as an HTTP date', () => {
    expect(parseRetryAfter('12')).toBe(12);
    expect(parseRetryAfter(new Date(10_000).toUTCString(), 4_000)).toBe(6);
    expect(parseRetryAfter('soon')).toBeUndefined();
    expect(parseRetryAfter(null)).toBeUndefined();
  });
});

describe('retries', () => {
  it('a read is repeated after a retryable refusal, once Retry-After has passed', async () => {
    const { client, calls } = scripted(
      () => problem(503, 'service.unavailable', true, { 'retry-after': '1' }),
      () => json(200, { data: CONTEXT }),
    );
    expect(await client.context({ accessToken: 'a' })).toEqual(CONTEXT);
    expect(calls).toHaveLength(2);
    expect(calls[1].at - calls[0].at).toBeGreaterThanOrEqual(990);
  });

  it('a Retry-After longer than the bound is not waited for: the error carries it', async () => {
    const { client, calls } = scripted(() =>
      problem(429, 'rate_limit.exceeded', true, { 'retry-after': '120' }),
    );
    await expect(client.context({ accessToken: 'a' })).rejects.toMatchObject({
      code: 'rate_limit.exceeded',
      retryAfter: 120,
    });
    expect(calls).toHaveLength(1);
  });

  it('a read gives up after the configured repeats, and a refusal that is not retryable is never repeated', async () => {
    const flaky = scripted(() => problem(503, 'service.unavailable', true));
    await expect(flaky.client.context({ accessToken: 'a' })).rejects.toMatchObject({
      code: 'service.unavailable',
    });
    expect(flaky.calls).toHaveLength(3);

    const refused = scripted(() => problem(400, 'collection.cursor_invalid'));
    await expect(refused.client.history({ after: 'x' }, { accessToken: 'a' })).rejects.toMatchObject({
      code: 'collection.cursor_invalid',
    });
    expect(refused.calls).toHaveLength(1);
  });

  it('a write that is not idempotent is attempted once, even when the refusal says retryable', async () => {
    for (const send of [
      (c: IdentityClient) => c.signUp(signUpBody),
      (c: IdentityClient) =>
        c.signIn({ identifierType: 'email', identifier: 'a@example.com', password: 'x' }),
      (c: IdentityClient) => c.renew('r1'),
      (c: IdentityClient) => c.issueRecoveryCodes('elevation', { accessToken: 'a' }),
    ]) {
      const { client, calls } = scripted(() =>
        problem(503, 'service.unavailable', true, { 'retry-after': '0' }),
      );
      await expect(send(client)).rejects.toMatchObject({ code: 'service.unavailable', retryable: true });
      expect(calls).toHaveLength(1);
    }
    const down = scripted(() => Promise.reject(new TypeError('fetch failed')));
    await expect(down.client.renew('r1')).rejects.toMatchObject({ code: 'client.network_error' });
    expect(down.calls).toHaveLength(1);
  });

  it('an idempotent write (sign-out) is repeated after a retryable refusal', async () => {
    const { client, calls } = scripted(
      () => problem(503, 'service.unavailable', true, { 'retry-after': '0' }),
      () => new Response(null, { status: 204 }),
    );
    await client.signOut({ accessToken: 'a' });
    expect(calls.map((c) => c.path)).toEqual(['/api/v1/sign-outs', '/api/v1/sign-outs']);
  });

  it('sends the bearer token and the elevation token', async () => {
    const { client, calls } = scripted(() => new Response(null, { status: 204 }));
    await client.removeSecondFactor('elev-1', '00000000-0000-4000-8000-000000000000', {
      accessToken: 'acc-1',
    });
    expect(calls[0].path).toBe('/api/v1/second-factors/00000000-0000-4000-8000-000000000000/removals');
    expect(calls[0].headers.get('authorization')).toBe('Bearer acc-1');
    expect(calls[0].headers.get('x-elevation-token')).toBe('elev-1');
  });

  it('list methods take {limit, after} and answer {items, pageInfo}', async () => {
    const service = new FakeService();
    let query = '';
    service.overrides.set('GET /api/v1/second-factors', (req) => {
      query = new URL(req.url).search;
      return json(200, { data: [{ id: '1' }], meta: { pageInfo: { hasNextPage: true, nextCursor: 'c2' } } });
    });
    const client = new IdentityClient({ baseUrl: 'http://service.test', fetch: service.fetch });
    const page = await client.listSecondFactors({ limit: 1, after: 'c1' }, { accessToken: 'a' });
    expect(query).toBe('?limit=1&after=c1');
    expect(page).toEqual({ items: [{ id: '1' }], pageInfo: { hasNextPage: true, nextCursor: 'c2' } });
  });
});
