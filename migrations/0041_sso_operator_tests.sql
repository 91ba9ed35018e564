-- Operators' connection tests (docs/sso.md, "Testing a connection"; docs/decisions.md, "Operators'
-- connection tests"). The admin API makes the test flow at once, unbound: `start_hash` is the
-- SHA-256 of the single-use token in its public start URL, and `start_url` the IdP address that
-- start sends the browser to. Opening the start URL spends the token and binds the flow to that
-- browser (`binding_hash`, set then and not before), so an unopened flow can answer nothing. The
-- result is kept in `test_result` as for a member's test, and read only by `tester_operator`, the
-- operator who started it (`admin:<key>` or `operator:<identity id>`).
ALTER TABLE saml_flows ADD COLUMN tester_operator text;
ALTER TABLE saml_flows ADD COLUMN start_hash text;
ALTER TABLE saml_flows ADD COLUMN start_url text;
CREATE UNIQUE INDEX saml_flows_start_hash ON saml_flows (start_hash) WHERE start_hash IS NOT NULL;
