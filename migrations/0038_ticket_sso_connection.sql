-- The connection an SSO first step came through, kept on its second-factor ticket: the session the
-- second step opens names it (amr, session context) like a one-step SSO session (docs/sso.md).
ALTER TABLE second_factor_tickets
  ADD COLUMN sso_connection_id uuid REFERENCES sso_connections (id) ON DELETE SET NULL;
