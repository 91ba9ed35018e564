-- Sealed audit chain: every record's seal covers the previous seal, so editing or deleting a
-- record breaks every seal after it. audit_head serialises appends (one row, locked FOR UPDATE).
CREATE TABLE audit_records (
  seq bigint PRIMARY KEY,
  id uuid NOT NULL UNIQUE,
  occurred_at timestamptz NOT NULL,
  name text NOT NULL,
  actor text,
  target text,
  outcome text NOT NULL,
  details jsonb NOT NULL DEFAULT '{}'::jsonb,
  seal text NOT NULL
);

CREATE TABLE audit_head (
  id integer PRIMARY KEY CHECK (id = 1),
  seq bigint NOT NULL,
  seal text NOT NULL
);
INSERT INTO audit_head (id, seq, seal) VALUES (1, 0, '');

-- Access-token signing keys made by the service when none is configured. The private JWK is
-- sealed with SECRETS_KEY (AES-256-GCM); only the public half is ever served.
CREATE TABLE signing_keys (
  kid text PRIMARY KEY,
  sealed_private_jwk text NOT NULL,
  public_jwk jsonb NOT NULL,
  created_at timestamptz NOT NULL,
  retired_at timestamptz
);
