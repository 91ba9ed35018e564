-- Organization invitations (docs/organizations.md, "Invitations"): an owner or an admin invites an
-- email address or a phone number into an organization with a role; whoever holds that identifier
-- verified accepts with the token the message carried. The token is stored only as a keyed hash
-- (HMAC with the organization-invitations purpose key), so a database dump accepts nothing.
CREATE TABLE organization_invitations (
  id uuid PRIMARY KEY,
  organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  identifier_type text NOT NULL CHECK (identifier_type IN ('email', 'phone')),
  -- Normalised exactly as sign-up normalises (lower-cased address, E.164 number).
  identifier text NOT NULL,
  role text NOT NULL CHECK (role ~ '^[a-z][a-z0-9_-]{1,31}$'),
  token_hash text NOT NULL,
  -- The inviter. An operator's erasure keeps the identity's bare id, so its invitations stay with
  -- the organization (docs/decisions.md, "Organizations"); only a deleted identity row takes them.
  invited_by uuid NOT NULL REFERENCES identities (id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL,
  accepted_at timestamptz,
  -- The identity that accepted; kept as null once it is erased.
  accepted_by uuid REFERENCES identities (id) ON DELETE SET NULL,
  revoked_at timestamptz,
  CHECK (accepted_at IS NULL OR revoked_at IS NULL)
);
CREATE UNIQUE INDEX organization_invitations_token ON organization_invitations (token_hash);
-- At most one pending invitation per organization and identifier: a new one revokes the old one
-- in the same transaction, and of two sent at once one waits on this index, then replaces the other.
CREATE UNIQUE INDEX organization_invitations_pending_identifier
  ON organization_invitations (organization_id, identifier_type, identifier)
  WHERE accepted_at IS NULL AND revoked_at IS NULL;
-- The pending list, newest first (GET /organizations/{id}/invitations).
CREATE INDEX organization_invitations_pending
  ON organization_invitations (organization_id, created_at DESC, id DESC)
  WHERE accepted_at IS NULL AND revoked_at IS NULL;
-- The inviter's export and erasure.
CREATE INDEX organization_invitations_invited_by ON organization_invitations (invited_by);
CREATE INDEX organization_invitations_accepted_by ON organization_invitations (accepted_by)
  WHERE accepted_by IS NOT NULL;
