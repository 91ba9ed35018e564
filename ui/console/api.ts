/*
 * The console's calls: its session (POST /console/session, same origin, which hands the page the
 * operator's access token and renews the idle clock) and the admin API (/admin/v1) with that token
 * as a bearer token. The token is kept in memory only, never in storage or the address bar.
 */

export type Role = 'owner' | 'support' | 'auditor';

export interface Operator {
  identityId: string;
  role: Role;
}

export interface Identifier {
  id: string;
  type: 'email' | 'phone';
  value: string;
  verifiedAt: string | null;
}

export interface IdentityItem {
  id: string;
  createdAt: string;
  name: string | null;
  identifiers: Identifier[];
  disabledAt: string | null;
  erasedAt: string | null;
}

export interface IdentityDetail extends IdentityItem {
  methods: {
    id: string;
    kind: string;
    display: string | null;
    verifiedAt: string | null;
    lastUsedAt: string | null;
  }[];
  secondFactors: { id: string; label: string | null; verifiedAt: string | null; lastUsedAt: string | null }[];
  hasPassword: boolean;
  recoveryCodesRemaining: number;
  lock: { failedAttempts: number; lockedUntil: string | null; locked: boolean };
  liveSessionCount: number;
  lastSignInAt: string | null;
}

export interface AuditRecord {
  seq: number;
  id: string;
  occurredAt: string;
  name: string;
  actor: string;
  target: string | null;
  outcome: string;
  verified: boolean;
}

export interface Organization {
  id: string;
  name: string;
  slug: string;
  requireSecondFactor: boolean;
  createdAt: string;
  disabledAt: string | null;
}

export interface Member {
  identityId: string;
  role: string;
  joinedAt: string;
  identifier: { type: 'email' | 'phone'; value: string } | null;
}

/** A live session of a person as the admin API shows it. */
export interface AdminSession {
  id: string;
  createdAt: string;
  lastActiveAt: string;
  sessionExpiresAt: string;
  method: string;
  device: { description: string; browser: string | null; os: string | null; type: string };
  ipAddress: string | null;
}

/** An organization a person belongs to, with their role in it. */
export interface PersonOrganization {
  id: string;
  name: string;
  slug: string;
  role: string;
  requireSecondFactor: boolean;
  joinedAt: string;
}

/** An app holding access to a person's account. */
export interface ConnectedApp {
  clientId: string;
  name: string;
  scopes: string[];
  since: string;
  lastAuthorizedAt: string | null;
}

export interface PageOf<T> {
  data: T[];
  meta: { pageInfo: { hasNextPage: boolean; nextCursor: string | null } };
}

/** A refusal of the admin API or of the console's session (Problem Details). */
export class ConsoleProblem extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
  ) {
    super(code);
  }
}

let token: string | null = null;
let operator: Operator | null = null;

/** Asks the console's session for the token (and renews its idle clock); null when signed out. */
export async function openSession(): Promise<Operator | null> {
  const r = await fetch('/console/session', { method: 'POST', credentials: 'same-origin' });
  if (r.status !== 200) {
    token = null;
    operator = null;
    return null;
  }
  const { data } = (await r.json()) as { data: { accessToken: string; identityId: string; role: Role } };
  token = data.accessToken;
  operator = { identityId: data.identityId, role: data.role };
  return operator;
}

export const currentOperator = (): Operator | null => operator;
/** The operator's access token, for a call that reads a header (an ETag); null when signed out. */
export const accessToken = (): string | null => token;

export async function signOut(): Promise<void> {
  await fetch('/console/sign-outs', { method: 'POST', credentials: 'same-origin' });
  token = null;
  operator = null;
}

/** One admin API call with the operator's token; `extra` adds headers (If-Match). */
export async function call<T>(
  method: string,
  path: string,
  body?: unknown,
  extra: Record<string, string> = {},
): Promise<T> {
  const headers: Record<string, string> = { ...extra, authorization: `Bearer ${token ?? ''}` };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const r = await fetch(`/admin/v1${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: 'omit',
  });
  if (r.status === 204) return undefined as T;
  const json = (await r.json().catch(() => ({}))) as { code?: string };
  if (json.code === 'admin.oidc_client_invalid') {
    const first = (json as { errors?: { field?: string }[] }).errors?.[0];
    throw new InvalidField(first?.field ?? '');
  }
  if (!r.ok) throw new ConsoleProblem(r.status, json.code ?? 'unknown');
  return json as T;
}

export const q = (params: Record<string, string | undefined>) => {
  const s = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined) s.set(k, v);
  const text = s.toString();
  return text ? `?${text}` : '';
};

export interface OidcClient {
  client_id: string;
  client_name: string | null;
  redirect_uris: string[];
  grant_types: string[];
  token_endpoint_auth_method: string;
  source: 'configuration' | 'admin';
  client_secret?: string | null;
}

/** A 422's first error (the field and its reason), as the admin API names it. */
export class InvalidField extends ConsoleProblem {
  constructor(readonly field: string) {
    super(422, 'admin.oidc_client_invalid');
  }
}

/**
 * The search's parameters for what an operator typed (docs/admin.md, "The console's pages"): an
 * address with `@` is an exact email, `+` and digits an exact phone, anything else a prefix;
 * nothing, the newest accounts. (A UUID is looked up by id before this.)
 */
export function searchQuery(typed: string): Record<string, string> {
  const q = typed.trim();
  if (!q) return {};
  if (q.includes('@')) return { identifierType: 'email', identifier: q };
  if (/^\+[0-9]{6,}$/.test(q)) return { identifierType: 'phone', identifier: q };
  return { prefix: q.toLowerCase() };
}

export const admin = {
  searchIdentities: (params: {
    identifierType?: string;
    identifier?: string;
    prefix?: string;
    after?: string;
  }) => call<PageOf<IdentityItem>>('GET', `/identities${q({ ...params, limit: '20' })}`),
  identity: (id: string) => call<{ data: IdentityDetail }>('GET', `/identities/${encodeURIComponent(id)}`),
  sessions: (id: string) =>
    call<PageOf<AdminSession>>('GET', `/identities/${encodeURIComponent(id)}/sessions${q({ limit: '50' })}`),
  personOrganizations: (id: string) =>
    call<PageOf<PersonOrganization>>(
      'GET',
      `/identities/${encodeURIComponent(id)}/organizations${q({ limit: '50' })}`,
    ),
  connectedApps: (id: string) =>
    call<PageOf<ConnectedApp>>(
      'GET',
      `/identities/${encodeURIComponent(id)}/connected-apps${q({ limit: '50' })}`,
    ),
  organizations: (after?: string) =>
    call<PageOf<Organization>>('GET', `/organizations${q({ after, limit: '50' })}`),
  organization: (id: string) =>
    call<{ data: Organization }>('GET', `/organizations/${encodeURIComponent(id)}`),
  members: (id: string) =>
    call<PageOf<Member>>('GET', `/organizations/${encodeURIComponent(id)}/members${q({ limit: '100' })}`),
  auditRecords: (params: { identityId?: string; after?: string }) =>
    call<PageOf<AuditRecord>>('GET', `/audit-records${q({ ...params, limit: '20' })}`),
  act: (id: string, act: 'disablements' | 'enablements' | 'lock-clearances' | 'session-revocations') =>
    call<void>('POST', `/identities/${encodeURIComponent(id)}/${act}`),
  clients: (after?: string) => call<PageOf<OidcClient>>('GET', `/oidc-clients${q({ after, limit: '50' })}`),
  registerClient: (body: Record<string, unknown>) =>
    call<{ data: OidcClient }>('POST', '/oidc-clients', body),
  rotateSecret: (clientId: string) =>
    call<{ data: OidcClient }>('POST', `/oidc-clients/${encodeURIComponent(clientId)}/secret-rotations`),
  erase: (id: string, identifier: string) =>
    call<void>('POST', `/identities/${encodeURIComponent(id)}/erasures`, { identifier }),
};
