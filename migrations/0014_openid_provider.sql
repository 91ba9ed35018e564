-- The OpenID Provider's tables, owned by src/features/oidc/repository.ts.

-- Everything oidc-provider stores (codes, tokens, grants, its sessions, interactions), one row per
-- model instance. `consumed_at` is set by compare-and-set, so a code or refresh token used twice
-- at once is used once; expired rows are swept.
CREATE TABLE oidc_payloads (
  id text NOT NULL,
  kind text NOT NULL,
  payload jsonb NOT NULL,
  grant_id text,
  uid text,
  expires_at timestamptz,
  consumed_at timestamptz,
  PRIMARY KEY (kind, id)
);
CREATE INDEX oidc_payloads_grant ON oidc_payloads (grant_id) WHERE grant_id IS NOT NULL;
CREATE INDEX oidc_payloads_uid ON oidc_payloads (uid) WHERE uid IS NOT NULL;
CREATE INDEX oidc_payloads_expiry ON oidc_payloads (expires_at);

-- Which of the service's sessions a grant belongs to: the grant lives while that session does
-- (an offline grant: while the identity's epoch does), and ends with it on every path that ends
-- sessions. `ended_at` is set once (compare-and-set) by whoever ends it, who then sends the
-- back-channel logout.
CREATE TABLE oidc_grants (
  grant_id text PRIMARY KEY,
  identity_id uuid NOT NULL REFERENCES identities (id),
  session_id uuid NOT NULL REFERENCES sessions (id),
  client_id text NOT NULL,
  epoch integer NOT NULL,
  offline boolean NOT NULL DEFAULT false,
  scope text NOT NULL,
  sid text,
  created_at timestamptz NOT NULL,
  ended_at timestamptz,
  ended_reason text
);
CREATE INDEX oidc_grants_live ON oidc_grants (session_id) WHERE ended_at IS NULL;
CREATE INDEX oidc_grants_identity ON oidc_grants (identity_id, client_id);

-- Consent a person gave a third-party client, remembered until they revoke it.
CREATE TABLE oidc_consents (
  identity_id uuid NOT NULL REFERENCES identities (id),
  client_id text NOT NULL,
  scope text NOT NULL,
  granted_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  PRIMARY KEY (identity_id, client_id)
);

-- Clients registered through the admin API (those in OIDC_CLIENTS live in configuration). The
-- secret is kept only as its SHA-256: it is 256 random bits, shown once.
CREATE TABLE oidc_clients (
  client_id text PRIMARY KEY,
  metadata jsonb NOT NULL,
  secret_hash text,
  first_party boolean NOT NULL DEFAULT false,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL
);

-- The provider's signing keys (RS256 and EdDSA for ID tokens), sealed like the access-token key.
-- A retired key no longer signs but stays published until the tokens it signed have expired.
CREATE TABLE oidc_signing_keys (
  kid text PRIMARY KEY,
  alg text NOT NULL,
  sealed_private_jwk text NOT NULL,
  public_jwk jsonb NOT NULL,
  created_at timestamptz NOT NULL,
  retired_at timestamptz
);
