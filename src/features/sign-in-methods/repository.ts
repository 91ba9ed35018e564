import type { Executor } from '../../platform/db/database.js';
import type { KeysetWindow } from '../../platform/pagination/page.js';
import { afterPosition, rowsToFetch } from '../../platform/pagination/repository.js';
import { passwordMethodId } from './password-method.js';

export interface MethodRow {
  id: string;
  kind: 'email' | 'phone' | 'password' | 'provider' | 'passkey';
  /** Identifier value (unmasked, masked by the service), provider name or passkey label; null for the password. */
  detail: string | null;
  verifiedAt: Date;
  lastUsedAt: Date | null;
}

/**
 * Every verified method of an identity, newest first with the id as unique tiebreak: verified
 * identifiers, the password (under its derived id; last used = its latest successful sign-in),
 * live provider links and live passkeys.
 */
export function methodsPage(trx: Executor, identityId: string, window: KeysetWindow): Promise<MethodRow[]> {
  const passwordId = passwordMethodId(identityId);
  const methods = trx
    .selectFrom('identifiers as f')
    .select(['f.id', 'f.type as kind', 'f.value as detail', 'f.verified_at', 'f.last_used_at'])
    .where('f.identity_id', '=', identityId)
    .where('f.verified_at', 'is not', null)
    .where('f.removed_at', 'is', null)
    // The union's row: verified_at is never null here (filtered above); the password has no detail.
    .$castTo<{
      id: string;
      kind: string;
      detail: string | null;
      verified_at: Date;
      last_used_at: Date | null;
    }>()
    .unionAll(
      trx
        .selectFrom('identities as i')
        .select((eb) => [
          eb.cast<string>(eb.val(passwordId), 'uuid').as('id'),
          eb.val('password').as('kind'),
          eb.lit(null).as('detail'),
          eb.fn.coalesce('i.password_changed_at', 'i.created_at').as('verified_at'),
          eb
            .selectFrom('sign_in_attempts as a')
            .select((a) => a.fn.max('a.occurred_at').as('occurred_at'))
            .whereRef('a.identity_id', '=', 'i.id')
            .where('a.method', '=', 'password')
            .where('a.outcome', '=', 'succeeded')
            .as('last_used_at'),
        ])
        .where('i.id', '=', identityId)
        .where('i.password_hash', 'is not', null),
    )
    .unionAll(
      trx
        .selectFrom('provider_links as l')
        .select((eb) => [
          'l.id',
          eb.val('provider').as('kind'),
          'l.provider as detail',
          'l.created_at as verified_at',
          'l.last_used_at',
        ])
        .where('l.identity_id', '=', identityId)
        .where('l.removed_at', 'is', null),
    )
    .unionAll(
      trx
        .selectFrom('passkeys as k')
        .select((eb) => [
          'k.id',
          eb.val('passkey').as('kind'),
          'k.label as detail',
          'k.created_at as verified_at',
          'k.last_used_at',
        ])
        .where('k.identity_id', '=', identityId)
        .where('k.removed_at', 'is', null),
    )
    .as('m');
  return trx
    .selectFrom(methods)
    .select(['m.id', 'm.kind', 'm.detail', 'm.verified_at as verifiedAt', 'm.last_used_at as lastUsedAt'])
    .$narrowType<{ kind: MethodRow['kind'] }>()
    .where(afterPosition('m.verified_at', window, 'm.id'))
    .orderBy('m.verified_at', 'desc')
    .orderBy('m.id', 'desc')
    .limit(rowsToFetch(window))
    .execute();
}
