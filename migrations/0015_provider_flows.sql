-- Redirect sign-in through an upstream provider ("Continue with …", docs/providers.md). A flow is
-- the server side of one authorization request: single use, ten minutes, bound to the browser
-- that started it by a cookie whose SHA-256 is binding_hash. The state is looked up by its SHA-256;
-- the PKCE verifier and the nonce are sealed (AES-256-GCM under the sealing key), so a database
-- dump alone can neither answer a callback nor forge one.
CREATE TABLE provider_flows (
  id uuid PRIMARY KEY,
  provider text NOT NULL,
  intent text NOT NULL CHECK (intent IN ('sign_in', 'link', 'step_up')),
  -- The identity and session a link or step-up flow was started from (null for a sign-in).
  identity_id uuid REFERENCES identities (id),
  session_id uuid,
  return_to text NOT NULL,
  state_hash text NOT NULL UNIQUE,
  binding_hash text NOT NULL,
  sealed_checks text NOT NULL,
  created_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL,
  consumed_at timestamptz
);
CREATE INDEX provider_flows_expiry ON provider_flows (expires_at);
CREATE INDEX provider_flows_identity ON provider_flows (identity_id) WHERE identity_id IS NOT NULL;

-- The one-time code that hands a completed sign-in (or step-up) to the page (never a token in a
-- URL). A sign-in's carries the identity and the epoch read at the callback; the session or
-- second-factor ticket is made when the browser that started the flow exchanges it. A step-up's
-- names the session it was started from; the elevation is minted at the exchange, for that
-- session only. Single use, two minutes.
CREATE TABLE provider_handoffs (
  id uuid PRIMARY KEY,
  code_hash text NOT NULL UNIQUE,
  binding_hash text NOT NULL,
  kind text NOT NULL CHECK (kind IN ('sign_in', 'step_up')),
  identity_id uuid NOT NULL REFERENCES identities (id),
  session_id uuid,
  epoch integer NOT NULL,
  created_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL,
  consumed_at timestamptz
);
CREATE INDEX provider_handoffs_expiry ON provider_handoffs (expires_at);
CREATE INDEX provider_handoffs_identity ON provider_handoffs (identity_id);
