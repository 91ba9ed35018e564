import type { Executor } from '../../platform/db/database.js';
import { firstVerifiedIdentifier } from '../identities/repository.js';
import type { OperatorRole } from './permissions.js';

/** A role the admin API gave an identity (migration 0035). */
export interface OperatorRoleRow {
  identityId: string;
  role: OperatorRole;
  grantedBy: string;
  grantedAt: Date;
}

/** A granted role as listed: with the identity's first verified identifier (null when none). */
export interface ListedOperatorRow extends OperatorRoleRow {
  identifier: { type: 'email' | 'phone'; value: string } | null;
}

const COLUMNS = [
  'identity_id as identityId',
  'role',
  'granted_by as grantedBy',
  'granted_at as grantedAt',
] as const;

function asRow(r: { identityId: string; role: string; grantedBy: string; grantedAt: Date | string }) {
  return { ...r, role: r.role as OperatorRole, grantedAt: new Date(r.grantedAt) };
}

export async function findOperatorRole(
  db: Executor,
  identityId: string,
): Promise<OperatorRoleRow | undefined> {
  const row = await db
    .selectFrom('operator_roles')
    .select(COLUMNS)
    .where('identity_id', '=', identityId)
    .executeTakeFirst();
  return row ? asRow(row) : undefined;
}

/**
 * Every granted role, newest first: a handful of rows (the people who run the service), each with
 * the identity's first verified identifier, the one the organizations' member lists show.
 */
export async function operatorRoles(db: Executor, limit: number): Promise<ListedOperatorRow[]> {
  const rows = await db
    .selectFrom('operator_roles as r')
    .select((eb) => {
      const first = () => firstVerifiedIdentifier(eb, eb.ref('r.identity_id'));
      return [
        'r.identity_id as identityId',
        'r.role',
        'r.granted_by as grantedBy',
        'r.granted_at as grantedAt',
        first().select('f.type').as('identifierType'),
        first().select('f.value').as('identifierValue'),
      ];
    })
    .orderBy('r.granted_at', 'desc')
    .orderBy('r.identity_id', 'desc')
    .limit(limit)
    .execute();
  return rows.map(({ identifierType, identifierValue, ...r }) => ({
    ...asRow(r),
    identifier:
      identifierType && identifierValue
        ? { type: identifierType as 'email' | 'phone', value: identifierValue }
        : null,
  }));
}

/** Grants (or changes) a role in one statement; answers the role it replaced, if any. */
export async function upsertOperatorRole(trx: Executor, row: OperatorRoleRow): Promise<void> {
  await trx
    .insertInto('operator_roles')
    .values({
      identity_id: row.identityId,
      role: row.role,
      granted_by: row.grantedBy,
      granted_at: row.grantedAt,
    })
    .onConflict((oc) =>
      oc.column('identity_id').doUpdateSet((eb) => ({
        role: eb.ref('excluded.role'),
        granted_by: eb.ref('excluded.granted_by'),
        granted_at: eb.ref('excluded.granted_at'),
      })),
    )
    .execute();
}

/** Removes a granted role: the role it was, undefined when there was none. */
export async function deleteOperatorRole(
  trx: Executor,
  identityId: string,
): Promise<OperatorRole | undefined> {
  const row = await trx
    .deleteFrom('operator_roles')
    .where('identity_id', '=', identityId)
    .returning('role')
    .executeTakeFirst();
  return row?.role as OperatorRole | undefined;
}
