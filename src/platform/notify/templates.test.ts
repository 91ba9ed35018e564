import { describe, expect, it } from 'vitest';
import { LOCALES, type Locale } from '../../shared/locales.js';
import {
  changesEmail,
  changesSms,
  codeMessage,
  deletionEmail,
  deletionSms,
  existingAccountMessage,
  invitationMessage,
  MESSAGE_KINDS,
  type Message,
  type MessageBrand,
  type MessageKind,
  type NoticeKind,
  signInEmail,
} from './templates.js';

const BRAND: MessageBrand = { name: 'Acme', named: true, supportUrl: 'https://help.acme.test/' };
const UNNAMED: MessageBrand = { name: 'Your account', named: false };
const at = new Date('2026-03-01T12:34:56Z');
const ALL_CHANGES: NoticeKind[] = [
  'password_changed',
  'password_recovered',
  'password_removed',
  'authenticator_added',
  'authenticator_removed',
  'passkey_added',
  'passkey_removed',
  'recovery_codes_issued',
  'email_added',
  'phone_added',
  'identifier_removed',
  'provider_linked',
  'provider_unlinked',
];
const change = (kind: string) => ({
  kind,
  occurredAt: at,
  device: 'Firefox 140 on Windows 10',
  ipAddress: '192.0.2.1',
});
const TOKEN = 'tok_abcdefghijklmnop';

/** Every kind of message, rendered in one language, with one brand. */
function render(kind: MessageKind, locale: Locale, brand: MessageBrand): Message {
  switch (kind) {
    case 'code.sign_up':
    case 'code.sign_in_method':
    case 'code.password_recovery':
    case 'code.step_up':
    case 'code.sign_in':
      return codeMessage(locale, brand, kind.slice('code.'.length) as never, 'K7Q2XZ', 10);
    case 'invitation':
      return invitationMessage(locale, brand, {
        organization: 'Tinkers',
        role: 'admin',
        link: `https://id.example/account/#/invitations/${TOKEN}`,
        token: TOKEN,
        expiresInDays: 7,
      });
    case 'notice.changes.email':
      return changesEmail(locale, brand, [change('password_changed')]);
    case 'notice.changes.sms':
      return { subject: '', text: changesSms(locale, brand, [change('password_changed')]) };
    case 'notice.sign_in':
      return signInEmail(locale, brand, [change('new_sign_in')]);
    case 'notice.sign_up_existing':
      return existingAccountMessage(locale, brand);
    case 'notice.account_deleted.email':
      return deletionEmail(locale, brand, {
        at: new Date('2026-03-01T12:00:00Z'),
        device: 'Firefox on Linux',
        ipAddress: '203.0.113.9',
      });
    case 'notice.account_deleted.sms':
      return { subject: '', text: deletionSms(locale, brand) };
  }
}

describe('every message kind in every language', () => {
  const table = MESSAGE_KINDS.flatMap((kind) => LOCALES.map((locale) => [kind, locale] as const));

  it.each(table)('%s in %s is written, signed with the product and its help link', (kind, locale) => {
    const m = render(kind, locale, BRAND);
    expect(m.text.length).toBeGreaterThan(20);
    expect(m.text).toContain('Acme');
    expect(m.text).toContain('https://help.acme.test/');
    if (!kind.endsWith('.sms')) expect(m.subject.length).toBeGreaterThan(0);
  });

  it.each(MESSAGE_KINDS)('%s: the French text is not the English one, nor its subject', (kind) => {
    for (const brand of [BRAND, UNNAMED]) {
      const en = render(kind, 'en', brand);
      const fr = render(kind, 'fr', brand);
      expect(fr.text).not.toBe(en.text);
      if (!kind.endsWith('.sms')) expect(fr.subject).not.toBe(en.subject);
      // The French text speaks French: none of the English sentences is left in it.
      const englishLines = en.text
        .split('\n')
        .filter((l) => /[a-z]{4,} [a-z]{3,}/.test(l) && !l.includes('Acme') && !l.includes('http'));
      for (const line of englishLines) expect(fr.text).not.toContain(line);
    }
  });

  it('an unnamed service says "Your account" in the message\'s language, and no help link unless configured', () => {
    const en = render('code.sign_in', 'en', UNNAMED).text;
    const fr = render('code.sign_in', 'fr', UNNAMED).text;
    expect(en).toContain('— Your account');
    expect(fr).toContain('— Votre compte');
    expect(en).not.toMatch(/https?:/);
    expect(fr).not.toMatch(/https?:/);
  });

  it.each(LOCALES)('a code is its own token, with its lifetime, in %s', (locale) => {
    for (const purpose of ['sign_up', 'sign_in_method', 'password_recovery', 'step_up', 'sign_in'] as const) {
      const { subject, text } = codeMessage(locale, BRAND, purpose, 'K7Q2XZ', 10);
      expect(subject).not.toContain('K7Q2XZ');
      expect(text.split(/\s+/).filter((t) => t === 'K7Q2XZ')).toHaveLength(1);
      expect(text).toContain('10 minutes');
    }
    expect(codeMessage(locale, BRAND, 'step_up', '123456', 1).text).toContain('1 minute.');
  });

  it.each(LOCALES)("a sign-in code's link is a line of its own after the code, in %s", (locale) => {
    const link = 'https://id.example/account/#/sign-in/link/0b6c/abc_DEF-123';
    const { text } = codeMessage(locale, BRAND, 'sign_in', 'K7Q2XZ', 10, link);
    const lines = text.split('\n');
    expect(lines).toContain(link);
    expect(lines.indexOf(link)).toBeGreaterThan(lines.indexOf('K7Q2XZ'));
    expect(lines[lines.indexOf(link) - 1]).toBe(
      locale === 'fr'
        ? 'Ou ouvrez ce lien, puis appuyez sur Continuer :'
        : 'Or open this link, then press Continue:',
    );
    expect(() => codeMessage(locale, BRAND, 'password_recovery', 'K7Q2XZ', 10, link)).toThrow(TypeError);
    expect(() => codeMessage(locale, BRAND, 'sign_in', 'K7Q2XZ', 10, `${link} x`)).toThrow(TypeError);
  });

  it('every change has its own French line and short form', () => {
    const en = changesEmail('en', UNNAMED, ALL_CHANGES.map(change)).text;
    const fr = changesEmail('fr', UNNAMED, ALL_CHANGES.map(change)).text;
    const lines = (text: string) => text.split('\n').filter((l) => l.startsWith('- '));
    expect(new Set(lines(fr)).size).toBe(ALL_CHANGES.length);
    for (const line of lines(en)) expect(fr).not.toContain(line);
    for (const kind of ALL_CHANGES) {
      expect(changesSms('fr', UNNAMED, [change(kind)])).not.toBe(changesSms('en', UNNAMED, [change(kind)]));
    }
    // The device's words are French too; its names stay names.
    expect(fr).toContain('Appareil : Firefox 140 sur Windows 10');
  });

  it('the short text messages fit one SMS in either language', () => {
    for (const locale of LOCALES) {
      const line = changesSms(locale, UNNAMED, [change('password_changed'), change('passkey_removed')]);
      expect(line).not.toContain('\n');
      expect(line.length).toBeLessThanOrEqual(160);
    }
  });
});
