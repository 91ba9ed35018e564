-- Devices (issue 14): where a session started, for the owner's list of sessions. The user agent is
-- kept as sent (bounded to 512 characters by the service) and parsed when listed.
ALTER TABLE sessions ADD COLUMN ip_address text;
ALTER TABLE sessions ADD COLUMN user_agent text;
-- The owner's list: live sessions of one identity, newest first.
CREATE INDEX sessions_page ON sessions (identity_id, created_at DESC, id DESC) WHERE revoked_at IS NULL;

-- A successful attempt names the session it opened; a new-sign-in notice is recorded on it.
ALTER TABLE sign_in_attempts ADD COLUMN session_id uuid REFERENCES sessions (id);
ALTER TABLE sign_in_attempts ADD COLUMN notice_sent_at timestamptz;
-- The notice looks back 90 days over an identity's successful sign-ins.
CREATE INDEX sign_in_attempts_succeeded ON sign_in_attempts (identity_id, occurred_at DESC)
  WHERE outcome = 'succeeded';

-- Operators (issue 14): a disabled identity cannot sign in and its sessions are ended; an erased
-- one keeps nothing but its bare id (the audit chain still names it), and is disabled for good.
ALTER TABLE identities ADD COLUMN disabled_at timestamptz;
ALTER TABLE identities ADD COLUMN erased_at timestamptz;
ALTER TABLE identities ADD CONSTRAINT identities_erased_disabled CHECK (erased_at IS NULL OR disabled_at IS NOT NULL);
CREATE INDEX identities_page ON identities (created_at DESC, id DESC);

-- Operator search by a prefix of the normalised identifier.
CREATE INDEX identifiers_value_prefix ON identifiers (value text_pattern_ops) WHERE removed_at IS NULL;

-- The audit trail read by identity (as actor or target).
CREATE INDEX audit_records_actor ON audit_records (actor, seq);
CREATE INDEX audit_records_target ON audit_records (target, seq);
