-- Provider nonces (interface 4.3): only the hex SHA-256 of the nonce is kept, which is exactly what
-- the ID token's nonce claim must carry, so the claim is looked up as-is and a database dump never
-- yields a usable nonce. Spending is a compare-and-set on spent_at in the act's transaction.
CREATE TABLE provider_nonces (
  id uuid PRIMARY KEY,
  hash text NOT NULL UNIQUE,
  created_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL,
  spent_at timestamptz
);
CREATE INDEX provider_nonces_expiry ON provider_nonces (expires_at);

-- An identity linked to an external provider's subject. One live link per (provider, subject):
-- concurrent first visits race on this index and exactly one identity is created.
CREATE TABLE provider_links (
  id uuid PRIMARY KEY,
  identity_id uuid NOT NULL REFERENCES identities (id),
  provider text NOT NULL,
  subject text NOT NULL,
  created_at timestamptz NOT NULL,
  last_used_at timestamptz,
  removed_at timestamptz
);
CREATE UNIQUE INDEX provider_links_live_subject ON provider_links (provider, subject) WHERE removed_at IS NULL;
CREATE INDEX provider_links_identity ON provider_links (identity_id);

-- A sign-in-method challenge names the address it would add without creating an identifiers row:
-- an unverified row owned by a signed-in identity would let a stranger's sign-up for the same
-- address join that identity (registration adds its challenge to the existing row's identity).
-- The row is created, already verified, only when the code is confirmed.
ALTER TABLE challenges ADD COLUMN identifier_type text CHECK (identifier_type IN ('email', 'phone'));
ALTER TABLE challenges ADD COLUMN identifier_value text;
