-- Verified domains (issue 47, item 3; docs/organizations.md, "Domains"): an organization claims a
-- domain and proves it by a DNS TXT record carrying the row's token, or an operator verifies it.
-- `domain` is stored normalised: lower case, IDNA to punycode (node:url domainToASCII), no trailing
-- dot. The token is random and not secret (it is published in DNS): it binds the record to this
-- claim, so a record published for one organization never verifies another's claim of the domain.
CREATE TABLE organization_domains (
  id uuid PRIMARY KEY,
  organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  domain text NOT NULL CHECK (char_length(domain) BETWEEN 3 AND 253 AND domain = lower(domain)),
  verification_token text NOT NULL CHECK (verification_token ~ '^[A-Za-z0-9_-]{43}$'),
  created_at timestamptz NOT NULL,
  verified_at timestamptz,
  verified_by text CHECK (verified_by IN ('dns', 'operator')),
  last_checked_at timestamptz,
  CHECK ((verified_at IS NULL) = (verified_by IS NULL))
);
-- One claim of a domain per organization; several organizations may claim one domain...
CREATE UNIQUE INDEX organization_domains_claim ON organization_domains (organization_id, domain);
-- ...but at most one verifies it: of two verifications at once, the database lets one commit and
-- the other fails on this index (409 organization.domain_taken), whatever the instances.
CREATE UNIQUE INDEX organization_domains_verified ON organization_domains (domain)
  WHERE verified_at IS NOT NULL;
-- An organization's domains, newest first (GET .../domains).
CREATE INDEX organization_domains_page ON organization_domains (organization_id, created_at DESC, id DESC);
