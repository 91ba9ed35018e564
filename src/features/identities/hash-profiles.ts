import type { PasswordHasher } from '../../platform/crypto/passwords.js';
import type { Db } from '../../platform/db/database.js';
import { listHashProfiles } from './hash-profiles-repository.js';

/** How long the list of imported profiles is trusted before it is read again (another process may import). */
const REFRESH_MS = 30_000;

/**
 * The imported hash profiles present in the database, measured by the password hasher so that a
 * refused password check lasts as long as the slowest of them (PasswordHasher.padRefusal). Read
 * at most every 30 seconds, and at once after an import in this process (`invalidate`).
 */
export class HashProfiles {
  #loadedAt: number | undefined;
  #loading: Promise<void> | undefined;

  constructor(
    private readonly db: Db,
    private readonly passwords: Pick<PasswordHasher, 'calibrate'>,
  ) {}

  /** Resolves once every profile present is measured (at most one read in flight). */
  ready(): Promise<void> {
    const now = performance.now();
    if (this.#loadedAt !== undefined && now - this.#loadedAt < REFRESH_MS) return Promise.resolve();
    this.#loading ??= (async () => {
      try {
        const rows = await listHashProfiles(this.db);
        await this.passwords.calibrate(rows.map((r) => r.sampleHash));
        this.#loadedAt = performance.now();
      } finally {
        this.#loading = undefined;
      }
    })();
    return this.#loading;
  }

  invalidate(): void {
    this.#loadedAt = undefined;
  }
}
