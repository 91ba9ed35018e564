import type { SessionGrant } from './types.js';

/** A grant as a store keeps it, with its local expiry. */
export interface StoredGrant {
  grant: SessionGrant;
  /** Local time (ms since the epoch, this device's clock) the grant arrived. */
  receivedAt: number;
  /**
   * Local time the access token expires: `receivedAt` plus the token's own lifetime (exp - iat), so
   * a difference between this device's clock and the service's does not matter.
   */
  accessExpiresAt: number;
}

/**
 * Where a `SessionManager` keeps its grant. `key` names the grant, and also the lock that
 * serialises renewals between the pages of one origin: pages that share a store must use the same
 * key. Methods may be synchronous or answer promises.
 */
export interface GrantStore {
  readonly key: string;
  load(): StoredGrant | null | Promise<StoredGrant | null>;
  save(value: StoredGrant): void | Promise<void>;
  clear(): void | Promise<void>;
  /** Changes made by another page (the `storage` event), when the store can tell. */
  subscribe?(listener: (value: StoredGrant | null) => void): () => void;
}

const DEFAULT_KEY = 'identity-service.session';

function parse(text: string | null): StoredGrant | null {
  if (text === null) return null;
  try {
    const value = JSON.parse(text) as StoredGrant;
    return value && typeof value === 'object' && value.grant?.refreshToken ? value : null;
  } catch {
    return null;
  }
}

/** A store in memory: one process or one page, gone with it. */
export function memoryStore(key: string = DEFAULT_KEY): GrantStore {
  let value: StoredGrant | null = null;
  return {
    key,
    load: () => value,
    save: (next) => {
      value = next;
    },
    clear: () => {
      value = null;
    },
  };
}

/**
 * A store in a Web Storage area: `localStorage` shares the session between the pages of an origin
 * (and keeps it across restarts); `sessionStorage` keeps it to one tab.
 */
export function webStorageStore(storage: Storage, key: string = DEFAULT_KEY): GrantStore {
  return {
    key,
    load: () => parse(storage.getItem(key)),
    save: (value) => storage.setItem(key, JSON.stringify(value)),
    clear: () => storage.removeItem(key),
    subscribe(listener) {
      if (typeof window === 'undefined') return () => {};
      const onStorage = (event: StorageEvent) => {
        if (event.storageArea === storage && (event.key === key || event.key === null)) {
          listener(parse(event.newValue));
        }
      };
      window.addEventListener('storage', onStorage);
      return () => window.removeEventListener('storage', onStorage);
    },
  };
}

/** `webStorageStore(localStorage, key)`: one session for every page of the origin. */
export function localStorageStore(key?: string): GrantStore {
  return webStorageStore(globalThis.localStorage, key);
}

/** `webStorageStore(sessionStorage, key)`: one session per tab. */
export function sessionStorageStore(key?: string): GrantStore {
  return webStorageStore(globalThis.sessionStorage, key);
}
