import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminRequest } from '../helpers/admin.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { auditCount } from '../helpers/audit.js';
import { CHROME_LINUX, signInFrom } from '../helpers/devices.js';
import { bearer, createPerson, type Person } from '../helpers/identities.js';
import { codeIn } from '../helpers/outbox.js';
import { bodyOf, type ReceivedMail, type SmtpSink, startSmtpSink } from '../helpers/smtp.js';
import { createOrganization, member } from '../organizations/support.js';

/*
 * Issue 46, item 2: the identity keeps its language (identities.locale), set at sign-up from the
 * page's language or Accept-Language, changed by PATCH /account, shown in every view of the
 * identity; every message the service sends it, through a real SMTP sink, is in that language.
 */

const FIREFOX_WINDOWS = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:140.0) Gecko/20100101 Firefox/140.0';
const STRONG = 'lantern-orchard-velvet-73';

let sink: SmtpSink;
let t: TestApp;

beforeAll(async () => {
  sink = await startSmtpSink();
  t = await createTestApp({
    admin: true,
    env: {
      SMTP_URL: `smtp://127.0.0.1:${sink.port}`,
      SIGN_IN_NOTICES: 'on',
      SECURITY_NOTICES: 'on',
      SIGN_IN_CODES: 'email',
      BRAND_NAME: 'Acme',
      BRAND_SUPPORT_URL: 'https://help.acme.test/',
    },
  });
});
afterAll(async () => {
  await t?.close();
  await sink?.close();
});

/** A MIME header's encoded words (RFC 2047) decoded, as UTF-8. */
function decodeHeader(value: string): string {
  return value
    .replace(/\?=\s+=\?/g, '?==?')
    .replace(/=\?utf-8\?([QB])\?([^?]*)\?=/gi, (_, enc: string, text: string) =>
      enc.toUpperCase() === 'B' ? Buffer.from(text, 'base64').toString('utf8') : qp(text.replace(/_/g, ' ')),
    );
}

/** Quoted-printable undone as bytes, then read as UTF-8. */
function qp(text: string): string {
  const joined = text.replace(/=\r?\n/g, '');
  const bytes: number[] = [];
  for (let i = 0; i < joined.length; i++) {
    const hex = joined[i] === '=' ? /^[0-9A-F]{2}$/i.exec(joined.slice(i + 1, i + 3)) : null;
    if (hex) {
      bytes.push(Number.parseInt(hex[0], 16));
      i += 2;
    } else bytes.push(...Buffer.from(joined[i], 'utf8'));
  }
  return Buffer.from(bytes).toString('utf8');
}

interface Mail {
  subject: string;
  text: string;
}

function read(m: ReceivedMail): Mail {
  const headers = m.raw.slice(0, m.raw.indexOf('\r\n\r\n')).replace(/\r\n[ \t]+/g, ' ');
  const subject = decodeHeader(/^Subject: (.*)$/m.exec(headers)?.[1] ?? '');
  const body = bodyOf(m.raw);
  const base64 = /^Content-Transfer-Encoding: base64/im.test(headers);
  return { subject, text: base64 ? Buffer.from(body, 'base64').toString('utf8') : qp(body) };
}

const mailsTo = (to: string) => sink.received.filter((m) => m.to.includes(to)).map(read);

async function nthMail(to: string, count: number): Promise<Mail> {
  const until = Date.now() + 10_000;
  for (;;) {
    const mine = mailsTo(to);
    if (mine.length >= count) return mine[count - 1];
    if (Date.now() > until) throw new Error(`no mail #${count} for ${to}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const address = (label: string) => `${label}-${randomBytes(5).toString('hex')}@example.com`;

function signUp(identifier: string, headers: Record<string, string> = {}, locale?: string) {
  return t.app.inject({
    method: 'POST',
    url: '/api/v1/sign-ups',
    headers,
    payload: { identifierType: 'email', identifier, password: STRONG, ...(locale ? { locale } : {}) },
  });
}

async function localeOf(identityId: string): Promise<string> {
  const row = await t.ctx.database.db
    .selectFrom('identities')
    .select('locale')
    .where('id', '=', identityId)
    .executeTakeFirstOrThrow();
  return row.locale;
}

async function identityOf(email: string): Promise<string> {
  const row = await t.ctx.database.db
    .selectFrom('identifiers')
    .select('identity_id')
    .where('value', '=', email)
    .executeTakeFirstOrThrow();
  return row.identity_id;
}

/** A verified person whose language is French (as PATCH /account keeps it). */
async function frenchPerson(): Promise<Person & { token: string }> {
  const p = await createPerson(t.ctx, address('fr'));
  const grant = await signInFrom(t, p, CHROME_LINUX, '203.0.113.7');
  const res = await t.app.inject({
    method: 'PATCH',
    url: '/api/v1/account',
    headers: bearer(grant.accessToken),
    payload: { locale: 'fr' },
  });
  expect(res.statusCode, res.body).toBe(200);
  return { ...p, token: grant.accessToken };
}

describe('the language at sign-up', () => {
  it('follows Accept-Language when the request names none, and the code comes in it', async () => {
    const email = address('al');
    const res = await signUp(email, { 'accept-language': 'de-DE, fr-CA;q=0.9, en;q=0.5' });
    expect(res.statusCode, res.body).toBe(201);
    expect(await localeOf(await identityOf(email))).toBe('fr');
    const mail = await nthMail(email, 1);
    expect(mail.subject).toBe("Votre code d'inscription");
    expect(mail.text).toContain("Votre code de vérification d'inscription est");
    expect(mail.text).toContain('— Acme');
    expect(mail.text).toContain('Aide : https://help.acme.test/');
    expect(codeIn(mail.text)).toMatch(/^\d{6}$/);
  });

  it("takes the page's language over Accept-Language; English when neither names one spoken here", async () => {
    const page = address('page');
    expect((await signUp(page, { 'accept-language': 'fr' }, 'en')).statusCode).toBe(201);
    expect(await localeOf(await identityOf(page))).toBe('en');
    expect((await nthMail(page, 1)).subject).toBe('Your sign-up code');

    const none = address('none');
    expect((await signUp(none, { 'accept-language': 'de, *;q=0.1' })).statusCode).toBe(201);
    expect(await localeOf(await identityOf(none))).toBe('en');
  });

  it('refuses a language the service does not speak (400, nothing written)', async () => {
    const email = address('xx');
    const res = await signUp(email, {}, 'de');
    expect(res.statusCode).toBe(400);
    expect(res.json().code).toBe('validation.failed');
    expect(mailsTo(email)).toHaveLength(0);
  });
  // DEFAULT_LOCALE, when Accept-Language names nothing spoken here: src/shared/locales.test.ts.
});

describe('PATCH /account', () => {
  it('keeps the language, audits and emits a change once, and every view shows it', async () => {
    const p = await createPerson(t.ctx, address('pa'));
    const grant = await signInFrom(t, p, CHROME_LINUX, '203.0.113.7');
    const patch = (locale: unknown) =>
      t.app.inject({
        method: 'PATCH',
        url: '/api/v1/account',
        headers: bearer(grant.accessToken),
        payload: { locale },
      });
    const events = async () =>
      (
        await t.ctx.database.db
          .selectFrom('events')
          .select(['type', 'data'])
          .where('identity_id', '=', p.identityId)
          .where('type', '=', 'identity.updated')
          .execute()
      ).map((e) => e.data as { locale: string });

    const first = await patch('fr');
    expect(first.statusCode, first.body).toBe(200);
    expect(first.json().data.locale).toBe('fr');
    expect(await auditCount(t, 'identity.locale.changed', p.identityId)).toBe(1);
    expect(await events()).toEqual([expect.objectContaining({ locale: 'fr' })]);
    // The same language again writes nothing.
    expect((await patch('fr')).statusCode).toBe(200);
    expect(await auditCount(t, 'identity.locale.changed', p.identityId)).toBe(1);
    expect(await events()).toHaveLength(1);
    // Not a language of the pages, or another field: 400, unchanged.
    expect((await patch('de')).statusCode).toBe(400);
    const extra = await t.app.inject({
      method: 'PATCH',
      url: '/api/v1/account',
      headers: bearer(grant.accessToken),
      payload: { locale: 'en', name: 'x' },
    });
    expect(extra.statusCode).toBe(400);
    expect(await localeOf(p.identityId)).toBe('fr');
    // Without a session: 401.
    const anonymous = await t.app.inject({
      method: 'PATCH',
      url: '/api/v1/account',
      payload: { locale: 'en' },
    });
    expect(anonymous.statusCode).toBe(401);

    const get = (url: string) => t.app.inject({ method: 'GET', url, headers: bearer(grant.accessToken) });
    expect((await get('/api/v1/account')).json().data.locale).toBe('fr');
    expect((await get('/api/v1/account/export')).json().data.identity.locale).toBe('fr');
    const detail = await adminRequest(t.admin!, 'GET', `/identities/${p.identityId}`);
    expect(detail.json().data.locale).toBe('fr');
    const list = await adminRequest(
      t.admin!,
      'GET',
      `/identities?identifierType=email&identifier=${encodeURIComponent(p.email)}`,
    );
    expect(list.statusCode, list.body).toBe(200);
    const listed = (list.json().data as { id: string; locale: string }[]).find((i) => i.id === p.identityId);
    expect(listed?.locale).toBe('fr');
  });
});

describe('a French identity reads French', () => {
  it('its new-sign-in notice', async () => {
    const p = await frenchPerson();
    await signInFrom(t, p, FIREFOX_WINDOWS, '198.51.100.23');
    const mail = await nthMail(p.email, 1);
    expect(mail.subject).toBe('Nouvelle connexion à votre compte');
    expect(mail.text).toContain('Appareil : Firefox 140 sur Windows 10');
    expect(mail.text).toContain('Depuis : 198.51.100.23');
    expect(mail.text).toContain('mettez fin à cette session dans Appareils');
    expect(mail.text).toContain('— Acme');
    expect(mail.text).not.toContain('Someone signed in');
  });

  it('its sign-in code, recovery code and step-up code', async () => {
    const p = await frenchPerson();
    const before = mailsTo(p.email).length;
    const code = await t.app.inject({
      method: 'POST',
      url: '/api/v1/sign-ins/codes',
      payload: { identifierType: 'email', identifier: p.email },
    });
    expect(code.statusCode, code.body).toBe(201);
    const signInMail = await nthMail(p.email, before + 1);
    expect(signInMail.subject).toBe('Votre code de connexion');
    expect(signInMail.text).toContain('Votre code pour vous connecter est');
    expect(codeIn(signInMail.text)).toMatch(/^\d{6}$/);

    const recovery = await t.app.inject({
      method: 'POST',
      url: '/api/v1/password-recoveries',
      payload: { identifierType: 'email', identifier: p.email },
    });
    expect(recovery.statusCode, recovery.body).toBe(201);
    const recoveryMail = await nthMail(p.email, before + 2);
    expect(recoveryMail.subject).toBe('Votre code de récupération du mot de passe');
    expect(recoveryMail.text).toMatch(/Il expire dans \d+ minutes\./);

    const stepUp = await t.app.inject({
      method: 'POST',
      url: '/api/v1/step-ups',
      headers: bearer(p.token),
      payload: { channel: 'identifier' },
    });
    expect(stepUp.statusCode, stepUp.body).toBe(201);
    const stepUpMail = await nthMail(p.email, before + 3);
    expect(stepUpMail.subject).toBe('Votre code de confirmation');
    expect(stepUpMail.text).toContain('Votre code pour confirmer cette action sensible est');
  });

  it('its security notice', async () => {
    const p = await frenchPerson();
    const before = mailsTo(p.email).length;
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/v1/password-changes',
      headers: bearer(p.token),
      payload: { currentPassword: p.password, newPassword: STRONG },
    });
    expect(res.statusCode, res.body).toBe(204);
    await t.ctx.notices.idle();
    const mail = await nthMail(p.email, before + 1);
    expect(mail.subject).toBe('Une modification de sécurité sur votre compte');
    expect(mail.text).toContain('- Votre mot de passe a été modifié.');
  });

  it("an invitation: the invitee's own language, else the request's", async () => {
    const owner = await member(t);
    const org = await createOrganization(t, owner.token);
    const invite = (identifier: string, headers: Record<string, string>) =>
      t.app.inject({
        method: 'POST',
        url: `/api/v1/organizations/${org.id}/invitations`,
        headers: { ...bearer(owner.token), ...headers },
        payload: { identifierType: 'email', identifier, role: 'member' },
      });
    // A new address: the request's language.
    const stranger = address('inv');
    expect((await invite(stranger, { 'accept-language': 'fr-FR' })).statusCode).toBe(201);
    const toStranger = await nthMail(stranger, 1);
    expect(toStranger.subject).toMatch(/^Vous êtes invité à rejoindre /);
    expect(toStranger.text).toContain('avec le rôle member');
    // An identity's address: its own language, whatever the inviter's page speaks.
    const french = await frenchPerson();
    expect((await invite(french.email, { 'accept-language': 'en-GB' })).statusCode).toBe(201);
    const toFrench = mailsTo(french.email).at(-1);
    expect(toFrench?.subject).toMatch(/^Vous êtes invité à rejoindre /);
    // No language in the request: the inviter's own (English here).
    const third = address('inv3');
    expect((await invite(third, {})).statusCode).toBe(201);
    expect((await nthMail(third, 1)).subject).toMatch(/^You are invited to join /);
  });
});
