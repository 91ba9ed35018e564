import type { AuditEvent, AuditLog } from '../../platform/audit/audit.js';
import type { Clock } from '../../platform/clock.js';
import { opaqueToken, sha256Hex } from '../../platform/crypto/tokens.js';
import type { Database, Executor } from '../../platform/db/database.js';
import { type Precondition, preconditionHolds, strongEtag } from '../../platform/http/conditional.js';
import type { CursorCodec, CursorScope } from '../../platform/pagination/cursor.js';
import { buildPage, type PageInfo, type PageQuery, readPageQuery } from '../../platform/pagination/page.js';
import { Problem, type ValidationEntry } from '../../platform/problem.js';
import type { EventLog } from '../events/log.js';
import { checkOidcClient, OIDC_CLIENT_FIELDS, type OidcClientConfig, SECRET_AUTH_METHODS } from './config.js';
import { grantChanged } from './grant-events.js';
import * as repo from './repository.js';
import type { ClientView, CreateClientBody, UpdateClientBody } from './schemas.js';

/** The audit names of the operators' writes on clients. */
const CREATED = 'admin.oidc_client.created';
const UPDATED = 'admin.oidc_client.updated';
const ROTATED = 'admin.oidc_client.secret_rotated';
const DELETED = 'admin.oidc_client.deleted';

/** The fields a registered client keeps in `metadata` (the secret and first_party live apart). */
const METADATA_KEYS = OIDC_CLIENT_FIELDS.filter(
  (k) => k !== 'client_id' && k !== 'client_secret' && k !== 'first_party',
);

/** The fields a change may remove with null (each optional, with no default of its own). */
const REMOVABLE = [
  'backchannel_logout_uri',
  'userinfo_signed_response_alg',
  'logo_uri',
  'client_uri',
  'policy_uri',
  'tos_uri',
  'scope',
  'default_max_age',
  'jwks',
  'jwks_uri',
] as const;

/** How a client authenticates: a secret, its keys, or not at all; fixed once registered. */
function kindOf(method: unknown): 'secret' | 'keys' | 'none' {
  if (method === 'none') return 'none';
  if (method === 'private_key_jwt') return 'keys';
  return 'secret';
}

// Stands in for a stored client's secret when its metadata is checked again: only its hash is kept.
const SECRET_PLACEHOLDER = 'x'.repeat(43);

/** What the operators' client registry uses. */
export interface OidcClientsDeps {
  database: Database;
  clock: Clock;
  audit: AuditLog;
  events: EventLog;
  cursors: CursorCodec;
  /** The clients of OIDC_CLIENTS: listed and read, never written here. */
  configured: readonly OidcClientConfig[];
  /** Whether redirect URIs must be https outside loopback (NODE_ENV production). */
  production: boolean;
}

/** A client read with its version: the strong ETag a later write must send back in If-Match. */
export interface VersionedClient {
  client: ClientView;
  /** Absent for a configured client (read-only: no write ever matches). */
  etag?: string;
}

export interface IssuedClient {
  client: ClientView;
  etag: string;
  /** Shown this once; null for a public client. */
  secret: string | null;
}

function invalid(reason: string): Problem {
  // The field the reason names first (the longer name when two start there: jwks_uri, not jwks).
  const named = METADATA_KEYS.filter((k) => reason.includes(k)).sort(
    (a, b) => reason.indexOf(a) - reason.indexOf(b) || b.length - a.length,
  );
  const field = named[0] ?? (reason.includes('client_id') ? 'client_id' : '');
  const entry: ValidationEntry = {
    location: 'body',
    field,
    code: 'client_metadata',
    message: `client ${reason}`,
  };
  return new Problem('admin.oidc_client_invalid', { errors: [entry] });
}

/**
 * The strong ETag of a registered client: a hash of its id and its updated_at, which every write
 * moves forward (compare-and-set on it), so a tag names exactly one version.
 */
export function clientEtag(clientId: string, updatedAt: Date): string {
  return strongEtag(clientId, updatedAt.toISOString());
}

function viewOfConfigured(c: Omit<OidcClientConfig, 'clientSecret'>): ClientView {
  return {
    client_id: c.clientId,
    client_name: c.clientName,
    redirect_uris: c.redirectUris,
    post_logout_redirect_uris: c.postLogoutRedirectUris,
    grant_types: c.grantTypes,
    response_types: c.responseTypes,
    token_endpoint_auth_method: c.tokenEndpointAuthMethod,
    backchannel_logout_uri: c.backchannelLogoutUri ?? null,
    first_party: c.firstParty,
    require_pkce: c.requirePkce,
    id_token_signed_response_alg: c.idTokenSignedResponseAlg,
    userinfo_signed_response_alg: c.userinfoSignedResponseAlg ?? null,
    logo_uri: c.logoUri ?? null,
    client_uri: c.clientUri ?? null,
    policy_uri: c.policyUri ?? null,
    tos_uri: c.tosUri ?? null,
    contacts: c.contacts,
    scope: c.scope ?? null,
    default_max_age: c.defaultMaxAge ?? null,
    require_auth_time: c.requireAuthTime,
    jwks: c.jwks ?? null,
    jwks_uri: c.jwksUri ?? null,
    dpop_bound_access_tokens: c.dpopBoundAccessTokens,
    source: 'configuration',
    created_at: null,
    updated_at: null,
  };
}

/**
 * A stored client as the provider and the admin API read it. Its metadata was checked on the way
 * in (checkOidcClient), so it is read back through the same check (a secret stood in for: only its
 * hash is kept); a row written before a field existed reads as that field's default.
 */
export function storedClient(s: repo.StoredClient): Omit<OidcClientConfig, 'clientSecret'> {
  const checked = checkOidcClient(entryOf(s), false);
  if (typeof checked === 'string') {
    // Only checked metadata is ever written; a row that no longer passes is not served.
    throw new Error(`oidc client ${s.clientId}: stored metadata ${checked}`);
  }
  const { clientSecret: _secret, ...client } = checked;
  return client;
}
function viewOfStored(s: repo.StoredClient): ClientView {
  return {
    ...viewOfConfigured(storedClient(s)),
    source: 'admin',
    created_at: s.createdAt.toISOString(),
    updated_at: s.updatedAt.toISOString(),
  };
}

/** The RFC 7591 entry of a stored client, as checkOidcClient reads it (secret stood in for). */
function entryOf(s: repo.StoredClient): Record<string, unknown> {
  const holdsSecret = kindOf(s.metadata.token_endpoint_auth_method) === 'secret';
  return {
    ...s.metadata,
    client_id: s.clientId,
    first_party: s.firstParty,
    ...(holdsSecret ? { client_secret: SECRET_PLACEHOLDER } : {}),
  };
}

/** The metadata column of a checked client: RFC 7591 names, never the secret. */
function metadataOf(c: OidcClientConfig): Record<string, unknown> {
  const {
    client_id: _id,
    first_party: _fp,
    source: _s,
    created_at: _c,
    updated_at: _u,
    ...view
  } = viewOfConfigured(c);
  // Absent rather than null in the column: null is how a change removes a field.
  return Object.fromEntries(Object.entries(view).filter(([, v]) => v !== null));
}

/**
 * The OpenID Provider's clients as operators manage them (docs/admin.md, "OpenID Provider
 * clients"). Configured clients (OIDC_CLIENTS) are listed and read, marked `configuration`, and
 * every write to one is refused: configuration is their one source of truth. A registered client's
 * secret is 256 random bits made here, shown once, and kept only as its SHA-256; no read, log or
 * audit record carries it. Every write is a compare-and-set on updated_at (the ETag) and appends
 * its audit record, actor `admin:<key name>`, in its own transaction.
 */
export class OidcClients {
  readonly #configured: Map<string, OidcClientConfig>;
  readonly #configuredIds: string[];

  constructor(private readonly deps: OidcClientsDeps) {
    this.#configured = new Map(deps.configured.map((c) => [c.clientId, c]));
    this.#configuredIds = [...this.#configured.keys()].sort();
  }

  /** Ordered by client id (configured and registered together), the id as the cursor position. */
  async page(scope: CursorScope, query: PageQuery): Promise<{ items: ClientView[]; pageInfo: PageInfo }> {
    const req = readPageQuery(query, this.deps.cursors, scope);
    const after = req.after?.c ?? null;
    if (req.after && typeof after !== 'string') throw new Problem('collection.cursor_invalid');
    const afterId = after as string | null;
    // A registered row shadowed by a configured one of the same id is skipped (the configured one
    // is the client): fetch enough that the page still fills.
    const stored = await repo.listClients(
      this.deps.database.db,
      afterId,
      req.limit + 1 + this.#configuredIds.length,
    );
    const merged = [
      ...this.#configuredIds
        .filter((id) => afterId === null || id > afterId)
        .map((id) => viewOfConfigured(this.#configured.get(id) as OidcClientConfig)),
      ...stored.filter((s) => !this.#configured.has(s.clientId)).map(viewOfStored),
    ]
      // Code-unit order, as the text primary key's btree orders these ASCII ids under the C
      // collation; ids are letters, digits and ".-_" only.
      .sort((a, b) => (a.client_id < b.client_id ? -1 : a.client_id > b.client_id ? 1 : 0))
      .slice(0, req.limit + 1);
    return buildPage(merged, req.limit, (c) => ({ c: c.client_id }), this.deps.cursors, scope, req.cursorTtl);
  }

  async read(clientId: string): Promise<VersionedClient> {
    const configured = this.#configured.get(clientId);
    if (configured) return { client: viewOfConfigured(configured) };
    const stored = await repo.findClient(this.deps.database.db, clientId);
    if (!stored) throw new Problem('admin.oidc_client_not_found');
    return { client: viewOfStored(stored), etag: clientEtag(stored.clientId, stored.updatedAt) };
  }

  /**
   * Registers a client. The id is refused when configured or registered (409); two creations of
   * one id race on the primary key, and the loser is refused the same way.
   */
  async create(body: CreateClientBody, actor: string): Promise<IssuedClient> {
    if (this.#configured.has(body.client_id)) throw new Problem('admin.oidc_client_exists');
    const method = body.token_endpoint_auth_method ?? 'client_secret_basic';
    const confidential = method !== 'none';
    // Made here, never chosen by the operator: 256 bits, base64url, which form encoding leaves as
    // it is (docs/decisions.md, "Client secrets are recommended in an alphabet form encoding leaves alone").
    const secret = SECRET_AUTH_METHODS.includes(method) ? opaqueToken() : null;
    const checked = checkOidcClient(
      { ...body, ...(secret ? { client_secret: secret } : {}) },
      this.deps.production,
    );
    if (typeof checked === 'string') throw invalid(checked);
    const now = this.deps.clock.now();
    const stored = await this.deps.database.db.transaction().execute(async (trx) => {
      const inserted = await repo.insertClient(
        trx,
        {
          clientId: checked.clientId,
          metadata: metadataOf(checked),
          secretHash: secret ? sha256Hex(secret) : null,
          firstParty: checked.firstParty,
        },
        now,
      );
      if (!inserted) throw new Problem('admin.oidc_client_exists');
      await this.#audit(trx, CREATED, actor, checked.clientId, {
        confidential,
        firstParty: checked.firstParty,
        grantTypes: checked.grantTypes.join(' '),
      });
      return (await repo.findClient(trx, checked.clientId)) as repo.StoredClient;
    });
    return { client: viewOfStored(stored), etag: clientEtag(stored.clientId, stored.updatedAt), secret };
  }

  /**
   * Changes a registered client's metadata. The result is checked whole, as a creation is; public
   * and confidential do not turn into each other (a secret would appear or vanish unannounced).
   */
  async update(
    clientId: string,
    change: UpdateClientBody,
    pre: Precondition,
    actor: string,
  ): Promise<VersionedClient> {
    const current = await this.#writable(clientId, pre);
    const was = kindOf(current.metadata.token_endpoint_auth_method);
    const merged: Record<string, unknown> = { ...entryOf(current) };
    for (const [name, value] of Object.entries(change)) {
      if (value === null && (REMOVABLE as readonly string[]).includes(name)) delete merged[name];
      else if (value !== undefined) merged[name] = value;
    }
    // A client moving to private_key_jwt gives its keys in the same change; moving away, they go.
    const is = kindOf(merged.token_endpoint_auth_method);
    if (was !== is) {
      throw invalid(
        'token_endpoint_auth_method cannot change between none, a secret method and private_key_jwt; register a new client',
      );
    }
    if (is !== 'secret') delete merged.client_secret;
    const checked = checkOidcClient(merged, this.deps.production);
    if (typeof checked === 'string') throw invalid(checked);
    const stored = await this.#casWrite(
      current,
      UPDATED,
      actor,
      { fields: Object.keys(change).sort().join(' ') },
      {
        metadata: metadataOf(checked),
        firstParty: checked.firstParty,
      },
    );
    return { client: viewOfStored(stored), etag: clientEtag(stored.clientId, stored.updatedAt) };
  }

  /** A new secret, shown once; the old one is refused from the commit on (only its hash was kept). */
  async rotateSecret(clientId: string, pre: Precondition, actor: string): Promise<IssuedClient> {
    const current = await this.#writable(clientId, pre);
    if (kindOf(current.metadata.token_endpoint_auth_method) !== 'secret') {
      throw invalid(
        `token_endpoint_auth_method is ${String(current.metadata.token_endpoint_auth_method)}: this client has no secret to rotate`,
      );
    }
    const secret = opaqueToken();
    const stored = await this.#casWrite(current, ROTATED, actor, {}, { secretHash: sha256Hex(secret) });
    return { client: viewOfStored(stored), etag: clientEtag(stored.clientId, stored.updatedAt), secret };
  }

  /**
   * Deletes a registered client with everything it holds: every live grant is ended and its tokens
   * deleted, its other tokens and the consents people gave it go too, so a client registered later
   * under the same id starts with nothing. No back-channel logout is sent: the client is gone.
   */
  async delete(clientId: string, pre: Precondition, actor: string): Promise<void> {
    const current = await this.#writable(clientId, pre);
    const now = this.deps.clock.now();
    await this.deps.database.db.transaction().execute(async (trx) => {
      // The compare-and-set locks the row, so a concurrent write to it waits and then finds it gone.
      const locked = await repo.updateClient(trx, clientId, {}, current.updatedAt, this.#next(current));
      if (!locked) throw await this.#lost(trx, clientId);
      const grantIds = await repo.liveGrantsOfClient(trx, clientId);
      const ended = await repo.endGrants(trx, { grantIds }, 'client_deleted', now);
      for (const g of ended) {
        await repo.deleteGrantPayloads(trx, g.grantId);
        await grantChanged(this.deps.events, trx, 'oidc.grant.revoked', actor, g.grantId);
      }
      const tokens = await repo.deleteClientPayloads(trx, clientId);
      const consents = await repo.forgetClientConsents(trx, clientId);
      await repo.deleteClient(trx, clientId);
      await this.#audit(trx, DELETED, actor, clientId, {
        grantsEnded: ended.length,
        tokensDeleted: tokens,
        consentsForgotten: consents,
      });
    });
  }

  /** The registered client a write may change: configured ones are refused, then the If-Match. */
  async #writable(clientId: string, pre: Precondition): Promise<repo.StoredClient> {
    if (this.#configured.has(clientId)) throw new Problem('admin.oidc_client_configured');
    const current = await repo.findClient(this.deps.database.db, clientId);
    if (!current) throw new Problem('admin.oidc_client_not_found');
    if (!preconditionHolds(pre, clientEtag(current.clientId, current.updatedAt)))
      throw new Problem('precondition.failed');
    return current;
  }

  /**
   * updated_at moves strictly forward on every write, even within one millisecond of the clock, so
   * the version a write replaced is never the version it leaves.
   */
  #next(current: repo.StoredClient): Date {
    const now = this.deps.clock.now();
    return now > current.updatedAt ? now : new Date(current.updatedAt.getTime() + 1);
  }

  /** A compare-and-set that found no row at the version read: gone (404) or changed (412). */
  async #lost(trx: Executor, clientId: string): Promise<Problem> {
    return (await repo.findClient(trx, clientId))
      ? new Problem('precondition.failed')
      : new Problem('admin.oidc_client_not_found');
  }

  async #casWrite(
    current: repo.StoredClient,
    name: string,
    actor: string,
    details: NonNullable<AuditEvent['details']>,
    change: { metadata?: Record<string, unknown>; secretHash?: string | null; firstParty?: boolean },
  ): Promise<repo.StoredClient> {
    return this.deps.database.db.transaction().execute(async (trx) => {
      const updated = await repo.updateClient(
        trx,
        current.clientId,
        change,
        current.updatedAt,
        this.#next(current),
      );
      if (!updated) throw await this.#lost(trx, current.clientId);
      await this.#audit(trx, name, actor, current.clientId, details);
      return updated;
    });
  }

  /** Appended last in the write's transaction (it holds the chain's head lock until commit). */
  #audit(
    trx: Executor,
    name: string,
    actor: string,
    clientId: string,
    details: NonNullable<AuditEvent['details']>,
  ) {
    return this.deps.audit.append(trx, {
      name,
      actor,
      target: `oidc-client:${clientId}`,
      outcome: 'success',
      details,
    });
  }
}

/** What a person's "Connected apps" use of the provider. */
export interface ConnectedAppsDeps {
  cursors: CursorCodec;
  oidc: {
    connectedApps(identityId: string): Promise<repo.ConnectedApp[]>;
    findClient(clientId: string): Promise<{ clientName: string } | undefined>;
    revokeApp(identityId: string, clientId: string): Promise<void>;
  };
}

export interface ConnectedAppView {
  clientId: string;
  name: string;
  scopes: string[];
  since: string;
  lastAuthorizedAt: string | null;
}

/**
 * The apps that hold access to a person's account (docs/api.md, "Connected apps"): a remembered
 * consent or a live grant. Newest first, the client id as tiebreak; a person has few, so the page
 * is cut from the whole list, and the cursor carries the last (since, client id).
 */
export class ConnectedApps {
  constructor(private readonly deps: ConnectedAppsDeps) {}

  async page(
    scope: CursorScope,
    query: PageQuery,
    identityId: string,
  ): Promise<{ items: ConnectedAppView[]; pageInfo: PageInfo }> {
    const req = readPageQuery(query, this.deps.cursors, scope);
    const after = req.after;
    if (
      after &&
      (typeof after.t !== 'string' || Number.isNaN(Date.parse(after.t)) || typeof after.c !== 'string')
    ) {
      throw new Problem('collection.cursor_invalid');
    }
    const apps = (await this.deps.oidc.connectedApps(identityId))
      .map((a) => ({ ...a, t: a.since.toISOString() }))
      .sort((a, b) => (a.t !== b.t ? (a.t < b.t ? 1 : -1) : a.clientId < b.clientId ? 1 : -1));
    const rest = after
      ? apps.filter((a) => a.t < (after.t as string) || (a.t === after.t && a.clientId < (after.c as string)))
      : apps;
    const window = rest.slice(0, req.limit + 1);
    const { items, pageInfo } = buildPage(
      window,
      req.limit,
      (a) => ({ t: a.t, c: a.clientId }),
      this.deps.cursors,
      scope,
      req.cursorTtl,
    );
    const views = await Promise.all(
      items.map(async (a) => ({
        clientId: a.clientId,
        // A client deleted since keeps its id as its name until its consent is gone.
        name: (await this.deps.oidc.findClient(a.clientId))?.clientName ?? a.clientId,
        scopes: a.scope.split(' ').filter(Boolean),
        since: a.t,
        lastAuthorizedAt: a.lastGrantAt ? a.lastGrantAt.toISOString() : null,
      })),
    );
    return { items: views, pageInfo };
  }

  /** Ends the app's access: its remembered consent and every live grant (404 when it holds none). */
  revoke(identityId: string, clientId: string): Promise<void> {
    return this.deps.oidc.revokeApp(identityId, clientId);
  }
}
