-- Enterprise sign-in (docs/sso.md): an organization's connections to its own identity provider.
-- A connection is SAML 2.0 or OpenID Connect; several per organization; only an enabled one signs
-- anyone in. Secrets (our SAML decryption key, an OIDC client secret) are sealed with the service's
-- sealing key, bound to the row's id; nothing else here is secret (an IdP's certificates are public).
CREATE TABLE sso_connections (
  id uuid PRIMARY KEY,
  organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  type text NOT NULL CHECK (type IN ('saml', 'oidc')),
  name text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 120),
  enabled boolean NOT NULL,
  -- The role a person signed in through the connection is made a member with.
  default_role text NOT NULL,
  -- Which IdP attribute carries the email, given name and family name ({ "email": "...", ... }).
  attribute_mapping jsonb NOT NULL,
  -- SAML: the IdP's entity id, its HTTP-Redirect SSO URL, its signing certificates (base64 DER,
  -- several so a rotation has two valid at once), whether assertions come encrypted to our key.
  idp_entity_id text,
  sso_url text,
  signing_certificates jsonb NOT NULL,
  want_encrypted boolean NOT NULL,
  decryption_certificate text,
  sealed_decryption_key text,
  -- IdP-initiated sign-in (no AuthnRequest of ours): off unless an operator or admin turns it on.
  allow_idp_initiated boolean NOT NULL,
  -- OpenID Connect.
  issuer text,
  client_id text,
  sealed_client_secret text,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  CHECK (type <> 'saml' OR (idp_entity_id IS NOT NULL AND sso_url IS NOT NULL)),
  CHECK (type <> 'oidc' OR (issuer IS NOT NULL AND client_id IS NOT NULL)),
  CHECK ((decryption_certificate IS NULL) = (sealed_decryption_key IS NULL))
);
CREATE INDEX sso_connections_page ON sso_connections (organization_id, created_at DESC, id DESC);

-- A SAML sign-in started here (SP-initiated) or answered unsolicited (IdP-initiated, when the
-- connection allows it). `request_id` is our AuthnRequest's ID, which the Response's InResponseTo
-- must name; `binding_hash` (SHA-256 of the flow cookie) binds it to the browser that started it
-- (null for an IdP-initiated answer, which the person confirms on a page instead). The ACS marks
-- it answered (compare-and-set: one answer per flow) and stores the handoff the page exchanges.
CREATE TABLE saml_flows (
  id uuid PRIMARY KEY,
  connection_id uuid NOT NULL REFERENCES sso_connections (id) ON DELETE CASCADE,
  request_id text NOT NULL UNIQUE,
  binding_hash text,
  return_to text NOT NULL,
  created_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL,
  answered_at timestamptz,
  handoff_hash text UNIQUE,
  handoff_expires_at timestamptz,
  identity_id uuid REFERENCES identities (id) ON DELETE CASCADE,
  epoch integer,
  exchanged_at timestamptz
);
CREATE INDEX saml_flows_expiry ON saml_flows (expires_at);
CREATE INDEX saml_flows_identity ON saml_flows (identity_id) WHERE identity_id IS NOT NULL;

-- Assertion ids seen, per connection, until the assertion could no longer be accepted anyway
-- (its NotOnOrAfter plus the clock skew): an assertion is used once. The ACS inserts with
-- ON CONFLICT DO NOTHING; zero rows inserted is a replay, whatever the instances.
CREATE TABLE saml_assertion_ids (
  connection_id uuid NOT NULL REFERENCES sso_connections (id) ON DELETE CASCADE,
  assertion_id text NOT NULL CHECK (char_length(assertion_id) BETWEEN 1 AND 256),
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (connection_id, assertion_id)
);
CREATE INDEX saml_assertion_ids_expiry ON saml_assertion_ids (expires_at);

-- The connection a session was opened through (method `sso`): its amr names it and its context
-- shows it. A connection removed leaves its sessions as they are, without the name.
ALTER TABLE sessions ADD COLUMN sso_connection_id uuid REFERENCES sso_connections (id) ON DELETE SET NULL;
