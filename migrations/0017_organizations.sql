-- Organizations (docs/organizations.md): a person belongs to several and acts in one at a time.
-- The slug is unique by a plain unique index: two creations of one slug race on it, and exactly
-- one insert wins (the other answers 409 organization.slug_taken).
CREATE TABLE organizations (
  id uuid PRIMARY KEY,
  name text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 100),
  slug text NOT NULL CHECK (slug ~ '^[a-z0-9-]{2,48}$'),
  require_second_factor boolean NOT NULL DEFAULT false,
  -- Kept as the bare id (no foreign key): an erased creator leaves the organization to its members.
  created_by uuid NOT NULL,
  created_at timestamptz NOT NULL,
  -- Moves strictly forward on every change of the organization itself: the strong ETag's version.
  updated_at timestamptz NOT NULL,
  disabled_at timestamptz
);
CREATE UNIQUE INDEX organizations_slug ON organizations (slug);

-- One row per member. Every change to an organization's memberships locks the organization row
-- first (SELECT ... FOR UPDATE), so the last-owner count and the write it allows are serialised.
CREATE TABLE organization_memberships (
  organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  identity_id uuid NOT NULL REFERENCES identities (id) ON DELETE CASCADE,
  role text NOT NULL CHECK (role ~ '^[a-z][a-z0-9_-]{1,31}$'),
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  PRIMARY KEY (organization_id, identity_id)
);
-- The caller's memberships, newest first (GET /organizations, the session context).
CREATE INDEX organization_memberships_identity ON organization_memberships (identity_id, created_at DESC);

-- The session's active organization. Its key names the membership itself: removing the
-- membership (or the organization, whose memberships cascade) clears the session's active
-- organization in the same statement, on every instance at once, and a session can never point
-- at an organization its identity does not belong to. No second key to organizations: its check
-- would take a share lock on the organization row, which membership changes hold FOR UPDATE
-- while they wait for the membership a switch holds (a deadlock); the membership key covers it.
ALTER TABLE sessions
  ADD COLUMN active_organization_id uuid,
  ADD CONSTRAINT sessions_active_membership
    FOREIGN KEY (active_organization_id, identity_id)
    REFERENCES organization_memberships (organization_id, identity_id)
    ON DELETE SET NULL (active_organization_id);
CREATE INDEX sessions_active_organization ON sessions (active_organization_id, identity_id)
  WHERE active_organization_id IS NOT NULL;
