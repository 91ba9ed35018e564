-- Enterprise sign-in through OpenID connections, and connection tests (docs/sso.md). An OpenID
-- flow is a row of saml_flows like a SAML one: `request_id` holds its `state`, `binding_hash` binds
-- it to the browser, and `sealed_checks` keeps the nonce and the PKCE verifier sealed (as
-- provider_flows does), so a database dump yields neither. A test flow names the session that
-- started it (`tester_session_id`); its answer is `test_result` (what the IdP sent and which checks
-- passed), shown only to that session in that browser, and it never signs in or writes an identity.
ALTER TABLE saml_flows ADD COLUMN sealed_checks text;
ALTER TABLE saml_flows ADD COLUMN tester_session_id uuid;
ALTER TABLE saml_flows ADD COLUMN test_result jsonb;
