CREATE TABLE identities (
  id uuid PRIMARY KEY,
  created_at timestamptz NOT NULL,
  -- Null until a registration is confirmed: a pending sign-up's password lives on its challenge.
  password_hash text,
  password_changed_at timestamptz,
  -- Incremented by sign-out everywhere and by credential revocations; a session is live only
  -- while its epoch equals its identity's (closes the sign-in-in-flight races).
  session_epoch integer NOT NULL DEFAULT 0,
  -- Identity-wide lock counter shared by every code-answering route.
  failed_attempts integer NOT NULL DEFAULT 0,
  locked_until timestamptz
);

CREATE TABLE identifiers (
  id uuid PRIMARY KEY,
  identity_id uuid NOT NULL REFERENCES identities (id),
  type text NOT NULL CHECK (type IN ('email', 'phone')),
  value text NOT NULL,
  created_at timestamptz NOT NULL,
  verified_at timestamptz,
  last_used_at timestamptz,
  removed_at timestamptz
);
-- One live row per normalised address: concurrent sign-ups race on this index and one wins.
CREATE UNIQUE INDEX identifiers_live_value ON identifiers (type, value) WHERE removed_at IS NULL;
CREATE INDEX identifiers_identity ON identifiers (identity_id);

-- Out-of-band challenges (sign-up, sign-in method, password recovery, step-up by identifier).
CREATE TABLE challenges (
  id uuid PRIMARY KEY,
  identity_id uuid NOT NULL REFERENCES identities (id),
  identifier_id uuid REFERENCES identifiers (id),
  purpose text NOT NULL CHECK (purpose IN ('sign_up', 'sign_in_method', 'password_recovery', 'step_up')),
  -- HMAC-SHA256 of the upper-cased code under a key derived from SECRETS_KEY.
  code_hash text NOT NULL,
  -- Sign-up only: the password sent with this registration (contract 3a).
  password_hash text,
  attempts integer NOT NULL DEFAULT 0,
  max_attempts integer NOT NULL,
  created_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL,
  spent_at timestamptz,
  revoked_at timestamptz
);
CREATE INDEX challenges_live_identity ON challenges (identity_id, purpose)
  WHERE spent_at IS NULL AND revoked_at IS NULL;
CREATE INDEX challenges_live_identifier ON challenges (identifier_id)
  WHERE spent_at IS NULL AND revoked_at IS NULL;
