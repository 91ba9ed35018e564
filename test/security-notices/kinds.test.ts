import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { noticeFor } from '../../src/features/security-notices/kinds.js';
import type { AuditEvent } from '../../src/platform/audit/audit.js';
import {
  changesEmail,
  changesSms,
  type NoticeLine,
  signInEmail,
} from '../../src/platform/notify/templates.js';

// The English messages as an unbranded service sends them (test/platform/message-templates.test.ts
// walks every kind in every language).
const UNBRANDED = { name: 'Your account', named: false };
const emailText = (batch: NoticeLine[]) => changesEmail('en', UNBRANDED, batch);
const signInText = (batch: NoticeLine[]) => signInEmail('en', UNBRANDED, batch);
const smsText = (batch: NoticeLine[]) => changesSms('en', UNBRANDED, batch);

const ME = '0b6f4c2e-6a0e-4d8e-9d6b-0c7f3f1d2a11';
const own = (name: string, details?: AuditEvent['details']): AuditEvent => ({
  name,
  actor: ME,
  target: ME,
  outcome: 'success',
  details,
});

/** Every audit event told to the owner, with the kind it is told as. */
const TOLD: Array<[AuditEvent, string]> = [
  [own('identity.password.changed', { sessionsEnded: 1 }), 'password_changed'],
  [own('identity.password.recovered', { identifierType: 'email', sessionsEnded: 0 }), 'password_recovered'],
  [{ ...own('identity.second_factor.verified'), target: 'factor-id' }, 'authenticator_added'],
  [{ ...own('identity.second_factor.removed'), target: 'factor-id' }, 'authenticator_removed'],
  [own('identity.recovery_codes.issued', { count: 10 }), 'recovery_codes_issued'],
  [own('identity.sign_in_method.verified', { kind: 'passkey', methodId: 'x' }), 'passkey_added'],
  [
    own('identity.sign_in_method.verified', { kind: 'provider', provider: 'google', methodId: 'x' }),
    'provider_linked',
  ],
  [own('identity.sign_in_method.verified', { kind: 'email', methodId: 'x' }), 'email_added'],
  [own('identity.sign_in_method.verified', { kind: 'phone', methodId: 'x' }), 'phone_added'],
  [own('identity.sign_in_method.removed', { kind: 'password', methodId: 'x' }), 'password_removed'],
  [own('identity.sign_in_method.removed', { kind: 'passkey', methodId: 'x' }), 'passkey_removed'],
  [own('identity.sign_in_method.removed', { kind: 'provider', methodId: 'x' }), 'provider_unlinked'],
  [own('identity.sign_in_method.removed', { kind: 'identifier', methodId: 'x' }), 'identifier_removed'],
];

function sources(dir: string): string {
  return readdirSync(dir)
    .map((name) => join(dir, name))
    .map((path) =>
      statSync(path).isDirectory() ? sources(path) : path.endsWith('.ts') ? readFileSync(path, 'utf8') : '',
    )
    .join('\n');
}

describe('which audit events are told to the owner', () => {
  it('every change an attacker would make, under the name the features record it by', () => {
    for (const [event, kind] of TOLD) expect(noticeFor(event)?.kind, event.name).toBe(kind);
    // A renamed event would silently stop its notice: each name is still appended by a feature.
    const features = sources(new URL('../../src/features', import.meta.url).pathname);
    for (const name of new Set(TOLD.map(([e]) => e.name))) expect(features, name).toContain(`'${name}'`);
  });

  it('the removed identifier is named, so its address is told too', () => {
    expect(
      noticeFor(own('identity.sign_in_method.removed', { kind: 'identifier', methodId: 'id-1' })),
    ).toEqual({
      identityId: ME,
      kind: 'identifier_removed',
      removedIdentifierId: 'id-1',
    });
  });

  it('not a sign-up, a new account through a provider, a failure, a sign-in or an operator act', () => {
    expect(noticeFor(own('identity.identifier.verified', { via: 'sign_up' }))).toBeNull();
    expect(noticeFor(own('identity.provider.registered', { provider: 'google' }))).toBeNull();
    expect(noticeFor({ ...own('identity.password.changed'), outcome: 'failure' })).toBeNull();
    expect(noticeFor(own('identity.recovery_code.used', { remaining: 9 }))).toBeNull();
    expect(noticeFor(own('identity.session.revoked'))).toBeNull();
    expect(noticeFor({ ...own('identity.disabled'), actor: 'operator' })).toBeNull();
    expect(noticeFor({ ...own('identity.password.changed'), actor: null })).toBeNull();
  });
});

describe('the texts', () => {
  const at = new Date('2026-03-01T12:34:56Z');
  const batch = [
    {
      id: 'a',
      kind: 'password_changed',
      sessionId: null,
      occurredAt: at,
      device: 'Firefox 140 on Windows 10',
      ipAddress: '192.0.2.1',
      sealedDestination: null,
    },
    {
      id: 'b',
      kind: 'passkey_removed',
      sessionId: null,
      occurredAt: at,
      device: null,
      ipAddress: null,
      sealedDestination: 'v1.x.y.z',
    },
  ];

  it('the email says what, when (UTC), from where, and what to do; no link', () => {
    const one = emailText(batch.slice(0, 1));
    expect(one.subject).toBe('A security change to your account');
    expect(one.text).toContain('Your password was changed.');
    expect(one.text).toContain('When: 2026-03-01 12:34 UTC');
    expect(one.text).toContain('Device: Firefox 140 on Windows 10');
    expect(one.text).toContain('From address: 192.0.2.1');
    expect(one.text).toContain("If this wasn't you, sign in and secure your account");
    expect(one.text).not.toMatch(/https?:|www\./);
    const two = emailText(batch);
    expect(two.subject).toBe('Security changes to your account');
    expect(two.text).toContain('2 security settings of your account were changed');
    expect(two.text).toContain('A passkey was removed.');
    expect(two.text).not.toContain('v1.x.y.z');
  });

  it('the text message is one short line', () => {
    const line = smsText(batch);
    expect(line).not.toContain('\n');
    expect(line.length).toBeLessThanOrEqual(160);
    expect(line).toContain('password changed, passkey removed');
    expect(line).not.toMatch(/https?:/);
  });

  it('a new-sign-in message says when, which device and from where for each sign-in; no link', () => {
    const signIns = [
      { ...batch[0], kind: 'new_sign_in', sessionId: 's1' },
      { ...batch[1], kind: 'new_sign_in', sessionId: 's2', sealedDestination: null },
    ];
    const one = signInText(signIns.slice(0, 1));
    expect(one.subject).toBe('New sign-in to your account');
    expect(one.text).toContain('Someone signed in to your account from a device or network not seen');
    expect(one.text).toContain('When: 2026-03-01 12:34 UTC');
    expect(one.text).toContain('Device: Firefox 140 on Windows 10');
    expect(one.text).toContain('From: 192.0.2.1');
    expect(one.text).toContain('end that session under Devices');
    const two = signInText(signIns);
    expect(two.subject).toBe('New sign-ins to your account');
    expect(two.text).toContain('2 sign-ins to your account came from devices or networks not seen');
    expect(two.text.match(/^When: /gm)).toHaveLength(2);
    expect(two.text).toContain('Device: Unknown device');
    expect(two.text).toContain('From: unknown address');
    for (const m of [one, two]) expect(m.text).not.toMatch(/https?:|www\./);
  });
});
