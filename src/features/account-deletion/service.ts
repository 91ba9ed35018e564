import type { RequestMeta, SessionPrincipal } from '../../platform/http/auth.js';
import { sessionRequired } from '../../platform/http/problem.js';
import { Problem } from '../../platform/problem.js';
import type { Locale } from '../../shared/locales.js';
import { AdminService, type AdminServiceDeps } from '../admin/service.js';
import { confirms } from '../identities/confirmation.js';
import { type IdentifierRow, localeOf, verifiedIdentifiers } from '../identities/repository.js';
import type { SecurityNotices } from '../security-notices/service.js';
import { lockCallerSession } from '../sessions/revocations.js';

/** What the deletion uses: the erasure's own dependencies, and the notices. */
export interface AccountDeletionDeps extends AdminServiceDeps {
  securityNotices: SecurityNotices;
}

/**
 * The person's own deletion of their account (docs/api.md, "Delete my account"): the operator's
 * erasure (AdminService.erase, docs/admin.md), with the same rules and effects, acted by the
 * identity itself. Under the erasure's identity row lock, before anything is erased, the caller's
 * session must still be live (a second deletion racing the first finds it ended: 401) and the
 * identifier typed must be one of the account's; the last owner of an organization with other
 * members is refused by the erasure itself, in the person's words here. Once committed, a notice
 * goes to every verified address the account had.
 */
export class AccountDeletionService {
  readonly #erasure: AdminService;

  constructor(private readonly deps: AccountDeletionDeps) {
    this.#erasure = new AdminService(deps);
  }

  async delete(principal: SessionPrincipal, typed: string, meta: RequestMeta): Promise<void> {
    const { identityId, sessionId } = principal;
    let told: IdentifierRow[] = [];
    let locale: Locale = 'en';
    try {
      await this.#erasure.erase(identityId, identityId, async (trx, identity) => {
        if (!identity || identity.erasedAt !== null) throw sessionRequired();
        await lockCallerSession(trx, identity, sessionId);
        const identifiers = await verifiedIdentifiers(trx, identityId);
        if (!confirms(typed, identifiers)) throw new Problem('identity.account_deletion_refused');
        told = identifiers;
        locale = localeOf(identity);
      });
    } catch (err) {
      if (err instanceof Problem && err.code === 'organization.last_owner_erasure') {
        throw new Problem('identity.account_deletion_last_owner');
      }
      throw err;
    }
    this.deps.securityNotices.accountDeleted(told, locale, this.deps.clock.now(), meta);
  }
}
