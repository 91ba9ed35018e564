-- New-sign-in notices join the security notices' queue (docs/security.md, "Notices"): a notice is
-- never dropped by the destination's message window, which strangers' requests can spend; each
-- identity has a bound of its own per kind of notice instead. `stream` names which: `change` (a
-- security change) or `sign_in` (a sign-in from a new device and network). Each stream has its own
-- window, so a burst of sign-ins never holds back the message about a password change, or the
-- reverse. Existing rows and windows are changes.
ALTER TABLE security_notices
  ADD COLUMN stream text NOT NULL DEFAULT 'change' CHECK (stream IN ('change', 'sign_in')),
  -- The session a sign-in notice is about: its history entry records when the notice went out.
  ADD COLUMN session_id uuid;
DROP INDEX security_notices_identity;
CREATE INDEX security_notices_identity ON security_notices (identity_id, stream, occurred_at);

ALTER TABLE security_notice_windows
  ADD COLUMN stream text NOT NULL DEFAULT 'change' CHECK (stream IN ('change', 'sign_in'));
ALTER TABLE security_notice_windows DROP CONSTRAINT security_notice_windows_pkey;
ALTER TABLE security_notice_windows ADD PRIMARY KEY (identity_id, stream);
