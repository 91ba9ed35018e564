import { sql } from 'kysely';
import type { Executor } from '../../platform/db/database.js';
import type { KeysetWindow } from '../../platform/pagination/page.js';
import { afterPosition, newestFirst } from '../../platform/pagination/repository.js';
import { passwordMethodId } from './password-method.js';

export interface MethodRow {
  id: string;
  kind: 'email' | 'phone' | 'password' | 'provider' | 'passkey';
  /** Identifier value (unmasked, masked by the service), provider name or passkey label; null for the password. */
  detail: string | null;
  verified_at: Date;
  last_used_at: Date | null;
}

/**
 * Every verified method of an identity, newest first with the id as unique tiebreak: verified
 * identifiers, the password (under its derived id; last used = its latest successful sign-in),
 * live provider links and live passkeys.
 */
export async function methodsPage(
  trx: Executor,
  identityId: string,
  window: KeysetWindow,
): Promise<MethodRow[]> {
  const passwordId = passwordMethodId(identityId);
  const r = await sql<MethodRow>`
    SELECT m.id, m.kind, m.detail, m.verified_at, m.last_used_at FROM (
      SELECT f.id, f.type AS kind, f.value AS detail, f.verified_at, f.last_used_at
      FROM identifiers f
      WHERE f.identity_id = ${identityId} AND f.verified_at IS NOT NULL AND f.removed_at IS NULL
      UNION ALL
      SELECT ${passwordId}::uuid, 'password', NULL, COALESCE(i.password_changed_at, i.created_at),
        (SELECT max(a.occurred_at) FROM sign_in_attempts a
         WHERE a.identity_id = i.id AND a.method = 'password' AND a.outcome = 'succeeded')
      FROM identities i WHERE i.id = ${identityId} AND i.password_hash IS NOT NULL
      UNION ALL
      SELECT l.id, 'provider', l.provider, l.created_at, l.last_used_at
      FROM provider_links l WHERE l.identity_id = ${identityId} AND l.removed_at IS NULL
      UNION ALL
      SELECT k.id, 'passkey', k.label, k.created_at, k.last_used_at
      FROM passkeys k WHERE k.identity_id = ${identityId} AND k.removed_at IS NULL
    ) m
    WHERE ${afterPosition('m.verified_at', window, 'm.id')}
    ${newestFirst('m.verified_at', window, 'm.id')}`.execute(trx);
  return r.rows;
}
