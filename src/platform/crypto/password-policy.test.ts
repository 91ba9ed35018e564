import { describe, expect, it } from 'vitest';
import { isOneByte } from '../../../test/helpers/strings.js';
import { Problem } from '../problem.js';
import type { BreachCheck } from './breached-passwords.js';
import {
  assertPasswordPolicy,
  checkNewPassword,
  MIN_PASSWORD_SCORE,
  passwordUserInputs,
  preparePasswordPolicy,
} from './password-policy.js';

/** A strong start, then filler: only the first 64 characters are estimated. */
const strongOfLength = (n: number) => 'violet-anchor-meadow-42 '.padEnd(n, 'x');

const refusal = async (
  password: string,
  identifiers: string[] = [],
  product?: string,
  breaches?: BreachCheck,
) => {
  try {
    await assertPasswordPolicy(password, 'password', identifiers, product, breaches);
  } catch (err) {
    expect(err).toBeInstanceOf(Problem);
    return (err as Problem).extra.errors?.[0];
  }
  return undefined;
};

describe('checkNewPassword', () => {
  it('refuses fewer than 12 code points and accepts exactly 12', async () => {
    expect(await checkNewPassword('')).toEqual({ ok: false, reason: 'too_short' });
    expect(await checkNewPassword('x7#kQ2vLp9w')).toEqual({ ok: false, reason: 'too_short' });
    expect(await checkNewPassword('x7#kQ2vLp9wZ')).toMatchObject({ ok: true });
  });

  it('accepts 200 code points and refuses 201', async () => {
    expect(await checkNewPassword(strongOfLength(200))).toMatchObject({ ok: true });
    expect(await checkNewPassword(strongOfLength(201))).toEqual({ ok: false, reason: 'too_long' });
  });

  it('counts code points, not UTF-16 units', async () => {
    // Each emoji is two UTF-16 units: 11 of them are 22 units but only 11 code points.
    const twelve = [...'🦊🌵🎻🚲🧀🌋🪁🦉🍄🛶🧭🎈'];
    expect(await checkNewPassword(twelve.slice(0, 11).join(''))).toEqual({ ok: false, reason: 'too_short' });
    expect(await checkNewPassword(twelve.join(''))).toMatchObject({ ok: true });
    // 200 emoji are 400 units but 200 code points.
    const many = (n: number) =>
      twelve
        .join('')
        .repeat(17)
        .slice(0, 2 * n);
    expect([...many(200)]).toHaveLength(200);
    expect(await checkNewPassword(many(200))).toMatchObject({ ok: true });
    expect(await checkNewPassword(many(200) + '🦊')).toEqual({ ok: false, reason: 'too_long' });
  });

  it('refuses guessable passwords of any length allowed (the 10,000-word list let these through)', async () => {
    for (const password of [
      'password12345',
      'Password12345!',
      'P@ssw0rd1234',
      'Unbelievable',
      'UnBelievABLE',
      'qwertyuiop1234',
      'zzzzzzzzzzzzzzzzz',
      '1234567890123',
    ]) {
      const result = await checkNewPassword(password);
      expect(result, password).toMatchObject({ ok: false, reason: 'weak' });
      expect((result as { score: number }).score).toBeLessThan(MIN_PASSWORD_SCORE);
    }
  });

  it('refuses a password of the bundled breach list as breached, exactly as listed', async () => {
    for (const password of [
      'password1234',
      'unbelievable',
      'qwertyuiop123',
      '123456789012',
      '1qaz2wsx3edc',
    ]) {
      expect(await checkNewPassword(password), password).toEqual({
        ok: false,
        reason: 'breached',
        message:
          'This password has appeared in data breaches, so attackers try it first. Choose another one.',
      });
    }
    // Another case is another password in a breach corpus: left to the estimate (weak here).
    expect(await checkNewPassword('Password1234')).toMatchObject({ ok: false, reason: 'weak' });
  });

  it('refuses a password built on the person’s own address, which alone would pass', async () => {
    expect(await checkNewPassword('ada@example.com2024')).toMatchObject({ ok: true });
    expect(await checkNewPassword('london07700900123')).toMatchObject({ ok: true });
    const inputs = passwordUserInputs(['ada@example.com']);
    expect(await checkNewPassword('ada@example.com2024', inputs)).toMatchObject({
      ok: false,
      reason: 'weak',
    });
    expect(await checkNewPassword('london07700900123', passwordUserInputs(['+447700900123']))).toMatchObject({
      ok: false,
      reason: 'weak',
    });
  });

  it('has no composition rules: passphrases pass', async () => {
    expect(await checkNewPassword('correct horse battery staple')).toMatchObject({ ok: true });
    expect(await checkNewPassword('violet-anchor-meadow-42')).toMatchObject({ ok: true });
    expect(await checkNewPassword('пароль-очень-длинный')).toMatchObject({ ok: true });
  });

  it('stays fast on 200-character adversarial input', async () => {
    const inputs = passwordUserInputs(['ada.lovelace@example.com', '+447700900123']);
    const adversarial = [
      '1q2w3e4r'.repeat(25),
      'P@ssw0rd'.repeat(25),
      '19801231'.repeat(25),
      '4@3!1|0$5'.repeat(23).slice(0, 200),
      Array.from({ length: 200 }, (_, i) => String.fromCharCode(33 + ((i * 7) % 90))).join(''),
    ];
    for (const password of adversarial) await checkNewPassword(password, inputs);
    // CPU time, the best of three runs of each: other processes on a busy machine are not the
    // estimator's cost. About 20 ms on the 2-core CI machine when it is idle, but the process's
    // CPU time also counts the other worker threads of the suite (Node 20 has no per-thread
    // figure), which took it to 55 ms under the full suite's load. The bound is what this guards:
    // the length cap keeps the estimate linear-ish; an input the estimator handles
    // super-linearly costs whole seconds, far past it.
    let worst = 0;
    for (const password of adversarial) {
      let best = Number.POSITIVE_INFINITY;
      for (let run = 0; run < 3; run++) {
        const start = process.cpuUsage();
        await checkNewPassword(password, inputs);
        const used = process.cpuUsage(start);
        best = Math.min(best, (used.user + used.system) / 1000);
      }
      worst = Math.max(worst, best);
    }
    console.log(`password policy: worst 200-character estimate ${worst.toFixed(1)} ms`);
    expect(worst).toBeLessThan(150);
  });
});

describe('passwordUserInputs', () => {
  it('holds the address, its local part and pieces, its domain name, phone digits and product words', async () => {
    expect(passwordUserInputs(['Ada.Lovelace@Example.com'])).toEqual(
      expect.arrayContaining(['ada.lovelace@example.com', 'ada.lovelace', 'lovelace', 'example', 'account']),
    );
    expect(passwordUserInputs([], ['Acme Cloud'])).toEqual(
      expect.arrayContaining(['acme cloud', 'acme', 'cloud']),
    );
    expect(passwordUserInputs(['+44 7700 900123'])).toEqual(
      expect.arrayContaining(['447700900123', '7700900123', '00900123']),
    );
  });
});

describe('assertPasswordPolicy', () => {
  it('refuses a weak password with weak_password and zxcvbn’s reason, never the password', async () => {
    const entry = await refusal('password12345');
    expect(entry).toMatchObject({ location: 'body', field: 'password', code: 'weak_password' });
    expect(entry?.message).toMatch(/^This password is too easy to guess\. \S/);
    expect(entry?.message).not.toContain('password12345');
    expect(await refusal('Password12345!')).toMatchObject({ code: 'weak_password' });
  });

  it('refuses a password built on the product’s name', async () => {
    expect(await refusal('Lumenhollow2024!', [])).toBeUndefined();
    expect(await refusal('Lumenhollow2024!', [], 'Lumenhollow Cloud')).toMatchObject({
      code: 'weak_password',
    });
  });

  it('refuses a password built on the identifier given', async () => {
    const entry = await refusal('ada@example.com2024', ['ada@example.com']);
    expect(entry).toMatchObject({ code: 'weak_password' });
    expect(entry?.message).not.toContain('ada@example.com');
  });

  it('refuses a password of the bundled breach list with breached_password, never the password', async () => {
    const entry = await refusal('unbelievable');
    expect(entry).toEqual({
      location: 'body',
      field: 'password',
      code: 'breached_password',
      message: 'This password has appeared in data breaches, so attackers try it first. Choose another one.',
    });
  });

  it('asks the range check only of a password every local rule accepts, and refuses what it finds', async () => {
    const asked: string[] = [];
    const found = {
      isBreached: async (p: string) => {
        asked.push(p);
        return true;
      },
    };
    expect(await refusal('violet-anchor-meadow-42', [], undefined, found)).toMatchObject({
      code: 'breached_password',
    });
    expect(await refusal('password12345', [], undefined, found)).toMatchObject({ code: 'weak_password' });
    expect(await refusal('unbelievable', [], undefined, found)).toMatchObject({ code: 'breached_password' });
    expect(asked).toEqual(['violet-anchor-meadow-42']);
    const none = { isBreached: async () => false };
    expect(await refusal('violet-anchor-meadow-42', [], undefined, none)).toBeUndefined();
  });

  it('keeps the length refusals and accepts a passphrase', async () => {
    expect(await refusal('short')).toMatchObject({ code: 'minLength', message: 'password is too short' });
    expect(await refusal(strongOfLength(201))).toMatchObject({
      code: 'maxLength',
      message: 'password is too long',
    });
    expect(await refusal('violet-anchor-meadow-42', ['ada@example.com'])).toBeUndefined();
  });
});

describe('preparePasswordPolicy', () => {
  it("leaves the process's shared copy of each Latin-1 dictionary word one-byte", async () => {
    expect(isOneByte('one-byte text')).toBe(true);
    expect(isOneByte('\u0101p')).toBe(false);
    await preparePasswordPolicy();
    const { dictionary } = await import('@zxcvbn-ts/language-en');
    const words = dictionary['commonWords-en']
      .filter((w): w is string => typeof w === 'string' && /^[a-z]+$/.test(w))
      .slice(0, 5000);
    expect(words).toHaveLength(5000);
    // V8 keeps one copy of each property name and literal text per process, and the first to
    // arrive sets its representation; a literal compiled now takes that copy. Built two-byte, the
    // dictionaries made every answer that says "up", "ok" or "active" two-byte text.
    const twoByte = words.filter((w) => !isOneByte(new Function(`return '${w}'`)()));
    expect(twoByte).toEqual([]);
  });
});
