-- Security round 3 (finding 3): one row, written at the first start, holding HMAC(key derived from
-- SECRETS_KEY for 'key-check', a fixed label). A later start under another SECRETS_KEY computes a
-- different value and stops with one line naming SECRETS_KEY, before anything is sealed with it.
CREATE TABLE key_checks (
  id smallint PRIMARY KEY CHECK (id = 1),
  key_check text NOT NULL,
  created_at timestamptz NOT NULL
);
