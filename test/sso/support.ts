import { randomBytes } from 'node:crypto';
import { inflateRawSync } from 'node:zlib';
import type { LightMyRequestResponse } from 'fastify';
import { expect } from 'vitest';
import { ADMIN_KEY } from '../helpers/admin.js';
import type { TestApp } from '../helpers/app.js';
import { call, createOrganization, member, ORGS } from '../organizations/support.js';
import { parse, type ResponseOptions, type TestIdp } from './idp.js';

export const ORIGIN = 'https://id.example';
export const REFUSED = `${ORIGIN}/account/#/sign-in?error=refused`;
export const NOT_ALLOWED = `${ORIGIN}/account/#/sign-in?error=not_allowed`;
const SAME_ORIGIN = { origin: ORIGIN };

export function adminCall(
  t: TestApp,
  method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE',
  url: string,
  payload?: unknown,
) {
  return t.admin!.inject({
    method,
    url: `/admin/v1${url}`,
    headers: { authorization: `Bearer ${ADMIN_KEY}` },
    ...(payload !== undefined ? { payload: payload as object } : {}),
  });
}

export interface SsoSetup {
  orgId: string;
  ownerToken: string;
  domain: string;
  connectionId: string;
  acsUrl: string;
  entityId: string;
  /** Our encryption certificate (base64 DER) when the connection wants encrypted assertions. */
  encryptionCertificate: string | null;
}

/** An organization with a domain verified by an operator and an enabled SAML connection to `idp`. */
export async function setUp(t: TestApp, idp: TestIdp, saml: Record<string, unknown> = {}): Promise<SsoSetup> {
  const owner = await member(t);
  const org = await createOrganization(t, owner.token);
  const domain = `corp-${randomBytes(4).toString('hex')}.example`;
  const claimed = await call(t.app, 'POST', `${ORGS}/${org.id}/domains`, owner.token, { domain });
  expect(claimed.statusCode, claimed.body).toBe(201);
  const verified = await adminCall(
    t,
    'POST',
    `/organizations/${org.id}/domains/${claimed.json().data.id}/verifications`,
  );
  expect(verified.statusCode, verified.body).toBe(200);
  const created = await call(t.app, 'POST', `${ORGS}/${org.id}/connections`, owner.token, {
    type: 'saml',
    name: 'Corp IdP',
    enabled: true,
    saml: { metadataXml: idp.metadata(), ...saml },
  });
  expect(created.statusCode, created.body).toBe(201);
  const c = created.json().data;
  return {
    orgId: org.id,
    ownerToken: owner.token,
    domain,
    connectionId: c.id,
    acsUrl: c.saml.acsUrl,
    entityId: c.saml.entityId,
    encryptionCertificate: c.saml.encryptionCertificate ?? null,
  };
}

export interface Flow {
  requestId: string;
  cookie: string;
  redirectUrl: string;
}

/** Starts a flow as a browser on the hosted sign-in: the AuthnRequest's ID and the flow's cookie. */
export async function startFlow(t: TestApp, connectionId: string): Promise<Flow> {
  const res = await t.app.inject({
    method: 'POST',
    url: `/api/v1/sso/saml/${connectionId}/flows`,
    headers: SAME_ORIGIN,
    payload: { returnTo: '/account/#/sign-in' },
  });
  expect(res.statusCode, res.body).toBe(201);
  const redirectUrl = res.json().data.redirectUrl as string;
  const request = new URL(redirectUrl).searchParams.get('SAMLRequest') ?? '';
  const xml = inflateRawSync(Buffer.from(request, 'base64')).toString('utf8');
  const requestId = parse(xml).documentElement?.getAttribute('ID') ?? '';
  const setCookie = String(res.headers['set-cookie']);
  return { requestId, cookie: setCookie.split(';')[0] as string, redirectUrl };
}

export function postAcs(t: TestApp, connectionId: string, samlResponse: string, cookie?: string) {
  return t.app.inject({
    method: 'POST',
    url: `/api/v1/sso/saml/${connectionId}/acs`,
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      ...(cookie ? { cookie } : {}),
    },
    payload: new URLSearchParams({ SAMLResponse: samlResponse, RelayState: '' }).toString(),
  });
}

export function handoffOf(res: LightMyRequestResponse): string | null {
  const location = String(res.headers.location);
  return new URLSearchParams(location.split('?')[1] ?? '').get('handoff');
}

export function exchange(t: TestApp, code: string, cookie?: string) {
  return t.app.inject({
    method: 'POST',
    url: '/api/v1/sso-handoffs',
    headers: { ...SAME_ORIGIN, ...(cookie ? { cookie } : {}) },
    payload: { code },
  });
}

export function preview(t: TestApp, code: string, cookie?: string) {
  return t.app.inject({
    method: 'POST',
    url: '/api/v1/sso-handoffs/previews',
    headers: { ...SAME_ORIGIN, ...(cookie ? { cookie } : {}) },
    payload: { code },
  });
}

/** Options of a good response for the flow. */
export function good(
  s: SsoSetup,
  flow: Pick<Flow, 'requestId'> | null,
  t: TestApp,
  nameId: string,
): ResponseOptions {
  return {
    acsUrl: s.acsUrl,
    audience: s.entityId,
    inResponseTo: flow ? flow.requestId : null,
    now: t.clock.now(),
    nameId,
  };
}
