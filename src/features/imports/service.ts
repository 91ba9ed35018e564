import { randomUUID } from 'node:crypto';
import { Ajv } from 'ajv';
import addFormats from 'ajv-formats';
import type { AuditLog } from '../../platform/audit/audit.js';
import type { Clock } from '../../platform/clock.js';
import {
  type FirebaseHashParameters,
  normaliseImportedPassword,
} from '../../platform/crypto/imported-hashes.js';
import type { PasswordHasher } from '../../platform/crypto/passwords.js';
import type { Sealer } from '../../platform/crypto/seal.js';
import type { Db, Executor } from '../../platform/db/database.js';
import type { Locale } from '../../shared/locales.js';
import type { EventLog } from '../events/log.js';
import { insertHashProfile, knownHashProfiles } from '../identities/hash-profiles-repository.js';
import { normaliseEmail, normalisePhone } from '../identities/identifier.js';
import { normaliseName, profileJson } from '../identities/profile.js';
import {
  type ImportedIdentityRow,
  identitiesByExternalId,
  insertImportedIdentities,
  liveIdentifiersAmong,
  updateImportedIdentity,
} from '../identities/repository.js';
import { existingOrganizations, insertImportedMemberships } from '../organizations/repository.js';
import { insertImportedLinks, liveLinksAmong } from '../providers/repository.js';
import { insertImportedCodes } from '../recovery-codes/repository.js';
import { insertImportedFactors } from '../second-factors/repository.js';
import { LineTooLong } from './lines.js';
import { type ImportLine, ImportLineSchema } from './schemas.js';

/** What an import uses: the database, the chain and the events, the sealer for TOTP secrets. */
export interface ImportDeps {
  database: { db: Db };
  clock: Clock;
  audit: Pick<AuditLog, 'appendMany'>;
  events: Pick<EventLog, 'appendMany'>;
  sealer: Pick<Sealer, 'seal'>;
  passwords: Pick<PasswordHasher, 'sampleLike'>;
  /** Told after a batch brought a new hash profile, so this process's sign-ins measure it at once. */
  hashProfiles?: { invalidate(): void };
  weakHashes: boolean;
}

export interface ImportOptions {
  /** Who runs it, as the audit records name it (`admin:<key>` or `cli`). */
  actor: string;
  /** An identity whose externalId exists already is updated (names, locale, password) instead of skipped. */
  update?: boolean;
  /** Everything validated and written, then rolled back: nothing stays. */
  dryRun?: boolean;
  firebase?: FirebaseHashParameters;
  /** Lines per transaction (500). */
  batchSize?: number;
  /** Lines up to this number were committed by an earlier run (the checkpoint): skipped unread. */
  afterLine?: number;
}

export interface ImportCounts {
  /** Lines read (empty lines and lines before the checkpoint not counted). */
  lines: number;
  imported: number;
  updated: number;
  /** An externalId already imported, without `update`. */
  skipped: number;
  refused: number;
}

export interface ImportRefusal {
  line: number;
  externalId?: string;
  reason: string;
}

export interface ImportObserver {
  refused?(r: ImportRefusal): void | Promise<void>;
  /** After each committed batch: the counts so far and the last line it covered (the checkpoint). */
  committed?(counts: ImportCounts, lastLine: number): void | Promise<void>;
}

interface Prepared {
  line: number;
  externalId: string | null;
  identity: ImportedIdentityRow;
  profile?: { profile: string; stored: string };
  totp?: { secret: string; algorithm: 'SHA1' | 'SHA256' | 'SHA512'; digits: number; period: number };
  links: { provider: string; subject: string }[];
  /** Imported recovery codes, each its source hash in stored form. */
  recoveryCodes: string[];
  memberships: { organizationId: string; role: string }[];
}

const ajv = new Ajv({ allErrors: false, strict: false });
addFormats.default(ajv);
const validateLine = ajv.compile<ImportLine>(ImportLineSchema);

/** Longest line read (a line is one identity: far below this). */
export const MAX_LINE_BYTES = 64 * 1024;

class Rollback extends Error {}

/** SQLSTATEs a line's data can cause: unique, check and foreign-key violations, a value too long. */
const LINE_ERRORS = new Set(['23505', '23514', '23503', '22001']);

/**
 * The import (docs/import.md): NDJSON read as a stream, one identity per line, validated alone;
 * valid lines are written in batches, one transaction each, with their identifiers, second
 * factor, provider links and memberships, one audit record (`identity.imported`) and one
 * `identity.created` event (`source: import`) per identity. A line is imported whole or refused
 * whole with its number and reason; a batch that meets a concurrent write is retried line by line.
 * No notice or confirmation message is sent. Idempotent by externalId.
 */
export class ImportService {
  #profiles: Set<string> | undefined;

  constructor(private readonly deps: ImportDeps) {}

  async run(
    lines: AsyncIterable<string | LineTooLong>,
    opts: ImportOptions,
    observer: ImportObserver = {},
  ): Promise<ImportCounts> {
    const counts: ImportCounts = { lines: 0, imported: 0, updated: 0, skipped: 0, refused: 0 };
    const size = opts.batchSize ?? 500;
    this.#profiles ??= await knownHashProfiles(this.deps.database.db);
    let batch: Prepared[] = [];
    let lineNo = 0;
    const refuse = async (r: ImportRefusal) => {
      counts.refused++;
      await observer.refused?.(r);
    };
    const flush = async () => {
      const lastLine = lineNo;
      if (batch.length > 0) await this.#flush(batch, opts, counts, refuse);
      batch = [];
      await observer.committed?.(counts, lastLine);
    };
    for await (const text of lines) {
      lineNo++;
      if (opts.afterLine !== undefined && lineNo <= opts.afterLine) continue;
      if (text instanceof LineTooLong) {
        counts.lines++;
        await refuse({ line: lineNo, reason: `the line is longer than ${text.maxBytes} bytes` });
        continue;
      }
      if (text.trim() === '') continue;
      counts.lines++;
      const prepared = this.#prepare(lineNo, text, opts);
      if ('reason' in prepared) await refuse(prepared);
      else batch.push(prepared);
      if (batch.length >= size) await flush();
    }
    await flush();
    return counts;
  }

  #prepare(line: number, text: string, opts: ImportOptions): Prepared | ImportRefusal {
    // The splitter refuses longer lines as they arrive; a caller feeding lines itself meets this.
    if (Buffer.byteLength(text) > MAX_LINE_BYTES)
      return { line, reason: `the line is longer than ${MAX_LINE_BYTES} bytes` };
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      return { line, reason: 'not JSON' };
    }
    if (!validateLine(value)) {
      const e = validateLine.errors?.[0];
      return {
        line,
        reason: `does not match the schema: ${e?.instancePath || '/'} ${e?.message ?? ''}`.trim(),
      };
    }
    const l = value;
    const externalId = l.externalId ?? undefined;
    const fail = (reason: string): ImportRefusal => ({ line, ...(externalId ? { externalId } : {}), reason });
    const createdAt = l.createdAt ? new Date(l.createdAt) : this.deps.clock.now();
    if (Number.isNaN(createdAt.getTime())) return fail('createdAt is not a date');
    const identifiers: ImportedIdentityRow['identifiers'] = [];
    const seen = new Set<string>();
    for (const f of l.identifiers) {
      const value =
        f.type === 'email'
          ? normaliseEmail(f.value)
          : f.value.startsWith('+')
            ? normalisePhone(f.value, 'US')
            : null;
      if (!value)
        return fail(
          `the ${f.type} ${JSON.stringify(f.value)} is not usable${f.type === 'phone' ? ' (E.164, starting with +)' : ''}`,
        );
      if (seen.has(`${f.type}:${value}`)) return fail(`the ${f.type} ${value} is listed twice`);
      seen.add(`${f.type}:${value}`);
      identifiers.push({ id: randomUUID(), type: f.type, value, verifiedAt: f.verified ? createdAt : null });
    }
    let passwordHash: string | null = null;
    let profile: Prepared['profile'];
    if (l.password !== undefined) {
      const n = normaliseImportedPassword(l.password, {
        firebase: opts.firebase,
        weakHashes: this.deps.weakHashes,
      });
      if (!n.ok) return fail(n.reason);
      passwordHash = n.stored;
      // Every imported profile, Argon2id too (its parameters may be the source's, not ours): the
      // refusal floor covers whatever an account may hold.
      profile = { profile: n.parsed.profile, stored: n.stored };
    }
    const recoveryCodes: string[] = [];
    for (const [i, c] of (l.recoveryCodes ?? []).entries()) {
      const n = normaliseImportedPassword(c, { firebase: opts.firebase, weakHashes: this.deps.weakHashes });
      if (!n.ok) return fail(`recovery code ${i + 1}: ${n.reason.replace('password hash', 'hash')}`);
      recoveryCodes.push(n.stored);
    }
    const names = {
      givenName: normaliseName(l.givenName ?? null),
      familyName: normaliseName(l.familyName ?? null),
      displayName: normaliseName(l.displayName ?? null),
    };
    const totp = l.totp
      ? {
          secret: l.totp.secret.replace(/[ =]/g, '').toUpperCase(),
          algorithm: l.totp.algorithm ?? 'SHA1',
          digits: l.totp.digits ?? 6,
          period: l.totp.period ?? 30,
        }
      : undefined;
    const links = l.providerLinks ?? [];
    if (new Set(links.map((k) => `${k.provider} ${k.subject}`)).size !== links.length)
      return fail('a provider link is listed twice');
    const memberships = l.memberships ?? [];
    if (new Set(memberships.map((m) => m.organizationId)).size !== memberships.length) {
      return fail('an organization is listed twice in memberships');
    }
    return {
      line,
      externalId: externalId ?? null,
      identity: {
        id: randomUUID(),
        externalId: externalId ?? null,
        createdAt,
        passwordHash,
        names,
        locale: (l.locale ?? null) as Locale | null,
        identifiers,
      },
      profile,
      totp,
      links,
      recoveryCodes,
      memberships,
    };
  }

  async #flush(
    batch: Prepared[],
    opts: ImportOptions,
    counts: ImportCounts,
    refuse: (r: ImportRefusal) => Promise<void>,
  ): Promise<void> {
    // New hash profiles first, outside the transaction: a sample (bcrypt 12, say) takes a while.
    const fresh = new Map<string, string>();
    for (const p of batch) {
      if (p.profile && !this.#profiles!.has(p.profile.profile) && !fresh.has(p.profile.profile)) {
        const sample = await this.deps.passwords.sampleLike(p.profile.stored);
        if (sample) fresh.set(p.profile.profile, sample);
      }
    }
    try {
      const outcome = await this.#write(batch, opts, fresh);
      await this.#settle(outcome, counts, refuse, fresh, opts);
    } catch (err) {
      // Only what a line's own data can cause is a refusal; anything else (the database gone, say)
      // stops the run, which resumes from its checkpoint.
      if (!LINE_ERRORS.has(String((err as { code?: unknown })?.code))) throw err;
      if (batch.length === 1) {
        const p = batch[0]!;
        await refuse({
          line: p.line,
          ...(p.externalId ? { externalId: p.externalId } : {}),
          reason: `refused by the database (a concurrent write holds one of its identifiers, links or its externalId): ${conflictName(err)}`,
        });
        return;
      }
      // One line met a concurrent write (a sign-up of the same address, say): each alone, so the
      // others still go in and the one is refused with its reason.
      for (const p of batch) await this.#flush([p], opts, counts, refuse);
    }
  }

  async #settle(
    outcome: WriteOutcome,
    counts: ImportCounts,
    refuse: (r: ImportRefusal) => Promise<void>,
    fresh: Map<string, string>,
    opts: ImportOptions,
  ): Promise<void> {
    for (const r of outcome.refused) await refuse(r);
    counts.imported += outcome.imported;
    counts.updated += outcome.updated;
    counts.skipped += outcome.skipped;
    if (!opts.dryRun && fresh.size > 0) {
      for (const k of fresh.keys()) this.#profiles!.add(k);
      this.deps.hashProfiles?.invalidate();
    }
  }

  async #write(batch: Prepared[], opts: ImportOptions, fresh: Map<string, string>): Promise<WriteOutcome> {
    const out: WriteOutcome = { refused: [], imported: 0, updated: 0, skipped: 0 };
    const now = this.deps.clock.now();
    try {
      await this.deps.database.db.transaction().execute(async (trx) => {
        await this.#writeIn(trx, batch, opts, fresh, now, out);
        if (opts.dryRun) throw new Rollback();
      });
    } catch (err) {
      if (!(err instanceof Rollback)) throw err;
    }
    return out;
  }

  async #writeIn(
    trx: Executor,
    batch: Prepared[],
    opts: ImportOptions,
    fresh: Map<string, string>,
    now: Date,
    out: WriteOutcome,
  ): Promise<void> {
    const refused = (p: Prepared, reason: string) =>
      out.refused.push({ line: p.line, ...(p.externalId ? { externalId: p.externalId } : {}), reason });
    // Within the batch: the first line holding an address, a link or an externalId keeps it.
    const claimed = new Map<string, number>();
    const unique: Prepared[] = [];
    for (const p of batch) {
      const keys = [
        ...(p.externalId ? [`x:${p.externalId}`] : []),
        ...p.identity.identifiers.map((f) => `i:${f.type}:${f.value}`),
        ...p.links.map((k) => `l:${k.provider} ${k.subject}`),
      ];
      const clash = keys.find((k) => claimed.has(k));
      if (clash) {
        refused(p, `${describeKey(clash)} is also on line ${claimed.get(clash)}`);
        continue;
      }
      for (const k of keys) claimed.set(k, p.line);
      unique.push(p);
    }
    const existing = await identitiesByExternalId(
      trx,
      unique.flatMap((p) => (p.externalId ? [p.externalId] : [])),
    );
    const fresh_: Prepared[] = [];
    const updates: { p: Prepared; id: string; keepPassword: boolean }[] = [];
    for (const p of unique) {
      const found = p.externalId ? existing.get(p.externalId) : undefined;
      if (!found) fresh_.push(p);
      else if (opts.update) {
        // A password the person set or proved here (Argon2id now) is theirs: an update from the
        // source never puts the old system's hash back over it.
        const keepPassword = found.passwordHash?.startsWith('$argon2id$') ?? false;
        updates.push({ p, id: found.id, keepPassword });
      } else out.skipped++;
    }
    const held = await liveIdentifiersAmong(
      trx,
      fresh_.flatMap((p) => p.identity.identifiers),
    );
    const linked = await liveLinksAmong(
      trx,
      fresh_.flatMap((p) => p.links),
    );
    const orgs = await existingOrganizations(
      trx,
      fresh_.flatMap((p) => p.memberships.map((m) => m.organizationId)),
    );
    const accepted: Prepared[] = [];
    for (const p of fresh_) {
      const taken = p.identity.identifiers.find((f) => held.has(`${f.type}:${f.value}`));
      if (taken) {
        refused(p, `the ${taken.type} ${taken.value} belongs to another identity`);
        continue;
      }
      const link = p.links.find((k) => linked.has(`${k.provider} ${k.subject}`));
      if (link) {
        refused(p, `the provider link ${link.provider} ${link.subject} belongs to another identity`);
        continue;
      }
      const org = p.memberships.find((m) => !orgs.has(m.organizationId));
      if (org) {
        refused(p, `no organization ${org.organizationId}`);
        continue;
      }
      accepted.push(p);
    }
    await insertImportedIdentities(
      trx,
      accepted.map((p) => p.identity),
    );
    await insertImportedFactors(
      trx,
      accepted.flatMap((p) => {
        if (!p.totp) return [];
        const id = randomUUID();
        const { secret, ...policy } = p.totp;
        // The row id as associated data, as at enrolment (second-factors/service.ts).
        return [
          { id, identityId: p.identity.id, sealedSecret: this.deps.sealer.seal(secret, id), ...policy, now },
        ];
      }),
    );
    await insertImportedCodes(
      trx,
      accepted.flatMap((p) => {
        const batchId = randomUUID();
        return p.recoveryCodes.map((codeHash) => ({ identityId: p.identity.id, batchId, codeHash, now }));
      }),
    );
    await insertImportedLinks(
      trx,
      accepted.flatMap((p) =>
        p.links.map((k) => ({ id: randomUUID(), identityId: p.identity.id, ...k, now })),
      ),
    );
    await insertImportedMemberships(
      trx,
      accepted.flatMap((p) => p.memberships.map((m) => ({ ...m, identityId: p.identity.id, now }))),
    );
    for (const { p, id, keepPassword } of updates) {
      await updateImportedIdentity(trx, id, {
        names: p.identity.names,
        locale: p.identity.locale,
        ...(p.identity.passwordHash && !keepPassword ? { passwordHash: p.identity.passwordHash } : {}),
      });
    }
    for (const [profile, sampleHash] of fresh) await insertHashProfile(trx, { profile, sampleHash }, now);
    await this.deps.events.appendMany(
      trx,
      'identity.created',
      accepted.map((p) => ({
        actor: opts.actor,
        identityId: p.identity.id,
        data: { ...importedJson(p.identity), source: 'import' },
      })),
    );
    await this.deps.events.appendMany(
      trx,
      'identity.updated',
      updates.map(({ p, id }) => ({
        actor: opts.actor,
        identityId: id,
        data: { ...importedJson({ ...p.identity, id }), source: 'import' },
      })),
    );
    // Last: the audit head's lock is held until the commit.
    await this.deps.audit.appendMany(trx, [
      ...accepted.map((p) => ({
        name: 'identity.imported',
        actor: opts.actor,
        target: p.identity.id,
        outcome: 'success' as const,
        details: { externalId: p.externalId, line: p.line },
      })),
      ...updates.map(({ p, id }) => ({
        name: 'identity.import_updated',
        actor: opts.actor,
        target: id,
        outcome: 'success' as const,
        details: { externalId: p.externalId, line: p.line },
      })),
    ]);
    out.imported += accepted.length;
    out.updated += updates.length;
  }
}

interface WriteOutcome {
  refused: ImportRefusal[];
  imported: number;
  updated: number;
  skipped: number;
}

function describeKey(key: string): string {
  if (key.startsWith('x:')) return `the externalId ${key.slice(2)}`;
  if (key.startsWith('i:')) return `the identifier ${key.slice(2).replace(':', ' ')}`;
  return `the provider link ${key.slice(2)}`;
}

function conflictName(err: unknown): string {
  const constraint = (err as { constraint?: unknown })?.constraint;
  if (typeof constraint === 'string') return constraint;
  const message = err instanceof Error ? err.message : String(err);
  return /"([a-z_]+)"/.exec(message)?.[1] ?? 'conflict';
}

/** The identity as its events show it (identities/events.ts identityJson), from what was imported. */
function importedJson(i: ImportedIdentityRow) {
  return {
    id: i.id,
    createdAt: i.createdAt.toISOString(),
    locale: i.locale ?? 'en',
    ...profileJson(i.names),
    identifiers: i.identifiers.map((f) => ({
      id: f.id,
      type: f.type,
      value: f.value,
      verifiedAt: f.verifiedAt ? f.verifiedAt.toISOString() : null,
    })),
    disabledAt: null,
    erasedAt: null,
  };
}
