import { type ExpressionBuilder, sql } from 'kysely';
import type { Executor } from '../../../platform/db/database.js';
import type { DB as Tables } from '../../../platform/db/schema.js';

/**
 * Reads of "require SSO" (docs/sso.md, "Require SSO"), and the lock per domain its sweeps take. Writes nothing: the setting itself is a
 * column of `organizations` (../repository.ts writes it). The requirement is in force for an
 * organization that turned it on, is not disabled and has an enabled connection (SAML or OpenID): with no way
 * in through its IdP, nobody of its domains is locked out.
 */

// The same text as the index identifiers_email_domain (migration 0036), so the planner can use it.
const EMAIL_DOMAIN = sql<string>`split_part(i.value, '@', 2)`;

/** The organization `o` requires SSO and has an enabled connection (SAML or OpenID) to sign in through. */
function inForce(eb: ExpressionBuilder<Tables & { o: Tables['organizations'] }, 'o'>) {
  return eb.and([
    eb('o.require_sso', '=', true),
    eb('o.disabled_at', 'is', null),
    eb.exists(
      eb
        .selectFrom('sso_connections as c')
        .select('c.id')
        .whereRef('c.organization_id', '=', 'o.id')
        .where('c.enabled', '=', true),
    ),
  ]);
}

/** Whether an organization in force requires SSO for this (normalised) domain. */
export async function domainRequiresSso(trx: Executor, domain: string): Promise<boolean> {
  const row = await trx
    .selectFrom('organization_domains as d')
    .innerJoin('organizations as o', 'o.id', 'd.organization_id')
    .select('o.id')
    .where('d.domain', '=', domain)
    .where('d.verified_at', 'is not', null)
    .where(inForce)
    .executeTakeFirst();
  return row !== undefined;
}

/** Whether the identity holds a verified email in a domain whose organization requires SSO. */
export async function identityRequiresSso(trx: Executor, identityId: string): Promise<boolean> {
  const row = await trx
    .selectFrom('identifiers as i')
    .innerJoin('organization_domains as d', (j) =>
      j.on((eb) => eb('d.domain', '=', EMAIL_DOMAIN)).on('d.verified_at', 'is not', null),
    )
    .innerJoin('organizations as o', 'o.id', 'd.organization_id')
    .select('o.id')
    .where('i.identity_id', '=', identityId)
    .where('i.type', '=', 'email')
    .where('i.verified_at', 'is not', null)
    .where('i.removed_at', 'is', null)
    .where(inForce)
    .executeTakeFirst();
  return row !== undefined;
}

/** The identities holding a verified email in one of the organization's verified domains. */
export async function identitiesInDomains(trx: Executor, organizationId: string): Promise<string[]> {
  const rows = await verifiedEmailHolders(trx)
    .innerJoin('organization_domains as d', (j) =>
      j.on((eb) => eb('d.domain', '=', EMAIL_DOMAIN)).on('d.verified_at', 'is not', null),
    )
    .where('d.organization_id', '=', organizationId)
    .execute();
  return rows.map((r) => r.identity_id);
}

/** The identities holding a verified email in `domain` (a normalised domain). */
export async function identitiesInDomain(trx: Executor, domain: string): Promise<string[]> {
  const rows = await verifiedEmailHolders(trx).where(EMAIL_DOMAIN, '=', domain).execute();
  return rows.map((r) => r.identity_id);
}

/** The identities holding a live verified email (`i`), each once, in id order; the callers narrow it. */
function verifiedEmailHolders(trx: Executor) {
  return trx
    .selectFrom('identifiers as i')
    .select('i.identity_id')
    .distinct()
    .where('i.type', '=', 'email')
    .where('i.verified_at', 'is not', null)
    .where('i.removed_at', 'is', null)
    .orderBy('i.identity_id');
}

/** The organization's verified domains. */
export async function verifiedDomainsOf(trx: Executor, organizationId: string): Promise<string[]> {
  const rows = await trx
    .selectFrom('organization_domains')
    .select('domain')
    .where('organization_id', '=', organizationId)
    .where('verified_at', 'is not', null)
    .orderBy('domain')
    .execute();
  return rows.map((r) => r.domain);
}

/** What turning the requirement on needs: a verified domain and an enabled connection (SAML or OpenID). */
export async function readiness(
  trx: Executor,
  organizationId: string,
): Promise<{ verifiedDomains: number; enabledConnections: number }> {
  const domains = await trx
    .selectFrom('organization_domains')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('organization_id', '=', organizationId)
    .where('verified_at', 'is not', null)
    .executeTakeFirstOrThrow();
  const connections = await trx
    .selectFrom('sso_connections')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('organization_id', '=', organizationId)
    .where('enabled', '=', true)
    .executeTakeFirstOrThrow();
  return { verifiedDomains: Number(domains.n), enabledConnections: Number(connections.n) };
}

// The advisory-lock class of "require SSO"'s domains (any fixed 32-bit number; the second key is
// the domain's hashtext: two domains sharing a hash only serialise a little more).
const DOMAIN_LOCK_CLASS = 4_705;

/**
 * The lock that serialises, per email domain, everything that can put an identity under "require
 * SSO" (docs/decisions.md, "Require SSO: sessions swept on a new domain or address"): turning the
 * requirement on (each of the organization's verified domains), a domain becoming verified, and an
 * address of the domain becoming verified. Each of them reads the others' writes only after this
 * lock, so of two at once the second sees the first's commit and sweeps what the first could not.
 * Transaction-scoped; taken in a fixed order, and always before any identity row is locked.
 */
export async function lockSsoDomains(trx: Executor, domains: readonly string[]): Promise<void> {
  for (const domain of [...new Set(domains)].sort()) {
    await trx
      .selectNoFrom((eb) =>
        eb
          .fn<void>('pg_advisory_xact_lock', [
            eb.lit(DOMAIN_LOCK_CLASS),
            eb.fn<number>('hashtext', [eb.val(domain)]),
          ])
          .as('locked'),
      )
      .execute();
  }
}
