import { createHash, randomBytes, scryptSync } from 'node:crypto';
import { type Algorithm, hash as argon2Hash } from '@node-rs/argon2';
import bcrypt from 'bcryptjs';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { normaliseImportedPassword } from '../../src/platform/crypto/imported-hashes.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { createPerson } from '../helpers/identities.js';

/**
 * Imported password hashes at sign-in (docs/import.md, "Password hashes"): each made by the source
 * system's own library in the test (bcryptjs, @node-rs/argon2, node:crypto's scrypt) or taken from
 * the source's published vectors (Firebase's scrypt fork; Django 5.2's PBKDF2 test vector, made by
 * the hashlib.pbkdf2_hmac Django calls; Keycloak credentials made by the same PBKDF2). The right
 * password signs in and leaves an Argon2id hash; a wrong one is refused and changes nothing.
 */

const FIREBASE = {
  signerKey: 'jxspr8Ki0RYycVU8zykbdLGjFQ3McFUH0uiiTvC8pVMXAn210wjLNmdZJzxUECKbm0QsEmYUSDzZvpjeJ9WmXA==',
  saltSeparator: 'Bw==',
  rounds: 8,
  memCost: 14,
};
// An ambient const enum: isolated-module builds cannot inline it; 1 is Argon2i in its declaration.
const ARGON2I = 1 as Algorithm;
const KEYCLOAK_SALT = 'aj8LLJ2Of2pbTD0uHwARIg==';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ env: { PASSWORD_WEAK_HASHES: 'on', RATE_LIMIT_PROVES_A_PASSWORD: '100000/60' } });
});
afterAll(async () => {
  await t.close();
});

function stored(input: Parameters<typeof normaliseImportedPassword>[0]): string {
  const n = normaliseImportedPassword(input, { firebase: FIREBASE, weakHashes: true });
  if (!n.ok) throw new Error(n.reason);
  return n.stored;
}

async function withHash(hash: string) {
  const p = await createPerson(t.ctx);
  await sql`UPDATE identities SET password_hash = ${hash} WHERE id = ${p.identityId}`.execute(
    t.ctx.database.db,
  );
  return p;
}

async function hashOf(identityId: string): Promise<string> {
  const row = await t.ctx.database.db
    .selectFrom('identities')
    .select('password_hash')
    .where('id', '=', identityId)
    .executeTakeFirstOrThrow();
  return row.password_hash!;
}

function signIn(email: string, password: string) {
  return t.app.inject({
    method: 'POST',
    url: '/api/v1/sign-ins',
    payload: { identifierType: 'email', identifier: email, password },
  });
}

const cases: { name: string; password: string; make: () => string | Promise<string> }[] = [
  {
    name: 'bcrypt $2a$ cost 4',
    password: 'bcrypt four',
    make: () => bcrypt.hashSync('bcrypt four', 4).replace(/^\$2b\$/, '$2a$'),
  },
  { name: 'bcrypt $2b$ cost 10', password: 'bcrypt ten', make: () => bcrypt.hashSync('bcrypt ten', 10) },
  {
    name: 'bcrypt $2y$ cost 12',
    password: 'bcrypt twelve',
    make: () => bcrypt.hashSync('bcrypt twelve', 12).replace(/^\$2b\$/, '$2y$'),
  },
  {
    name: 'Argon2i PHC',
    password: 'argon two i',
    make: () => argon2Hash('argon two i', { algorithm: ARGON2I, memoryCost: 4096, timeCost: 3 }),
  },
  {
    name: 'scrypt PHC',
    password: 'scrypt password',
    make: () => {
      const salt = randomBytes(16);
      const hash = scryptSync('scrypt password', salt, 32, { N: 2 ** 14, r: 8, p: 1 });
      return `$scrypt$ln=14,r=8,p=1$${salt.toString('base64')}$${hash.toString('base64')}`;
    },
  },
  {
    name: 'Firebase scrypt (published test vector)',
    password: 'user1password',
    make: () =>
      stored({
        format: 'firebase-scrypt',
        salt: '42xEC+ixf3L2lw==',
        hash: 'lSrfV15cpx95/sZS2W9c9Kp6i/LVgQNDNC/qzrCnh1SAyZvqmZqAjTdn3aoItz+VHjoZilo78198JAdRuid5lQ==',
      }),
  },
  {
    name: 'Django pbkdf2_sha256 (Django 5.2 vector)',
    password: 'lètmein',
    make: () => 'pbkdf2_sha256$1000000$seasalt$r1uLUxoxpP2Ued/qxvmje7UH9PUJBkRrvf9gGPL7Cps=',
  },
  {
    name: 'Django pbkdf2_sha1',
    password: 'lètmein',
    make: () => 'pbkdf2_sha1$1000000$seasalt$A053mdnAt0THnbEBJ7jpfP3yz1o=',
  },
  {
    name: 'Keycloak pbkdf2-sha256 (realm export credential)',
    password: 'keycloak password',
    make: () =>
      stored({
        format: 'keycloak',
        credential: {
          type: 'password',
          secretData: JSON.stringify({
            value: 'KLhBZ6wn70h3XWYIwKRpIMN83JfrX2MSvzH2S5Omfd18PNHGvLI38BVcIPVHjBaGaIuKCeLu/7eP9h3Kh40b4w==',
            salt: KEYCLOAK_SALT,
            additionalParameters: {},
          }),
          credentialData: JSON.stringify({
            hashIterations: 27500,
            algorithm: 'pbkdf2-sha256',
            additionalParameters: {},
          }),
        },
      }),
  },
  {
    name: 'Keycloak pbkdf2-sha512',
    password: 'keycloak password',
    make: () =>
      stored({
        format: 'keycloak',
        credential: {
          value: '78iO4T9UVmAyRdFMQMomuk0LB7IXKobuKzMGrsmFykBZ4YH1o6EA07rN6iZ8LeHaFPJgtgedbmEUlY4ygB9e4Q==',
          salt: KEYCLOAK_SALT,
          hashIterations: 210000,
          algorithm: 'pbkdf2-sha512',
        },
      }),
  },
  {
    name: 'Keycloak pbkdf2 (SHA-1)',
    password: 'keycloak password',
    make: () =>
      stored({
        format: 'keycloak',
        credential: {
          value: 'B7NFRroc0tjc9uJ83GQdgMuGP5LEpq6VjUyhrsgrOy7zja7IE63hrtv2Vw31C9naVRX2mi5a+WulrdkilMLXpw==',
          salt: KEYCLOAK_SALT,
          hashIterations: 27500,
          algorithm: 'pbkdf2',
        },
      }),
  },
  {
    name: 'salted SHA-256 (salt first, base64)',
    password: 'weak password',
    make: () => {
      const salt = randomBytes(8);
      const hash = createHash('sha256')
        .update(Buffer.concat([salt, Buffer.from('weak password')]))
        .digest();
      return stored({
        format: 'salted-sha256',
        salt: salt.toString('base64'),
        hash: hash.toString('base64'),
      });
    },
  },
  {
    name: 'salted SHA-512 (salt last, hex)',
    password: 'weak password',
    make: () =>
      stored({
        format: 'salted-sha512',
        saltPosition: 'post',
        encoding: 'hex',
        salt: '00112233445566778899aabbccddeeff',
        hash: 'baf8858ec7297271ec24761df5d233cd39f098be93b81566dde0fc0631b939600c0ce072a42c683796660134a237be0a955cac980d65ba3b286cf9aa6f5b911d',
      }),
  },
];

describe('imported password hashes at sign-in', () => {
  for (const c of cases) {
    it(`${c.name}: a wrong password is refused; the right one signs in and leaves Argon2id`, async () => {
      const hash = await c.make();
      const p = await withHash(hash);
      const wrong = await signIn(p.email, `${c.password}!`);
      expect(wrong.statusCode).toBe(401);
      expect(wrong.json().code).toBe('identity.sign_in_refused');
      expect(await hashOf(p.identityId)).toBe(hash);

      const right = await signIn(p.email, c.password);
      expect(right.statusCode).toBe(201);
      const after = await hashOf(p.identityId);
      expect(after.startsWith('$argon2id$v=19$m=')).toBe(true);
      expect(await t.ctx.passwords.verify(after, c.password)).toBe(true);
      const audit = await t.ctx.database.db
        .selectFrom('audit_records')
        .select(['name', 'details'])
        .where('target', '=', p.identityId)
        .where('name', '=', 'identity.password.upgraded')
        .execute();
      expect(audit).toHaveLength(1);

      // The Argon2id hash now answers alone: signed in again, nothing more is upgraded.
      expect((await signIn(p.email, c.password)).statusCode).toBe(201);
      expect(await hashOf(p.identityId)).toBe(after);
    }, 60_000);
  }

  it('the upgrade is a compare-and-set: a hash changed since it was read is kept', async () => {
    const p = await withHash(bcrypt.hashSync('old password', 4));
    const { upgradePasswordHash } = await import('../../src/features/identities/repository.js');
    const changed = await t.ctx.passwords.hash('a newer password');
    await sql`UPDATE identities SET password_hash = ${changed} WHERE id = ${p.identityId}`.execute(
      t.ctx.database.db,
    );
    const swapped = await upgradePasswordHash(
      t.ctx.database.db,
      p.identityId,
      'the hash verified before',
      'x',
    );
    expect(swapped).toBe(false);
    expect(await hashOf(p.identityId)).toBe(changed);
  });
});

describe('weak hashes behind PASSWORD_WEAK_HASHES', () => {
  it('off: a salted SHA hash is refused at import and never verifies at sign-in', async () => {
    const off = await createTestApp({ env: { RATE_LIMIT_PROVES_A_PASSWORD: '100000/60' } });
    try {
      const salt = Buffer.from('salt');
      const hash = createHash('sha256')
        .update(Buffer.concat([salt, Buffer.from('weak password')]))
        .digest();
      const input = {
        format: 'salted-sha256' as const,
        salt: salt.toString('base64'),
        hash: hash.toString('base64'),
      };
      expect(normaliseImportedPassword(input, { weakHashes: false })).toMatchObject({ ok: false });
      const p = await createPerson(off.ctx);
      await sql`UPDATE identities SET password_hash = ${stored(input)} WHERE id = ${p.identityId}`.execute(
        off.ctx.database.db,
      );
      const res = await off.app.inject({
        method: 'POST',
        url: '/api/v1/sign-ins',
        payload: { identifierType: 'email', identifier: p.email, password: 'weak password' },
      });
      expect(res.statusCode).toBe(401);
    } finally {
      await off.close();
    }
  });
});
