-- The hosted sign-in page an OpenID Provider interaction first sent the browser to (docs/oidc.md,
-- "Sign-in and consent"). prompt=login and max_age are met by a sign-in made for the interaction:
-- a hosted session opened at or after `shown_at` that is not the one the browser held then
-- (`held_session_id`, null when it held none). Both come from here and the sessions table at full
-- precision, never from the provider's whole-second times. A row lives as long as its interaction
-- can (an hour); the provider's sweep deletes it after.
CREATE TABLE oidc_sign_in_pages (
  uid text PRIMARY KEY,
  held_session_id uuid,
  shown_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL
);
CREATE INDEX oidc_sign_in_pages_expiry ON oidc_sign_in_pages (expires_at);
