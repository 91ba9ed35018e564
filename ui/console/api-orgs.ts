/*
 * The console's calls for an organization's page and for editing OpenID clients (docs/admin.md,
 * "The console"): the admin API only, with the operator's token, as api.ts makes every call.
 */
import {
  accessToken,
  admin,
  ConsoleProblem,
  call,
  type OidcClient,
  type Organization,
  type PageOf,
} from './api.js';

export interface OrganizationDetail extends Organization {
  memberCount: number;
  ownerCount: number;
}

export interface Invitation {
  id: string;
  identifierType: 'email' | 'phone';
  identifier: string;
  role: string;
  /** Null when an operator invited. */
  invitedBy: string | null;
  createdAt: string;
  expiresAt: string;
}

export interface Domain {
  id: string;
  domain: string;
  createdAt: string;
  verifiedAt: string | null;
  verifiedBy: 'dns' | 'operator' | null;
}

export interface Connection {
  id: string;
  type: 'saml' | 'oidc';
  name: string;
  enabled: boolean;
  defaultRole: string;
}

/** An operator's connection test (docs/sso.md, "By an operator"). */
export interface ConnectionTestStart {
  id: string;
  startUrl: string;
  expiresAt: string;
}

/** What the IdP sent and which checks passed (GET /connection-tests/{id}). */
export interface ConnectionTestResult {
  connection: { id: string; name: string; type: 'saml' | 'oidc' };
  passed: boolean;
  checks: { check: string; passed: boolean; reason?: string }[];
  subject: string | null;
  email: string | null;
  attributes: Record<string, unknown>;
}

export interface ScimToken {
  id: string;
  name: string;
  createdAt: string;
  revokedAt: string | null;
  lastUsedAt: string | null;
}

const o = (id: string) => `/organizations/${encodeURIComponent(id)}`;
const c = (clientId: string) => `/oidc-clients/${encodeURIComponent(clientId)}`;

export const orgAdmin = {
  organization: (id: string) => call<{ data: OrganizationDetail }>('GET', o(id)),
  members: (id: string) => admin.members(id),
  update: (id: string, change: { requireSecondFactor?: boolean; name?: string }) =>
    call<{ data: OrganizationDetail }>('PATCH', o(id), change),
  setRole: (id: string, identityId: string, role: string) =>
    call<{ data: { identityId: string; role: string } }>(
      'PUT',
      `${o(id)}/members/${encodeURIComponent(identityId)}`,
      { role },
    ),
  removeMember: (id: string, identityId: string) =>
    call<void>('DELETE', `${o(id)}/members/${encodeURIComponent(identityId)}`),
  invitations: (id: string) => call<PageOf<Invitation>>('GET', `${o(id)}/invitations?limit=100`),
  /** An operator's invitation (POST …/invitations): the answer masks the address. */
  invite: (
    id: string,
    body:
      | { identifierType: 'email'; identifier: string; role: string }
      | { identifierType: 'phone'; identifier: string; country: string; role: string },
  ) =>
    call<{ data: { id: string; role: string; delivery: { status: 'DELIVERED' | 'NOT_DELIVERED' } } }>(
      'POST',
      `${o(id)}/invitations`,
      body,
    ),
  revokeInvitation: (id: string, invitationId: string) =>
    call<void>('DELETE', `${o(id)}/invitations/${encodeURIComponent(invitationId)}`),
  domains: (id: string) => call<PageOf<Domain>>('GET', `${o(id)}/domains?limit=100`),
  verifyDomain: (id: string, domainId: string) =>
    call<{ data: Domain }>('POST', `${o(id)}/domains/${encodeURIComponent(domainId)}/verifications`),
  connections: (id: string) => call<PageOf<Connection>>('GET', `${o(id)}/connections?limit=100`),
  setConnectionEnabled: (id: string, connectionId: string, enabled: boolean) =>
    call<{ data: Connection }>('PATCH', `${o(id)}/connections/${encodeURIComponent(connectionId)}`, {
      enabled,
    }),
  startConnectionTest: (id: string, connectionId: string) =>
    call<{ data: ConnectionTestStart }>(
      'POST',
      `${o(id)}/connections/${encodeURIComponent(connectionId)}/tests`,
    ),
  connectionTestResult: (testId: string) =>
    call<{ data: ConnectionTestResult }>('GET', `/connection-tests/${encodeURIComponent(testId)}`),
  scimTokens: (id: string) => call<PageOf<ScimToken>>('GET', `${o(id)}/scim-tokens?limit=100`),
  /** A new token: its secret (`token`) is in this answer and never again. */
  createScimToken: (id: string, name: string) =>
    call<{ data: ScimToken & { token: string } }>('POST', `${o(id)}/scim-tokens`, { name }),
  revokeScimToken: (id: string, tokenId: string) =>
    call<void>('DELETE', `${o(id)}/scim-tokens/${encodeURIComponent(tokenId)}`),
};

export interface ClientDetail extends OidcClient {
  post_logout_redirect_uris: string[];
}

export const clientAdmin = {
  /** The client as it is now, with its ETag (a change names the version it was made from). */
  read: async (clientId: string): Promise<{ client: ClientDetail; etag: string }> => {
    const r = await fetch(`/admin/v1${c(clientId)}`, {
      headers: { authorization: `Bearer ${accessToken() ?? ''}` },
      credentials: 'omit',
    });
    const json = (await r.json().catch(() => ({}))) as { data?: ClientDetail; code?: string };
    if (!r.ok || !json.data) throw new ConsoleProblem(r.status, json.code ?? 'unknown');
    return { client: json.data, etag: r.headers.get('etag') ?? '' };
  },
  update: (clientId: string, etag: string, change: Record<string, unknown>) =>
    call<{ data: ClientDetail }>('PATCH', c(clientId), change, { 'if-match': etag }),
  delete: (clientId: string) => call<void>('DELETE', c(clientId)),
};
