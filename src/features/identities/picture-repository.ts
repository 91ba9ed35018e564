import type { Executor } from '../../platform/db/database.js';

/*
 * The identity_pictures table (migration 0030): one re-encoded picture per identity
 * (identities/picture.ts). Its `id` is new on every upload: the public address names it, so an
 * old address stops answering the moment the picture changes or goes.
 */

export interface StoredPicture {
  bytes: Buffer;
  contentType: string;
}

/**
 * Keeps the identity's new picture in place of any earlier one (one row per identity, a new id).
 * Never for an erased identity: false then, and nothing is written.
 */
export async function replacePicture(
  trx: Executor,
  picture: { identityId: string; id: string; bytes: Buffer; contentType: string; createdAt: Date },
): Promise<boolean> {
  const live = await trx
    .selectFrom('identities')
    .select('id')
    .where('id', '=', picture.identityId)
    .where('erased_at', 'is', null)
    .forUpdate()
    .executeTakeFirst();
  if (!live) return false;
  await trx
    .insertInto('identity_pictures')
    .values({
      identity_id: picture.identityId,
      id: picture.id,
      bytes: picture.bytes,
      content_type: picture.contentType,
      created_at: picture.createdAt,
    })
    .onConflict((oc) =>
      oc.column('identity_id').doUpdateSet((eb) => ({
        id: eb.ref('excluded.id'),
        bytes: eb.ref('excluded.bytes'),
        content_type: eb.ref('excluded.content_type'),
        created_at: eb.ref('excluded.created_at'),
      })),
    )
    .execute();
  return true;
}

/** Deletes the identity's picture; true when it had one. */
export async function deletePicture(trx: Executor, identityId: string): Promise<boolean> {
  const gone = await trx
    .deleteFrom('identity_pictures')
    .where('identity_id', '=', identityId)
    .returning('id')
    .execute();
  return gone.length > 0;
}

/** A picture by its public id; undefined when no picture has it (any more). */
export async function pictureById(db: Executor, pictureId: string): Promise<StoredPicture | undefined> {
  const row = await db
    .selectFrom('identity_pictures')
    .select(['bytes', 'content_type as contentType'])
    .where('id', '=', pictureId)
    .executeTakeFirst();
  if (!row) return undefined;
  // PGlite answers a bytea as a Uint8Array, node-postgres as a Buffer.
  return { bytes: Buffer.from(row.bytes), contentType: row.contentType };
}

/** The id of the identity's picture, or null when it has none. */
export async function pictureIdOf(db: Executor, identityId: string): Promise<string | null> {
  const row = await db
    .selectFrom('identity_pictures')
    .select('id')
    .where('identity_id', '=', identityId)
    .executeTakeFirst();
  return row?.id ?? null;
}
