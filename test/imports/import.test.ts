import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import bcrypt from 'bcryptjs';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { importFile } from '../../src/features/imports/file.js';
import { ImportService } from '../../src/features/imports/service.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { createPerson } from '../helpers/identities.js';
import { DEFAULT_POLICY, totp } from '../second-factors/helpers.js';

/**
 * npm run users:import's runner (docs/import.md): every refusal of a bad line with its number,
 * idempotence by externalId, --update, --dry-run, a run stopped between batches then resumed from
 * its checkpoint, one audit record and one identity.created (source: import) per identity, no
 * notice or challenge; then a sign-in with the imported bcrypt hash and the imported TOTP secret.
 */

let t: TestApp;
let dir: string;
let service: ImportService;
let org: string;
const TOTP_SECRET = 'JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP';

beforeAll(async () => {
  t = await createTestApp({ env: { RATE_LIMIT_PROVES_A_PASSWORD: '100000/60' } });
  dir = mkdtempSync(join(tmpdir(), 'import-'));
  service = new ImportService({ ...t.ctx, weakHashes: false });
  org = randomUUID();
  const now = t.ctx.clock.now();
  await sql`INSERT INTO organizations (id, name, slug, created_by, created_at, updated_at)
            VALUES (${org}, 'Acme', ${`acme-${org.slice(0, 8)}`}, ${randomUUID()}, ${now}, ${now})`.execute(
    t.ctx.database.db,
  );
});
afterAll(async () => {
  await t.close();
});

function file(name: string, lines: (object | string)[]): string {
  const path = join(dir, name);
  writeFileSync(path, `${lines.map((l) => (typeof l === 'string' ? l : JSON.stringify(l))).join('\n')}\n`);
  return path;
}

function run(path: string, options: Partial<Parameters<typeof importFile>[1]['options']> = {}, extra = {}) {
  return importFile(service, {
    path,
    errorsPath: `${path}.errors.ndjson`,
    checkpointPath: `${path}.checkpoint`,
    options: { actor: 'cli', batchSize: 3, ...options },
    ...extra,
  });
}

function errors(path: string): { line: number; reason: string }[] {
  return readFileSync(`${path}.errors.ndjson`, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}

async function byExternalId(externalId: string) {
  return t.ctx.database.db
    .selectFrom('identities')
    .selectAll()
    .where('external_id', '=', externalId)
    .execute();
}

const tag = () => randomUUID().slice(0, 8);

describe('users:import', () => {
  it('imports an identity whole: identifiers, bcrypt hash, TOTP, link, membership, names; it signs in with both factors', async () => {
    const x = tag();
    const email = `ada-${x}@example.com`;
    const path = file(`whole-${x}.ndjson`, [
      {
        externalId: `auth0|${x}`,
        createdAt: '2021-03-04T05:06:07.000Z',
        identifiers: [
          { type: 'email', value: email, verified: true },
          { type: 'phone', value: '+33612345678', verified: false },
        ],
        password: bcrypt.hashSync('imported password', 10),
        totp: { secret: TOTP_SECRET, algorithm: 'SHA1', digits: 6, period: 30 },
        providerLinks: [{ provider: 'https://accounts.google.com', subject: `g-${x}` }],
        memberships: [{ organizationId: org, role: 'admin' }],
        givenName: 'Ada',
        familyName: 'Lovelace',
      },
    ]);
    const counts = await run(path);
    expect(counts).toMatchObject({ lines: 1, imported: 1, refused: 0 });
    const [row] = await byExternalId(`auth0|${x}`);
    expect(row).toMatchObject({ given_name: 'Ada', family_name: 'Lovelace' });
    expect(new Date(row!.created_at).toISOString()).toBe('2021-03-04T05:06:07.000Z');
    const db = t.ctx.database.db;
    const links = await db
      .selectFrom('provider_links')
      .selectAll()
      .where('identity_id', '=', row!.id)
      .execute();
    expect(links).toHaveLength(1);
    const members = await db
      .selectFrom('organization_memberships')
      .selectAll()
      .where('identity_id', '=', row!.id)
      .execute();
    expect(members).toMatchObject([{ organization_id: org, role: 'admin' }]);
    const audit = await db.selectFrom('audit_records').selectAll().where('target', '=', row!.id).execute();
    expect(audit.map((a) => a.name)).toEqual(['identity.imported']);
    const events = await db.selectFrom('events').selectAll().where('identity_id', '=', row!.id).execute();
    expect(events.map((e) => e.type)).toEqual(['identity.created']);
    expect((typeof events[0]!.data === 'string' ? JSON.parse(events[0]!.data) : events[0]!.data).source).toBe(
      'import',
    );
    // No sign-up code, confirmation or notice for an imported address.
    const challenges = await db
      .selectFrom('challenges')
      .select('id')
      .where('identity_id', '=', row!.id)
      .execute();
    expect(challenges).toHaveLength(0);

    const first = await t.app.inject({
      method: 'POST',
      url: '/api/v1/sign-ins',
      payload: { identifierType: 'email', identifier: email, password: 'imported password' },
    });
    expect(first.statusCode).toBe(201);
    expect(first.json().data.kind).toBe('second_factor_required');
    const ticket = first.json().data.secondFactorTicket as string;
    expect(ticket).toBeTruthy();
    const second = await t.app.inject({
      method: 'POST',
      url: '/api/v1/sign-ins/second-factors',
      payload: { secondFactorTicket: ticket, code: totp(TOTP_SECRET, DEFAULT_POLICY, t.clock.now()) },
    });
    expect(second.statusCode).toBe(201);
    const [after] = await byExternalId(`auth0|${x}`);
    expect(after!.password_hash!.startsWith('$argon2id$')).toBe(true);
  });

  it('refuses every bad line alone, with its number and reason, and imports the others', async () => {
    const x = tag();
    const taken = await createPerson(t.ctx);
    const ok = (n: number) => ({
      externalId: `ok-${x}-${n}`,
      identifiers: [{ type: 'email', value: `ok${n}-${x}@example.com`, verified: true }],
    });
    const path = file(`bad-${x}.ndjson`, [
      ok(1),
      '{not json',
      { identifiers: [] },
      {
        identifiers: [{ type: 'email', value: `u-${x}@example.com`, verified: true }],
        password: '$md5$nope',
      },
      { identifiers: [{ type: 'email', value: 'not an address', verified: true }] },
      { identifiers: [{ type: 'email', value: taken.email, verified: true }] },
      { identifiers: [{ type: 'email', value: `ok1-${x}@example.com`, verified: true }] },
      {
        identifiers: [{ type: 'email', value: `m-${x}@example.com`, verified: true }],
        memberships: [{ organizationId: randomUUID(), role: 'member' }],
      },
      {
        identifiers: [{ type: 'email', value: `w-${x}@example.com`, verified: true }],
        password: {
          format: 'salted-sha256',
          hash: 'ni3F0PdChjx29lJXyVhQ1FFFlRxdM4NtfSIxhUui0J8=',
          salt: 'ABEiM0RVZneImaq7zN3u/w==',
        },
      },
      {
        identifiers: [{ type: 'email', value: `f-${x}@example.com`, verified: true }],
        password: { format: 'firebase-scrypt', hash: 'aGFzaA==', salt: 'c2FsdA==' },
      },
      { identifiers: [{ type: 'phone', value: '0612345678', verified: true }] },
      { identifiers: [{ type: 'email', value: `e-${x}@example.com`, verified: true }], extra: true },
      ok(2),
    ]);
    const counts = await run(path);
    expect(counts).toMatchObject({ lines: 13, imported: 2, refused: 11 });
    const refused = errors(path);
    expect(refused.map((r) => r.line).sort((a, b) => a - b)).toEqual([2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
    const reason = (line: number) => refused.find((r) => r.line === line)!.reason;
    expect(reason(2)).toBe('not JSON');
    expect(reason(3)).toMatch(/schema.*identifiers/);
    expect(reason(4)).toBe('unknown or malformed password hash');
    expect(reason(5)).toMatch(/not usable/);
    expect(reason(6)).toMatch(/belongs to another identity/);
    expect(reason(7)).toMatch(/belongs to another identity|also on line 1/);
    expect(reason(8)).toMatch(/no organization/);
    expect(reason(9)).toMatch(/PASSWORD_WEAK_HASHES/);
    expect(reason(10)).toMatch(/Firebase/);
    expect(reason(11)).toMatch(/E\.164/);
    expect(reason(12)).toMatch(/schema/);
    expect(await byExternalId(`ok-${x}-2`)).toHaveLength(1);
  });

  it('is idempotent by externalId; --update updates; --dry-run writes nothing', async () => {
    const x = tag();
    const line = (given: string) => ({
      externalId: `kc-${x}`,
      identifiers: [{ type: 'email', value: `kc-${x}@example.com`, verified: true }],
      givenName: given,
    });
    const path = file(`again-${x}.ndjson`, [line('First')]);
    expect(await run(path)).toMatchObject({ imported: 1 });
    expect(await run(path, {}, { restart: true })).toMatchObject({ imported: 0, skipped: 1 });
    expect(await byExternalId(`kc-${x}`)).toHaveLength(1);
    const renamed = file(`again2-${x}.ndjson`, [
      { ...line('Second'), password: bcrypt.hashSync('from the source', 4) },
    ]);
    expect(await run(renamed, { update: true })).toMatchObject({ updated: 1 });
    const [updated] = await byExternalId(`kc-${x}`);
    expect(updated!.given_name).toBe('Second');
    expect(updated!.password_hash).toMatch(/^\$2b\$04\$/);
    // A password set here since is never replaced by the source's hash.
    const own = await t.ctx.passwords.hash('set here since');
    await sql`UPDATE identities SET password_hash = ${own} WHERE id = ${updated!.id}`.execute(
      t.ctx.database.db,
    );
    expect(await run(renamed, { update: true }, { restart: true })).toMatchObject({ updated: 1 });
    expect((await byExternalId(`kc-${x}`))[0]!.password_hash).toBe(own);

    const dry = file(`dry-${x}.ndjson`, [
      {
        externalId: `dry-${x}`,
        identifiers: [{ type: 'email', value: `dry-${x}@example.com`, verified: true }],
      },
      '{bad',
    ]);
    expect(await run(dry, { dryRun: true })).toMatchObject({ imported: 1, refused: 1 });
    expect(await byExternalId(`dry-${x}`)).toHaveLength(0);
  });

  it('a run stopped halfway resumes after its checkpoint: every line once', async () => {
    const x = tag();
    const lines = Array.from({ length: 10 }, (_, n) => ({
      externalId: `crash-${x}-${n}`,
      identifiers: [{ type: 'email', value: `crash${n}-${x}@example.com`, verified: true }],
    }));
    const path = file(`crash-${x}.ndjson`, lines);
    let batches = 0;
    await expect(
      run(
        path,
        {},
        {
          afterBatch: () => {
            if (++batches === 2) throw new Error('crash');
          },
        },
      ),
    ).rejects.toThrow('crash');
    const before = await t.ctx.database.db
      .selectFrom('identities')
      .select('external_id')
      .where('external_id', 'like', `crash-${x}-%`)
      .execute();
    expect(before).toHaveLength(6);
    const resumed = await run(path);
    expect(resumed).toMatchObject({ afterLine: 6, imported: 4, skipped: 0 });
    const after = await t.ctx.database.db
      .selectFrom('identities')
      .select('external_id')
      .where('external_id', 'like', `crash-${x}-%`)
      .execute();
    expect(after).toHaveLength(10);
  });
});
