-- Per-subject budgets of attempts at a guessable secret (contract 7, RATE_LIMIT_GUESSES).
-- The key is a keyed hash of the subject ("session:<identity>", "code:sign_up:<address>", ...),
-- so no address is stored in the clear. Every admitted attempt counts until a success deletes the
-- row; past the free allowance, next_attempt_at is when the next attempt may be made.
CREATE TABLE guess_budgets (
  key text PRIMARY KEY,
  attempts integer NOT NULL CHECK (attempts > 0),
  next_attempt_at timestamptz,
  updated_at timestamptz NOT NULL
);
