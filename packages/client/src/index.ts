/**
 * The identity service's typed client (`IdentityClient`), its session manager (`SessionManager`)
 * with single-flight renewal shared between tabs, the grant stores, the hosted pages' cookie
 * session (`BrowserSessionManager`), and the one error class.
 *
 * @packageDocumentation
 */
export {
  type BrowserSessionEvent,
  BrowserSessionManager,
  type BrowserSessionManagerOptions,
} from './browser-session.js';
export {
  type CallOptions,
  type EndReason,
  IdentityClient,
  type IdentityClientOptions,
  type IdentityProvider,
  type ProviderFlow,
  type ProviderFlowInput,
  type RetryOptions,
  type SessionLink,
} from './client.js';
export {
  type ClientErrorCode,
  IdentityError,
  isIdentityError,
  type Problem,
  type ProblemFieldError,
  parseRetryAfter,
} from './errors.js';
export type { components, paths } from './generated/openapi.js';
export type { LockMode } from './lock.js';
export { type SessionEvent, SessionManager, type SessionManagerOptions } from './session.js';
export {
  type GrantStore,
  localStorageStore,
  memoryStore,
  type StoredGrant,
  sessionStorageStore,
  webStorageStore,
} from './stores.js';
export type * from './types.js';
