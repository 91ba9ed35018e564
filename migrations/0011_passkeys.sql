-- Passkeys (WebAuthn credentials) as a way in, a step-up and a sign-in method. The credential id
-- is kept as the browser reports it (base64url); the public key is the COSE key as registered.
-- One live row per credential: a credential registered again after its removal is a new row,
-- and the removed one stays so a sign-in with it is refused and recorded against its identity.
CREATE TABLE passkeys (
  id uuid PRIMARY KEY,
  identity_id uuid NOT NULL REFERENCES identities (id),
  credential_id text NOT NULL,
  public_key bytea NOT NULL,
  sign_count bigint NOT NULL CHECK (sign_count >= 0),
  transports text[] NOT NULL DEFAULT '{}',
  backup_eligible boolean NOT NULL,
  backed_up boolean NOT NULL,
  aaguid uuid NOT NULL,
  label text CHECK (char_length(label) BETWEEN 1 AND 120),
  created_at timestamptz NOT NULL,
  last_used_at timestamptz,
  removed_at timestamptz
);
CREATE UNIQUE INDEX passkeys_live_credential ON passkeys (credential_id) WHERE removed_at IS NULL;
CREATE INDEX passkeys_credential ON passkeys (credential_id);
CREATE INDEX passkeys_identity ON passkeys (identity_id);

-- A WebAuthn challenge: random bytes the browser signs over. Only the hex SHA-256 of the
-- challenge is stored and looked up (clientDataJSON carries the challenge itself). Spent by
-- compare-and-set in the transaction that acts on it. Registration and step-up challenges are
-- bound to the session that asked for them; a sign-in challenge to nobody (discoverable
-- credentials: the authenticator says whose passkey answers).
CREATE TABLE webauthn_challenges (
  id uuid PRIMARY KEY,
  purpose text NOT NULL CHECK (purpose IN ('registration', 'sign_in', 'step_up')),
  challenge_hash text NOT NULL UNIQUE,
  session_id uuid REFERENCES sessions (id),
  created_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL,
  spent_at timestamptz,
  CONSTRAINT webauthn_challenges_binding CHECK ((purpose = 'sign_in') = (session_id IS NULL))
);
CREATE INDEX webauthn_challenges_expiry ON webauthn_challenges (expires_at);
