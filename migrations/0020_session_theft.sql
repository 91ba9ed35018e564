-- When a spent refresh token of the session was presented again (docs/oidc.md, "One revocation"):
-- someone else held its tokens, and could have used the hosted session to obtain OpenID Provider
-- grants, offline ones included. Every grant given in such a session ends, whether or not the
-- session had already ended for another reason (whose revoked_reason is kept). Set once, by the
-- renewal statement that detects the replay, in the same transaction.
ALTER TABLE sessions ADD COLUMN theft_detected_at timestamptz;
