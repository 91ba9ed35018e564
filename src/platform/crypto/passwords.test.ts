import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createPasswordHasher } from './passwords.js';

const fast = createPasswordHasher({ memoryKiB: 1024 });

describe('password hasher', () => {
  it('makes an Argon2id hash with t=2, p=1 and the given memory', async () => {
    const hash = await fast.hash('correct horse battery staple');
    expect(hash).toMatch(/^\$argon2id\$v=19\$m=1024,t=2,p=1\$[A-Za-z0-9+/]+\$[A-Za-z0-9+/]+$/);
  });

  it('salts: one password hashes differently twice', async () => {
    const [a, b] = await Promise.all([fast.hash('same password here'), fast.hash('same password here')]);
    expect(a).not.toBe(b);
  });

  it('verifies the right password and refuses a wrong one', async () => {
    const hash = await fast.hash('correct horse battery staple');
    expect(await fast.verify(hash, 'correct horse battery staple')).toBe(true);
    expect(await fast.verify(hash, 'correct horse battery stapler')).toBe(false);
    expect(await fast.verify(hash, 'Correct horse battery staple')).toBe(false);
    expect(await fast.verify(hash, '')).toBe(false);
  });

  it('round-trips a non-ASCII password', async () => {
    const hash = await fast.hash('пароль 😀 パスワード');
    expect(await fast.verify(hash, 'пароль 😀 パスワード')).toBe(true);
    expect(await fast.verify(hash, 'пароль 😀 パスワー')).toBe(false);
  });

  it('returns false, without throwing, for a malformed hash', async () => {
    const good = await fast.hash('correct horse battery staple');
    for (const bad of [
      '',
      'not-a-hash',
      '$argon2id$',
      '$argon2id$v=19$m=1024,t=2,p=1$garbage',
      good.slice(0, -10),
      `$bcrypt$${good}`,
    ]) {
      await expect(fast.verify(bad, 'correct horse battery staple')).resolves.toBe(false);
    }
  });

  it('burn is always false, whatever the password', async () => {
    await expect(fast.burn('correct horse battery staple')).resolves.toBe(false);
    await expect(fast.burn('no account has this password')).resolves.toBe(false);
    await expect(fast.burn('')).resolves.toBe(false);
  });

  it('burn costs about what a real verify costs', async () => {
    const hasher = createPasswordHasher({ memoryKiB: 8192 });
    const hash = await hasher.hash('correct horse battery staple');
    await hasher.burn('warm up the dummy hash');
    const time = async (fn: () => Promise<unknown>): Promise<number> => {
      const start = performance.now();
      await fn();
      return performance.now() - start;
    };
    // Alternating samples and their medians: a stall of a busy machine during one sample (a CI run
    // once measured five verifies at three times their pace) moves neither median.
    const verifyMs: number[] = [];
    const burnMs: number[] = [];
    for (let i = 0; i < 9; i++) {
      verifyMs.push(await time(() => hasher.verify(hash, 'a wrong password')));
      burnMs.push(await time(() => hasher.burn('a wrong password')));
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
    // Same parameters, so the same work; generous bounds keep a busy machine from failing this.
    expect(median(burnMs)).toBeGreaterThan(median(verifyMs) * 0.3);
    expect(median(burnMs)).toBeLessThan(median(verifyMs) * 3);
  });

  it('works at the OWASP default of 19456 KiB', async () => {
    const hasher = createPasswordHasher({ memoryKiB: 19456 });
    const hash = await hasher.hash('correct horse battery staple');
    expect(hash).toMatch(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
    expect(await hasher.verify(hash, 'correct horse battery staple')).toBe(true);
    expect(await hasher.verify(hash, 'wrong horse battery staple')).toBe(false);
    expect(await hasher.burn('correct horse battery staple')).toBe(false);
  });

  it('sheds a hash whose expected wait passes the bound with a retryable 503, and serves the rest', async () => {
    const hasher = createPasswordHasher({ memoryKiB: 19456, concurrency: 1, maxWaitMs: 100 });
    // Nothing is shed before the pace is known; the first hash measures it (tens of ms here).
    const hash = await hasher.hash('correct horse battery staple');
    // Enough at once that the last would wait past the bound at any pace this machine could
    // measure (one CI run measured none shed of 20): 200 at ≥ 0.5 ms each is ≥ 100 ms of queue.
    const outcomes = await Promise.allSettled(
      Array.from({ length: 200 }, () => hasher.verify(hash, 'correct horse battery staple')),
    );
    const shed = outcomes.filter((o) => o.status === 'rejected');
    const served = outcomes.filter((o) => o.status === 'fulfilled');
    expect(shed.length).toBeGreaterThan(0);
    expect(served.length).toBeGreaterThan(0);
    for (const o of shed) {
      expect((o as PromiseRejectedResult).reason).toMatchObject({
        code: 'service.unavailable',
        extra: { headers: { 'retry-after': '1' } },
      });
    }
    for (const o of served) expect((o as PromiseFulfilledResult<boolean>).value).toBe(true);
    // Once the queue has drained, hashes are admitted again.
    expect(() => hasher.admit()).not.toThrow();
    expect(await hasher.verify(hash, 'correct horse battery staple')).toBe(true);
  });

  it('lets a burst of password paths through its door a few at a time, in order', async () => {
    const hasher = createPasswordHasher({ memoryKiB: 1024, concurrency: 1 });
    const hash = await hasher.hash('correct horse battery staple');
    let inside = 0;
    let most = 0;
    const entered: number[] = [];
    const paths = Array.from({ length: 12 }, (_, i) =>
      hasher.enter(async () => {
        entered.push(i);
        inside++;
        most = Math.max(most, inside);
        // The reads before the hash: a turn of the event loop or two.
        await new Promise((r) => setImmediate(r));
        const ok = await hasher.verify(hash, 'correct horse battery staple');
        inside--;
        return ok;
      }),
    );
    // Those not yet through wait before doing anything, and count as waiting.
    expect(hasher.stats().waiting).toBe(12 - 3);
    expect(await Promise.all(paths)).toEqual(Array(12).fill(true));
    // The gate's limit (1) and two more: one reads while another hashes.
    expect(most).toBe(3);
    expect(entered).toEqual([...Array(12).keys()]);
  });

  it('sheds at the door: paths waiting there count toward the expected wait', async () => {
    const hasher = createPasswordHasher({ memoryKiB: 8192, concurrency: 1, maxWaitMs: 100 });
    // The first hash measures the pace (nothing is shed before it is known).
    await hasher.hash('correct horse battery staple');
    let release!: () => void;
    const held = new Promise<void>((r) => {
      release = r;
    });
    // Three paths inside the door, held before their hash, and forty waiting at it. Holding them
    // before the hash keeps the gate itself idle, so nothing but the door's count can shed (a path
    // that hashed here would face the gate's own bound, and shed on a slow machine).
    const paths = Array.from({ length: 43 }, () => hasher.enter(() => held));
    await new Promise((r) => setTimeout(r, 50));
    // The gate is idle: only the forty behind the door make a newcomer's expected wait, 41 hashes
    // of 8 MiB at the pace the first hash measured, past the bound.
    expect(() => hasher.admit()).toThrow(expect.objectContaining({ code: 'service.unavailable' }));
    release();
    await Promise.all(paths);
    expect(() => hasher.admit()).not.toThrow();
  });
});

describe('hashing threads', () => {
  // The nice value (field 19 of stat(5)) of every thread of this process.
  const niceValues = () =>
    readdirSync('/proc/self/task').map((t) =>
      Number(readFileSync(`/proc/self/task/${t}/stat`, 'utf8').split(') ')[1].split(' ')[16]),
    );

  it('runs Argon2id on a thread at the asked priority (19 by default), leaving the event loop at 0', async () => {
    const hasher = createPasswordHasher({ memoryKiB: 8192 });
    const hash = await hasher.hash('correct horse battery staple');
    const pending = hasher.verify(hash, 'correct horse battery staple');
    // Sampled while the verification runs: the thread exists and has lowered itself by then.
    await new Promise((r) => setTimeout(r, 5));
    const during = niceValues();
    expect(await pending).toBe(true);
    expect(during).toContain(19);
    expect(readFileSync('/proc/self/stat', 'utf8').split(') ')[1].split(' ')[16]).toBe('0');

    const level = createPasswordHasher({ memoryKiB: 1024, nice: 7 });
    expect(await level.verify(await level.hash('another password here'), 'another password here')).toBe(true);
    expect(niceValues()).toContain(7);
  });
});
