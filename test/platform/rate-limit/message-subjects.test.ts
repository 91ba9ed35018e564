import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/platform/clock.js';
import { hmacHex } from '../../../src/platform/crypto/tokens.js';
import { type Signals, silentSignals } from '../../../src/platform/metrics/signals.js';
import type { Problem } from '../../../src/platform/problem.js';
import {
  destinationSubject,
  MessageLimits,
  recoveryDestinationSubject,
  senderSubject,
  stepUpSubjects,
} from '../../../src/platform/rate-limit/guess-budget.js';
import { createTestDatabase, type TestDatabase } from '../../helpers/database.js';

// MessageLimits counts against subjects built by their own functions, each carrying the rule a
// refusal reports (`route:<pattern>` or `messages`) beside the key its window is stored under: the
// rule is never parsed back out of the key, and the keys (hence the send_windows rows) are the
// strings they have always been.
let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.drop();
});

describe('message subjects', () => {
  it('keep their keys and name their refusal', () => {
    expect(senderSubject('/api/v1/sign-ups', '2001:db8:1:2:3:4:5:6')).toEqual({
      key: 'sends:/api/v1/sign-ups|2001:db8:1:2::/64',
      refusal: 'route:/api/v1/sign-ups',
    });
    expect(senderSubject('/api/v1/password-recoveries', '203.0.113.9')).toEqual({
      key: 'sends:/api/v1/password-recoveries|203.0.113.9',
      refusal: 'route:/api/v1/password-recoveries',
    });
    expect(destinationSubject({ type: 'email', value: 'a.da+news@googlemail.com' })).toEqual({
      key: 'to:email:ada@gmail.com',
      refusal: 'messages',
    });
    expect(destinationSubject({ type: 'phone', value: '+447700900123' })).toEqual({
      key: 'to:phone:+447700900123',
      refusal: 'messages',
    });
    expect(recoveryDestinationSubject({ type: 'email', value: 'a.da+news@googlemail.com' })).toEqual({
      key: 'recovery-to:email:ada@gmail.com',
      refusal: 'messages',
    });
    expect(recoveryDestinationSubject({ type: 'phone', value: '+447700900123' })).toEqual({
      key: 'recovery-to:phone:+447700900123',
      refusal: 'messages',
    });
    expect(stepUpSubjects('identity-1', '2001:db8:9:8:7::1')).toEqual([
      { key: 'step-up:identity-1', refusal: 'messages' },
      { key: 'step-up:2001:db8:9:8::/64', refusal: 'messages' },
    ]);
  });

  it('are counted under their keyed keys, and a refusal reports each tripped subject’s rule', async () => {
    const key = randomBytes(32);
    const refused: string[] = [];
    const signals: Signals = { ...silentSignals, refused: (rule) => refused.push(rule) };
    const clock = new ManualClock('2026-03-01T12:00:00.000Z');
    const limits = new MessageLimits(db.database.db, clock, key, { max: 1, windowSeconds: 60 }, signals);
    const tag = randomBytes(4).toString('hex');
    const sender = senderSubject('/api/v1/sign-ups', '198.51.100.7');
    const destination = destinationSubject({ type: 'email', value: `m-${tag}@example.com` });
    const sent = async (subjectKey: string) =>
      (
        await db.database.db
          .selectFrom('send_windows')
          .select('sent')
          .where('key', '=', hmacHex(key, `send:${subjectKey}`))
          .executeTakeFirst()
      )?.sent;

    await limits.count([sender, destination]);
    expect(await sent(`sends:/api/v1/sign-ups|198.51.100.7`)).toBe(1);
    expect(await sent(`to:email:m-${tag}@example.com`)).toBe(1);
    expect(refused).toEqual([]);

    const error = await limits.count([sender, destination]).catch((e: Problem) => e);
    expect((error as Problem).status).toBe(429);
    expect(refused).toEqual(['route:/api/v1/sign-ups', 'messages']);
    // Counted all the same (in its own statements here: no transaction to roll it back).
    expect(await sent(`sends:/api/v1/sign-ups|198.51.100.7`)).toBe(2);
    expect(await sent(`to:email:m-${tag}@example.com`)).toBe(2);

    // A new window counts afresh.
    clock.advance(61);
    await limits.count([sender, destination]);
    expect(await sent(`to:email:m-${tag}@example.com`)).toBe(1);
  });
});
