-- Step-up, elevations, second factors, second-factor sign-in tickets and recovery codes.

-- A step-up started by a session: bound to that session, so another session (even of the same
-- identity) cannot answer it. Channel 'identifier' keeps the keyed hash of the out-of-band code;
-- channel 'second_factor' has no code of its own (the authenticator's current code answers it).
CREATE TABLE step_up_challenges (
  id uuid PRIMARY KEY,
  identity_id uuid NOT NULL REFERENCES identities (id),
  session_id uuid NOT NULL REFERENCES sessions (id),
  channel text NOT NULL CHECK (channel IN ('second_factor', 'identifier')),
  identifier_id uuid REFERENCES identifiers (id),
  code_hash text,
  attempts integer NOT NULL DEFAULT 0,
  max_attempts integer NOT NULL,
  created_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL,
  spent_at timestamptz,
  -- Set when a newer step-up of the same session replaces this one.
  revoked_at timestamptz,
  CHECK ((channel = 'identifier') = (code_hash IS NOT NULL))
);
CREATE INDEX step_up_challenges_live_session ON step_up_challenges (session_id)
  WHERE spent_at IS NULL AND revoked_at IS NULL;

-- Elevation tokens: only the SHA-256 of the 256-bit token is kept. Live while unexpired and while
-- the session it is bound to is live.
CREATE TABLE elevations (
  token_hash text PRIMARY KEY,
  identity_id uuid NOT NULL REFERENCES identities (id),
  session_id uuid NOT NULL REFERENCES sessions (id),
  created_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL
);
CREATE INDEX elevations_session ON elevations (session_id);

-- Authenticator-app (TOTP) factors. Pending while verified_at IS NULL. The secret is sealed with
-- AES-256-GCM under a key derived from SECRETS_KEY, the row id as associated data, and the policy
-- in force at enrolment is kept on the row so a later policy change never breaks an authenticator.
CREATE TABLE second_factors (
  id uuid PRIMARY KEY,
  identity_id uuid NOT NULL REFERENCES identities (id),
  label text,
  sealed_secret text NOT NULL,
  algorithm text NOT NULL CHECK (algorithm IN ('SHA1', 'SHA256', 'SHA512')),
  digits integer NOT NULL CHECK (digits BETWEEN 6 AND 8),
  period integer NOT NULL CHECK (period > 0),
  created_at timestamptz NOT NULL,
  verified_at timestamptz,
  -- The highest TOTP time step ever accepted: a code of that step or an older one is a replay.
  last_used_step bigint,
  last_used_at timestamptz,
  revoked_at timestamptz
);
-- At most one live pending enrolment per identity (the identity row lock serialises enrolments;
-- this index makes a bug there fail loudly instead of leaving two secrets that confirm).
CREATE UNIQUE INDEX second_factors_one_pending ON second_factors (identity_id)
  WHERE verified_at IS NULL AND revoked_at IS NULL;
CREATE INDEX second_factors_verified ON second_factors (identity_id, verified_at DESC, id DESC)
  WHERE verified_at IS NOT NULL AND revoked_at IS NULL;

-- The ticket a sign-in answers when a second step is needed. Only the SHA-256 of the 256-bit
-- ticket is kept. It carries the session epoch read before the first proof, so a revocation in
-- between leaves the session it opens dead on arrival.
CREATE TABLE second_factor_tickets (
  id uuid PRIMARY KEY,
  ticket_hash text NOT NULL UNIQUE,
  identity_id uuid NOT NULL REFERENCES identities (id),
  epoch integer NOT NULL,
  primary_method text NOT NULL,
  attempts integer NOT NULL DEFAULT 0,
  max_attempts integer NOT NULL,
  created_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL,
  spent_at timestamptz
);
CREATE INDEX second_factor_tickets_identity ON second_factor_tickets (identity_id);

-- Recovery codes: keyed hash (HMAC under a key derived from SECRETS_KEY) of the normalised code.
-- A batch is live while its codes are neither used nor revoked; a new batch revokes the live codes
-- and leaves used ones as they were.
CREATE TABLE recovery_codes (
  id uuid PRIMARY KEY,
  identity_id uuid NOT NULL REFERENCES identities (id),
  batch_id uuid NOT NULL,
  code_hash text NOT NULL,
  issued_at timestamptz NOT NULL,
  used_at timestamptz,
  revoked_at timestamptz
);
CREATE INDEX recovery_codes_live ON recovery_codes (identity_id, code_hash)
  WHERE used_at IS NULL AND revoked_at IS NULL;
