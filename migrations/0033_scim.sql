-- SCIM 2.0 provisioning per organization (docs/scim.md; docs/decisions.md, "SCIM provisioning").

-- A directory's bearer token: the token decides the organization. Only its SHA-256 is kept (a
-- 256-bit random secret needs no slow hash); it is shown once, at creation.
CREATE TABLE scim_tokens (
  id uuid PRIMARY KEY,
  organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  name text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 100),
  token_hash text NOT NULL CHECK (token_hash ~ '^[0-9a-f]{64}$'),
  -- The identity id of the owner who created it, or admin:<key name> for an operator.
  created_by text NOT NULL,
  created_at timestamptz NOT NULL,
  revoked_at timestamptz,
  last_used_at timestamptz
);
CREATE UNIQUE INDEX scim_tokens_hash ON scim_tokens (token_hash);
-- An organization's tokens, newest first (GET .../scim-tokens).
CREATE INDEX scim_tokens_page ON scim_tokens (organization_id, created_at DESC, id DESC);

-- One SCIM User per (organization, identity): what the directory sent that the identity does not
-- hold itself. The SCIM id is the identity id. The row outlives a suspension (active false), which
-- removes the membership: reactivation restores it with `role`.
CREATE TABLE scim_users (
  organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  identity_id uuid NOT NULL REFERENCES identities (id) ON DELETE CASCADE,
  user_name text NOT NULL CHECK (char_length(user_name) BETWEEN 1 AND 320),
  external_id text CHECK (char_length(external_id) BETWEEN 1 AND 320),
  active boolean NOT NULL DEFAULT true,
  -- The identity was created by this organization's provisioning: it is disabled with the
  -- suspension and erased with the deletion when its address is in a domain the organization verified.
  managed boolean NOT NULL,
  role text NOT NULL CHECK (role ~ '^[a-z][a-z0-9_-]{1,31}$'),
  -- The rest of the resource as the directory last sent it (name, emails, enterprise extension).
  attributes jsonb NOT NULL DEFAULT '{}'::jsonb,
  -- Moves by one on every change: the ETag's version; writes compare and set it (If-Match).
  version integer NOT NULL DEFAULT 1,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  PRIMARY KEY (organization_id, identity_id)
);
-- userName is unique per organization, case-insensitively (RFC 7643 §4.1.1): two creations race
-- on this index and one answers 409 uniqueness.
CREATE UNIQUE INDEX scim_users_user_name ON scim_users (organization_id, lower(user_name));
CREATE UNIQUE INDEX scim_users_external_id ON scim_users (organization_id, external_id)
  WHERE external_id IS NOT NULL;
-- Keyset order of the list (oldest first, as directories page with startIndex).
CREATE INDEX scim_users_page ON scim_users (organization_id, created_at, identity_id);

-- SCIM Groups of an organization.
CREATE TABLE scim_groups (
  id uuid PRIMARY KEY,
  organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  display_name text NOT NULL CHECK (char_length(display_name) BETWEEN 1 AND 256),
  external_id text CHECK (char_length(external_id) BETWEEN 1 AND 320),
  version integer NOT NULL DEFAULT 1,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL
);
CREATE UNIQUE INDEX scim_groups_display_name ON scim_groups (organization_id, lower(display_name));
CREATE INDEX scim_groups_page ON scim_groups (organization_id, created_at, id);

CREATE TABLE scim_group_members (
  group_id uuid NOT NULL REFERENCES scim_groups (id) ON DELETE CASCADE,
  organization_id uuid NOT NULL,
  identity_id uuid NOT NULL,
  PRIMARY KEY (group_id, identity_id),
  FOREIGN KEY (organization_id, identity_id) REFERENCES scim_users (organization_id, identity_id)
    ON DELETE CASCADE
);
CREATE INDEX scim_group_members_identity ON scim_group_members (organization_id, identity_id);

-- The organization's mapping from a group (its displayName or externalId) to one of its roles.
CREATE TABLE scim_group_roles (
  organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  group_key text NOT NULL CHECK (char_length(group_key) BETWEEN 1 AND 320),
  role text NOT NULL CHECK (role ~ '^[a-z][a-z0-9_-]{1,31}$'),
  PRIMARY KEY (organization_id, group_key)
);
