import type { Executor } from '../../platform/db/database.js';

/**
 * password_hash_profiles: one sample hash per imported hash profile (scheme and cost), written by
 * the import when it first meets the profile, read by the password sign-in's equal-time floor
 * (docs/decisions.md, "Imported password hashes").
 */

export interface HashProfileRow {
  profile: string;
  sampleHash: string;
}

export async function listHashProfiles(trx: Executor): Promise<HashProfileRow[]> {
  return trx
    .selectFrom('password_hash_profiles')
    .select(['profile', 'sample_hash as sampleHash'])
    .orderBy('profile')
    .execute();
}

export async function knownHashProfiles(trx: Executor): Promise<Set<string>> {
  const rows = await trx.selectFrom('password_hash_profiles').select('profile').execute();
  return new Set(rows.map((r) => r.profile));
}

/** Keeps the first sample of a profile: two imports meeting it at once write one row. */
export async function insertHashProfile(trx: Executor, row: HashProfileRow, now: Date): Promise<void> {
  await trx
    .insertInto('password_hash_profiles')
    .values({ profile: row.profile, sample_hash: row.sampleHash, created_at: now })
    .onConflict((oc) => oc.column('profile').doNothing())
    .execute();
}
