-- Require SSO (docs/sso.md, "Require SSO"): while on, an identity holding a verified email in one of
-- the organization's verified domains signs in only through the organization's IdP; every other
-- first factor is refused. Turning it on ends those identities' sessions and grants (the epoch).
ALTER TABLE organizations ADD COLUMN require_sso boolean NOT NULL DEFAULT false;

-- Group attribute to roles (docs/sso.md, "Groups and roles"): the IdP attribute carrying the
-- person's groups, and an ordered list of { "group": ..., "role": ... } (the first match wins).
ALTER TABLE sso_connections
  ADD COLUMN group_attribute text CHECK (char_length(group_attribute) BETWEEN 1 AND 256),
  ADD COLUMN group_roles jsonb NOT NULL DEFAULT '[]';

-- The sign-in check reads a verified email's domain: this index serves "who in this domain"
-- when the requirement is turned on (split_part is immutable, so it may be indexed).
CREATE INDEX identifiers_email_domain ON identifiers (split_part(value, '@', 2))
  WHERE type = 'email' AND verified_at IS NOT NULL AND removed_at IS NULL;
