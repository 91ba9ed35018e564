import { randomUUID } from 'node:crypto';
import type { Clock } from '../../../platform/clock.js';
import type { Signals } from '../../../platform/metrics/signals.js';
import { Problem } from '../../../platform/problem.js';
import { postOnce, type Resolve, systemResolve } from '../webhooks/send.js';
import { v1Signature } from '../webhooks/signing.js';
import type { HookName, HooksConfig } from './config.js';

/**
 * Synchronous hooks (docs/events.md, "Synchronous hooks"): one signed POST to the deployment's own
 * URL, at most HOOK_TIMEOUT_MS, signed exactly like a webhook delivery (Standard Webhooks `v1` with
 * HOOKS_SECRET) and sent by the same SSRF-safe sender (https and public addresses only under
 * WEBHOOK_PRIVATE_ADDRESSES=refuse, no redirect, the answer capped). Callers call it outside any
 * database transaction: a hook never holds a row lock, nor PGlite's one connection, across HTTP.
 *
 * Nothing secret is sent: no password, code or token, only who is acting and how.
 */

/** An identity about to be made: a sign-up, or a first sign-in through a provider. */
export interface IdentityCreation {
  via: 'sign_up' | 'provider' | 'sso';
  /** The identifier the person gave (sign-up), or the address the provider asserted verified. */
  identifier?: { type: 'email' | 'phone'; value: string };
  /** The provider's configured name and the upstream account's subject (via `provider`). */
  provider?: string;
  subject?: string;
  /** The organization's connection and the organization (via `sso`: a first enterprise sign-in). */
  connectionId?: string;
  organizationId?: string;
  ip?: string | null;
  userAgent?: string | null;
}

/** A proven identity about to get a session. */
export interface SignInAttempt {
  identityId: string;
  /** The method the session records: password, provider, passkey, second_factor, recovery_code. */
  method: string;
  ip?: string | null;
  userAgent?: string | null;
}

/** A token about to be issued to a client for a person. */
export interface ClaimsRequest {
  identityId: string;
  clientId: string;
  scope: string;
}

/** What the callers use. Each `before_*` resolves when the act may go on and throws its refusal otherwise. */
export interface Hooks {
  /** Refuses with `hooks.refused` (the hook's message) or `hooks.unavailable` (failing closed). */
  beforeIdentityCreated(input: IdentityCreation): Promise<void>;
  beforeSignIn(input: SignInAttempt): Promise<void>;
  /**
   * The claims to add to the ID token and the access token, reserved ones already dropped; `{}`
   * when no hook is configured or it failed open. Throws `hooks.unavailable` when it fails closed.
   */
  customClaims(input: ClaimsRequest): Promise<Record<string, unknown>>;
}

/**
 * Claims a hook may never set: the JWT and OpenID Connect claims the library or the service sets
 * (identity, audience, times, session, authentication, binding, introspection's own members), the
 * identifiers' claims, and every `org_*` claim (the `organization` scope's).
 */
export const RESERVED_CLAIMS: ReadonlySet<string> = new Set([
  'sub',
  'iss',
  'aud',
  'exp',
  'iat',
  'nbf',
  'jti',
  'sid',
  'auth_time',
  'nonce',
  'acr',
  'amr',
  'azp',
  'at_hash',
  'c_hash',
  's_hash',
  'scope',
  'client_id',
  'cnf',
  'active',
  'token_type',
  'username',
  'authorization_details',
  'email',
  'email_verified',
  'phone_number',
  'phone_number_verified',
  '_claim_names',
  '_claim_sources',
]);

export function reservedClaim(name: string): boolean {
  // `__proto__` as an own key of the parsed answer would set the prototype of the claims copied.
  return RESERVED_CLAIMS.has(name) || name.startsWith('org_') || name === '__proto__';
}

/** The most of a hook's message shown to a person. */
const MESSAGE_MAX = 500;

export interface HookServiceDeps {
  config: { hooks: HooksConfig; events: { privateAddresses: boolean } };
  clock: Clock;
  signals: Signals;
  log: { warn(obj: object, msg: string): void };
}

type Answer =
  | { ok: true; value: Record<string, unknown> }
  | { ok: false; outcome: 'timeout' | 'failed'; reason: string };

export class HookService implements Hooks {
  readonly #resolve: Resolve;

  constructor(
    private readonly deps: HookServiceDeps,
    resolve: Resolve = systemResolve,
  ) {
    this.#resolve = resolve;
  }

  async beforeIdentityCreated(input: IdentityCreation): Promise<void> {
    await this.#gate('before_identity_created', input);
  }

  async beforeSignIn(input: SignInAttempt): Promise<void> {
    await this.#gate('before_sign_in', input);
  }

  async customClaims(input: ClaimsRequest): Promise<Record<string, unknown>> {
    const hook: HookName = 'custom_claims';
    if (!this.deps.config.hooks.urls[hook]) return {};
    const started = performance.now();
    const answer = await this.#call(hook, input);
    const claims = answer.ok ? answer.value.claims : undefined;
    if (answer.ok && (claims === undefined || isObject(claims))) {
      this.#count(hook, 'allowed', started);
      const kept: Record<string, unknown> = {};
      const dropped: string[] = [];
      for (const [name, value] of Object.entries(claims ?? {})) {
        if (reservedClaim(name)) dropped.push(name);
        else kept[name] = value;
      }
      if (dropped.length > 0) {
        // Names only: a claim's value may be personal data.
        this.deps.log.warn({ hook, dropped }, 'hook claims dropped: reserved names');
        for (const _ of dropped) this.deps.signals.hookCalled(hook, 'dropped_claim');
      }
      return kept;
    }
    this.#fail(
      hook,
      answer.ok ? { ok: false, outcome: 'failed', reason: 'claims not an object' } : answer,
      started,
    );
    return {};
  }

  /** A before_* hook: resolves when allowed (or not configured, or failing open), else throws. */
  async #gate(hook: HookName, data: object): Promise<void> {
    if (!this.deps.config.hooks.urls[hook]) return;
    const started = performance.now();
    const answer = await this.#call(hook, data);
    if (answer.ok && typeof answer.value.allow === 'boolean') {
      if (answer.value.allow) {
        this.#count(hook, 'allowed', started);
        return;
      }
      this.#count(hook, 'refused', started);
      const message = messageOf(answer.value.message);
      throw new Problem('hooks.refused', message === undefined ? {} : { hookMessage: message });
    }
    this.#fail(
      hook,
      answer.ok ? { ok: false, outcome: 'failed', reason: 'no boolean allow' } : answer,
      started,
    );
  }

  /** A failure counted and logged; failing closed throws `hooks.unavailable`, failing open returns. */
  #fail(hook: HookName, failure: Answer & { ok: false }, started: number): void {
    this.#count(hook, failure.outcome, started);
    const open = this.deps.config.hooks.failOpen.has(hook);
    this.deps.log.warn(
      { hook, outcome: failure.outcome, reason: failure.reason, failOpen: open },
      open ? 'hook failed: proceeding (fails open)' : 'hook failed: refusing (fails closed)',
    );
    if (!open) throw new Problem('hooks.unavailable');
  }

  #count(hook: HookName, outcome: string, started: number): void {
    this.deps.signals.hookCalled(hook, outcome, (performance.now() - started) / 1000);
  }

  /** One signed POST; its answer when 2xx with a JSON object body, else why not. */
  async #call(hook: HookName, data: object): Promise<Answer> {
    const { hooks, events } = this.deps.config;
    const url = hooks.urls[hook] as string;
    const now = this.deps.clock.now();
    const id = `hook_${randomUUID()}`;
    const timestamp = Math.floor(now.getTime() / 1000);
    const body = JSON.stringify({ type: hook, timestamp: now.toISOString(), data });
    const outcome = await postOnce(
      url,
      {
        'webhook-id': id,
        'webhook-timestamp': String(timestamp),
        'webhook-signature': v1Signature(hooks.secret as string, id, timestamp, body),
      },
      body,
      {
        privateAddresses: events.privateAddresses,
        resolve: this.#resolve,
        timeoutMs: hooks.timeoutMs,
        readBody: true,
      },
    );
    if (outcome.kind === 'failed') {
      return {
        ok: false,
        outcome: outcome.reason === 'timeout' ? 'timeout' : 'failed',
        reason: outcome.reason,
      };
    }
    if (outcome.kind === 'refused')
      return { ok: false, outcome: 'failed', reason: `${outcome.reason} refused` };
    if (outcome.status < 200 || outcome.status > 299) {
      return { ok: false, outcome: 'failed', reason: `status ${outcome.status}` };
    }
    if (typeof outcome.body !== 'string')
      return { ok: false, outcome: 'failed', reason: 'answer over the cap' };
    let value: unknown;
    try {
      value = JSON.parse(outcome.body);
    } catch {
      return { ok: false, outcome: 'failed', reason: 'answer not JSON' };
    }
    if (!isObject(value)) return { ok: false, outcome: 'failed', reason: 'answer not an object' };
    return { ok: true, value };
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The hook's message as given, bounded, with control characters (but not line breaks) removed. */
function messageOf(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the point is to remove them
  const text = value.replace(/[\u0000-\u0009\u000b-\u001f\u007f]/g, '').trim();
  return text.length === 0 ? undefined : text.slice(0, MESSAGE_MAX);
}
