import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { b64, encryptAssertion, signElement, TestIdp, XMLENC } from './idp.js';
import {
  exchange,
  type Flow,
  good,
  handoffOf,
  ORIGIN,
  postAcs,
  REFUSED,
  type SsoSetup,
  setUp,
  startFlow,
} from './support.js';

// Issue 47, item 2: "encrypted assertions accepted when the connection has our decryption key".
// The IdP encrypts the (signed) assertion to the certificate the connection shows (test/sso/idp.ts,
// with node:crypto: RSA-OAEP whose own DigestMethod is SHA-1, as at most IdPs). Every refusal is the one 303 of test/sso/saml.test.ts, byte
// for byte, with no handoff and no session, and audited with the reason that proves which check.

let t: TestApp;
let idp: TestIdp;
let other: TestIdp;
let enc: SsoSetup;
let plain: SsoSetup;
let n = 0;

beforeAll(async () => {
  t = await createTestApp({ admin: true, env: { PUBLIC_ORIGIN: ORIGIN, SSO_CLOCK_SKEW_SECONDS: '60' } });
  idp = await TestIdp.create(t.clock.now());
  other = await TestIdp.create(t.clock.now(), 'other');
  enc = await setUp(t, idp, { wantEncrypted: true });
  plain = await setUp(t, idp);
}, 180_000);
afterAll(async () => {
  await t?.close();
});

const email = (s: SsoSetup) => `person${++n}@${s.domain}`;

async function count(table: 'sessions' | 'saml_flows'): Promise<number> {
  const r =
    table === 'sessions'
      ? await sql<{ n: string }>`SELECT count(*) AS n FROM sessions`.execute(t.ctx.database.db)
      : await sql<{
          n: string;
        }>`SELECT count(*) AS n FROM saml_flows WHERE handoff_hash IS NOT NULL`.execute(t.ctx.database.db);
  return Number(r.rows[0]?.n);
}

async function lastReason(connectionId: string): Promise<string | undefined> {
  const r = await sql<{ details: { reason?: string } | string }>`
    SELECT details FROM audit_records WHERE name = 'sso.assertion.refused' AND target = ${connectionId}
    ORDER BY seq DESC LIMIT 1`.execute(t.ctx.database.db);
  const details = r.rows[0]?.details;
  return typeof details === 'string' ? (JSON.parse(details) as { reason?: string }).reason : details?.reason;
}

async function expectRefused(s: SsoSetup, flow: Flow, xml: string, reason: string) {
  const sessions = await count('sessions');
  const handoffs = await count('saml_flows');
  const res = await postAcs(t, s.connectionId, b64(xml), flow.cookie);
  expect(res.statusCode).toBe(303);
  expect(res.headers.location).toBe(REFUSED);
  expect(res.headers['set-cookie']).toBeUndefined();
  expect(res.body).toBe('');
  expect(await count('saml_flows')).toBe(handoffs);
  expect(await count('sessions')).toBe(sessions);
  expect(await lastReason(s.connectionId)).toBe(reason);
}

describe('encrypted assertions', () => {
  it('the connection that wants them shows our encryption certificate (and the other does not)', () => {
    expect(enc.encryptionCertificate).toMatch(/^[A-Za-z0-9+/]+=*$/);
    expect(plain.encryptionCertificate).toBeNull();
  });

  for (const [label, data] of [
    ['AES-256-GCM', XMLENC.aes256gcm],
    ['AES-256-CBC', XMLENC.aes256cbc],
  ] as const)
    it(`a signed assertion encrypted to our certificate (${label}, RSA-OAEP): a session`, async () => {
      const flow = await startFlow(t, enc.connectionId);
      const xml = encryptAssertion(
        idp.xml(good(enc, flow, t, email(enc))),
        enc.encryptionCertificate as string,
        { data },
      );
      expect(xml).toContain('<saml:EncryptedAssertion>');
      expect(xml).not.toContain('<saml:Assertion');
      const res = await postAcs(t, enc.connectionId, b64(xml), flow.cookie);
      expect(res.statusCode).toBe(303);
      const code = handoffOf(res);
      expect(code, String(res.headers.location)).toBeTruthy();
      const grant = await exchange(t, code as string, flow.cookie);
      expect(grant.statusCode, grant.body).toBe(201);
      expect(grant.json().data.kind).toBe('session');
    });

  it('a signed Response around an encrypted unsigned assertion: a session (the signature covers it)', async () => {
    const flow = await startFlow(t, enc.connectionId);
    const unsigned = encryptAssertion(
      idp.xml({ ...good(enc, flow, t, email(enc)), sign: 'none' }),
      enc.encryptionCertificate as string,
    );
    const res = await postAcs(
      t,
      enc.connectionId,
      b64(signElement(unsigned, 'Response', idp.key)),
      flow.cookie,
    );
    expect(handoffOf(res), String(res.headers.location)).toBeTruthy();
  });

  it('encrypted to another key: refused', async () => {
    const flow = await startFlow(t, enc.connectionId);
    const xml = encryptAssertion(idp.xml(good(enc, flow, t, email(enc))), other.certificate);
    await expectRefused(enc, flow, xml, 'decryption');
  });

  it('encrypted, to a connection that holds no decryption key: refused', async () => {
    const flow = await startFlow(t, plain.connectionId);
    const xml = encryptAssertion(
      idp.xml(good(plain, flow, t, email(plain))),
      enc.encryptionCertificate as string,
    );
    await expectRefused(plain, flow, xml, 'encrypted, no decryption key');
  });

  it('encrypted but signed by nobody: refused (by the library)', async () => {
    const flow = await startFlow(t, enc.connectionId);
    const xml = encryptAssertion(
      idp.xml({ ...good(enc, flow, t, email(enc)), sign: 'none' }),
      enc.encryptionCertificate as string,
    );
    await expectRefused(enc, flow, xml, 'library');
  });

  it('encrypted, signed by a key the connection does not hold: refused', async () => {
    const flow = await startFlow(t, enc.connectionId);
    const xml = encryptAssertion(
      idp.xml({ ...good(enc, flow, t, email(enc)), key: other.key }),
      enc.encryptionCertificate as string,
    );
    await expectRefused(enc, flow, xml, 'library');
  });

  it('encrypted around an RSA-SHA1 signature (which node-saml alone accepts): refused', async () => {
    const flow = await startFlow(t, enc.connectionId);
    const xml = encryptAssertion(
      idp.xml({ ...good(enc, flow, t, email(enc)), algorithm: 'sha1' }),
      enc.encryptionCertificate as string,
    );
    await expectRefused(enc, flow, xml, 'encrypted signature algorithm');
  });

  it('the key encrypted with RSA 1.5 (a padding oracle): refused before decryption', async () => {
    const flow = await startFlow(t, enc.connectionId);
    const xml = encryptAssertion(
      idp.xml(good(enc, flow, t, email(enc))),
      enc.encryptionCertificate as string,
      { key: XMLENC.rsa15 },
    );
    await expectRefused(enc, flow, xml, 'encryption algorithm');
  });

  it('a plain signed assertion is still accepted by a connection that wants encryption', async () => {
    const flow = await startFlow(t, enc.connectionId);
    const res = await postAcs(t, enc.connectionId, idp.response(good(enc, flow, t, email(enc))), flow.cookie);
    expect(handoffOf(res), String(res.headers.location)).toBeTruthy();
  });
});
