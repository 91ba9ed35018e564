-- The operators' console (docs/admin.md, "The console"; docs/decisions.md, "Operators with a
-- role"): the roles the admin API gave identities of this service. CONSOLE_OPERATORS names others
-- in configuration; an identity it names takes that role, whatever this table says. One row per
-- identity, so granting is an upsert and two grants at once leave the last one standing.
CREATE TABLE operator_roles (
  identity_id uuid PRIMARY KEY REFERENCES identities (id) ON DELETE CASCADE,
  role text NOT NULL CHECK (role IN ('owner', 'support', 'auditor')),
  -- The audit actor who granted it: `admin:<key name>` or `operator:<identity id>`.
  granted_by text NOT NULL CHECK (char_length(granted_by) BETWEEN 1 AND 200),
  granted_at timestamptz NOT NULL
);
-- The list, newest first (GET /admin/v1/operators).
CREATE INDEX operator_roles_page ON operator_roles (granted_at DESC, identity_id DESC);
