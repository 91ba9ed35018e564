import { randomInt, randomUUID } from 'node:crypto';
import type { Static } from '@sinclair/typebox';
import type { AuditLog } from '../../platform/audit/audit.js';
import type { Clock } from '../../platform/clock.js';
import type { PasswordHasher } from '../../platform/crypto/passwords.js';
import type { CodeHasher } from '../../platform/crypto/tokens.js';
import type { Database, Executor } from '../../platform/db/database.js';
import type { CodeAttempt } from '../challenges/service.js';
import { findIdentity } from '../identities/repository.js';
import * as repo from './repository.js';
import type { RecoveryCodeBatchSchema, RecoveryCodeStatusSchema } from './schemas.js';

/** Ten codes per batch, four groups of four (docs/api.md, "4. Issue recovery codes"). */
export const BATCH_SIZE = 10;
const GROUPS = 4;
const GROUP_LENGTH = 4;
/**
 * 32 characters without the look-alikes I, O, 0 and 1, so a code read off paper is typed right.
 * 16 characters over 32 symbols is 80 bits per code.
 */
export const RECOVERY_ALPHABET = 'ABCDEFGHJKLMNPQRSTUVWXYZ23456789';
const NORMALISED = new RegExp(`^[A-Z0-9]{${GROUPS * GROUP_LENGTH}}$`);

export type RecoveryCodeBatch = Static<typeof RecoveryCodeBatchSchema>;

export type RecoveryCodeStatus = Static<typeof RecoveryCodeStatusSchema>;

function newCode(): string {
  const groups: string[] = [];
  for (let g = 0; g < GROUPS; g++) {
    let group = '';
    for (let i = 0; i < GROUP_LENGTH; i++) group += RECOVERY_ALPHABET[randomInt(RECOVERY_ALPHABET.length)];
    groups.push(group);
  }
  return groups.join('-');
}

/**
 * The form that is hashed: upper case, hyphens removed (a code is accepted in either case, with or
 * without hyphens: docs/api.md, "5. Sign in with the second step").
 */
export function normaliseRecoveryCode(code: string): string {
  return code.replace(/-/g, '').toUpperCase();
}

/** What issuing and counting recovery codes use. */
export interface RecoveryCodeServiceDeps {
  database: Database;
  clock: Clock;
  audit: AuditLog;
  codes: CodeHasher;
}

export class RecoveryCodeService {
  constructor(private readonly deps: RecoveryCodeServiceDeps) {}

  /**
   * The identity row is locked first, so concurrent issuances run one after the other and each
   * revokes the batch the previous one inserted: exactly one live batch of ten remains.
   */
  async issue(identityId: string): Promise<RecoveryCodeBatch> {
    const now = this.deps.clock.now();
    const codes = new Set<string>();
    while (codes.size < BATCH_SIZE) codes.add(newCode());
    const recoveryCodes = [...codes];
    await this.deps.database.db.transaction().execute(async (trx) => {
      await findIdentity(trx, identityId, true);
      await repo.revokeLiveCodes(trx, identityId, now);
      await repo.insertBatch(trx, {
        identityId,
        batchId: randomUUID(),
        codeHashes: recoveryCodes.map((c) => this.deps.codes.hash(normaliseRecoveryCode(c))),
        now,
      });
      await this.deps.audit.appendOwn(trx, 'identity.recovery_codes.issued', identityId, {
        count: BATCH_SIZE,
      });
    });
    return { recoveryCodes, issuedAt: now.toISOString() };
  }

  /** issuedAt is absent (not null) when nothing is live (docs/api.md, "4. Issue recovery codes"). */
  async status(identityId: string): Promise<RecoveryCodeStatus> {
    const s = await repo.liveStatus(this.deps.database.db, identityId);
    return s.remaining > 0 && s.issuedAt
      ? { remaining: s.remaining, issuedAt: new Date(s.issuedAt).toISOString() }
      : { remaining: 0 };
  }
}

/** What spending a recovery code uses. */
export interface UseRecoveryCodeDeps {
  audit: AuditLog;
  codes: CodeHasher;
  /** Verifies imported codes, kept in their source system's hash (the password verifiers). */
  passwords: Pick<PasswordHasher, 'verify'>;
}

/**
 * Spends one live recovery code of the identity inside the caller's transaction. The keyed hash is
 * computed whatever the input, so a malformed code costs what a wrong one does. When no keyed hash
 * matches, the code is compared, as typed (surrounding spaces removed), with each live imported
 * code of the identity by the password verifiers, and the first match is spent by compare-and-set
 * (docs/decisions.md, "Imported recovery codes": the time this takes is seen only by someone who
 * already holds a second-factor ticket or a session of the account).
 */
export async function useRecoveryCode(
  trx: Executor,
  deps: UseRecoveryCodeDeps,
  attempt: CodeAttempt,
): Promise<boolean> {
  const { identityId, code, now } = attempt;
  const normalised = normaliseRecoveryCode(code);
  const hash = deps.codes.hash(normalised);
  const own = NORMALISED.test(normalised) && (await repo.useCode(trx, identityId, hash, now));
  if (!own && !(await useImportedCode(trx, deps, attempt))) return false;
  const { remaining } = await repo.liveStatus(trx, identityId);
  await deps.audit.appendOwn(trx, 'identity.recovery_code.used', identityId, { remaining });
  return true;
}

async function useImportedCode(
  trx: Executor,
  deps: UseRecoveryCodeDeps,
  { identityId, code, now }: CodeAttempt,
): Promise<boolean> {
  const typed = code.trim();
  if (typed === '') return false;
  for (const c of await repo.liveImportedCodes(trx, identityId)) {
    if (await deps.passwords.verify(c.codeHash, typed)) return repo.useImportedCode(trx, c.id, now);
  }
  return false;
}
