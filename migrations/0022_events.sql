-- Events and webhooks (docs/events.md). An event is appended in the transaction of the change it
-- tells of, so a rolled-back change leaves none. `seq` is null when the event commits: one
-- sequencer stamps committed events afterwards (events/sequencer: a transaction holding the
-- `event_sequencer` row lock), so a reader that has seen seq N has seen every seq below it
-- (docs/decisions.md, "Events: seq stamped after commit").
CREATE TABLE events (
  id uuid PRIMARY KEY,
  seq bigint UNIQUE,
  type text NOT NULL,
  occurred_at timestamptz NOT NULL,
  actor text,
  identity_id uuid,
  session_id uuid,
  organization_id uuid,
  data jsonb NOT NULL,
  -- Insertion order (not gap-free): keeps the events of one transaction, and of one instant, in
  -- the order they were appended when they are stamped.
  appended bigserial NOT NULL
);
CREATE INDEX events_unstamped ON events (occurred_at, appended) WHERE seq IS NULL;
CREATE INDEX events_occurred ON events (occurred_at);

-- The one row every stamping transaction locks: stamps never interleave.
CREATE TABLE event_sequencer (
  id boolean PRIMARY KEY DEFAULT true CHECK (id),
  last_seq bigint NOT NULL
);
INSERT INTO event_sequencer (id, last_seq) VALUES (true, 0);

-- Where events are sent. The signing secret and the Ed25519 private key are sealed (Sealer, the
-- row id as associated data); the previous secret signs too until `previous_secret_until`.
CREATE TABLE webhook_endpoints (
  id uuid PRIMARY KEY,
  url text NOT NULL,
  description text NOT NULL DEFAULT '',
  -- Empty: every type.
  event_types text[] NOT NULL DEFAULT '{}',
  -- Null: events of every organization and of none.
  organization_id uuid,
  sealed_secret text NOT NULL,
  sealed_previous_secret text,
  previous_secret_until timestamptz,
  sealed_ed25519_key text,
  ed25519_public_key text,
  disabled_at timestamptz,
  disabled_reason text,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL
);
CREATE INDEX webhook_endpoints_created ON webhook_endpoints (created_at DESC, id DESC);

-- The outbox: one delivery per endpoint per matching event, written with the event.
CREATE TABLE webhook_deliveries (
  id uuid PRIMARY KEY,
  endpoint_id uuid NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
  event_id uuid NOT NULL REFERENCES events (id) ON DELETE CASCADE,
  -- pending, delivered, dead
  status text NOT NULL,
  attempts integer NOT NULL DEFAULT 0,
  due_at timestamptz NOT NULL,
  lease_id uuid,
  lease_until timestamptz,
  last_attempt_at timestamptz,
  last_status_code integer,
  last_error text,
  last_latency_ms integer,
  created_at timestamptz NOT NULL,
  UNIQUE (endpoint_id, event_id)
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (due_at) WHERE status = 'pending';
