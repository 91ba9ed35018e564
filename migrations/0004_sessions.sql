CREATE TABLE sessions (
  id uuid PRIMARY KEY,
  identity_id uuid NOT NULL REFERENCES identities (id),
  -- The identity's session_epoch read before the credential was verified; the session is live
  -- only while it still equals identities.session_epoch.
  epoch integer NOT NULL,
  method text NOT NULL,
  created_at timestamptz NOT NULL,
  -- Absolute end, fixed at sign-in; renewal never moves it.
  expires_at timestamptz NOT NULL,
  -- Current refresh-token generation; a token of any other generation is a replay.
  generation integer NOT NULL DEFAULT 1,
  renewed_at timestamptz,
  revoked_at timestamptz,
  -- The first reason is kept: revocation is a compare-and-set on revoked_at IS NULL.
  revoked_reason text
);
CREATE INDEX sessions_live_identity ON sessions (identity_id) WHERE revoked_at IS NULL;

-- Every refresh token ever issued, by SHA-256 of its 256-bit value; spent ones stay to catch replay.
CREATE TABLE refresh_tokens (
  hash text PRIMARY KEY,
  session_id uuid NOT NULL REFERENCES sessions (id),
  generation integer NOT NULL,
  created_at timestamptz NOT NULL,
  spent_at timestamptz
);
CREATE INDEX refresh_tokens_session ON refresh_tokens (session_id);

-- Sign-in history: attempts attributed to a known identity (contract 3).
CREATE TABLE sign_in_attempts (
  id uuid PRIMARY KEY,
  identity_id uuid NOT NULL REFERENCES identities (id),
  occurred_at timestamptz NOT NULL,
  method text NOT NULL,
  outcome text NOT NULL CHECK (outcome IN ('succeeded', 'refused')),
  ip_address text,
  user_agent text
);
CREATE INDEX sign_in_attempts_page ON sign_in_attempts (identity_id, occurred_at DESC, id DESC);
