import { expect } from 'vitest';
import type { TestApp } from './app.js';
import type { Grant, Person } from './identities.js';

/** User agents of real browsers, as the session list and the notices parse them. */
export const CHROME_LINUX =
  'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36';
export const SAFARI_IPHONE =
  'Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1';

/** A password sign-in from a given browser and address; waits for any notice it started. */
export async function signInFrom(
  t: TestApp,
  p: Person,
  userAgent: string,
  remoteAddress: string,
): Promise<Grant> {
  const res = await t.app.inject({
    method: 'POST',
    url: '/api/v1/sign-ins',
    payload: { identifierType: 'email', identifier: p.email, password: p.password },
    headers: { 'user-agent': userAgent },
    remoteAddress,
  });
  expect(res.statusCode, res.body).toBe(201);
  await t.ctx.notices.idle();
  return res.json().data as Grant;
}
