-- One state machine for every challenge: step-up challenges join the out-of-band ones (issued,
-- answered by a constant-time match, spent by compare-and-set or charged an attempt).
-- A step-up challenge is bound to the session that started it and names its channel; a
-- 'second_factor' step-up has no code of its own (the authenticator's current code answers it),
-- every other challenge keeps the keyed hash of its code.
ALTER TABLE challenges ALTER COLUMN code_hash DROP NOT NULL;
ALTER TABLE challenges ADD COLUMN session_id uuid REFERENCES sessions (id);
ALTER TABLE challenges ADD COLUMN channel text CHECK (channel IN ('second_factor', 'identifier'));
ALTER TABLE challenges ADD CONSTRAINT challenges_shape CHECK (
  CASE WHEN purpose = 'step_up'
    THEN session_id IS NOT NULL AND channel IS NOT NULL AND (channel = 'identifier') = (code_hash IS NOT NULL)
    ELSE session_id IS NULL AND channel IS NULL AND code_hash IS NOT NULL
  END);

INSERT INTO challenges
  (id, identity_id, identifier_id, session_id, purpose, channel, code_hash, attempts, max_attempts,
   created_at, expires_at, spent_at, revoked_at)
SELECT id, identity_id, identifier_id, session_id, 'step_up', channel, code_hash, attempts, max_attempts,
       created_at, expires_at, spent_at, revoked_at
FROM step_up_challenges;
DROP TABLE step_up_challenges;

CREATE INDEX challenges_live_session ON challenges (session_id)
  WHERE session_id IS NOT NULL AND spent_at IS NULL AND revoked_at IS NULL;
