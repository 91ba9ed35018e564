import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { COMMON_PASSWORDS_FILE, checkNewPassword, commonPasswords } from './password-policy.js';

describe('common password list', () => {
  it('holds exactly 10,000 non-empty lines with no header', () => {
    const text = readFileSync(COMMON_PASSWORDS_FILE, 'utf8');
    expect(text.endsWith('\n')).toBe(true);
    const lines = text.slice(0, -1).split('\n');
    expect(lines).toHaveLength(10_000);
    expect(lines.every((l) => l.length > 0 && !l.includes('\r'))).toBe(true);
    expect(lines.slice(0, 5)).toEqual(['password', '123456', '12345678', '1234', 'qwerty']);
    expect(commonPasswords().size).toBe(new Set(lines.map((l) => l.toLowerCase())).size);
    expect(commonPasswords().has('password')).toBe(true);
  });
});

describe('checkNewPassword', () => {
  it('refuses fewer than 12 code points and accepts exactly 12', () => {
    expect(checkNewPassword('')).toEqual({ ok: false, reason: 'too_short' });
    expect(checkNewPassword('x7#kQ2vLp9w')).toEqual({ ok: false, reason: 'too_short' });
    expect(checkNewPassword('x7#kQ2vLp9wZ')).toEqual({ ok: true });
  });

  it('accepts 200 code points and refuses 201', () => {
    expect(checkNewPassword('ab'.repeat(100))).toEqual({ ok: true });
    expect(checkNewPassword('ab'.repeat(100) + 'c')).toEqual({ ok: false, reason: 'too_long' });
  });

  it('counts code points, not UTF-16 units', () => {
    // Each emoji is two UTF-16 units: 11 of them are 22 units but only 11 code points.
    expect(checkNewPassword('😀'.repeat(11))).toEqual({ ok: false, reason: 'too_short' });
    expect(checkNewPassword('😀'.repeat(12))).toEqual({ ok: true });
    // 200 emoji are 400 units but 200 code points.
    expect(checkNewPassword('😀'.repeat(200))).toEqual({ ok: true });
    expect(checkNewPassword('😀'.repeat(201))).toEqual({ ok: false, reason: 'too_long' });
  });

  it('refuses a listed password in any case', () => {
    expect(checkNewPassword('unbelievable')).toEqual({ ok: false, reason: 'common' });
    expect(checkNewPassword('UnBelievABLE')).toEqual({ ok: false, reason: 'common' });
    expect(checkNewPassword('films+pic+galeries')).toEqual({ ok: false, reason: 'common' });
    expect(checkNewPassword('unbelievable1')).toEqual({ ok: true });
  });

  it('refuses a short listed password as too short', () => {
    expect(checkNewPassword('password')).toEqual({ ok: false, reason: 'too_short' });
  });

  it('has no composition rules', () => {
    expect(checkNewPassword('correct horse battery staple')).toEqual({ ok: true });
    expect(checkNewPassword('zzzzzzzzzzzzzzzzz')).toEqual({ ok: true });
    expect(checkNewPassword('пароль-очень-длинный')).toEqual({ ok: true });
  });
});
