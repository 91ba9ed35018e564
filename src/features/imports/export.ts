import type { Sealer } from '../../platform/crypto/seal.js';
import type { Db } from '../../platform/db/database.js';
import { identitiesForExport } from '../identities/repository.js';
import { membershipsForExport } from '../organizations/repository.js';
import { linksForExport } from '../providers/repository.js';
import { importedCodesForExport } from '../recovery-codes/repository.js';
import { factorsForExport } from '../second-factors/repository.js';
import type { ImportLine } from './schemas.js';

/** What an export reads: the database, and the sealer when TOTP secrets are asked for. */
export interface ExportDeps {
  database: { db: Db };
  sealer: Pick<Sealer, 'open'>;
}

export interface ExportOptions {
  /** TOTP secrets decrypted into the file (`--totp-secrets`): without it no line carries one. */
  totpSecrets: boolean;
  /** Identities per read (500). */
  pageSize?: number;
}

/**
 * The way out (docs/import.md, "From this service"): every identity not erased, as the import reads
 * it, one NDJSON line each, read in keyset pages of ids so memory stays flat. The password hash is
 * the stored one (Argon2id in PHC form, or an imported hash no sign-in has replaced yet); the
 * externalId is the identity's own one when it was imported, else its id here. TOTP secrets leave
 * only when asked for: the file then holds second factors in clear and must be kept as such.
 * Recovery codes leave only when they were imported and are unused, as the source's hashes.
 */
export async function* exportLines(deps: ExportDeps, opts: ExportOptions): AsyncGenerator<string> {
  const size = opts.pageSize ?? 500;
  let after: string | null = null;
  for (;;) {
    const page = await identitiesForExport(deps.database.db, after, size);
    if (page.length === 0) return;
    const ids = page.map((p) => p.id);
    const [factors, links, memberships, codes] = await Promise.all([
      opts.totpSecrets ? factorsForExport(deps.database.db, ids) : Promise.resolve([]),
      linksForExport(deps.database.db, ids),
      membershipsForExport(deps.database.db, ids),
      importedCodesForExport(deps.database.db, ids),
    ]);
    for (const p of page) {
      const factor = factors.find((f) => f.identityId === p.id);
      const own = links.filter((l) => l.identityId === p.id);
      const member = memberships.filter((m) => m.identityId === p.id);
      // Only imported codes still unused leave, in their source hash: codes issued here are kept as
      // a keyed hash no other system can check, so they stay (docs/decisions.md, "Imported recovery codes").
      const recovery = codes.filter((c) => c.identityId === p.id).map((c) => c.codeHash);
      const line: ImportLine = {
        externalId: p.externalId ?? p.id,
        createdAt: new Date(p.createdAt).toISOString(),
        identifiers: p.identifiers.map((f) => ({ type: f.type, value: f.value, verified: f.verified })),
        ...(p.passwordHash ? { password: p.passwordHash } : {}),
        ...(factor
          ? {
              totp: {
                secret: deps.sealer.open(factor.sealedSecret, factor.id),
                algorithm: factor.algorithm as 'SHA1' | 'SHA256' | 'SHA512',
                digits: factor.digits,
                period: factor.period,
              },
            }
          : {}),
        ...(recovery.length > 0 ? { recoveryCodes: recovery } : {}),
        ...(own.length > 0
          ? { providerLinks: own.map((l) => ({ provider: l.provider, subject: l.subject })) }
          : {}),
        ...(member.length > 0
          ? { memberships: member.map((m) => ({ organizationId: m.organizationId, role: m.role })) }
          : {}),
        givenName: p.givenName,
        familyName: p.familyName,
        displayName: p.displayName,
        locale: p.locale === 'fr' ? 'fr' : 'en',
      };
      // An identity whose identifiers were all removed cannot be imported (one is required): skipped.
      if (line.identifiers.length > 0) yield `${JSON.stringify(line)}\n`;
    }
    after = page.at(-1)!.id;
  }
}
