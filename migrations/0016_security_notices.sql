-- Security notices (docs/security.md, "Security notices"): a change an attacker would make (the
-- password, a second factor, a passkey, recovery codes, an address, a linked provider) queues one
-- row in the same transaction as the change, so a change never commits without its notice. Rows
-- are deleted when they are sent. A removed address is kept sealed (AES-256-GCM under the sealing
-- key, bound to the row's id) until then: the removed address is told too.
CREATE TABLE security_notices (
  id uuid PRIMARY KEY,
  identity_id uuid NOT NULL REFERENCES identities (id) ON DELETE CASCADE,
  kind text NOT NULL,
  occurred_at timestamptz NOT NULL,
  -- The device and address of the request that made the change, when there was one.
  device text,
  ip_address text,
  -- `<type>:<value>` of a removed address, sealed; null for every other change.
  sealed_destination text
);
CREATE INDEX security_notices_identity ON security_notices (identity_id, occurred_at);

-- One message per identity per window: a message sets ends_at; changes before it are held and
-- sent together once it has passed. Claiming a window is one compare-and-set (an upsert whose
-- update only applies to an ended window), so two instances never send the same batch.
CREATE TABLE security_notice_windows (
  identity_id uuid PRIMARY KEY REFERENCES identities (id) ON DELETE CASCADE,
  ends_at timestamptz NOT NULL
);
CREATE INDEX security_notice_windows_ends ON security_notice_windows (ends_at);
