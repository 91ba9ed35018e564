import type { ErrorObject } from 'ajv';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { type CryptoKey, exportJWK, generateKeyPair, type JWK, SignJWT } from 'jose';
import { sql } from 'kysely';
import { mintElevation } from '../../src/features/step-up/service.js';
import { makeAjv } from '../../src/platform/http/validation.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { createPerson, type Person, signIn } from '../helpers/identities.js';

/**
 * The fuzz harness: one app per test file (PGlite, or the server when TEST_DATABASE_URL is set),
 * the routes read from the app's own OpenAPI document, a signed-in person for the authenticated
 * share of the requests, and the invariants every answer must keep (see `FuzzApp.exchange`).
 */

function positiveInt(raw: string | undefined, fallback: number): number {
  const n = Number(raw);
  return Number.isInteger(n) && n > 0 ? n : fallback;
}

/** Runs per route and per property: small in `npm test`, large in `npm run fuzz`. */
export const FUZZ_RUNS = positiveInt(process.env.FUZZ_RUNS, 20);
/** Replays a failure: FUZZ_SEED=<seed printed by fast-check>. */
export const FUZZ_SEED = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : undefined;
/** Per-test timeout that grows with the run count (a long run is not cut short). */
export const FUZZ_TIMEOUT_MS = 60_000 + FUZZ_RUNS * 1_000;

export function fuzzParameters() {
  return { numRuns: FUZZ_RUNS, seed: FUZZ_SEED, endOnFailure: false } as const;
}

// ---------------------------------------------------------------------------------------------
// Routes, from the OpenAPI document

type JsonSchema = Record<string, unknown>;

// The service's own body validator set-up (no coercion, its formats, its discriminator); verbose so
// a failing `not` names the sub-schema, which the body generator uses to repair a candidate.
const ajv = makeAjv(false, true);

function deref(schema: unknown, components: Record<string, JsonSchema>, depth = 0): unknown {
  if (depth > 20 || !schema || typeof schema !== 'object') return schema;
  if (Array.isArray(schema)) return schema.map((s) => deref(s, components, depth + 1));
  const s = schema as JsonSchema;
  if (typeof s.$ref === 'string') return deref(components[s.$ref.split('/').pop()!], components, depth + 1);
  return Object.fromEntries(Object.entries(s).map(([k, v]) => [k, deref(v, components, depth + 1)]));
}

export interface Route {
  method: string;
  /** OpenAPI form, e.g. /api/v1/second-factors/{id}/removals */
  path: string;
  statuses: Set<number>;
  /** Properties the request body schema names anywhere (allOf/anyOf/if/then included). */
  bodyProperties: Map<string, JsonSchema>;
  hasBody: boolean;
  /** The documented body schema's verdict: null when valid, else Ajv's (first) error. */
  bodyErrors: (value: unknown) => ErrorObject[] | null;
  /** The body schema's top-level `required` list. */
  bodyRequired: string[];
  queryNames: string[];
  pathParams: string[];
  bearer: boolean;
  elevation: boolean;
}

/**
 * Tables a refused request may write by design: the history of refused sign-ins, the audit trail,
 * and the counters of guesses and messages (a refused guess is exactly what a budget counts).
 */
const WRITTEN_BY_REFUSALS = new Set([
  'sign_in_attempts',
  'audit_records',
  'guess_budgets',
  'send_windows',
  // Checked by type below: a refusal's only events are the lock's and a replay's (docs/events.md).
  'events',
  'webhook_deliveries',
]);

export function routeKey(method: string, path: string): string {
  return `${method.toUpperCase()} ${path}`;
}

function collectProperties(
  schema: unknown,
  components: Record<string, JsonSchema>,
  out: Map<string, JsonSchema>,
  depth = 0,
): void {
  if (!schema || typeof schema !== 'object' || depth > 12) return;
  const s = schema as JsonSchema;
  if (typeof s.$ref === 'string') {
    const name = s.$ref.split('/').pop()!;
    collectProperties(components[name], components, out, depth + 1);
    return;
  }
  const props = s.properties as Record<string, JsonSchema> | undefined;
  if (props) {
    for (const [name, sub] of Object.entries(props)) {
      // The fullest declaration wins (an `if` clause only names a const).
      const known = out.get(name);
      if (!known || Object.keys(sub).length > Object.keys(known).length) out.set(name, sub);
    }
  }
  for (const key of ['allOf', 'anyOf', 'oneOf']) {
    for (const sub of (s[key] as unknown[] | undefined) ?? [])
      collectProperties(sub, components, out, depth + 1);
  }
  for (const key of ['then', 'else']) collectProperties(s[key], components, out, depth + 1);
}

export function routesOf(doc: {
  paths: Record<string, Record<string, Record<string, unknown>>>;
  components?: { schemas?: Record<string, JsonSchema> };
}): Route[] {
  const components = doc.components?.schemas ?? {};
  const routes: Route[] = [];
  for (const [path, ops] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(ops)) {
      const params = (op.parameters as { in: string; name: string }[] | undefined) ?? [];
      const security = (op.security as Record<string, unknown>[] | undefined) ?? [];
      const body = (op.requestBody as { content?: Record<string, { schema?: unknown }> } | undefined)
        ?.content;
      const bodyProperties = new Map<string, JsonSchema>();
      for (const media of Object.values(body ?? {}))
        collectProperties(media.schema, components, bodyProperties);
      const bodySchema = body?.['application/json']?.schema;
      const resolved = bodySchema ? (deref(bodySchema, components) as JsonSchema) : undefined;
      const validate = resolved ? ajv.compile(resolved) : undefined;
      routes.push({
        method: method.toUpperCase(),
        path,
        statuses: new Set(Object.keys((op.responses as object) ?? {}).map(Number)),
        bodyProperties,
        hasBody: body !== undefined,
        bodyErrors: (value) => (!validate || validate(value) ? null : (validate.errors ?? [])),
        bodyRequired: Array.isArray(resolved?.required) ? (resolved.required as string[]) : [],
        queryNames: params.filter((p) => p.in === 'query').map((p) => p.name),
        pathParams: params.filter((p) => p.in === 'path').map((p) => p.name),
        // A SCIM route's bearer is its organization's SCIM token (FuzzApp.scimToken).
        bearer: security.some((s) => 'bearer' in s || 'scimToken' in s),
        elevation: security.some((s) => 'elevation' in s),
      });
    }
  }
  return routes;
}

// ---------------------------------------------------------------------------------------------
// Request specs (what the generators produce) and their resolution against live credentials

/** A JSON value that can hold duplicate keys, `__proto__` keys and raw number tokens. */
export type J = null | boolean | number | string | J[] | JObject | JRaw;
export interface JObject {
  entries: [string, J][];
}
export interface JRaw {
  raw: string;
}

export function toJsonText(value: J): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(toJsonText).join(',')}]`;
  if ('raw' in value) return value.raw;
  return `{${value.entries.map(([k, v]) => `${JSON.stringify(k)}:${toJsonText(v)}`).join(',')}}`;
}

export type BodySpec = { kind: 'none' } | { kind: 'json'; value: J } | { kind: 'raw'; bytes: Buffer };

export type AuthSpec =
  | 'none'
  | 'real'
  | 'real-lowercase-scheme'
  | 'real-trailing-space'
  | 'real-twice'
  | 'alg-none'
  | 'alg-none-signed'
  | 'hs256-jwk-json'
  | 'hs256-jwk-x'
  | 'rs256'
  | 'foreign-eddsa'
  | 'embedded-jwk'
  | 'kid-injection'
  | 'tampered-payload'
  | 'huge-payload'
  | 'elevation-as-bearer'
  | 'refresh-as-bearer'
  | { scheme: string; value: string };

export type ElevationSpec =
  | 'none'
  | 'real'
  | 'foreign'
  | 'empty'
  | 'huge'
  | 'real-trailing-space'
  | 'twice'
  | 'access-token'
  | { value: string };

export interface RequestSpec {
  method: string;
  /** Path with placeholders; the query string is separate (already encoded). */
  path: string;
  query: string;
  body: BodySpec;
  /** undefined: no Content-Type header at all. */
  contentType?: string;
  auth: AuthSpec;
  elevation: ElevationSpec;
  headers: [string, string][];
}

/** Placeholders the generators put in paths and bodies; replaced by live values at send time. */
export const PLACEHOLDER = {
  email: '@@EMAIL@@',
  refreshToken: '@@REFRESH@@',
  accessToken: '@@ACCESS@@',
  elevation: '@@ELEVATION@@',
  identifierId: '@@IDENTIFIER_ID@@',
} as const;

/** The routes whose success answers the caller's own identifiers unmasked (to that caller only). */
const OWN_DATA_ROUTES = new Set([
  'GET /api/v1/account/export',
  'GET /api/v1/account',
  'PATCH /api/v1/account',
]);

/** Distinctive strings the generators embed as secrets: `fzS` + 12 hex digits. */
export const MARKER = /fz[SI][0-9a-f]{12}/gi;

interface Actor {
  person: Person;
  accessToken: string;
  refreshToken: string;
  sessionId: string;
  /** A second live session of the same identity (a foreign elevation is minted for it). */
  otherSessionId: string;
  otherAccessToken: string;
  elevation: string;
  foreignElevation: string;
  identifierId: string;
  forged: Map<string, string>;
}

function sidOf(accessToken: string): string {
  return JSON.parse(Buffer.from(accessToken.split('.')[1], 'base64url').toString('utf8')).sid as string;
}

interface Snapshot {
  counts: Record<string, number>;
  auditSeq: string;
  eventsAppended: string;
  succeededAttempts: number;
  revokedSessions: number;
  epochSum: number;
}

export interface Exchange {
  spec: RequestSpec;
  res: LightMyRequestResponse;
  /** The route Fastify matched, `METHOD /openapi/{path}`, or undefined (not found, bad URL). */
  matched?: string;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const SUPPLIED_REQUEST_ID = 'fz-client-request-id';

export class FuzzApp {
  private actor?: Actor;
  private readonly matched = new Map<string, string>();
  private tables: string[] = [];
  private snapshotQuery = '';
  private last?: { txns: string; snapshot: Snapshot };
  private rsaKey!: CryptoKey;
  private foreignKey!: CryptoKey;
  private foreignJwk!: JWK;
  /** A SCIM token of an organization of its own: 'real' credentials on /scim/v2 (docs/scim.md). */
  private scimToken = '';
  /** Every secret sent in a body or credential header; none may reach the logs. */
  readonly sentSecrets = new Set<string>();
  routes: Route[] = [];
  byKey = new Map<string, Route>();
  requests = 0;
  readonly statusCounts = new Map<number, number>();
  /** Statuses per matched route (FUZZ_VERBOSE=1 prints them): shows how often handlers are reached. */
  readonly routeStatuses = new Map<string, Map<number, number>>();

  private constructor(readonly t: TestApp) {}

  static async open(opts: { extend?: (app: FastifyInstance) => void } = {}): Promise<FuzzApp> {
    let self: FuzzApp | undefined;
    const t = await createTestApp({
      env: {
        // The fuzzer is not testing the limiter: a 429 would hide the handler behind it.
        RATE_LIMIT_SENDS_A_MESSAGE: '100000000/60',
        RATE_LIMIT_ANSWERS_A_CHALLENGE: '100000000/60',
        RATE_LIMIT_PROVES_A_PASSWORD: '100000000/60',
        LOG_LEVEL: 'info',
      },
      extend: (app: FastifyInstance) => {
        // Which route answered: a 2xx must come from a route the OpenAPI document declares.
        app.addHook('onRequest', async (request) => {
          const url = request.routeOptions.url;
          if (url) self?.matched.set(request.id, routeKey(request.method, url.replace(/:(\w+)/g, '{$1}')));
        });
        opts.extend?.(app);
      },
    });
    self = new FuzzApp(t);
    await self.init();
    return self;
  }

  private async init(): Promise<void> {
    const res = await this.t.app.inject({ method: 'GET', url: '/openapi.json' });
    if (res.statusCode !== 200) throw new Error(`openapi.json answered ${res.statusCode}`);
    this.routes = routesOf(res.json());
    this.byKey = new Map(this.routes.map((r) => [routeKey(r.method, r.path), r]));
    const tables = await sql<{ table_name: string }>`
      SELECT table_name FROM information_schema.tables
      WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' AND table_name <> 'schema_migrations'
      ORDER BY table_name`.execute(this.t.db.database.db);
    this.tables = tables.rows.map((r) => r.table_name);
    for (const required of ['identities', 'identifiers', 'sessions', 'refresh_tokens', 'audit_records']) {
      if (!this.tables.includes(required)) throw new Error(`table ${required} not found`);
    }
    this.snapshotQuery = `SELECT ${this.tables
      .map((name) => `(SELECT count(*) FROM "${name}")::int AS "${name}"`)
      .join(', ')},
      (SELECT coalesce(max(seq), 0) FROM audit_records)::text AS "@audit_seq",
      (SELECT coalesce(max(appended), 0) FROM events)::text AS "@events_appended",
      (SELECT count(*) FROM sign_in_attempts WHERE outcome = 'succeeded')::int AS "@succeeded",
      (SELECT count(*) FROM sessions WHERE revoked_at IS NOT NULL)::int AS "@revoked",
      (SELECT coalesce(sum(session_epoch), 0) FROM identities)::int AS "@epochs",
      pg_current_snapshot()::text AS "@txns"`;
    this.rsaKey = (await generateKeyPair('RS256')).privateKey;
    const foreign = await generateKeyPair('EdDSA', { crv: 'Ed25519', extractable: true });
    this.foreignKey = foreign.privateKey;
    this.foreignJwk = await exportJWK(foreign.publicKey);
    const owner = await createPerson(this.t.ctx);
    const ownerToken = (await signIn(this.t.app, owner)).accessToken;
    const org = await this.t.app.inject({
      method: 'POST',
      url: '/api/v1/organizations',
      headers: { authorization: `Bearer ${ownerToken}` },
      payload: { name: 'Fuzz', slug: `fuzz-${Date.now().toString(36)}` },
    });
    const token = await this.t.app.inject({
      method: 'POST',
      url: `/api/v1/organizations/${org.json().data.id}/scim-tokens`,
      headers: { authorization: `Bearer ${ownerToken}` },
      payload: { name: 'Fuzz' },
    });
    if (token.statusCode !== 201) throw new Error(`scim token: ${token.statusCode} ${token.body}`);
    this.scimToken = token.json().data.token;
  }

  close(): Promise<void> {
    return this.t.close();
  }

  /**
   * The database's counts, compared before and after each request. Counting every table twice per
   * request was most of what a fuzz file spent (two full counts per exchange), and most requests
   * write nothing: so the last counts are kept with the transaction snapshot they were read under
   * (`pg_current_snapshot()`: the next transaction id and those still in flight), and reused while
   * that is unchanged. A write needs a transaction id, so any commit since moves the next id or
   * takes an id off the in-flight list, and the tables are counted again; an unchanged snapshot
   * means no row anyone could count has changed. On a server shared with other files the ids move
   * all the time and every snapshot is counted, as before.
   */
  private async snapshot(): Promise<Snapshot> {
    const { db } = this.t.db.database;
    if (this.last) {
      const now = await sql<{ txns: string }>`SELECT pg_current_snapshot()::text AS txns`.execute(db);
      if (now.rows[0].txns === this.last.txns) return this.last.snapshot;
    }
    const r = await sql.raw<Record<string, number | string>>(this.snapshotQuery).execute(db);
    const row = r.rows[0];
    const counts: Record<string, number> = {};
    for (const name of this.tables) counts[name] = Number(row[name]);
    const snapshot = {
      counts,
      auditSeq: String(row['@audit_seq']),
      eventsAppended: String(row['@events_appended']),
      succeededAttempts: Number(row['@succeeded']),
      revokedSessions: Number(row['@revoked']),
      epochSum: Number(row['@epochs']),
    };
    this.last = { txns: String(row['@txns']), snapshot };
    return snapshot;
  }

  private async isLive(sessionId: string): Promise<boolean> {
    const r = await sql<{ ok: boolean }>`
      SELECT (s.revoked_at IS NULL AND s.epoch = i.session_epoch) AS ok
      FROM sessions s JOIN identities i ON i.id = s.identity_id WHERE s.id = ${sessionId}`.execute(
      this.t.db.database.db,
    );
    return r.rows[0]?.ok === true;
  }

  private async isErased(identityId: string): Promise<boolean> {
    const r = await sql<{ erased: boolean }>`
      SELECT erased_at IS NOT NULL AS erased FROM identities WHERE id = ${identityId}`.execute(
      this.t.db.database.db,
    );
    return r.rows[0]?.erased !== false;
  }

  /** The signed-in person; a new session (or person) when a fuzzed request ended the old one. */
  private async liveActor(): Promise<Actor> {
    const a = this.actor;
    if (a && (await this.isLive(a.sessionId)) && (await this.isLive(a.otherSessionId))) return a;
    // A fuzzed POST /account/deletions may have erased the person: then a new one signs in.
    const person =
      a && !(await this.isErased(a.person.identityId)) ? a.person : await createPerson(this.t.ctx);
    const main = await signIn(this.t.app, person);
    const other = await signIn(this.t.app, person);
    const sessionId = sidOf(main.accessToken);
    const otherSessionId = sidOf(other.accessToken);
    const { db } = this.t.ctx.database;
    const mint = (sid: string) =>
      db
        .transaction()
        .execute((trx) =>
          mintElevation(trx, this.t.ctx, { identityId: person.identityId, sessionId: sid }, 'identifier'),
        );
    const identifier = await sql<{ id: string }>`
      SELECT id FROM identifiers WHERE identity_id = ${person.identityId} ORDER BY created_at LIMIT 1`.execute(
      db,
    );
    this.actor = {
      person,
      accessToken: main.accessToken,
      refreshToken: main.refreshToken,
      sessionId,
      otherSessionId,
      otherAccessToken: other.accessToken,
      elevation: (await mint(sessionId)).elevationToken,
      foreignElevation: (await mint(otherSessionId)).elevationToken,
      identifierId: identifier.rows[0].id,
      forged: new Map(),
    };
    return this.actor;
  }

  private async forge(a: Actor, kind: string): Promise<string> {
    const cached = a.forged.get(kind);
    if (cached) return cached;
    const origin = this.t.config.publicOrigin;
    const jwks = this.t.ctx.tokens.jwks().keys;
    const kid = jwks[0].kid as string;
    const now = Math.floor(this.t.clock.now().getTime() / 1000);
    const claims = {
      sid: a.sessionId,
      sub: a.person.identityId,
      iss: origin,
      aud: origin,
      iat: now,
      exp: now + 600,
    };
    const jwt = (extra: Record<string, unknown> = {}) => new SignJWT({ ...claims, jti: 'fz', ...extra });
    const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
    let token: string;
    switch (kind) {
      case 'alg-none':
        token = `${b64({ alg: 'none', kid, typ: 'at+jwt' })}.${b64({ ...claims, jti: 'fz' })}.`;
        break;
      case 'alg-none-signed':
        token = `${b64({ alg: 'none', kid, typ: 'at+jwt' })}.${b64({ ...claims, jti: 'fz' })}.AAAA`;
        break;
      case 'hs256-jwk-json':
        // Key confusion: the public key, as published, used as an HMAC secret.
        token = await jwt()
          .setProtectedHeader({ alg: 'HS256', kid, typ: 'at+jwt' })
          .sign(new TextEncoder().encode(JSON.stringify(jwks[0])));
        break;
      case 'hs256-jwk-x':
        token = await jwt()
          .setProtectedHeader({ alg: 'HS256', kid, typ: 'at+jwt' })
          .sign(Buffer.from(jwks[0].x as string, 'base64url'));
        break;
      case 'rs256':
        token = await jwt().setProtectedHeader({ alg: 'RS256', kid, typ: 'at+jwt' }).sign(this.rsaKey);
        break;
      case 'foreign-eddsa':
        token = await jwt().setProtectedHeader({ alg: 'EdDSA', kid, typ: 'at+jwt' }).sign(this.foreignKey);
        break;
      case 'embedded-jwk':
        token = await jwt()
          .setProtectedHeader({ alg: 'EdDSA', jwk: this.foreignJwk, typ: 'at+jwt' })
          .sign(this.foreignKey);
        break;
      case 'kid-injection':
        token = await jwt()
          .setProtectedHeader({ alg: 'EdDSA', kid: "' OR 1=1 --/../../etc/passwd", typ: 'at+jwt' })
          .sign(this.foreignKey);
        break;
      case 'tampered-payload': {
        // The real signature over a payload naming the other session.
        const [h, , s] = a.accessToken.split('.');
        const payload = JSON.parse(Buffer.from(a.accessToken.split('.')[1], 'base64url').toString('utf8'));
        token = `${h}.${b64({ ...payload, sid: a.otherSessionId })}.${s}`;
        break;
      }
      case 'huge-payload':
        token = await jwt({ pad: 'p'.repeat(64 * 1024) })
          .setProtectedHeader({ alg: 'EdDSA', kid, typ: 'at+jwt' })
          .sign(this.foreignKey);
        break;
      default:
        throw new Error(`unknown forgery ${kind}`);
    }
    a.forged.set(kind, token);
    return token;
  }

  private async authorization(
    a: Actor | undefined,
    auth: AuthSpec,
    scim: boolean,
  ): Promise<string | undefined> {
    if (auth === 'none') return undefined;
    if (typeof auth === 'object') return `${auth.scheme} ${auth.value}`.trim();
    if (!a) throw new Error('actor required');
    const real = scim ? this.scimToken : a.accessToken;
    switch (auth) {
      case 'real':
        return `Bearer ${real}`;
      case 'real-lowercase-scheme':
        return `bearer ${real}`;
      case 'real-trailing-space':
        return `Bearer ${real} `;
      case 'real-twice':
        return `Bearer ${a.accessToken}, Bearer ${a.otherAccessToken}`;
      case 'elevation-as-bearer':
        return `Bearer ${a.elevation}`;
      case 'refresh-as-bearer':
        return `Bearer ${a.refreshToken}`;
      default:
        return `Bearer ${await this.forge(a, auth)}`;
    }
  }

  private elevationHeader(a: Actor | undefined, e: ElevationSpec): string | string[] | undefined {
    if (e === 'none') return undefined;
    if (typeof e === 'object') return e.value;
    if (e === 'empty') return '';
    if (e === 'huge') return 'e'.repeat(64 * 1024);
    if (!a) throw new Error('actor required');
    switch (e) {
      case 'real':
        return a.elevation;
      case 'foreign':
        return a.foreignElevation;
      case 'real-trailing-space':
        return `${a.elevation} `;
      case 'twice':
        return [a.elevation, a.foreignElevation];
      case 'access-token':
        return a.accessToken;
    }
  }

  private needsActor(spec: RequestSpec): boolean {
    const text = `${spec.path}${spec.query}${spec.body.kind === 'json' ? toJsonText(spec.body.value) : ''}`;
    return (
      (spec.auth !== 'none' && typeof spec.auth !== 'object') ||
      !['none', 'empty', 'huge'].includes(typeof spec.elevation === 'object' ? 'none' : spec.elevation) ||
      text.includes('@@')
    );
  }

  /** Sends one fuzzed request and checks every invariant; throws a readable error on a breach. */
  async exchange(spec: RequestSpec): Promise<Exchange> {
    const a = this.needsActor(spec) ? await this.liveActor() : undefined;
    const fill = (text: string) =>
      a
        ? text
            .replaceAll(PLACEHOLDER.email, a.person.email)
            .replaceAll(PLACEHOLDER.refreshToken, a.refreshToken)
            .replaceAll(PLACEHOLDER.accessToken, a.accessToken)
            .replaceAll(PLACEHOLDER.elevation, a.elevation)
            .replaceAll(PLACEHOLDER.identifierId, a.identifierId)
        : text;
    const headers: Record<string, string | string[]> = { 'x-request-id': SUPPLIED_REQUEST_ID };
    for (const [name, value] of spec.headers) headers[name] = value;
    const authorization = await this.authorization(a, spec.auth, spec.path.startsWith(SCIM_PATH));
    if (authorization !== undefined) headers.authorization = authorization;
    const elevation = this.elevationHeader(a, spec.elevation);
    if (elevation !== undefined) headers['x-elevation-token'] = elevation;
    if (spec.contentType !== undefined) headers['content-type'] = spec.contentType;
    let payload: Buffer | undefined;
    if (spec.body.kind === 'json') payload = Buffer.from(fill(toJsonText(spec.body.value)), 'utf8');
    if (spec.body.kind === 'raw') payload = spec.body.bytes;
    const url = fill(spec.path) + (spec.query ? `?${spec.query}` : '');

    // Secrets: every marker the generators embedded, the live credentials, the person's address.
    const secrets = new Set<string>();
    const sentText = `${payload?.toString('latin1') ?? ''}\n${authorization ?? ''}\n${[elevation ?? ''].flat().join(',')}`;
    for (const m of `${sentText}\n${url}`.matchAll(MARKER)) secrets.add(m[0]);
    for (const m of sentText.matchAll(MARKER)) this.sentSecrets.add(m[0]);
    if (authorization && authorization.length >= 24) secrets.add(authorization.replace(/^\S+\s+/, '').trim());
    for (const e of [elevation ?? []].flat()) if (e.length >= 24) secrets.add(e.trim());
    if (a) {
      for (const s of [
        a.accessToken,
        a.refreshToken,
        a.elevation,
        a.foreignElevation,
        a.person.password,
        this.scimToken,
      ]) {
        secrets.add(s);
      }
      secrets.add(a.person.email);
    }

    const opts: InjectOptions = { method: spec.method as InjectOptions['method'], url, headers };
    if (payload !== undefined) opts.payload = payload;
    const before = await this.snapshot();
    const res = await this.t.app.inject(opts);
    const after = await this.snapshot();
    this.requests++;
    this.statusCounts.set(res.statusCode, (this.statusCounts.get(res.statusCode) ?? 0) + 1);
    const requestId = String(res.headers['x-request-id'] ?? '');
    const matched = this.matched.get(requestId);
    this.matched.delete(requestId);
    const perRoute = this.routeStatuses.get(matched ?? '(no route)') ?? new Map<number, number>();
    perRoute.set(res.statusCode, (perRoute.get(res.statusCode) ?? 0) + 1);
    this.routeStatuses.set(matched ?? '(no route)', perRoute);
    const exchange = { spec, res, matched };
    const breaches = await this.breaches(exchange, secrets, before, after, a?.person.email);
    if (breaches.length > 0) {
      const logLines = this.t
        .logs()
        .split('\n')
        .filter((l) => requestId && l.includes(requestId) && /"level":(50|60)/.test(l))
        .map((l) => l.slice(0, 800));
      throw new Error(
        [
          `invariant broken: ${breaches.join('; ')}`,
          `request: ${spec.method} ${url.slice(0, 300)}${url.length > 300 ? `… (${url.length} chars)` : ''}`,
          `headers: ${JSON.stringify(headers).slice(0, 400)}`,
          `payload: ${payload ? JSON.stringify(payload.toString('latin1').slice(0, 400)) : '(none)'}${payload && payload.length > 400 ? ` … (${payload.length} bytes)` : ''}`,
          `response: ${res.statusCode} ${String(res.headers['content-type'])} ${res.body.slice(0, 400)}`,
          ...logLines.map((l) => `log: ${l}`),
        ].join('\n'),
      );
    }
    return exchange;
  }

  private async breaches(
    x: Exchange,
    secrets: Set<string>,
    before: Snapshot,
    after: Snapshot,
    ownAddress?: string,
  ): Promise<string[]> {
    const { res, spec, matched } = x;
    const out: string[] = [];
    const status = res.statusCode;
    const isHead = spec.method === 'HEAD';
    if (status >= 500) out.push(`status ${status} (never 5xx while the database is up)`);

    const requestId = res.headers['x-request-id'];
    if (typeof requestId !== 'string' || !UUID.test(requestId)) {
      out.push(`x-request-id ${JSON.stringify(requestId)} is not a server UUID`);
    }

    const contentType = String(res.headers['content-type'] ?? '');
    // A provider's callback answers every request with a 303 back to the hosted pages (docs/providers.md).
    const redirect = status === 303;
    const success = (status >= 200 && status < 300) || status === 304 || redirect;
    if (redirect) {
      const location = String(res.headers.location ?? '');
      // Never an open redirect: always back to this service's own origin.
      if (!location.startsWith(`${this.t.config.publicOrigin}/`))
        out.push(`303 to ${JSON.stringify(location)}`);
    }
    // The SCIM routes refuse in SCIM's error schema (docs/scim.md, "Errors"); a path under /scim/v2
    // the router refuses before matching (a malformed URL) may still be Problem Details.
    const scimAnswer = /^application\/scim\+json(;|$)/.test(contentType);
    const scimRoute = matched?.split(' ')[1]?.startsWith(SCIM_PATH) ?? false;
    if (!success && (scimRoute || (spec.path.startsWith(SCIM_PATH) && scimAnswer))) {
      if (!scimAnswer) out.push(`content-type ${JSON.stringify(contentType)} on a SCIM ${status}`);
      if (!isHead) out.push(...scimErrorBreaches(res.body, status));
    } else if (!success) {
      if (!/^application\/problem\+json(;|$)/.test(contentType)) {
        out.push(`content-type ${JSON.stringify(contentType)} on a ${status}`);
      }
      if (!isHead) out.push(...problemBreaches(res.body, status));
    } else {
      const key = matched ?? '(no route)';
      const declaredKey = matched?.startsWith('HEAD ') ? `GET ${matched.slice(5)}` : matched;
      const route = declaredKey ? this.byKey.get(declaredKey) : undefined;
      if (!route) out.push(`${status} from ${key}, which the OpenAPI document does not list`);
      else if (!route.statuses.has(status)) out.push(`${status} is not declared for ${key}`);
      if ((status === 204 || status === 304 || redirect) && res.body !== '')
        out.push(`${status} with a body`);
      if (!isHead && route?.path.startsWith('/api/v1/') && status !== 204 && status !== 304 && !redirect) {
        let body: unknown;
        try {
          body = JSON.parse(res.body);
        } catch {
          out.push('success body is not JSON');
        }
        if (body !== undefined && (typeof body !== 'object' || body === null || !('data' in body))) {
          out.push('success body has no data envelope');
        }
      }
    }

    const haystack = `${res.body}\n${JSON.stringify(res.headers)}`.toLowerCase();
    for (const s of secrets) {
      // The account export hands the owner their own data, identifiers unmasked (issue 14 item 3).
      if (s === ownAddress && matched !== undefined && OWN_DATA_ROUTES.has(matched) && success) continue;
      if (s.length >= 8 && haystack.includes(s.toLowerCase()))
        out.push(`response echoes a secret (${s.slice(0, 24)}…)`);
    }

    if (status >= 400 && status < 500) {
      for (const name of Object.keys(before.counts)) {
        if (WRITTEN_BY_REFUSALS.has(name)) continue;
        if (before.counts[name] !== after.counts[name]) {
          out.push(`refused request changed ${name}: ${before.counts[name]} -> ${after.counts[name]}`);
        }
      }
      // A refused sign-in is recorded in the history by design, only ever as refused.
      if (after.succeededAttempts !== before.succeededAttempts)
        out.push('refused request recorded a success');
      if (after.epochSum !== before.epochSum) out.push('refused request moved a session epoch');
      const code = safeCode(res.body);
      // Replay of a spent refresh token ends its session by design (interface 4.3).
      if (after.revokedSessions !== before.revokedSessions && code !== 'identity.renewal_refused') {
        out.push('refused request revoked a session');
      }
      // The only audit record a refusal may write is the lock tripping (interface 6).
      if (after.counts.audit_records !== before.counts.audit_records) {
        const names = await sql<{ name: string }>`
          SELECT name FROM audit_records WHERE seq > ${before.auditSeq} ORDER BY seq`.execute(
          this.t.db.database.db,
        );
        const unexpected = names.rows.map((r) => r.name).filter((n) => n !== 'identity.account.locked');
        if (unexpected.length > 0) out.push(`refused request wrote audit records ${unexpected.join(', ')}`);
      }
      // Its only events: the lock tripping, and the session a replayed refresh token ends.
      const events = await sql<{ type: string; reason: string | null }>`
        SELECT type, data->>'reason' AS reason FROM events WHERE appended > ${before.eventsAppended}
        ORDER BY appended`.execute(this.t.db.database.db);
      const unexpectedEvents = events.rows
        .filter(
          (e) =>
            e.type !== 'identity.locked' &&
            !(
              e.type === 'session.ended' &&
              e.reason === 'refresh_token_replayed' &&
              code === 'identity.renewal_refused'
            ),
        )
        .map((e) => e.type);
      if (unexpectedEvents.length > 0)
        out.push(`refused request appended events ${unexpectedEvents.join(', ')}`);
    }
    return out;
  }

  /** Secrets sent in bodies and credential headers never reach the log. */
  logLeaks(): string[] {
    const logged = new Set(this.t.logs().match(MARKER) ?? []);
    return [...this.sentSecrets].filter((s) => logged.has(s));
  }

  summary(): string {
    const byStatus = [...this.statusCounts.entries()].sort((a, b) => a[0] - b[0]);
    const lines = [`${this.requests} requests: ${byStatus.map(([s, n]) => `${s}×${n}`).join(' ')}`];
    if (process.env.FUZZ_VERBOSE) {
      for (const [route, statuses] of [...this.routeStatuses.entries()].sort()) {
        lines.push(`  ${route}: ${[...statuses.entries()].map(([s, n]) => `${s}×${n}`).join(' ')}`);
      }
    }
    return lines.join('\n');
  }
}

function safeCode(body: string): string | undefined {
  try {
    return (JSON.parse(body) as { code?: string }).code;
  } catch {
    return undefined;
  }
}

const SCIM_PATH = '/scim/v2';
const SCIM_TYPES = new Set([
  'invalidFilter',
  'tooMany',
  'uniqueness',
  'mutability',
  'invalidSyntax',
  'invalidPath',
  'noTarget',
  'invalidValue',
  'invalidVers',
]);

/** The SCIM error schema (RFC 7644 §3.12): its schema URN, status as a string equal to HTTP's, a detail. */
export function scimErrorBreaches(text: string, status: number): string[] {
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(text);
  } catch {
    return [`SCIM error body is not JSON: ${JSON.stringify(text.slice(0, 80))}`];
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    return ['SCIM error body is not an object'];
  const out: string[] = [];
  if (JSON.stringify(body.schemas) !== '["urn:ietf:params:scim:api:messages:2.0:Error"]')
    out.push('SCIM error schemas missing');
  if (body.status !== String(status))
    out.push(`SCIM error status ${String(body.status)} differs from HTTP ${status}`);
  if (typeof body.detail !== 'string' || body.detail === '') out.push('SCIM error detail missing');
  if (body.scimType !== undefined && !SCIM_TYPES.has(String(body.scimType)))
    out.push(`SCIM error scimType ${String(body.scimType)} unknown`);
  return out;
}

/** Problem Details (interface 2.3): every required field, with status equal to the HTTP status. */
export function problemBreaches(text: string, status: number): string[] {
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(text);
  } catch {
    return [`problem body is not JSON: ${JSON.stringify(text.slice(0, 80))}`];
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    return ['problem body is not an object'];
  const out: string[] = [];
  for (const field of ['type', 'title', 'detail', 'code'] as const) {
    if (typeof body[field] !== 'string' || body[field] === '') out.push(`problem.${field} missing`);
  }
  if (typeof body.retryable !== 'boolean') out.push('problem.retryable missing');
  if (body.status !== status) out.push(`problem.status ${String(body.status)} differs from HTTP ${status}`);
  if (typeof body.code === 'string' && body.type !== `/problems/${body.code}`)
    out.push('problem.type/code mismatch');
  if (body.errors !== undefined) {
    if (!Array.isArray(body.errors)) out.push('problem.errors is not an array');
    else {
      for (const e of body.errors as Record<string, unknown>[]) {
        for (const f of ['location', 'field', 'code', 'message']) {
          if (typeof e?.[f] !== 'string') out.push(`problem.errors[].${f} missing`);
        }
      }
    }
  }
  return out;
}
